package compensate

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

// runBounded runs argv directly (no shell) in dir with env, in its own process group, for at
// most timeout: then the whole group is killed, so a hook or compensation that forks a child
// cannot outlive it. It returns the combined output (its last outputLimit bytes), the exit code
// (nil when the process did not exit by itself) and an error for any failure.
func runBounded(ctx context.Context, argv []string, dir string, env []string, timeout time.Duration) (string, *int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	text := out.String()
	if len(text) > outputLimit {
		text = text[len(text)-outputLimit:]
	}
	var exit *int
	if cmd.ProcessState != nil && cmd.ProcessState.ExitCode() >= 0 {
		exit = store.Ptr(cmd.ProcessState.ExitCode())
	}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		err = fmt.Errorf("timed out after %s", timeout)
	case err != nil && exit != nil:
		err = fmt.Errorf("exit status %d", *exit)
	}
	return text, exit, err
}
