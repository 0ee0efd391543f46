package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/attempt/plan"
	"github.com/mulligan-dev/mulligan/snapshot"
)

type timetravelOptions struct {
	Addr      string
	Resume    bool
	Detach    bool // with Resume: continue in the background
	NoRestore bool
	Force     bool
	// NoCompensate leaves the side effects it crosses unresolved instead of undoing them.
	NoCompensate bool
	DryRun       bool
}

func timetravelCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "timetravel",
		Usage:     "restore an attempt's tree and reset the run's state to just after it (later attempts superseded; the run paused)",
		ArgsUsage: "ADDR",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "resume", Usage: "continue the run at once, in the foreground"},
			&cli.BoolFlag{Name: "detach", Usage: "with --resume: continue the run in the background: print the run id and return"},
			&cli.BoolFlag{Name: "no-restore", Usage: "reset the recorded state only; leave the working tree as it is"},
			&cli.BoolFlag{Name: "force", Usage: "even while the run is active in this worktree, or across side effects with no compensation"},
			&cli.BoolFlag{Name: "no-compensate", Usage: "do not run the compensations of the side effects it crosses: leave them unresolved"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print what it would change (tree, side effects, attempts and tasks), change nothing"},
			noAutopsyFlag,
		},
		Action: func(c *cli.Context) error {
			g.noAutopsy = c.Bool("no-autopsy")
			if c.NArg() != 1 {
				return usageError("e.g. mulligan timetravel k3f9/fix-tests@2", "timetravel takes one address")
			}
			if c.Bool("detach") && !c.Bool("resume") {
				return usageError("continue in the background: mulligan timetravel "+c.Args().First()+" --resume --detach", "--detach needs --resume")
			}
			return runTimetravel(c.Context, g, timetravelOptions{Addr: c.Args().First(), Resume: c.Bool("resume"), Detach: c.Bool("detach"),
				NoRestore: c.Bool("no-restore"), Force: c.Bool("force"), NoCompensate: c.Bool("no-compensate"), DryRun: c.Bool("dry-run")})
		},
	}
}

func runTimetravel(ctx context.Context, g *globals, opts timetravelOptions) error {
	d := decision{command: "timetravel", addr: opts.Addr, attempt: true, dryRun: opts.DryRun, detach: opts.Detach, force: opts.Force,
		refuse: refuseActive}
	return runDecision(ctx, g, d, func(st *state, t *attempt.Target) error {
		run, a := t.Run, t.Attempt
		p, err := plan.PlanTimetravel(ctx, st.planEnv(), plan.TimetravelOptions{Run: run.ID, Task: a.TaskID, N: a.N,
			Resume: opts.Resume, NoRestore: opts.NoRestore, Force: opts.Force, NoCompensate: opts.NoCompensate})
		if err != nil {
			return err
		}
		if opts.DryRun {
			return printPlan(g, p)
		}
		res, err := p.Execute(ctx)
		compensated, failed := compensationList(g.io.ErrOut, res.Compensations)
		var step *plan.StepError
		if errors.As(err, &step) && step.Step == plan.StepRecord && res.Restore != nil {
			return &Error{Code: exitCode(mapError(step.Err)), Msg: err.Error(), Err: err, Hints: []string{
				"the working tree was restored but the run's state was not changed; `mulligan undo` puts the tree back"}}
		}
		if err != nil {
			return err
		}
		out := res.Timetravel
		if opts.Resume && !failed {
			printTimetravel(g.io.ErrOut, run.ID, p.Target, p.Tree, res.Restore, out, false)
			return nil // the run continues
		}
		if g.json() {
			var undo, changed any
			if res.Restore != nil {
				undo = res.UndoRef
				changed = changesJSON(res.Restore.Changes)
			}
			if err := writeJSON(g.io.Out, map[string]any{
				"run": run.ID, "to": p.Target, "tree": snapshot.NewHash(a.Tree).String(), "restored": res.Restore != nil, "undo_ref": undo,
				"changed": changed, "compensated": nonNil(compensated), "superseded": nonNil(out.Superseded),
				"unsuperseded": nonNil(out.Restored), "tasks": out.Tasks, "state": "paused",
			}); err != nil {
				return err
			}
		} else {
			printTimetravel(g.io.Out, run.ID, p.Target, snapshot.NewHash(a.Tree), res.Restore, out, true)
		}
		if failed {
			return exitError{ExitFailed} // a compensation failed: said above
		}
		return errStay
	})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func printTimetravel(w io.Writer, runID, addr string, tree snapshot.Hash,
	res *snapshot.RestoreResult, out *attempt.TimetravelResult, hintResume bool) {
	if res == nil {
		fmt.Fprintf(w, "the working tree was NOT restored (--no-restore): it is as it was, not %s's tree %s\n", addr, tree)
	} else {
		for _, ch := range res.Changes {
			fmt.Fprintf(w, "%s %s\n", actionLetter(ch.Action), ch.Path)
		}
		fmt.Fprintf(w, "restored %s's tree %s: %d path%s changed; undo point %s\n", addr, tree,
			len(res.Changes), plural(len(res.Changes)), res.Undo.Ref)
	}
	for _, s := range out.Superseded {
		fmt.Fprintf(w, "superseded %s\n", s)
	}
	for _, s := range out.Restored {
		fmt.Fprintf(w, "back from superseded %s\n", s)
	}
	for _, t := range out.Tasks {
		fmt.Fprintf(w, "task %s: %s → %s\n", t.Task, t.From, t.To)
	}
	fmt.Fprintf(w, "run %s is %s as of just after %s\n", runID, stateColor("paused"), addr)
	if hintResume {
		fmt.Fprintf(w, "hint: `mulligan resume %s` continues it from there; `mulligan undo` puts back the tree this replaced\n", runID)
	}
}
