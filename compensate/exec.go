package compensate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/mulligan-dev/mulligan/attempt/store"
	"github.com/mulligan-dev/mulligan/reap"
)

// runBounded runs argv directly (no shell) in dir with env, in its own process group, for at
// most timeout: then the whole tree is killed; and when it ends by itself, whatever it left
// running (in its group, setsid'd or double-forked away: reap.Tree) is ended too (SIGTERM, a
// second's grace, SIGKILL), so a hook or compensation cannot leave a process behind. It returns the combined output (its last outputLimit bytes), the exit code
// (nil when the process did not exit by itself) and an error for any failure.
func runBounded(ctx context.Context, argv []string, dir string, env []string, timeout time.Duration) (string, *int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	var tree *reap.Tree
	cmd.Cancel = func() error {
		tree.Signal(syscall.SIGKILL)
		return nil
	}
	cmd.WaitDelay = time.Second
	tree, err := reap.Start(cmd)
	if err == nil {
		err = cmd.Wait()
		tree.Terminate(time.Second)
		tree.Release()
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil // it exited by itself; what it left holding its output was ended above
	}
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
