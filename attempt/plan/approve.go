package plan

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mulligan-dev/mulligan/attempt"
)

// ApproveOptions are the inputs of `mulligan approve` (the payload checked by the caller
// against the task's approval_schema).
type ApproveOptions struct {
	Run, Task string
	Payload   json.RawMessage
}

// PlanApprove plans accepting the attempt a task waiting for approval holds: when the working
// tree moved on since it (independent tasks went on from its base), its change is carried in
// (attempt.PlanApproval: a three-way apply, refused when a path changed otherwise since), then
// the task is recorded succeeded (attempt.Approve). The same order as every plan: the tree
// first (undo point first), the record last, so a kill in between leaves the task waiting and
// the same approve again completes it (the change is in the tree already).
func PlanApprove(ctx context.Context, env Env, opts ApproveOptions) (*Plan, error) {
	ap, err := attempt.PlanApproval(ctx, env.DB, env.Repo, opts.Run, opts.Task)
	if err != nil {
		return nil, err
	}
	n := ap.Attempt.N
	what := fmt.Sprintf("approve %s/%s@%d", opts.Run, opts.Task, n)
	p := &Plan{Command: what, Run: opts.Run, Target: fmt.Sprintf("%s@%d", opts.Task, n), Approved: ap.Attempt, env: env, undoWhat: what}
	if ap.Tree != ap.Current {
		if err := p.diffTree(ctx, ap.Tree); err != nil {
			return nil, err
		}
	}
	p.record = func(ctx context.Context, _ *Result, _ bool) error {
		return attempt.Approve(ctx, env.DB, opts.Run, opts.Task, n, opts.Payload)
	}
	return p, nil
}
