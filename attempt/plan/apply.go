package plan

import (
	"context"
	"fmt"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/store"
)

// ApplyOptions are the inputs of `mulligan apply`.
type ApplyOptions struct {
	Run, Task string
	N         int
	// Merge writes conflicting lines with conflict markers instead of refusing (`--merge`).
	Merge bool
}

// PlanApply plans carrying attempt Task@N's change (pre → post) into the working tree as a
// three-way merge, whole or not at all (attempt.Apply). An apply a crash interrupted in this
// working tree is finished (or rolled back) first: the plan is of the tree as it then is. The
// plan's Apply says what the apply would do now, and whether it refuses; Execute merges again
// under the working tree's apply lock, onto the tree as it is at that moment (the same one
// unless it changed meanwhile), and records the apply — settling a task held apply-conflict —
// in the transaction that ends its intent.
func PlanApply(ctx context.Context, env Env, opts ApplyOptions) (*Plan, error) {
	run, err := getRun(ctx, env.DB, opts.Run)
	if err != nil {
		return nil, err
	}
	if err := notPruned(run); err != nil {
		return nil, err
	}
	a, err := findAttempt(run, opts.Task, opts.N)
	if err != nil {
		return nil, err
	}
	target := fmt.Sprintf("%s/%s@%d", run.ID, a.TaskID, a.N)
	p := &Plan{Command: "apply " + target, Run: run.ID, Target: target, env: env}
	p.undoWhat = p.Command
	if p.Recovered, err = attempt.RecoverApplies(ctx, env.Repo, env.DB); err != nil {
		return nil, err
	}
	in := attempt.ApplyOptions{Markers: opts.Merge, Settle: attempt.SettleHeld}
	if p.Apply, err = attempt.PlanApply(ctx, env.Repo, *a, in); err != nil {
		return nil, err
	}
	p.From, p.Changes = p.Apply.Current, p.Apply.Changes
	p.apply = p.applyAttempt(*a, in)
	return p, nil
}

// applyAttempt is the tree step that carries attempt a's change into the working tree
// (attempt.Apply), under a new undo point named after the plan's command.
func (p *Plan) applyAttempt(a store.Attempt, in attempt.ApplyOptions) func(context.Context, *Result) error {
	return func(ctx context.Context, res *Result) error {
		in.UndoRef, in.UndoMessage = undoPoint(p.undoWhat)
		r, err := attempt.Apply(ctx, p.env.Repo, p.env.DB, a, in)
		res.Applied = r
		if r != nil {
			res.Restore, res.UndoRef = r.Restore, r.UndoRef
		}
		return err
	}
}
