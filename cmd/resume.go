package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

func resumeCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "resume",
		Usage:     "continue a paused, parked, blocked-then-decided or dead run, in the foreground",
		ArgsUsage: "[RUN]",
		Flags: append([]cli.Flag{
			&cli.BoolFlag{Name: "now", Usage: "continue a run parked on a quota wall before its reset time (the agents try again at once)"},
			&cli.BoolFlag{Name: "force", Usage: "continue a run whose working tree moved on since it stopped (the tree is kept in an undo ref first)"},
			&cli.BoolFlag{Name: "detach", Usage: "continue in the background: print the run id and return"},
			noAutopsyFlag,
			&cli.StringFlag{Name: "mode", Value: attempt.ResumePlain, Usage: "plain; reset-attempts (a fresh retry budget for the unfinished tasks); immediate (skip a remaining backoff or quota wait)"},
		}, reloadFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("e.g. mulligan resume k3f9", "resume takes one run")
			}
			g.noAutopsy = c.Bool("no-autopsy")
			opts := resumeOptions{Ref: c.Args().First(), Mode: c.String("mode"), Now: c.Bool("now"), Force: c.Bool("force")}
			switch opts.Mode {
			case attempt.ResumePlain, attempt.ResumeResetAttempts, attempt.ResumeImmediate:
			default:
				return usageError("--mode plain, reset-attempts or immediate", "unknown resume mode %q", opts.Mode)
			}
			var err error
			if opts.Reload, opts.File, err = reloadFlag(c, "mulligan resume k3f9 --reload -f tasks.yaml"); err != nil {
				return err
			}
			if c.Bool("detach") {
				if opts.Now {
					return usageError("lift the quota wall in the foreground: mulligan resume RUN --now", "--now cannot be combined with --detach")
				}
				if opts.Reload {
					// Report an edited file's problems here; the background resume reloads it.
					if err := checkReload(c.Context, g, opts); err != nil {
						return err
					}
				}
				if !opts.Force {
					// Refused here, not in the background's log.
					if err := refuseMovedOn(c.Context, g, opts.Ref); err != nil {
						return err
					}
				}
				return detachResume(c.Context, g, opts)
			}
			return resumeRun(c.Context, g, opts)
		},
	}
}

// resumeOptions are resume's flags and argument.
type resumeOptions struct {
	Ref, Mode string
	Now       bool   // lift a quota wall before its reset time
	Reload    bool   // take the edited task file
	File      string // -f: the task file to take (with Reload)
	Force     bool   // resume over a working tree that moved on (undo ref first)
	// Epoch is the owner epoch a supervisor handed the run over at (attempt.Handoff); 0: none.
	Epoch int64
}

func init() {
	errorMappers = append(errorMappers, func(err error) error {
		var moved *attempt.TreeMovedOnError
		if errors.As(err, &moved) {
			return withHint(ExitRefused, err, moved.Hints()...)
		}
		return nil
	})
}

// refuseMovedOn refuses (exit 6) a run whose working tree moved on since it stopped.
func refuseMovedOn(ctx context.Context, g *globals, ref string) error {
	st, id, err := openRun(ctx, g, ref)
	if err != nil {
		return err
	}
	defer st.Close()
	run, err := st.getRun(ctx, id)
	if err != nil {
		return err
	}
	if store.RunFinished(run.State) {
		return nil // resume says so
	}
	why, moved, err := attempt.TreeMovedOn(ctx, st.repo, st.db, run)
	if err != nil || !moved {
		return err
	}
	return &attempt.TreeMovedOnError{Run: run.ID, Why: why}
}

func resumeRun(ctx context.Context, g *globals, opts resumeOptions) error {
	st, id, err := openRun(ctx, g, opts.Ref)
	if err != nil {
		return err
	}
	defer st.Close()
	var reload *taskfile.File
	var graft func(string) (string, error)
	if opts.Reload {
		if reload, err = prepareReload(ctx, g, st, id, opts.File); err != nil {
			return err
		}
		if graft, err = attempt.ReloadGraft(ctx, st.repo, reload); err != nil {
			return err
		}
	}
	if err := checkQuotaWait(ctx, st, id, opts.Mode, opts.Now); err != nil {
		return err
	}
	return foreground(ctx, g, st, func(ctx context.Context, env attempt.Env) (*attempt.Outcome, error) {
		return attempt.Resume(ctx, env, attempt.ResumeOptions{RunID: id, Load: loadStoredFile, Mode: opts.Mode, HandoverEpoch: opts.Epoch, Reload: reload, Graft: graft, Force: opts.Force})
	})
}

// prepareReload loads resume's edited task file and says what it changes, before the run is
// claimed; a finished or live run is refused first, as a resume without --reload would be.
func prepareReload(ctx context.Context, g *globals, st *state, id, file string) (*taskfile.File, error) {
	run, err := st.getRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if store.RunFinished(run.State) {
		return nil, fmt.Errorf("run %s %s: %w", run.ID, run.State, attempt.ErrRunFinished)
	}
	if err := attempt.CheckIdleRun(ctx, st.db, id, false); err != nil {
		return nil, err
	}
	f, p, err := loadReload(run, file, fmt.Sprintf("mulligan resume %s --reload", id))
	if err != nil {
		return nil, err
	}
	printReload(g.io.ErrOut, "resume", f, p)
	return f, nil
}

// checkReload is prepareReload in a state of its own, for resume --detach.
func checkReload(ctx context.Context, g *globals, opts resumeOptions) error {
	st, id, err := openRun(ctx, g, opts.Ref)
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = prepareReload(ctx, g, st, id, opts.File)
	return err
}

// loadStoredFile rebuilds a run's task file from the definition stored with it, so an agent
// that edited mulligan.yaml cannot change the run under way.
func loadStoredFile(run *store.Run) (*taskfile.File, error) {
	return taskfile.Parse(run.TaskFile, run.TaskFileContent)
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
		_, err := tx.AppendEvent(id, "", 0, attempt.EventQuotaLifted, store.QuotaLifted{By: "resume --now", ResumeAt: at.UTC().Format(time.RFC3339Nano)})
		return err
	})
}
