package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// ApplyIntent is an apply into a working tree in flight: the working tree's tree before it
// (From, kept under UndoRef), the tree it writes (Tree) and the paths that differ. Settle says
// whether the task succeeds once the apply is done (a run's own apply of an isolated task).
type ApplyIntent struct {
	ID       int64
	Worktree string
	RunID    string
	TaskID   string
	Attempt  int
	UndoRef  string
	From     string
	Tree     string
	Paths    []string
	Settle   bool
	At       time.Time
}

// AddApplyIntent records an apply about to write; it returns the intent's id.
func (tx *Tx) AddApplyIntent(in ApplyIntent) (int64, error) {
	paths, err := json.Marshal(in.Paths)
	if err != nil {
		return 0, err
	}
	res, err := tx.exec(`INSERT INTO apply_intents (worktree, run_id, task_id, attempt, undo_ref, from_tree, tree, paths, settle, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, in.Worktree, in.RunID, in.TaskID, in.Attempt, in.UndoRef, in.From, in.Tree,
		string(paths), in.Settle, ms(tx.now()))
	if err != nil {
		return 0, fmt.Errorf("record the apply of %s/%s@%d: %w", in.RunID, in.TaskID, in.Attempt, err)
	}
	return res.LastInsertId()
}

// DoneApplyIntent deletes an intent whose apply is done (or rolled back).
func (tx *Tx) DoneApplyIntent(id int64) error {
	if _, err := tx.exec(`DELETE FROM apply_intents WHERE id = ?`, id); err != nil {
		return fmt.Errorf("end the apply intent %d: %w", id, err)
	}
	return nil
}

// ApplyIntents returns the intents left in worktree, oldest first.
func (tx *Tx) ApplyIntents(worktree string) ([]ApplyIntent, error) {
	rows, err := tx.query(`SELECT id, worktree, run_id, task_id, attempt, undo_ref, from_tree, tree, paths, settle, at
		FROM apply_intents WHERE worktree = ? ORDER BY id`, worktree)
	if err != nil {
		return nil, fmt.Errorf("read the apply intents of %s: %w", worktree, err)
	}
	defer rows.Close()
	var out []ApplyIntent
	for rows.Next() {
		var in ApplyIntent
		var paths string
		var at int64
		if err := rows.Scan(&in.ID, &in.Worktree, &in.RunID, &in.TaskID, &in.Attempt, &in.UndoRef, &in.From, &in.Tree, &paths, &in.Settle, &at); err != nil {
			return nil, err
		}
		if err := json.Unmarshal([]byte(paths), &in.Paths); err != nil {
			return nil, fmt.Errorf("apply intent %d: %w", in.ID, err)
		}
		in.At = fromMS(at)
		out = append(out, in)
	}
	return out, rows.Err()
}
