package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/autopsy"
	"github.com/mulligan-dev/mulligan/store"
)

func autopsyCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "autopsy",
		Usage:     "the post-failure report of a run: timeline, evidence, verdict and the next command",
		ArgsUsage: "[RUN]",
		Description: "Prints the report written when the run stopped (failed or blocked); it runs nothing again.\n" +
			"--rebuild analyses the run once more on purpose (the verify command runs again on the task's\n" +
			"base tree, in a temporary directory) and replaces the written report.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "rebuild", Usage: "analyse the run again (re-runs the verify command on the base tree) and replace the written report"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("e.g. mulligan autopsy k3f9", "autopsy takes one run")
			}
			st, id, err := openRun(c.Context, g, c.Args().First())
			if err != nil {
				return err
			}
			defer st.Close()
			dir := autopsy.Dir(st.repo.CommonDir())
			var r *autopsy.Report
			if !c.Bool("rebuild") {
				r, _, err = autopsy.ReadWritten(dir, id)
				why, now := "no report was written for run "+id, ""
				if err == nil {
					// A report written when the run stopped is out of date once the run went on
					// (retry-task, resume) to another state: what the records say now decides.
					if run, rerr := st.getRun(c.Context, id); rerr == nil && string(run.State) != r.State {
						why, now = fmt.Sprintf("the report written when run %s stopped %s is out of date", id, r.State), " now"
						err = autopsy.ErrNotWritten
					}
				}
				switch {
				case err == nil:
					// As written; only the ledgers are read again (effects compensated, hooks
					// redelivered since).
					if err := autopsy.Refresh(c.Context, autopsyInput(g, st, id), r); err != nil {
						return err
					}
				case errors.Is(err, autopsy.ErrNotWritten):
					// Nothing was written (the run is parked, running, succeeded, or from before
					// reports were written): say what the records say, running nothing.
					in := autopsyInput(g, st, id)
					in.NoBaseCheck = true
					if r, err = autopsy.Build(c.Context, in); err != nil {
						return err
					}
					fmt.Fprintf(g.io.ErrOut, "autopsy: %s (%s%s): this one is read from its records now, without running the verify command (--rebuild runs it)\n", why, r.State, now)
				default:
					return err
				}
			} else {
				in := autopsyInput(g, st, id)
				in.Progress = g.io.ErrOut
				if r, err = autopsy.Build(c.Context, in); err != nil {
					return err
				}
				path, err := autopsy.WriteFiles(dir, r)
				if err != nil {
					return err
				}
				fmt.Fprintf(g.io.ErrOut, "autopsy: rebuilt the report of run %s from its records and logs now (%s)\n", id, displayPath(filepath.Clean(path)))
			}
			if g.json() {
				return writeJSON(g.io.Out, r)
			}
			return autopsy.Markdown(g.io.Out, r)
		},
	}
}

// autopsyInput is what the autopsy of run id reads, with the commands of this build so that
// its suggestions only name commands that exist.
func autopsyInput(g *globals, st *state, id string) autopsy.Input {
	return autopsy.Input{Repo: st.repo, DB: st.db, RunID: id, Commands: g.commandNames}
}

// autopsyEnabled is false with --no-autopsy or MULLIGAN_AUTOPSY=0.
func autopsyEnabled(noAutopsy bool) bool {
	return !noAutopsy && os.Getenv("MULLIGAN_AUTOPSY") != "0"
}

// writeAutopsy runs after a run ended failed or blocked: it writes the report next to the
// database, records autopsy.written, and prints the short summary on stderr in text mode. A
// failing autopsy never changes the run's exit code: it says so and returns.
func writeAutopsy(ctx context.Context, g *globals, st *state, run *store.Run) {
	if run.State != store.RunFailed && run.State != store.RunBlocked {
		return
	}
	ctx = context.WithoutCancel(ctx)
	in := autopsyInput(g, st, run.ID)
	in.Run = run
	if !g.json() {
		in.Progress = g.io.ErrOut
	}
	r, err := autopsy.Build(ctx, in)
	var path string
	if err == nil {
		path, err = autopsy.WriteFiles(autopsy.Dir(st.repo.CommonDir()), r)
	}
	if err != nil {
		fmt.Fprintf(g.io.ErrOut, "mulligan: warning: the autopsy of run %s could not be written: %v\n", run.ID, err)
		return
	}
	_ = st.db.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.AppendEvent(run.ID, "", 0, store.EventAutopsyWritten, store.AutopsyWritten{
			Path: path, Category: r.Verdict.Category, Rule: r.Verdict.Rule,
		})
		return err
	})
	if !g.json() {
		fmt.Fprint(g.io.ErrOut, autopsy.Summary(r, displayPath(filepath.Clean(path))))
	}
}
