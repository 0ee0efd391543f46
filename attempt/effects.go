package attempt

import (
	"context"

	"github.com/mulligan-dev/mulligan/compensate"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// IdempotencyKey is MULLIGAN_IDEMPOTENCY_KEY: the same for every attempt of a task.
func IdempotencyKey(run, task string) string { return "mulligan-" + run + "-" + task }

// effectsWarning is the side-effect warning of attempt n of def: the non-idempotent effects
// earlier attempts recorded (for a task marked side_effects: non_idempotent, every earlier
// attempt that started has at least its implicit one).
func (r *runner) effectsWarning(ctx context.Context, def *taskfile.Task, n int) (string, error) {
	in := compensate.WarningInput{Key: IdempotencyKey(r.run.ID, def.ID)}
	err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		es, err := tx.TaskEffects(r.run.ID, def.ID)
		for _, e := range es {
			if e.Attempt < n {
				in.Effects = append(in.Effects, e)
			}
		}
		return err
	})
	if err != nil {
		return "", err
	}
	return compensate.Warning(in), nil
}
