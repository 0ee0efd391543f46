package attempt

import (
	"context"

	"github.com/mulligan-dev/mulligan/attempt/store"
)

// checkpoint is where the runner, between attempts, obeys what an operator asked from another
// shell (pause, cancel). A non-nil Outcome stops the run there.
func (r *runner) checkpoint(ctx context.Context, t *store.Task) (*Outcome, error) {
	return nil, nil
}
