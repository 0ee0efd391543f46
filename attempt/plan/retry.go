package plan

import (
	"context"
	"fmt"
	"slices"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/compensate"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// RetryOptions are the inputs of `mulligan retry-task`.
type RetryOptions struct {
	Run, Task string
	NoDeps    bool // reset only Task, not the tasks that need it
	FromBase  bool // start from the task's recorded base tree, not the current tree
	// Force: even while the run's process is alive (it is fenced), or when the replayed tasks
	// have non-idempotent effects that will not be compensated.
	Force bool
	// NoCompensate leaves the replayed tasks' side effects unresolved instead of undoing them.
	NoCompensate bool
	// Reload is the edited task file (`--reload`), read and checked by the caller, and what it
	// changes (attempt.PlanReload); nil: the run's stored definition.
	Reload     *taskfile.File
	ReloadPlan *attempt.ReloadPlan
}

// PlanRetry plans retry-task: the replayed tasks' side effects still out in the world are
// compensated (a failure stops it: the replay would do them again), the tree is set to the
// task's base (FromBase) or kept as it is under an undo point, and the task and (unless NoDeps)
// its dependents are reset to pending with a fresh retry budget (attempt.ResetTasks), the run
// paused until cmd continues it.
func PlanRetry(ctx context.Context, env Env, opts RetryOptions) (*Plan, error) {
	run, err := getRun(ctx, env.DB, opts.Run)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("retry-task %s %s", run.ID, opts.Task)
	p := &Plan{Command: what, Run: run.ID, Target: opts.Task, NoCompensate: opts.NoCompensate, StopOnFailure: true,
		Reload: opts.Reload, ReloadPlan: opts.ReloadPlan, env: env, undoWhat: what}
	// The tasks the run will have: the edited file's with --reload.
	planned := run
	if opts.Reload != nil {
		c := *run
		c.Tasks = opts.ReloadPlan.Tasks
		planned = &c
	}
	i := slices.IndexFunc(planned.Tasks, func(t store.Task) bool { return t.ID == opts.Task })
	if i < 0 {
		return nil, unknownTask(planned, opts.Task)
	}
	base := planned.Tasks[i].BaseTree
	if err := inWorktree(env, run, what); err != nil {
		return nil, err
	}
	if err := attempt.CheckIdleRun(ctx, env.DB, run.ID, opts.Force); err != nil {
		return nil, err
	}
	p.Replayed = []string{opts.Task}
	if !opts.NoDeps {
		if opts.Reload != nil {
			p.Replayed = attempt.Dependents(opts.Reload, planned, opts.Task)
		} else if f, err := storedFile(run); err == nil {
			p.Replayed = attempt.Dependents(f, run, opts.Task)
		}
	}
	// The replayed tasks' side effects still out in the world are undone before they run again
	// (newest first, as revert does); one that cannot be undone is refused without --force. One
	// an operator left unresolved (--no-compensate) stays so: that was a decision, which
	// `mulligan compensate RUN --unresolved` takes back.
	all, err := runEffects(ctx, env.DB, run.ID)
	if err != nil {
		return nil, err
	}
	p.Crossed = compensate.CrossedBy(all, func(e store.Effect) bool {
		return slices.Contains(p.Replayed, e.TaskID) && e.State != store.EffectUnresolved
	})
	undone := func(e store.Effect) bool {
		return len(e.Compensate) > 0 && !opts.NoCompensate && e.State != store.EffectUnresolved
	}
	if err := refuseReplay(all, run.ID, p.Replayed, undone, opts.Force); err != nil {
		return nil, err
	}
	if opts.FromBase && base == "" {
		return nil, &NoBaseError{Run: run.ID, Task: opts.Task}
	}
	var graft func(string) (string, error)
	if opts.Reload != nil {
		if graft, err = attempt.ReloadGraft(ctx, env.Repo, opts.Reload); err != nil {
			return nil, err
		}
	}
	// A task that runs in a worktree of its own starts again there, at its recorded base: the
	// working tree (other tasks' applied changes, the user's edits) is not touched.
	keepBase := opts.FromBase && attempt.TaskInWorktree(planned, opts.Task)
	if keepBase {
		p.KeepTree = true
	} else if opts.FromBase {
		p.undoWhat = what + " --from-base"
		if graft != nil {
			// the base, but with the reloaded task file the operator just edited
			if base, err = graft(base); err != nil {
				return nil, err
			}
		}
		if err := p.diffTree(ctx, snapshot.NewHash(base)); err != nil {
			return nil, err
		}
		// And HEAD, refs and the index back to what its first attempt started from (SPEC §2.1).
		if first := firstAttempt(run, opts.Task); first > 0 {
			if err := p.gitBack(ctx, run, opts.Task, first); err != nil {
				return nil, err
			}
			p.SubmoduleRef = snapshot.AttemptRef(run.ID, opts.Task, first, snapshot.Pre)
		}
	} else {
		p.KeepTree = true // the run will change the tree from here
	}
	p.record = func(ctx context.Context, res *Result, _ bool) error {
		reset, err := attempt.ResetTasks(ctx, env.DB, attempt.ResetOptions{
			RunID: run.ID, Task: opts.Task, NoDeps: opts.NoDeps, Force: opts.Force, Load: storedFile,
			UndoRef: res.UndoRef, Reload: opts.Reload, Graft: graft, KeepBase: keepBase,
		})
		res.Reset = reset
		return err
	}
	return p, nil
}

// storedFile is the task file the run stored when it started (or last reloaded).
func storedFile(run *store.Run) (*taskfile.File, error) {
	return taskfile.Parse(run.TaskFile, run.TaskFileContent)
}

func unknownTask(run *store.Run, task string) error {
	known := make([]string, len(run.Tasks))
	for i, t := range run.Tasks {
		known[i] = t.ID
	}
	return &attempt.UnknownTaskError{Task: task, Known: known}
}

// firstAttempt is the number of the task's first attempt in run, 0 when it has none.
func firstAttempt(run *store.Run, task string) int {
	first := 0
	for _, t := range run.Tasks {
		if t.ID != task {
			continue
		}
		for _, a := range t.Attempts {
			if first == 0 || a.N < first {
				first = a.N
			}
		}
	}
	return first
}
