package autopsy

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/mulligan-dev/mulligan/proc"
	"github.com/mulligan-dev/mulligan/snapshot"
)

// baseVerify is the verify command run again on the tree the task started from, before any
// agent change, in a temporary directory: when it fails there too, the verify command (or the
// tree) is the problem, not the attempts.
type baseVerify struct {
	ExitCode int
	Output   string
}

func (b *baseVerify) failed() bool { return b != nil && b.ExitCode != 0 }

// Bounds of the base check: a tree larger than this is not copied out, and the command gets
// the task's verify timeout, or this one.
const (
	maxBaseFiles   = 20000
	maxBaseBytes   = 256 << 20
	defaultBaseTTL = 5 * time.Minute
)

// checkBase runs the decisive task's verify command on its base tree when the evidence points
// at the verify command: every failure is quality_rejection. It never touches the working tree
// or the repository: the tree is written to a temporary directory that is removed afterwards.
func (f *facts) checkBase(ctx context.Context, progress io.Writer) {
	if f.repo == nil || f.def == nil || f.def.Verify == nil || len(f.def.Verify.Command) == 0 || !f.allClasses(cQuality) {
		return
	}
	if !slices.ContainsFunc(f.failed, func(a storeAttempt) bool { return a.Code != "verify_timeout" }) {
		return // every verify ran out of its time: the base would only keep the user waiting as long
	}
	base := f.baseTree()
	if base == "" {
		return
	}
	if progress != nil {
		fmt.Fprintf(progress, "autopsy: running the verify command of task %s on its base tree (in a temporary directory)\n", f.task.ID)
	}
	dir, err := os.MkdirTemp("", "mulligan-autopsy-")
	if err != nil {
		return
	}
	defer os.RemoveAll(dir)
	if err := f.repo.Materialize(snapshot.NewHash(base), dir, snapshot.MaterializeLimits{Files: maxBaseFiles, Bytes: maxBaseBytes}); err != nil {
		return
	}
	ttl := f.def.Verify.Timeout
	if ttl <= 0 {
		ttl = defaultBaseTTL
	}
	res, err := runBounded(ctx, f.def.Verify.Command, dir, ttl)
	if err != nil {
		return
	}
	f.base = res
}

// runBounded runs argv in dir through proc.Run, ended with its process group at the timeout.
// A command that cannot start or times out gives no answer (err), not a verdict.
func runBounded(ctx context.Context, argv []string, dir string, ttl time.Duration) (*baseVerify, error) {
	res := proc.Run(ctx, proc.Spec{Argv: argv, Dir: dir, Env: append(os.Environ(), "MULLIGAN_AUTOPSY_BASE_CHECK=1"),
		Timeout: ttl, Grace: time.Second, TailCap: tailBytes, MergeStreams: true})
	switch {
	case res.StartErr != nil:
		return nil, res.StartErr
	case res.TimedOut:
		return nil, context.DeadlineExceeded
	case res.Cancelled:
		return nil, ctx.Err()
	}
	out := &baseVerify{Output: string(res.Tail), ExitCode: res.ExitCode}
	if res.Signal != 0 {
		out.ExitCode = 128 // as before: a signalled command counts as a failure
	}
	return out, nil
}
