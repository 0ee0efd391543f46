package attempt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// GCRun is one run gc pruned (or, on a dry run, would prune).
type GCRun struct {
	ID         string    `json:"id"`
	State      string    `json:"state"`
	FinishedAt time.Time `json:"finished_at"`
	Refs       []string  `json:"refs"`
	Logs       string    `json:"logs"` // the run's log directory, "" when it has none
}

// GCOptions are the inputs of GC.
type GCOptions struct {
	OlderThan time.Duration
	Now       time.Time
	DryRun    bool
}

// GC deletes the refs (refs/mulligan/runs/<run>/…) and logs of runs that finished more than
// OlderThan ago and marks their rows pruned; their rows, attempts and events stay. A run that has
// not finished is never touched.
func GC(ctx context.Context, repo *snapshot.Repo, db *store.DB, opts GCOptions) ([]GCRun, error) {
	var runs []store.Run
	if err := db.View(ctx, func(tx *store.Tx) error {
		var err error
		runs, err = tx.RunsInState(store.RunSucceeded, store.RunFailed, store.RunCancelled)
		return err
	}); err != nil {
		return nil, err
	}
	cutoff := opts.Now.Add(-opts.OlderThan)
	out := []GCRun{}
	for _, run := range runs {
		if run.Pruned || run.FinishedAt == nil || !run.FinishedAt.Before(cutoff) {
			continue
		}
		prefix := snapshot.RunPrefix(run.ID)
		refs, err := repo.Refs(prefix)
		if err != nil {
			return out, err
		}
		g := GCRun{ID: run.ID, State: run.State, FinishedAt: *run.FinishedAt, Refs: []string{}}
		for _, r := range refs {
			g.Refs = append(g.Refs, r.Name)
		}
		logs := filepath.Join(repo.CommonDir(), "mulligan", "logs", run.ID)
		if _, err := os.Stat(logs); err == nil {
			g.Logs = logs
		}
		if opts.DryRun {
			out = append(out, g)
			continue
		}
		// Mark first, in a transaction that re-checks the run is still finished: a retry-task or
		// timetravel that revived it since the listing wins, and gc leaves it alone.
		revived := false
		err = db.Update(ctx, func(tx *store.Tx) error {
			hdr, err := tx.RunHeader(run.ID)
			if err != nil {
				return err
			}
			if !store.RunFinished(hdr.State) {
				revived = true
				return nil
			}
			hdr.Pruned = true
			if err := tx.UpdateRun(hdr); err != nil {
				return err
			}
			_, err = tx.AppendEvent(run.ID, "", 0, "run.pruned", map[string]any{"refs": len(g.Refs), "who": Who()})
			return err
		})
		if err != nil {
			return out, err
		}
		if revived {
			continue
		}
		for _, r := range refs {
			if err := repo.DeleteRef(r.Name, r.Hash); err != nil && !errors.Is(err, snapshot.ErrRefNotFound) {
				return out, fmt.Errorf("gc run %s: %w", run.ID, err)
			}
		}
		if g.Logs != "" {
			if err := os.RemoveAll(g.Logs); err != nil {
				return out, fmt.Errorf("gc run %s: %w", run.ID, err)
			}
		}
		out = append(out, g)
	}
	return out, nil
}
