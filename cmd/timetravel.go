package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

type timetravelOptions struct {
	Addr      string
	Resume    bool
	Detach    bool // with Resume: continue in the background
	NoRestore bool
	Force     bool
	// NoCompensate leaves the side effects it crosses unresolved instead of undoing them.
	NoCompensate bool
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
				NoRestore: c.Bool("no-restore"), Force: c.Bool("force"), NoCompensate: c.Bool("no-compensate")})
		},
	}
}

func runTimetravel(ctx context.Context, g *globals, opts timetravelOptions) (err error) {
	st, err := openState()
	if err != nil {
		return err
	}
	defer st.Close()
	run, a, err := st.resolveAddress(ctx, opts.Addr)
	if err != nil {
		return err
	}
	addr := fmt.Sprintf("%s/%s@%d", run.ID, a.TaskID, a.N)
	if err := notPruned(run); err != nil && !opts.NoRestore {
		return err
	}
	if a.Tree == "" {
		return &Error{Code: ExitFailed, Msg: fmt.Sprintf("%s has no tree recorded yet: %v", addr, attempt.ErrAttemptRunning)}
	}
	if err := inRunWorktree(st, run, "timetravel "+addr); err != nil {
		return err
	}
	if err := attempt.CheckIdleRun(ctx, st.db, run.ID, opts.Force); err != nil {
		return refuseActive(err, run.ID)
	}
	// The side effects it crosses are checked before anything changes.
	crossed, err := effectsAfter(ctx, st, run, a.TaskID, a.N, false)
	if err != nil {
		return err
	}
	if err := refuseUncompensable(crossed, opts.Force, "timetravel "+addr); err != nil {
		return err
	}
	if opts.Resume {
		// --resume replays the target's task (unless its attempt succeeded) and every task after
		// it; the effects this command compensates on the way back are not in the way.
		compensated := map[int64]bool{}
		for _, e := range crossed {
			compensated[e.ID] = len(e.Compensate) > 0 && !opts.NoCompensate
		}
		all, err := runEffects(ctx, st, run.ID)
		if err != nil {
			return err
		}
		if err := refuseReplayEffects(all, run.ID, replayedAfter(run, a),
			func(e store.Effect) bool { return compensated[e.ID] }, opts.Force); err != nil {
			return err
		}
	}
	tree := snapshot.NewHash(a.Tree)
	var res *snapshot.RestoreResult
	tt := attempt.TimetravelOptions{RunID: run.ID, Task: a.TaskID, N: a.N, Force: opts.Force}
	if !opts.NoRestore {
		res, err = restoreWithUndo(ctx, st.repo, tree, "timetravel "+addr, false)
		if err != nil {
			return err
		}
		tt.Restored, tt.UndoRef, tt.FromTree = true, res.Undo.Ref, res.UndoTree.String()
	}
	out, err := attempt.Timetravel(ctx, st.db, tt)
	if err != nil {
		if res != nil {
			return &Error{Code: exitCode(mapError(err)), Msg: err.Error(), Err: err, Hints: []string{
				"the working tree was restored but the run's state was not changed; `mulligan undo` puts the tree back"}}
		}
		return refuseActive(err, run.ID)
	}
	var compensated []compensationJSON
	failed := false
	if len(crossed) > 0 {
		if compensated, failed, err = compensateAll(ctx, g, st, crossed, opts.NoCompensate); err != nil {
			return err
		}
	}
	if opts.Resume && !failed {
		printTimetravel(g.io.ErrOut, run.ID, addr, tree, res, out, false)
		return continueRun(ctx, g, st, run.ID, continueOptions{Force: opts.Force, Detach: opts.Detach})
	}
	if failed {
		defer func() {
			if err == nil {
				err = exitError{ExitFailed}
			}
		}()
	}
	if g.json() {
		var undo, changed any
		if res != nil {
			undo = res.Undo.Ref
			list := make([]changeJSON, 0, len(res.Changes))
			for _, ch := range res.Changes {
				list = append(list, changeJSON{Path: ch.Path, Action: ch.Action.String()})
			}
			changed = list
		}
		return writeJSON(g.io.Out, map[string]any{
			"run": run.ID, "to": addr, "tree": tree.String(), "restored": res != nil, "undo_ref": undo,
			"changed": changed, "compensated": nonNil(compensated), "superseded": nonNil(out.Superseded),
			"unsuperseded": nonNil(out.Restored), "tasks": out.Tasks, "state": "paused",
		})
	}
	printTimetravel(g.io.Out, run.ID, addr, tree, res, out, true)
	return nil
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
