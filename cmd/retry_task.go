package cmd

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/attempt/plan"
	"github.com/mulligan-dev/mulligan/store"
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
	DryRun       bool
}

func retryTaskCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "retry-task",
		Usage:     "reset a task and its dependents to pending with a fresh retry budget, and continue the run",
		ArgsUsage: "[RUN] TASK (or one address: RUN/TASK, TASK)",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "no-deps", Usage: "reset only TASK, not the tasks that need it"},
			&cli.BoolFlag{Name: "from-base", Usage: "start from the task's recorded base tree, not the current tree"},
			&cli.BoolFlag{Name: "force", Usage: "even while the run's process is alive (it is fenced), or when the task has side effects that cannot be compensated"},
			&cli.BoolFlag{Name: "no-compensate", Usage: "do not run the compensations of the replayed tasks' side effects: leave them unresolved"},
			&cli.BoolFlag{Name: "detach", Usage: detachUsage},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what it would change (side effects, tree, tasks reset), change nothing"},
			noAutopsyFlag,
		}, reloadFlags()...),
		Action: func(c *cli.Context) error {
			g.noAutopsy = c.Bool("no-autopsy")
			opts := retryTaskOptions{NoDeps: c.Bool("no-deps"), FromBase: c.Bool("from-base"), Force: c.Bool("force"), Detach: c.Bool("detach"), NoCompensate: c.Bool("no-compensate"), DryRun: c.Bool("dry-run")}
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
	addr := opts.Task
	if opts.Run != "" {
		addr = opts.Run + "/" + opts.Task
	}
	d := decision{command: "retry-task", addr: addr, detach: opts.Detach, dryRun: opts.DryRun, force: opts.Force, refuse: refuseActive}
	return runDecision(ctx, g, d, func(st *state, t *attempt.Target) error {
		id, task := t.Run.ID, t.Task.ID
		po := plan.RetryOptions{Run: id, Task: task, NoDeps: opts.NoDeps, FromBase: opts.FromBase, Force: opts.Force, NoCompensate: opts.NoCompensate}
		if !po.FromBase && halfEdit(ctx, st, t.Task) {
			// The tree is exactly what Ctrl-C left of the attempt: not a base to build on.
			po.FromBase = true
			fmt.Fprintf(g.io.ErrOut, "retry-task: the tree holds the half edit of %s@%d, which was interrupted: starting from the task's base instead\n",
				task, t.Attempt.N)
		}
		if opts.Reload {
			// The edited file is read and checked here, with its authoring errors and hints.
			var err error
			if po.Reload, po.ReloadPlan, err = loadReload(t.Run, opts.File, fmt.Sprintf("mulligan retry-task %s %s --reload", id, task)); err != nil {
				return err
			}
		}
		p, err := plan.PlanRetry(ctx, st.planEnv(), po)
		if err != nil {
			return err
		}
		if opts.DryRun {
			return printPlan(g, p)
		}
		res, err := p.Execute(ctx)
		compensationList(g.io.ErrOut, res.Compensations)
		if err != nil {
			return err
		}
		if res.Restore != nil {
			fmt.Fprintf(g.io.ErrOut, "retry-task: the tree is back at task %s's base (%d path%s changed); undo point %s\n",
				task, len(res.Restore.Changes), plural(len(res.Restore.Changes)), res.UndoRef)
			printSubmoduleTrees(g.io.ErrOut, p.SubmoduleRef, res.Submodules)
			if res.Git != nil && res.Git.Attempt != "" {
				printGitRevert(g.io.ErrOut, res.Git, false)
			}
		} else if opts.FromBase && attempt.TaskInWorktree(t.Run, task) {
			fmt.Fprintf(g.io.ErrOut, "retry-task: task %s starts again from its base in its own worktree; your working tree is not touched\n", task)
		} else {
			fmt.Fprintf(g.io.ErrOut, "retry-task: starting from the current tree; undo point %s\n", res.UndoRef)
		}
		if p.Reload != nil {
			printReload(g.io.ErrOut, "retry-task", p.Reload, p.ReloadPlan)
		}
		fmt.Fprintf(g.io.ErrOut, "retry-task: reset %s to pending\n", joinList(res.Reset))
		return nil
	})
}

// halfEdit reports whether the working tree is exactly the tree t's last attempt left when Ctrl-C
// interrupted it (the task paused, reason interrupted).
func halfEdit(ctx context.Context, st *state, t *store.Task) bool {
	if t.State != store.TaskPaused || t.Reason != attempt.ReasonInterrupted || len(t.Attempts) == 0 || t.BaseTree == "" {
		return false
	}
	last := t.Attempts[len(t.Attempts)-1]
	if last.Code != attempt.CodeInterrupted || last.Tree == "" {
		return false
	}
	cur, err := st.repo.WriteTree(ctx)
	return err == nil && cur.Tree.String() == last.Tree
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
