package cmd

import (
	"context"
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/compensate"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

type retryTaskOptions struct {
	Run, Task string
	NoDeps    bool
	FromBase  bool
	Force     bool
	Detach    bool
	// NoCompensate leaves the replayed tasks' side effects unresolved instead of undoing them.
	NoCompensate bool
	Reload       bool   // take the edited task file
	File         string // -f: the task file to take (with Reload)
}

func retryTaskCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "retry-task",
		Usage:     "reset a task and its dependents to pending with a fresh retry budget, and continue the run",
		ArgsUsage: "[RUN] TASK",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "no-deps", Usage: "reset only TASK, not the tasks that need it"},
			&cli.BoolFlag{Name: "from-base", Usage: "start from the task's recorded base tree, not the current tree"},
			&cli.BoolFlag{Name: "force", Usage: "even while the run's process is alive (it is fenced), or when the task has side effects that cannot be compensated"},
			&cli.BoolFlag{Name: "no-compensate", Usage: "do not run the compensations of the replayed tasks' side effects: leave them unresolved"},
			&cli.BoolFlag{Name: "detach", Usage: detachUsage},
			noAutopsyFlag,
		}, reloadFlags()...),
		Action: func(c *cli.Context) error {
			g.noAutopsy = c.Bool("no-autopsy")
			opts := retryTaskOptions{NoDeps: c.Bool("no-deps"), FromBase: c.Bool("from-base"), Force: c.Bool("force"), Detach: c.Bool("detach"), NoCompensate: c.Bool("no-compensate")}
			var err error
			if opts.Reload, opts.File, err = reloadFlag(c, "mulligan retry-task k3f9 fix-tests --reload -f tasks.yaml"); err != nil {
				return err
			}
			switch c.NArg() {
			case 1:
				opts.Task = c.Args().First()
			case 2:
				opts.Run, opts.Task = c.Args().Get(0), c.Args().Get(1)
			default:
				return usageError("e.g. mulligan retry-task k3f9 fix-tests", "retry-task takes [RUN] TASK")
			}
			return runRetryTask(c.Context, g, opts)
		},
	}
}

func runRetryTask(ctx context.Context, g *globals, opts retryTaskOptions) error {
	st, err := openState()
	if err != nil {
		return err
	}
	defer st.Close()
	id, err := st.resolveRun(ctx, opts.Run)
	if err != nil {
		return err
	}
	run, err := st.getRun(ctx, id)
	if err != nil {
		return err
	}
	// The tasks and definition the run will have: the edited file's with --reload.
	var reload *taskfile.File
	var reloadPlan *attempt.ReloadPlan
	planned := run
	if opts.Reload {
		if reload, reloadPlan, err = loadReload(run, opts.File, fmt.Sprintf("mulligan retry-task %s %s --reload", id, opts.Task)); err != nil {
			return err
		}
		p := *run
		p.Tasks = reloadPlan.Tasks
		planned = &p
	}
	var base string
	found := false
	for _, t := range planned.Tasks {
		if t.ID == opts.Task {
			found, base = true, t.BaseTree
		}
	}
	if !found {
		return unknownTask(planned, opts.Task)
	}
	if err := inRunWorktree(st, run, "retry-task "+id+" "+opts.Task); err != nil {
		return err
	}
	if err := attempt.CheckIdleRun(ctx, st.db, id, opts.Force); err != nil {
		return refuseActive(err, id)
	}
	replayed := []string{opts.Task}
	if !opts.NoDeps {
		if reload != nil {
			replayed = attempt.Dependents(reload, planned, opts.Task)
		} else if f, err := loadStoredFile(run); err == nil {
			replayed = attempt.Dependents(f, run, opts.Task)
		}
	}
	// The replayed tasks' side effects still out in the world are undone before they run again
	// (newest first, as revert does); one that cannot be undone is refused without --force. One
	// an operator left unresolved (--no-compensate) stays so: that was a decision, which
	// `mulligan compensate RUN --unresolved` takes back.
	all, err := runEffects(ctx, st, id)
	if err != nil {
		return err
	}
	undone := func(e store.Effect) bool {
		return len(e.Compensate) > 0 && !opts.NoCompensate && e.State != store.EffectUnresolved
	}
	crossed := compensate.CrossedBy(all, func(e store.Effect) bool {
		return slices.Contains(replayed, e.TaskID) && e.State != store.EffectUnresolved
	})
	if err := refuseReplayEffects(all, id, replayed, undone, opts.Force); err != nil {
		return err
	}
	if opts.FromBase && base == "" {
		return &Error{Code: ExitFailed, Msg: fmt.Sprintf("task %s of run %s has no recorded base: it never started", opts.Task, id),
			Hints: []string{fmt.Sprintf("`mulligan retry-task %s %s` starts it from the current tree", id, opts.Task)}}
	}
	what := fmt.Sprintf("retry-task %s %s", id, opts.Task)
	var undo string
	var graft func(string) (string, error)
	if reload != nil {
		if graft, err = reloadGraft(ctx, st, reload); err != nil {
			return err
		}
	}
	if len(crossed) > 0 {
		// Before the tree or the run changes: a compensation that fails stops the replay.
		_, failed, err := compensateAll(ctx, g, st, crossed, opts.NoCompensate)
		if err != nil {
			return err
		}
		if failed {
			return &Error{Code: ExitFailed, Msg: fmt.Sprintf("%s: a compensation failed, so nothing was replayed", what),
				Hints: []string{fmt.Sprintf("when `mulligan compensate %s` has undone it, run `mulligan %s` again", id, what)}}
		}
	}
	if opts.FromBase {
		if graft != nil {
			// the base, but with the reloaded task file the operator just edited
			if base, err = graft(base); err != nil {
				return err
			}
		}
		res, err := restoreWithUndo(ctx, st.repo, snapshot.NewHash(base), what+" --from-base", false)
		if err != nil {
			return err
		}
		undo = res.Undo.Ref
		fmt.Fprintf(g.io.ErrOut, "retry-task: the tree is back at task %s's base (%d path%s changed); undo point %s\n",
			opts.Task, len(res.Changes), plural(len(res.Changes)), undo)
		// And HEAD, refs and the index back to what its first attempt started from (SPEC §2.1).
		if first := firstAttempt(run, opts.Task); first > 0 {
			git, err := attempt.RevertGit(ctx, st.repo, st.db, run, opts.Task, first, false, "mulligan: "+what+" --from-base")
			if err != nil {
				return fmt.Errorf("the tree is back at task %s's base, but putting back HEAD, refs and the index failed: %w", opts.Task, err)
			}
			if git.Attempt != "" {
				printGitRevert(g.io.ErrOut, git, false)
			}
		}
	} else {
		// The run will change the tree from here: keep an undo point of it as it is now.
		ref, msg := undoPoint(what)
		res, err := st.repo.Snapshot(ctx, snapshot.SnapshotOptions{Ref: ref, Message: msg})
		if err != nil {
			return err
		}
		undo = res.Ref
		fmt.Fprintf(g.io.ErrOut, "retry-task: starting from the current tree; undo point %s\n", undo)
	}
	reset, err := attempt.ResetTasks(ctx, st.db, attempt.ResetOptions{
		RunID: id, Task: opts.Task, NoDeps: opts.NoDeps, Force: opts.Force, Load: loadStoredFile, UndoRef: undo, Reload: reload, Graft: graft,
	})
	if err != nil {
		return refuseActive(err, id)
	}
	if reload != nil {
		printReload(g.io.ErrOut, "retry-task", reload, reloadPlan)
	}
	fmt.Fprintf(g.io.ErrOut, "retry-task: reset %s to pending\n", joinList(reset))
	return continueRun(ctx, g, st, id, continueOptions{Force: opts.Force, Detach: opts.Detach})
}

func unknownTask(run *store.Run, task string) error {
	known := make([]string, len(run.Tasks))
	for i, t := range run.Tasks {
		known[i] = t.ID
	}
	return &attempt.UnknownTaskError{Task: task, Known: known}
}

func joinList(s []string) string {
	switch len(s) {
	case 0:
		return "nothing"
	case 1:
		return s[0]
	}
	out := ""
	for i, x := range s {
		switch {
		case i == 0:
		case i == len(s)-1:
			out += " and "
		default:
			out += ", "
		}
		out += x
	}
	return out
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
