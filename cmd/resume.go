package cmd

import (
	"context"
	"fmt"
	"time"

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
			&cli.BoolFlag{Name: "now", Usage: "continue a run parked on a quota wall before its reset time (the agents try again at once)"},
			&cli.BoolFlag{Name: "detach", Usage: "continue in the background: print the run id and return"},
			&cli.StringFlag{Name: "mode", Value: attempt.ResumePlain, Usage: "plain; reset-attempts (a fresh retry budget for the unfinished tasks); immediate (skip a remaining backoff or quota wait)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("e.g. mulligan resume k3f9", "resume takes one run")
			}
			if decided, force := detachedContinue(); decided {
				return resumeDecided(c.Context, g, c.Args().First(), force)
			}
			mode := c.String("mode")
			switch mode {
			case attempt.ResumePlain, attempt.ResumeResetAttempts, attempt.ResumeImmediate:
			default:
				return usageError("--mode plain, reset-attempts or immediate", "unknown resume mode %q", mode)
			}
			if c.Bool("detach") {
				if c.Bool("now") {
					return usageError("lift the quota wall in the foreground: mulligan resume RUN --now", "--now cannot be combined with --detach")
				}
				return detachResume(c.Context, g, c.Args().First())
			}
			return resumeRun(c.Context, g, c.Args().First(), mode, c.Bool("now"))
		},
	}
}

func runResume(ctx context.Context, g *globals, ref, mode string) error {
	return resumeRun(ctx, g, ref, mode, false)
}

// resumeRun is runResume with `--now` (quotaNow): lift a quota wall before its reset time.
func resumeRun(ctx context.Context, g *globals, ref, mode string, quotaNow bool) error {
	st, id, err := openRun(ctx, ref)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := checkQuotaWait(ctx, st, id, mode, quotaNow); err != nil {
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

// checkQuotaWait refuses to resume a run parked on a quota wall before its reset time, saying when
// it will be possible; `--now` (or `--mode immediate`) lifts the walls instead, recorded as a
// quota.lifted event the runner reads.
func checkQuotaWait(ctx context.Context, st *state, id, mode string, quotaNow bool) error {
	run, err := st.getRun(ctx, id)
	if err != nil {
		return err
	}
	if run.State != store.RunWaitingQuota {
		return nil
	}
	var at *time.Time
	for _, t := range run.Tasks {
		if t.State == store.TaskWaitingQuota && t.ResumeAt != nil && (at == nil || t.ResumeAt.Before(*at)) {
			at = t.ResumeAt
		}
	}
	now := time.Now()
	if at == nil || !at.After(now) || mode == attempt.ResumeImmediate {
		return nil
	}
	if !quotaNow {
		return &Error{Code: ExitParked,
			Msg:   fmt.Sprintf("run %s waits for a quota reset until %s (in %s)", id, at.UTC().Format(time.RFC3339), at.Sub(now).Round(time.Second)),
			Hints: []string{fmt.Sprintf("mulligan resume %s after that, or mulligan resume %s --now to try at once", id, id)}}
	}
	return st.db.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.AppendEvent(id, "", 0, attempt.EventQuotaLifted, map[string]any{"by": "resume --now", "resume_at": at.UTC().Format(time.RFC3339Nano)})
		return err
	})
}
