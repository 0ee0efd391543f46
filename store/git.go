package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// AttemptGit is one row of attempt_git: what an attempt changed outside the working tree. The
// JSON columns are the runner's (snapshot.GitState, []snapshot.GitChange); the store keeps them
// opaque.
type AttemptGit struct {
	RunID   string
	TaskID  string
	N       int
	Pre     []byte
	Post    []byte // nil until the attempt ended
	Changes []byte // a JSON array
	Reset   string // GitPending, GitPutBack, GitPartial, GitKept
}

// What became of an attempt's git changes.
const (
	GitPending = ""
	GitPutBack = "put_back"
	GitPartial = "partial"
	GitKept    = "kept"
)

// RecordAttemptGit records the state an attempt started from (its attempt row must exist).
func (tx *Tx) RecordAttemptGit(run, task string, n int, pre []byte) error {
	_, err := tx.exec(`INSERT INTO attempt_git (run_id, task_id, n, pre) VALUES (?, ?, ?, ?)
		ON CONFLICT (run_id, task_id, n) DO UPDATE SET pre = excluded.pre, post = NULL, changes = '[]', reset = ''`,
		run, task, n, string(pre))
	if err != nil {
		return fmt.Errorf("record the git state of %s/%s@%d: %w", run, task, n, err)
	}
	return nil
}

// SetAttemptGitPost records what the attempt changed when it ended.
func (tx *Tx) SetAttemptGitPost(run, task string, n int, post, changes []byte) error {
	if len(changes) == 0 {
		changes = []byte("[]")
	}
	res, err := tx.exec(`UPDATE attempt_git SET post = ?, changes = ? WHERE run_id = ? AND task_id = ? AND n = ?`,
		string(post), string(changes), run, task, n)
	return checkOne(res, err, "record git changes", fmt.Sprintf("attempt %s/%s@%d", run, task, n))
}

// SetAttemptGitReset records what became of the attempt's changes.
func (tx *Tx) SetAttemptGitReset(run, task string, n int, reset string) error {
	res, err := tx.exec(`UPDATE attempt_git SET reset = ? WHERE run_id = ? AND task_id = ? AND n = ?`,
		reset, run, task, n)
	return checkOne(res, err, "record git reset", fmt.Sprintf("attempt %s/%s@%d", run, task, n))
}

// AttemptGitOf returns the attempt's row, or ErrNotFound (an attempt recorded before mulligan
// kept git states, or one that never started its agent).
func (tx *Tx) AttemptGitOf(run, task string, n int) (*AttemptGit, error) {
	gs, err := tx.attemptGits(`WHERE run_id = ? AND task_id = ? AND n = ?`, run, task, n)
	if err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, fmt.Errorf("git state of %s/%s@%d: %w", run, task, n, ErrNotFound)
	}
	return &gs[0], nil
}

// PendingGit returns the task's attempts whose git changes were neither put back nor kept,
// newest first: the order in which they are put back.
func (tx *Tx) PendingGit(run, task string) ([]AttemptGit, error) {
	return tx.attemptGits(`WHERE run_id = ? AND task_id = ? AND reset = '' ORDER BY n DESC`, run, task)
}

// RunGits returns the git rows of every attempt of run.
func (tx *Tx) RunGits(run string) ([]AttemptGit, error) {
	return tx.attemptGits(`WHERE run_id = ? ORDER BY task_id, n`, run)
}

// LiveGitPres returns the recorded pre states (JSON) of the attempts of every run gc has not
// pruned: the index copies they name must stay.
func (tx *Tx) LiveGitPres() ([][]byte, error) {
	rows, err := tx.query(`SELECT g.pre FROM attempt_git g JOIN runs r ON r.id = g.run_id WHERE NOT r.pruned`)
	if err != nil {
		return nil, fmt.Errorf("read git states: %w", err)
	}
	defer rows.Close()
	var out [][]byte
	for rows.Next() {
		var pre string
		if err := rows.Scan(&pre); err != nil {
			return nil, err
		}
		out = append(out, []byte(pre))
	}
	return out, rows.Err()
}

func (tx *Tx) attemptGits(where string, args ...any) ([]AttemptGit, error) {
	rows, err := tx.query(`SELECT run_id, task_id, n, pre, post, changes, reset FROM attempt_git `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read git states: %w", err)
	}
	defer rows.Close()
	var out []AttemptGit
	for rows.Next() {
		var g AttemptGit
		var pre, changes string
		var post sql.Null[string]
		if err := rows.Scan(&g.RunID, &g.TaskID, &g.N, &pre, &post, &changes, &g.Reset); err != nil {
			return nil, err
		}
		g.Pre, g.Changes = []byte(pre), []byte(changes)
		if post.Valid {
			g.Post = []byte(post.V)
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// fillGitChanges sets GitChanges on the attempts of run (an empty list where none were recorded).
func (tx *Tx) fillGitChanges(run string, attempts []Attempt) error {
	if len(attempts) == 0 {
		return nil
	}
	rows, err := tx.query(`SELECT task_id, n, changes, reset FROM attempt_git WHERE run_id = ? AND changes != '[]'`, run)
	if err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return fmt.Errorf("read git changes of run %s: %w", run, err)
	}
	defer rows.Close()
	type key struct {
		task string
		n    int
	}
	type val struct {
		changes json.RawMessage
		reset   string
	}
	m := map[key]val{}
	for rows.Next() {
		var k key
		var c, reset string
		if err := rows.Scan(&k.task, &k.n, &c, &reset); err != nil {
			return err
		}
		m[k] = val{json.RawMessage(c), reset}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range attempts {
		v := m[key{attempts[i].TaskID, attempts[i].N}]
		attempts[i].GitChanges, attempts[i].GitReset = v.changes, v.reset
	}
	return nil
}
