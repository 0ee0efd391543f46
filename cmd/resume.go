package cmd

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/attempt/store"
)

func resumeCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "continue a paused, parked, blocked-then-decided or dead run, in the foreground",
		ArgsUsage: "[RUN]",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "detach", Usage: "continue in the background: print the run id and return"},
			&cli.StringFlag{Name: "mode", Value: attempt.ResumePlain, Usage: "plain; reset-attempts (a fresh retry budget for the unfinished tasks); immediate (skip a remaining backoff or quota wait)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("e.g. mulligan resume k3f9", "resume takes one run")
			}
			mode := c.String("mode")
			switch mode {
			case attempt.ResumePlain, attempt.ResumeResetAttempts, attempt.ResumeImmediate:
			default:
				return usageError("--mode plain, reset-attempts or immediate", "unknown resume mode %q", mode)
			}
			if c.Bool("detach") {
				return detachResume(c.Context, g, c.Args().First())
			}
			return runResume(c.Context, g, c.Args().First(), mode)
		},
	}
}

func runResume(ctx context.Context, g *globals, ref, mode string) error {
	st, err := openState()
	if err != nil {
		return err
	}
	defer st.Close()
	id, err := st.resolveRun(ctx, ref)
	if err != nil {
		return err
	}
	return foreground(ctx, g, st, func(ctx context.Context, env attempt.Env) (*attempt.Outcome, error) {
		return attempt.Resume(ctx, env, attempt.ResumeOptions{RunID: id, Load: loadStoredFile, Mode: mode, HandoverEpoch: handoverEpoch()})
	})
}

// loadStoredFile rebuilds a run's task file from the definition stored with it, so an agent
// that edited mulligan.yaml cannot change the run under way.
func loadStoredFile(run *store.Run) (*attempt.File, error) {
	return attempt.Parse(run.TaskFile, run.TaskFileContent)
}
