package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/scrub"
	"github.com/mulligan-dev/mulligan/store"
)

func logsCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "logs",
		Usage:     "an attempt's full output (stdout and stderr), then its verify command's output, marked",
		ArgsUsage: "ADDR",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing while the attempt runs"},
			&cli.BoolFlag{Name: "scrub", Usage: "remove secrets (tokens, values of *KEY*/*TOKEN*/*SECRET*/*PASSWORD* variables) from the output; without it the log is printed raw, as recorded"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("e.g. mulligan logs fix-tests@2", "logs takes one address [RUN/]TASK[@N]")
			}
			st, err := openState(g)
			if err != nil {
				return err
			}
			defer st.Close()
			run, a, err := st.resolveAddress(c.Context, c.Args().First())
			if err != nil {
				return err
			}
			if g.json() {
				return printLogJSON(g, run, a, c.Bool("scrub"))
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
			return printVerifyLog(g.io.Out, a)
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
			if _, err := io.Copy(g.io.Out, f); err != nil {
				return err
			}
			return printVerifyLog(g.io.Out, a)
		}
		select {
		case <-ctx.Done():
			return stoppedBySignal(ctx) // Ctrl-C exits 130, as every interrupted command does
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// printVerifyLog prints the output of the attempt's verify command after its own, under a marker
// line naming the file it comes from; nothing when verify did not run.
func printVerifyLog(w io.Writer, a *store.Attempt) error {
	path := attempt.VerifyLogPath(a.Log)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer f.Close()
	fmt.Fprintf(w, "\n--- verify output (%s) ---\n", path)
	_, err = io.Copy(w, f)
	return err
}

// logJSON is `logs -o json`: the attempt's output and its verify command's output as text.
type logJSON struct {
	Run          string `json:"run"`
	Task         string `json:"task"`
	Attempt      int    `json:"attempt"`
	State        string `json:"state"`
	Log          string `json:"log"`
	Output       string `json:"output"`
	VerifyLog    string `json:"verify_log,omitempty"`
	VerifyOutput string `json:"verify_output,omitempty"`
}

func printLogJSON(g *globals, run *store.Run, a *store.Attempt, scrubbed bool) error {
	out, err := os.ReadFile(a.Log)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return &Error{Code: ExitFailed, Msg: "the log of " + a.TaskID + " is gone (pruned by gc?)", Err: err}
		}
		return err
	}
	j := logJSON{Run: run.ID, Task: a.TaskID, Attempt: a.N, State: a.State, Log: a.Log, Output: string(out)}
	if v, err := os.ReadFile(attempt.VerifyLogPath(a.Log)); err == nil {
		j.VerifyLog, j.VerifyOutput = attempt.VerifyLogPath(a.Log), string(v)
	}
	if !scrubbed {
		return writeJSON(g.io.RawOut(), j) // the raw log, as recorded
	}
	sc := scrub.New(os.Environ())
	j.Output, j.VerifyOutput = sc.String(j.Output), sc.String(j.VerifyOutput)
	return writeJSON(g.io.Out, j)
}
