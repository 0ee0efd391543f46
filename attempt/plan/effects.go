package plan

import (
	"context"
	"fmt"
	"slices"

	"github.com/mulligan-dev/mulligan/compensate"
	"github.com/mulligan-dev/mulligan/store"
)

// runEffects reads a run's effect ledger, in recording order.
func runEffects(ctx context.Context, db *store.DB, run string) (es []store.Effect, err error) {
	err = db.View(ctx, func(tx *store.Tx) error {
		es, err = tx.Effects(run)
		return err
	})
	return es, err
}

// effectsAfter returns the effects of run (all, its ledger) that going back to just after
// task@n (before it when pre; to the run's base when task is "") crosses, newest first: the
// effects of every attempt that started later (and, with pre, of task@n itself) and are not
// compensated.
func effectsAfter(all []store.Effect, run *store.Run, task string, n int, pre bool) []store.Effect {
	started := map[string]int64{}
	var target int64 = -1
	for _, t := range run.Tasks {
		for _, a := range t.Attempts {
			started[fmt.Sprintf("%s@%d", t.ID, a.N)] = a.StartedAt.UnixMilli()
			if t.ID == task && a.N == n {
				target = a.StartedAt.UnixMilli()
			}
		}
	}
	return compensate.CrossedBy(all, func(e store.Effect) bool {
		if task == "" {
			return true
		}
		if e.TaskID == task && e.Attempt == n {
			return pre
		}
		s, ok := started[fmt.Sprintf("%s@%d", e.TaskID, e.Attempt)]
		return ok && s > target
	})
}

// refuseUncompensable is the check before anything changes: crossing a non-idempotent effect
// with no compensation is refused unless force.
func refuseUncompensable(crossed []store.Effect, force bool, command string) error {
	bad := compensate.Uncompensable(crossed)
	if len(bad) == 0 || force {
		return nil
	}
	return &UncompensableError{Command: command, Effects: bad}
}

// refuseReplay refuses to replay tasks whose non-idempotent side effects (of es, the run's
// ledger) are still out in the world (not compensated), unless force: the replay would do them
// again. settled says which effects the decision itself compensates before the replay.
func refuseReplay(es []store.Effect, run string, tasks []string, settled func(store.Effect) bool, force bool) error {
	if force || len(tasks) == 0 {
		return nil
	}
	var bad []store.Effect
	for _, e := range es {
		if slices.Contains(tasks, e.TaskID) && !e.Idempotent && compensate.Pending(e) && !settled(e) {
			bad = append(bad, e)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &ReplayError{Run: run, Tasks: tasks, Effects: bad}
}
