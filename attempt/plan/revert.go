package plan

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// RevertOptions are the inputs of `mulligan revert`.
type RevertOptions struct {
	Run string
	// Task and N name the attempt whose tree is restored (its post tree; with Pre, its pre tree).
	Task string
	N    int
	Pre  bool
	// Base restores the run's base tree instead (Task and N are not used).
	Base bool
	// Force reverts even while the run is active in this worktree, or across side effects with
	// no compensation (left unresolved).
	Force bool
	// NoCompensate leaves the side effects revert crosses unresolved instead of undoing them.
	NoCompensate bool
}

// PlanRevert plans setting the working tree to an attempt's tree (or the run's base): the side
// effects recorded after that point are crossed and compensated; the run's state is not
// changed, the revert is audited (a revert event).
func PlanRevert(ctx context.Context, env Env, opts RevertOptions) (*Plan, error) {
	run, err := getRun(ctx, env.DB, opts.Run)
	if err != nil {
		return nil, err
	}
	if err := notPruned(run); err != nil {
		return nil, err
	}
	var tree, target string
	if opts.Base {
		tree, target = run.BaseTree, run.ID+" --base"
		if tree == "" {
			return nil, &NoTreeError{Run: run.ID, Base: true, Target: target}
		}
	} else {
		a, err := findAttempt(run, opts.Task, opts.N)
		if err != nil {
			return nil, err
		}
		target, tree = fmt.Sprintf("%s/%s@%d", run.ID, a.TaskID, a.N), a.Tree
		if opts.Pre {
			tree, target = a.PreTree, target+" --pre"
		}
		if err := attempt.CheckIdleRun(ctx, env.DB, run.ID, opts.Force); err != nil {
			return nil, err
		}
		if tree == "" {
			return nil, &NoTreeError{Run: run.ID, Task: a.TaskID, N: a.N, Target: target}
		}
	}
	if err := attempt.CheckIdleRun(ctx, env.DB, run.ID, opts.Force); err != nil {
		return nil, err
	}
	p := &Plan{Command: "revert " + target, Run: run.ID, Target: target, NoCompensate: opts.NoCompensate, env: env, auditPartial: true}
	p.undoWhat = p.Command
	all, err := runEffects(ctx, env.DB, run.ID)
	if err != nil {
		return nil, err
	}
	task, n := opts.Task, opts.N
	if opts.Base {
		task, n = "", 0
	}
	p.Crossed = effectsAfter(all, run, task, n, opts.Pre)
	if err := refuseUncompensable(p.Crossed, opts.Force, p.Command); err != nil {
		return nil, err
	}
	if err := p.diffTree(ctx, snapshot.NewHash(tree)); err != nil {
		return nil, err
	}
	// The submodules' working trees kept with that attempt's pre or post (the run's first
	// attempt's pre for --base).
	switch {
	case opts.Base:
		if ft, fn := firstOfRun(run); ft != "" {
			p.SubmoduleRef = snapshot.AttemptRef(run.ID, ft, fn, snapshot.Pre)
		}
	case opts.Pre:
		p.SubmoduleRef = snapshot.AttemptRef(run.ID, task, n, snapshot.Pre)
	default:
		p.SubmoduleRef = snapshot.AttemptRef(run.ID, task, n, snapshot.Post)
	}
	if opts.Pre || opts.Base {
		// Back to where an attempt started: HEAD, refs, the stash and the index too (SPEC §2.1).
		if err := p.gitBack(ctx, run, task, n); err != nil {
			return nil, err
		}
	}
	p.record = func(ctx context.Context, res *Result, complete bool) error {
		payload := store.Revert{
			Who: attempt.Who(), Target: target, From: res.Restore.UndoTree.String(), To: tree,
			UndoRef: res.UndoRef, Changed: len(res.Restore.Changes), Complete: complete, Force: opts.Force,
		}
		if res.Git != nil {
			restored, err := json.Marshal(res.Git.RestoredList())
			if err != nil {
				return err
			}
			left := res.Git.LeftList()
			payload.GitRestored, payload.GitLeft = restored, &left
		}
		return attempt.RecordEvent(context.WithoutCancel(ctx), env.DB, run.ID, task, n, store.EventRevert, payload)
	}
	return p, nil
}

// findAttempt returns attempt task@n of run.
func findAttempt(run *store.Run, task string, n int) (*store.Attempt, error) {
	for _, t := range run.Tasks {
		if t.ID != task {
			continue
		}
		for i := range t.Attempts {
			if t.Attempts[i].N == n {
				return &t.Attempts[i], nil
			}
		}
		return nil, fmt.Errorf("run %s has no attempt %s@%d: %w", run.ID, task, n, store.ErrNotFound)
	}
	known := make([]string, len(run.Tasks))
	for i, t := range run.Tasks {
		known[i] = t.ID
	}
	return nil, &attempt.UnknownTaskError{Task: task, Known: known}
}

// firstOfRun is the run's first attempt (by start), "" when it has none.
func firstOfRun(run *store.Run) (string, int) {
	var first *store.Attempt
	for _, t := range run.Tasks {
		for i := range t.Attempts {
			if a := &t.Attempts[i]; first == nil || a.StartedAt.Before(first.StartedAt) {
				first = a
			}
		}
	}
	if first == nil {
		return "", 0
	}
	return first.TaskID, first.N
}
