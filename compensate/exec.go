package compensate

import (
	"context"
	"fmt"
	"time"

	"github.com/mulligan-dev/mulligan/proc"
	"github.com/mulligan-dev/mulligan/store"
)

// runBounded runs a hook or a compensation through proc.Run: argv directly (no shell) in dir
// with env, in its own process group, for at most timeout, so one that forks a child cannot
// outlive it. It returns the combined output (its last outputLimit bytes), the exit code (nil
// when the process did not exit by itself) and an error for any failure.
func runBounded(ctx context.Context, argv []string, dir string, env []string, timeout time.Duration) (string, *int, error) {
	res := proc.Run(ctx, proc.Spec{Argv: argv, Dir: dir, Env: env, Timeout: timeout, Grace: time.Second, TailCap: outputLimit})
	text := string(res.Tail)
	var exit *int
	if res.StartErr == nil && res.ExitCode >= 0 {
		exit = store.Ptr(res.ExitCode)
	}
	var err error
	switch {
	case res.StartErr != nil:
		err = res.StartErr
	case res.TimedOut:
		err = fmt.Errorf("timed out after %s", timeout)
	case res.Cancelled:
		err = ctx.Err()
	case res.Signal != 0:
		err = fmt.Errorf("signal: %s", res.Signal)
	case *exit != 0:
		err = fmt.Errorf("exit status %d", *exit)
	}
	return text, exit, err
}
