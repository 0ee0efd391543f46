package plan

import (
	"context"
	"fmt"
	"strings"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// TimetravelOptions are the inputs of `mulligan timetravel`.
type TimetravelOptions struct {
	Run, Task string
	N         int
	// Resume: the run continues at once (cmd continues it after Execute), so the tasks it
	// replays must not have non-idempotent effects left out in the world.
	Resume bool
	// NoRestore resets the recorded state only; the working tree is left as it is.
	NoRestore    bool
	Force        bool
	NoCompensate bool
}

// PlanTimetravel plans going back to just after attempt Task@N: its tree restored (unless
// NoRestore), the side effects recorded after it crossed and compensated, and the run's recorded
// state reset to that point (attempt.Timetravel: later attempts superseded, tasks as they were,
// the run paused). The state change is computed in a transaction that is rolled back, so the
// plan shows exactly what Execute will record.
func PlanTimetravel(ctx context.Context, env Env, opts TimetravelOptions) (*Plan, error) {
	run, err := getRun(ctx, env.DB, opts.Run)
	if err != nil {
		return nil, err
	}
	a, err := findAttempt(run, opts.Task, opts.N)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("%s/%s@%d", run.ID, a.TaskID, a.N)
	if err := notPruned(run); err != nil && !opts.NoRestore {
		return nil, err
	}
	if a.Tree == "" {
		return nil, fmt.Errorf("%s has no tree recorded yet: %w", addr, attempt.ErrAttemptRunning)
	}
	p := &Plan{Command: "timetravel " + addr, Run: run.ID, Target: addr, NoCompensate: opts.NoCompensate, env: env}
	p.undoWhat = p.Command
	if err := inWorktree(env, run, p.Command); err != nil {
		return nil, err
	}
	if err := attempt.CheckIdleRun(ctx, env.DB, run.ID, opts.Force); err != nil {
		return nil, err
	}
	all, err := runEffects(ctx, env.DB, run.ID)
	if err != nil {
		return nil, err
	}
	p.Crossed = effectsAfter(all, run, a.TaskID, a.N, false)
	if err := refuseUncompensable(p.Crossed, opts.Force, p.Command); err != nil {
		return nil, err
	}
	if opts.Resume {
		// --resume replays the target's task (unless its attempt succeeded) and every task after
		// it; the effects this decision compensates on the way back are not in the way.
		p.Replayed = replayedAfter(run, a)
		compensated := map[int64]bool{}
		for _, e := range p.Crossed {
			compensated[e.ID] = p.Action(e) == ActionCompensate
		}
		if err := refuseReplay(all, run.ID, p.Replayed, func(e store.Effect) bool { return compensated[e.ID] }, opts.Force); err != nil {
			return nil, err
		}
	}
	tt := attempt.TimetravelOptions{RunID: run.ID, Task: a.TaskID, N: a.N, Force: opts.Force, Restored: !opts.NoRestore, DryRun: true}
	if p.Timetravel, err = attempt.Timetravel(ctx, env.DB, tt); err != nil {
		return nil, err
	}
	if !opts.NoRestore {
		var target snapshot.Hash
		if attempt.TaskIsolated(run, a.TaskID) {
			target, err = unappliedTree(ctx, env, run, p.Timetravel.Superseded)
		} else {
			target, err = takenBackTree(ctx, env, run, a)
		}
		if err != nil {
			return nil, err
		}
		if err := p.diffTree(ctx, target); err != nil {
			return nil, err
		}
	}
	p.record = func(ctx context.Context, res *Result, _ bool) error {
		tt.DryRun = false
		if res.Restore != nil {
			tt.UndoRef, tt.FromTree = res.UndoRef, res.Restore.UndoTree.String()
		}
		// What resume compares the working tree with: the tree timetravel leaves.
		tt.LeftTree = p.Tree.String()
		if opts.NoRestore {
			cur, err := env.Repo.WriteTree(ctx)
			if err != nil {
				return err
			}
			tt.LeftTree = cur.Tree.String()
		}
		out, err := attempt.Timetravel(ctx, env.DB, tt)
		res.Timetravel = out
		return err
	}
	return p, nil
}

// replayedAfter lists the tasks that run again when run continues from just after attempt a:
// its task, unless a succeeded, and every task after it in the run's order.
func replayedAfter(run *store.Run, a *store.Attempt) []string {
	var out []string
	after := false
	for _, t := range run.Tasks {
		if t.ID == a.TaskID {
			after = true
			if a.State == store.AttemptSucceeded {
				continue
			}
		}
		if after {
			out = append(out, t.ID)
		}
	}
	return out
}

// unappliedTree is the working tree as it is now without what the superseded attempts applied to
// it (SPEC §4.1): an isolated attempt's tree was never the working tree's, so going back to just
// after it takes back the changes the attempts after it carried in — each one's pre → post
// reversed, the last applied first — and keeps everything else, the user's edits included. A
// path changed again since an attempt applied it is a conflict: nothing is planned, and
// --no-restore resets the record alone.
func unappliedTree(ctx context.Context, env Env, run *store.Run, superseded []string) (snapshot.Hash, error) {
	cur, err := env.Repo.WriteTree(ctx)
	if err != nil {
		return snapshot.Hash{}, err
	}
	gone := map[string]bool{}
	for _, addr := range superseded {
		gone[addr] = true
	}
	var applied []*store.Attempt // in the order they were applied
	err = env.DB.View(ctx, func(tx *store.Tx) error {
		evs, err := tx.Events(run.ID, 0, 0)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if ev.Type != attempt.EventApply || !gone[fmt.Sprintf("%s@%d", ev.Task, ev.Attempt)] {
				continue
			}
			if a, err := findAttempt(run, ev.Task, ev.Attempt); err == nil && a.PreTree != "" && a.Tree != "" {
				applied = append(applied, a)
			}
		}
		return nil
	})
	if err != nil {
		return snapshot.Hash{}, err
	}
	tree := cur.Tree
	for i := len(applied) - 1; i >= 0; i-- {
		a := applied[i]
		next, conflicts, err := env.Repo.ApplyChange(snapshot.NewHash(a.Tree), snapshot.NewHash(a.PreTree), tree)
		if err != nil {
			return snapshot.Hash{}, err
		}
		if len(conflicts) > 0 {
			return snapshot.Hash{}, &UnapplyConflictError{Run: run.ID, Task: a.TaskID, N: a.N, Paths: conflicts}
		}
		tree = next
	}
	return tree, nil
}

// takenBackTree is the working tree as it is now with the changes the run made after attempt a
// taken back path by path (SPEC §6 timetravel): the change from the tree the run left to a's tree,
// applied to the tree on disk. A path no attempt touched keeps what the user has (an untracked
// file, an edit elsewhere); a path the user changed since the run left it that going back changes
// too is a conflict, and nothing is planned.
func takenBackTree(ctx context.Context, env Env, run *store.Run, a *store.Attempt) (snapshot.Hash, error) {
	cur, err := env.Repo.WriteTree(ctx)
	if err != nil {
		return snapshot.Hash{}, err
	}
	var stop *store.StopTree
	if err := env.DB.View(ctx, func(tx *store.Tx) (err error) {
		stop, err = tx.GetStopTree(run.ID)
		return err
	}); err != nil {
		return snapshot.Hash{}, err
	}
	left := leftTree(run, stop)
	if left.IsZero() {
		return snapshot.NewHash(a.Tree), nil // nothing known of what the run left: the attempt's tree
	}
	next, conflicts, err := env.Repo.ApplyChange(left, snapshot.NewHash(a.Tree), cur.Tree)
	if err != nil {
		return snapshot.Hash{}, err
	}
	if len(conflicts) > 0 {
		return snapshot.Hash{}, &TimetravelConflictError{Run: run.ID, Task: a.TaskID, N: a.N, Ref: a.Ref, Paths: conflicts}
	}
	return next, nil
}

// leftTree is the tree the run left in the working tree: the one it recorded when it last
// stopped, when no attempt started after that; else what its newest attempt left (its task's
// base when that task failed: a failed task leaves no edits behind); else its base.
func leftTree(run *store.Run, stop *store.StopTree) snapshot.Hash {
	var last *store.Attempt
	var lastTask *store.Task
	for i := range run.Tasks {
		for j := range run.Tasks[i].Attempts {
			if a := &run.Tasks[i].Attempts[j]; a.Tree != "" && (last == nil || a.StartedAt.After(last.StartedAt)) {
				last, lastTask = a, &run.Tasks[i]
			}
		}
	}
	switch {
	case stop != nil && (last == nil || !stop.At.Before(last.StartedAt)):
		return snapshot.NewHash(stop.Tree)
	case last == nil:
		return snapshot.NewHash(run.BaseTree)
	case lastTask.State == store.TaskFailed && lastTask.BaseTree != "":
		return snapshot.NewHash(lastTask.BaseTree)
	}
	return snapshot.NewHash(last.Tree)
}

// TimetravelConflictError: going back to attempt Task@N would change paths the working tree
// changed since the run left it.
type TimetravelConflictError struct {
	Run, Task string
	N         int
	Ref       string // the attempt's post ref
	Paths     []string
}

func (e *TimetravelConflictError) Error() string {
	return fmt.Sprintf("going back to %s/%s@%d would overwrite %d path(s) changed since the run left them (%s)",
		e.Run, e.Task, e.N, len(e.Paths), strings.Join(e.Paths, ", "))
}

// UnapplyConflictError: a change a superseded attempt applied cannot be taken back, because the
// working tree changed those paths again since.
type UnapplyConflictError struct {
	Run, Task string
	N         int
	Paths     []string
}

func (e *UnapplyConflictError) Error() string {
	return fmt.Sprintf("%s/%s@%d applied its change to the working tree, and %d of its path(s) changed again since (%s): taking it back would overwrite them",
		e.Run, e.Task, e.N, len(e.Paths), strings.Join(e.Paths, ", "))
}
