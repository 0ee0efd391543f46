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
	"github.com/mulligan-dev/mulligan/attempt/store"
	"github.com/mulligan-dev/mulligan/snapshot"
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

// detach starts this command again in the background (its own session, output appended to
// <common>/mulligan/logs/<run>/detach.log) and returns once the background process has taken
// the run (started is true for it), printing the run id and how to follow it.
func detach(ctx context.Context, g *globals, st *state, runID string, env []string, started func(run *store.Run, pid int) bool) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args, err := detachArgs(os.Args[1:])
	if err != nil {
		return err
	}
	logPath := filepath.Join(attempt.LogDir(st.repo.CommonDir(), runID), "detach.log")
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
	id := snapshot.NewID(time.Now())
	return detach(ctx, g, st, id, []string{detachRunIDEnv + "=" + id}, func(run *store.Run, pid int) bool { return true })
}

// detachResume starts `resume RUN` in the background.
func detachResume(ctx context.Context, g *globals, ref string) error {
	st, err := openState()
	if err != nil {
		return err
	}
	defer st.Close()
	id, err := st.resolveRun(ctx, ref)
	if err != nil {
		return err
	}
	run, err := st.getRun(ctx, id)
	if err != nil {
		return err
	}
	if store.RunFinished(run.State) {
		return fmt.Errorf("run %s %s: %w", run.ID, run.State, attempt.ErrRunFinished)
	}
	epoch := run.Epoch
	return detach(ctx, g, st, id, nil, func(run *store.Run, pid int) bool {
		return run.Epoch > epoch && run.Owner != nil && run.Owner.PID == pid
	})
}
