package cmd

import (
	"context"
	"errors"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt/store"
)

func logsCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "an attempt's full output (stdout and stderr)",
		ArgsUsage: "ADDR",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing while the attempt runs"},
			&cli.BoolFlag{Name: "scrub", Usage: "remove secrets (tokens, values of *KEY*/*TOKEN*/*SECRET*/*PASSWORD* variables) from the output; without it the log is printed raw, as recorded"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("e.g. mulligan logs fix-tests@2", "logs takes one address [RUN/]TASK[@N]")
			}
			st, err := openState()
			if err != nil {
				return err
			}
			defer st.Close()
			run, a, err := st.resolveAddress(c.Context, c.Args().First())
			if err != nil {
				return err
			}
			if !c.Bool("scrub") {
				// The raw log is the one output printed as recorded (SPEC §7).
				out := g.io.Out
				g.io.Out = g.io.RawOut()
				defer func() { g.io.Out = out }()
			}
			return printLog(c.Context, g, st, run, a, c.Bool("follow"))
		},
	}
}

func printLog(ctx context.Context, g *globals, st *state, run *store.Run, a *store.Attempt, follow bool) error {
	f, err := os.Open(a.Log)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return &Error{Code: ExitFailed, Msg: "the log of " + a.TaskID + " is gone (pruned by gc?)", Err: err}
		}
		return err
	}
	defer f.Close()
	for {
		if _, err := io.Copy(g.io.Out, f); err != nil {
			return err
		}
		if !follow {
			return nil
		}
		var cur *store.Attempt
		if err := st.db.View(ctx, func(tx *store.Tx) error {
			var err error
			cur, err = tx.Attempt(run.ID, a.TaskID, a.N)
			return err
		}); err != nil {
			return err
		}
		if cur.State != store.AttemptRunning {
			_, err := io.Copy(g.io.Out, f)
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
}
