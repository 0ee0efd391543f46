package attempt

import (
	"context"
	"fmt"
	"time"

	"github.com/mulligan-dev/mulligan/snapshot"
)

// cancelGrace bounds the filters of the snapshot taken after a cancel (the tree a cancelled
// attempt left is still kept) when the task has no timeout of its own.
const cancelGrace = time.Minute

// snapshotCtx is the context of a snapshot or reset: never cancelled itself (the tree a
// cancelled or timed-out attempt left is exactly what must be kept), but the clean and smudge
// filters it runs are bounded like every process mulligan starts — by the task's timeout, and by
// a cancel that arrives while they run (after a cancel, by cancelGrace).
func (r *runner) snapshotCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	bound, cancel := context.Context(ctx), context.CancelFunc(func() {})
	if ctx.Err() != nil {
		bound, cancel = context.WithTimeoutCause(context.WithoutCancel(ctx), cancelGrace,
			fmt.Errorf("the run was cancelled and filters get %s to finish", cancelGrace))
	}
	if d := r.filterTimeout(); d > 0 {
		b, c := context.WithTimeoutCause(bound, d, fmt.Errorf("the task's timeout (%s) passed", d))
		prev := cancel
		bound, cancel = b, func() { c(); prev() }
	}
	return snapshot.WithFilterBound(context.WithoutCancel(ctx), bound), cancel
}

// filterTimeout is the current task's timeout; before any task (the run's base snapshot), the
// longest timeout of the run's tasks when every one has a timeout; 0 for none.
func (r *runner) filterTimeout() time.Duration {
	if r.file == nil || r.run == nil {
		return 0 // a runner that only records (cancel or kill of a dead run) has no task file
	}
	if r.current != "" {
		if def := r.file.Task(r.current); def != nil {
			return def.Timeout
		}
	}
	var longest time.Duration
	for _, t := range r.run.Tasks {
		def := r.file.Task(t.ID)
		if def == nil || def.Timeout == 0 {
			return 0
		}
		longest = max(longest, def.Timeout)
	}
	return longest
}
