package store

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// StopTree is the tree on disk when a run last stopped without finishing.
type StopTree struct {
	Tree string
	At   time.Time
}

// SetStopTree records the tree the run leaves as it stops (blocked, parked, paused).
func (tx *Tx) SetStopTree(run, tree string, at time.Time) error {
	_, err := tx.exec(`INSERT INTO run_stop (run_id, tree, at) VALUES (?, ?, ?)
		ON CONFLICT (run_id) DO UPDATE SET tree = excluded.tree, at = excluded.at`, run, tree, ms(at))
	if err != nil {
		return fmt.Errorf("record the tree run %s stopped with: %w", run, err)
	}
	return nil
}

// GetStopTree returns the tree the run last stopped with, or nil.
func (tx *Tx) GetStopTree(run string) (*StopTree, error) {
	var s StopTree
	var at int64
	err := tx.queryRow(`SELECT tree, at FROM run_stop WHERE run_id = ?`, run).Scan(&s.Tree, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the tree run %s stopped with: %w", run, err)
	}
	s.At = fromMS(at)
	return &s, nil
}

// RunStartedAfter returns the first run other than run that started in worktree after t ("" if
// none): one that ran over the tree run left.
func (tx *Tx) RunStartedAfter(worktree, run string, t time.Time) (string, error) {
	var id string
	err := tx.queryRow(`SELECT id FROM runs WHERE worktree = ? AND id != ? AND started_at > ?
		ORDER BY started_at LIMIT 1`, worktree, run, ms(t)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the runs of %s: %w", worktree, err)
	}
	return id, nil
}
