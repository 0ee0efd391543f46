package plan

import (
	"context"
	"fmt"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/snapshot"
)

// StopOptions are the inputs of `mulligan stop`.
type StopOptions struct {
	Run, Task string
}

// PlanStop plans giving up on a blocked task: the tree is put back at the task's base (a failed
// task leaves no edits behind; its attempts' trees stay in their refs), unless independent tasks
// went on from that base since, and the task is recorded failed (operator-stop), so its
// dependents are skipped and the rest of the run can go on. It crosses no side effects: the
// task's effects stay as its attempts left them.
func PlanStop(ctx context.Context, env Env, opts StopOptions) (*Plan, error) {
	run, err := getRun(ctx, env.DB, opts.Run)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("stop %s/%s", run.ID, opts.Task)
	p := &Plan{Command: what, Run: run.ID, Target: opts.Task, Stop: opts.Task, env: env, undoWhat: what}
	if err := inWorktree(env, run, what); err != nil {
		return nil, err
	}
	base, err := attempt.StopBase(ctx, env.DB, run.ID, opts.Task)
	if err != nil {
		return nil, err
	}
	if base != "" {
		if err := p.diffTree(ctx, snapshot.NewHash(base)); err != nil {
			return nil, err
		}
	}
	p.record = func(ctx context.Context, _ *Result, _ bool) error {
		_, err := attempt.StopTask(ctx, env.DB, run.ID, opts.Task)
		return err
	}
	return p, nil
}
