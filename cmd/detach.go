package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/urfave/cli/v2"
	"time"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// detach hands h to a mulligan process started in the background (its own session, output
// appended to <common>/mulligan/logs/<run>/detach.log) and returns once that process has taken
// the run (started is true for it), printing the run id and how to follow it.
func detach(ctx context.Context, g *globals, st *state, h *attempt.Handoff, started func(run *store.Run, pid int) bool) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if h.Dir, err = os.Getwd(); err != nil {
		return err
	}
	h.Output, h.NoAutopsy = g.output, g.noAutopsy
	cmd, logPath, err := h.Start(exe, "mulligan", st.repo.CommonDir(), "detach.log", os.Environ())
	if err != nil {
		return fmt.Errorf("start the background process: %w", err)
	}
	runID := h.Run
	pid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	took := func() bool {
		run, err := st.getRun(context.WithoutCancel(ctx), runID)
		return err == nil && started(run, pid)
	}
	deadline := time.After(30 * time.Second)
wait:
	for !took() {
		select {
		case err := <-exited:
			if took() {
				break wait // it ran the run to its end already
			}
			code := ExitFailed
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() > 0 {
				code = ee.ExitCode() // e.g. 6: refused, another run is active in this worktree
			}
			return &Error{Code: code, Msg: fmt.Sprintf("the background process exited (status %d) before it took run %s", code, runID),
				Hints: []string{"its output: " + logPath + "\n" + lastLines(logPath, 5)}}
		case <-deadline:
			break wait
		case <-time.After(20 * time.Millisecond):
		}
	}
	if g.json() {
		return writeJSON(g.io.Out, map[string]any{"run": runID, "pid": pid, "log": logPath})
	}
	fmt.Fprintf(g.io.Out, "run %s continues in the background (pid %d); its output: %s\n", runID, pid, displayPath(logPath))
	fmt.Fprintf(g.io.Out, "hint: mulligan events %s -f follows it; mulligan show %s shows it\n", runID, runID)
	return nil
}

func lastLines(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// detachRun starts `run` in the background under an id picked here.
func detachRun(ctx context.Context, g *globals, st *state, opts runOptions) error {
	h := &attempt.Handoff{Kind: attempt.HandoffRun, Run: snapshot.NewRunID(),
		File: opts.File, Tasks: opts.Tasks, AdHoc: opts.AdHoc, MaxCostUSD: opts.MaxCost, Isolate: opts.Isolate}
	return detach(ctx, g, st, h, func(run *store.Run, pid int) bool { return true })
}

// detachResume starts `resume RUN` in the background.
func detachResume(ctx context.Context, g *globals, opts resumeOptions) error {
	st, id, err := openRun(ctx, g, opts.Ref)
	if err != nil {
		return err
	}
	defer st.Close()
	run, err := st.getRun(ctx, id)
	if err != nil {
		return err
	}
	if store.RunFinished(run.State) {
		return fmt.Errorf("run %s %s: %w", run.ID, run.State, attempt.ErrRunFinished)
	}
	h := &attempt.Handoff{Kind: attempt.HandoffResume, Run: id, Mode: opts.Mode, Reload: opts.Reload, ReloadFile: opts.File, Force: opts.Force}
	return detach(ctx, g, st, h, claimedBy(run.Epoch))
}

// claimedBy is true once the background process has claimed the run: a newer owner epoch than
// epoch, held by its pid.
func claimedBy(epoch int64) func(run *store.Run, pid int) bool {
	return func(run *store.Run, pid int) bool {
		return run.Epoch > epoch && run.Owner != nil && run.Owner.PID == pid
	}
}

// detachUsage is the --detach flag of the commands that decide and then continue a run.
const detachUsage = "record the decision here, then continue the run in the background: print the run id and return"

// continueOptions say how continueRun runs the rest of a run after an operator's decision.
type continueOptions struct {
	// Force claims the run even while its owner process is alive (the decision fenced it).
	Force bool
	// Detach runs it in a background `resume RUN` instead of in this process.
	Detach bool
}

// continueRun runs the rest of the run after an operator's decision (retry-task, prompt, stop,
// timetravel --resume): in the foreground like `run`, or with Detach in the background, like
// `resume --detach`. A detached continuation with nothing left to run ends the run here instead.
func continueRun(ctx context.Context, g *globals, st *state, id string, opts continueOptions) error {
	if opts.Detach {
		run, err := st.getRun(ctx, id)
		if err != nil {
			return err
		}
		file, _ := loadStoredFile(run) // nil when unreadable: Continue reports it
		if attempt.WorkLeft(run, file) {
			return detachContinue(ctx, g, st, run, opts.Force)
		}
		fmt.Fprintf(g.io.ErrOut, "nothing remains to run in run %s: it ends here, not in the background\n", id)
	}
	err := foreground(ctx, g, st, func(ctx context.Context, env attempt.Env) (*attempt.Outcome, error) {
		return attempt.Continue(ctx, env, attempt.ContinueOptions{RunID: id, Load: loadStoredFile, Force: opts.Force})
	})
	return refuseActive(err, id)
}

// detachContinue hands the rest of a run whose operator's decision is recorded to a background
// process, which continues it as the deciding command would have (continueRun).
func detachContinue(ctx context.Context, g *globals, st *state, run *store.Run, force bool) error {
	return detach(ctx, g, st, &attempt.Handoff{Kind: attempt.HandoffContinue, Run: run.ID, Force: force}, claimedBy(run.Epoch))
}

// handoffCommand is the background half of every --detach (and of supervise's resumes): it
// takes the work a foreground process handed it (attempt.Handoff) and does it as that command
// would have in the foreground. Hidden: only mulligan starts it.
func handoffCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "__handoff",
		Hidden:    true,
		Usage:     "do the work a --detach or supervise handed to this background process",
		ArgsUsage: "FILE",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("it is started by mulligan itself (run --detach, resume --detach, supervise)", "handoff takes the hand-off file")
			}
			h, err := attempt.ReadHandoff(c.Args().First())
			if err != nil {
				return err
			}
			return runHandoff(c.Context, g, h)
		},
	}
}

func runHandoff(ctx context.Context, g *globals, h *attempt.Handoff) error {
	if err := os.Chdir(h.Dir); err != nil {
		return err
	}
	g.output, g.noAutopsy = h.Output, h.NoAutopsy
	switch h.Kind {
	case attempt.HandoffRun:
		return runRun(ctx, g, runOptions{File: h.File, Tasks: h.Tasks, AdHoc: h.AdHoc, MaxCost: h.MaxCostUSD, ID: h.Run, Isolate: h.Isolate})
	case attempt.HandoffResume:
		return resumeRun(ctx, g, resumeOptions{Ref: h.Run, Mode: h.Mode, Reload: h.Reload, File: h.ReloadFile, Force: h.Force, Epoch: h.Epoch})
	}
	st, id, err := openRun(ctx, g, h.Run)
	if err != nil {
		return err
	}
	defer st.Close()
	return continueRun(ctx, g, st, id, continueOptions{Force: h.Force})
}
