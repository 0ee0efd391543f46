package plan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mulligan-dev/mulligan/attempt"
)

// ApproveOptions are the inputs of `mulligan approve` (the payload checked by the caller
// against the task's approval_schema).
type ApproveOptions struct {
	Run, Task string
	Payload   json.RawMessage
}

// PlanApprove plans accepting the attempt a task waiting for approval holds: its change (an
// isolated task's, waiting in its worktree; an in-place task's when the tree moved on since) is
// carried into the working tree by an apply like any other (attempt.Apply: a three-way merge
// under the apply lock, an intent before the first write, whole or not at all), then the task is
// recorded succeeded (attempt.Approve). A change that does not apply writes nothing: the
// approval is recorded and the task held blocked apply-conflict (attempt.ApproveHeld), like any
// apply that conflicts. The tree first, the record last: a kill in between leaves the task
// waiting (the interrupted apply finished or rolled back by the next command), and the same
// approve again completes it.
func PlanApprove(ctx context.Context, env Env, opts ApproveOptions) (*Plan, error) {
	a, base, err := attempt.ApprovalAttempt(ctx, env.DB, opts.Run, opts.Task)
	if err != nil {
		return nil, err
	}
	n := a.N
	what := fmt.Sprintf("approve %s/%s@%d", opts.Run, opts.Task, n)
	p := &Plan{Command: what, Run: opts.Run, Target: fmt.Sprintf("%s@%d", opts.Task, n), Approved: a, env: env, undoWhat: what}
	in := attempt.ApplyOptions{Base: base}
	if p.Apply, err = attempt.PlanApply(ctx, env.Repo, *a, in); err != nil {
		return nil, err
	}
	p.From, p.Changes = p.Apply.Current, p.Apply.Changes
	apply := p.applyAttempt(*a, in)
	p.apply = func(ctx context.Context, res *Result) error {
		err := apply(ctx, res)
		if refused := (*attempt.ApplyConflictError)(nil); errors.As(err, &refused) {
			res.Applied, res.Restore, res.UndoRef = &attempt.ApplyResult{Plan: refused.Plan}, nil, ""
			return nil // nothing was written: the record holds the task
		}
		return err
	}
	p.record = func(ctx context.Context, res *Result, _ bool) error {
		if res.Applied != nil && res.Applied.Plan.Refused() {
			return attempt.ApproveHeld(ctx, env.DB, opts.Run, opts.Task, n, opts.Payload)
		}
		return attempt.Approve(ctx, env.DB, opts.Run, opts.Task, n, opts.Payload)
	}
	return p, nil
}
