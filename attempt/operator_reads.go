package attempt

import (
	"context"

	"github.com/mulligan-dev/mulligan/store"
)

// Reads the operator's plans (package attempt/plan) make before they change anything: the same
// checks as the state changes they precede, in a read transaction.

// StopBase checks that `mulligan stop` can decide task (it is blocked, the run is idle) and
// returns the tree StopTask will leave the working tree at: the task's base, or "" when nothing
// is to be put back (independent tasks went on from that base since: the tree holds their work
// and none of the task's edits).
func StopBase(ctx context.Context, db *store.DB, runID, task string) (base string, err error) {
	err = db.View(ctx, func(tx *store.Tx) error {
		run, t, err := heldTask(tx, runID, task, store.TaskBlocked, ErrNotBlocked)
		if err != nil {
			return err
		}
		if !workLandedSince(run, t) {
			base = t.BaseTree
		}
		return nil
	})
	return base, err
}
