package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// detachRunIDEnv hands `run --detach`'s background process the id the foreground one printed.
const detachRunIDEnv = "MULLIGAN_DETACH_RUN_ID"

// detachedRunID reads (and removes from the environment agents inherit) the id picked by the
// `run --detach` that started this process; "" when none.
func detachedRunID() string {
	v := os.Getenv(detachRunIDEnv)
	os.Unsetenv(detachRunIDEnv)
	return v
}

// detachArgs is this command line for the background process: the same arguments without
// --detach and without -C (the background process starts in the directory -C chose, passed as
// an absolute -C). Nothing after `--` is touched.
func detachArgs(args []string) ([]string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	out := []string{"-C", wd}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...), nil
		case a == "--detach" || a == "-detach" || a == "--detach=true" || a == "-detach=true":
			continue
		case a == "-C" || a == "--C":
			i++ // and its value
			continue
		case strings.HasPrefix(a, "-C=") || strings.HasPrefix(a, "--C="):
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

// detach starts mulligan with args in the background (its own session, output appended to
// <common>/mulligan/logs/<run>/detach.log) and returns once the background process has taken
// the run (started is true for it), printing the run id and how to follow it.
func detach(ctx context.Context, g *globals, st *state, runID string, args, env []string, started func(run *store.Run, pid int) bool) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	logDir, err := attempt.LogDir(st.repo.CommonDir(), runID)
	if err != nil {
		return err
	}
	logPath := filepath.Join(logDir, "detach.log")
	cmd, err := attempt.StartDetached(exe, append([]string{os.Args[0]}, args...), append(os.Environ(), env...), "", logPath)
	if err != nil {
		return fmt.Errorf("start the background process: %w", err)
	}
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
func detachRun(ctx context.Context, g *globals, st *state) error {
	args, err := detachArgs(os.Args[1:])
	if err != nil {
		return err
	}
	id := snapshot.NewRunID()
	return detach(ctx, g, st, id, args, []string{detachRunIDEnv + "=" + id}, func(run *store.Run, pid int) bool { return true })
}

// detachResume starts `resume RUN` in the background.
func detachResume(ctx context.Context, g *globals, ref string) error {
	st, id, err := openRun(ctx, ref)
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
	args, err := detachArgs(os.Args[1:])
	if err != nil {
		return err
	}
	return detach(ctx, g, st, id, args, nil, claimedBy(run.Epoch))
}

// claimedBy is true once the background process has claimed the run: a newer owner epoch than
// epoch, held by its pid.
func claimedBy(epoch int64) func(run *store.Run, pid int) bool {
	return func(run *store.Run, pid int) bool {
		return run.Epoch > epoch && run.Owner != nil && run.Owner.PID == pid
	}
}

// detachContinueEnv tells the background `resume RUN` started by detachContinue that the run
// continues after an operator's decision this process recorded: "decided", or "force" when the
// decision was taken with --force (a live owner was fenced and is taken over).
const detachContinueEnv = "MULLIGAN_DETACH_CONTINUE"

// detachedContinue reads (and removes from the environment agents inherit) detachContinueEnv.
func detachedContinue() (set, force bool) {
	v := os.Getenv(detachContinueEnv)
	os.Unsetenv(detachContinueEnv)
	return v != "", v == "force"
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

// detachContinue starts `resume RUN` in the background for a run whose operator's decision is
// recorded; that process continues it as the deciding command would have (continueRun).
func detachContinue(ctx context.Context, g *globals, st *state, run *store.Run, force bool) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	how := "decided"
	if force {
		how = "force"
	}
	args := []string{"-C", wd, "-o", g.output, "resume", run.ID}
	if g.noAutopsy {
		args = append(args, "--no-autopsy")
	}
	return detach(ctx, g, st, run.ID, args, []string{detachContinueEnv + "=" + how}, claimedBy(run.Epoch))
}

// resumeDecided is the background half of detachContinue.
func resumeDecided(ctx context.Context, g *globals, ref string, force bool) error {
	st, id, err := openRun(ctx, ref)
	if err != nil {
		return err
	}
	defer st.Close()
	return continueRun(ctx, g, st, id, continueOptions{Force: force})
}
