package attempt

import (
	"context"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// claim is how a process takes over a run it did not start (resume, continue): in one
// transaction it claims the run by compare-and-swap on the owner epoch (two claimers cannot
// both win; the old owner's writes fail from then on), takes the worktree lock, lets the
// caller change the run (apply), and records the run running with a run.state_changed event.
// Then the new runner ends and records what the previous owner left running.
type claim struct {
	reason string                 // the run.state_changed reason: "resumed", "continued"
	alive  func(store.Owner) bool // whether the worktree lock's holder still runs
	// apply runs in the claiming transaction once the run is claimed and the tree locked; hdr
	// is the run's header as the transaction reads it (apply may change it: it is written
	// after). It returns the run to execute, nil for run as read before the claim.
	apply func(tx *store.Tx, hdr *store.Run) (*store.Run, error)
}

// claimRun claims run (as read, with its epoch) for this process and returns the runner that
// executes the rest of it with file.
func claimRun(ctx context.Context, env Env, run *store.Run, file *taskfile.File, c claim) (*runner, error) {
	self := store.Self()
	var epoch int64
	claimed := run
	err := env.DB.Update(ctx, func(tx *store.Tx) error {
		claimed = run
		var err error
		if epoch, err = tx.ClaimRun(run.ID, run.Epoch, self); err != nil {
			return err
		}
		if err := tx.AcquireWorktreeLock(run.Worktree, run.ID, self, c.alive); err != nil {
			return err
		}
		hdr, err := tx.RunHeader(run.ID)
		if err != nil {
			return err
		}
		if c.apply != nil {
			r, err := c.apply(tx, hdr)
			if err != nil {
				return err
			}
			if r != nil {
				claimed = r
			}
		}
		// The run's row keeps no reason for running; the event says why it runs again.
		_, err = tx.TransitionRun(run.ID, store.RunTransition{To: store.RunRunning, Cause: c.reason, Row: hdr,
			Event: store.RunStateChanged{PID: self.PID, Host: self.Host}})
		return err
	})
	if err != nil {
		return nil, activeError(err)
	}
	run = claimed
	run.Epoch, run.State, run.Reason, run.FinishedAt = epoch, store.RunRunning, "", nil
	r := newRunner(env, file, run)
	if err := r.recoverInterrupted(ctx); err != nil {
		return nil, err
	}
	if err := r.recoverApplies(ctx); err != nil {
		return nil, err
	}
	return r, nil
}
