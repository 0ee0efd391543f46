package store

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The inventory (`mulligan tasks`): tasks across every run of the database, by state, newest
// first, a page at a time.

// ReasonNothingChanged is the reason of a task that succeeded without changing a file, with no
// verify to say it had nothing to change: it needs a person's look too.
const ReasonNothingChanged = "nothing-changed"

// StateAttention is the inventory's union of what waits for a person: blocked, waiting_approval,
// tasks whose attempt raised its silence flag, and tasks that succeeded without changing a file.
const StateAttention = "attention"

// InventoryStates are the states `tasks --state` takes.
var InventoryStates = []string{TaskBlocked, TaskWaitingQuota, TaskWaitingApproval, TaskBackoff, TaskRunning, TaskPaused, StateAttention}

// ErrBadCursor: a cursor this database did not hand out.
var ErrBadCursor = errors.New("invalid cursor")

// InventoryQuery selects the inventory's rows.
type InventoryQuery struct {
	States []string // empty: every state of InventoryStates
	Run    string   // "" : every run
	Limit  int
	Cursor string // "" : the first page
}

// InventoryRow is one task of the inventory. Since is when it last changed: its latest attempt's
// end (or start), else the task's or the run's start.
type InventoryRow struct {
	Run      string
	Worktree string
	Task     Task // without its attempts
	Since    time.Time
	Attempts int
	Latest   *Attempt // the latest attempt, nil when none
}

// Inventory returns a page of the tasks in q.States, newest first (ties by run id, then task
// id), and the cursor of the next page ("" on the last one).
func (tx *Tx) Inventory(q InventoryQuery) ([]InventoryRow, string, error) {
	states := q.States
	if len(states) == 0 {
		states = InventoryStates
	}
	var conds []string
	var args []any
	for _, s := range states {
		switch {
		case s == StateAttention:
			conds = append(conds, `t.state IN ('blocked', 'waiting_approval')`, `(t.silent_at IS NOT NULL AND t.state = 'running')`,
				`(t.state = 'succeeded' AND t.reason = '`+ReasonNothingChanged+`')`)
		case checkState("task", s, taskStates) == nil:
			conds = append(conds, `t.state = ?`)
			args = append(args, s)
		default:
			return nil, "", fmt.Errorf("unknown task state %q", s)
		}
	}
	where := "(" + strings.Join(conds, " OR ") + ")"
	if q.Run != "" {
		where += ` AND t.run_id = ?`
		args = append(args, q.Run)
	}
	if q.Cursor != "" {
		since, run, task, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, "", err
		}
		where += ` AND (since < ? OR (since = ? AND (t.run_id < ? OR (t.run_id = ? AND t.id > ?))))`
		args = append(args, since, since, run, run, task)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	args = append(args, limit+1)
	rows, err := tx.query(`SELECT `+prefixed("t.", taskCols)+`, r.worktree,
			coalesce((SELECT max(coalesce(a.finished_at, a.started_at)) FROM attempts a
				WHERE a.run_id = t.run_id AND a.task_id = t.id), t.started_at, r.started_at) AS since,
			(SELECT count(*) FROM attempts a WHERE a.run_id = t.run_id AND a.task_id = t.id)
		FROM tasks t JOIN runs r ON r.id = t.run_id
		WHERE `+where+`
		ORDER BY since DESC, t.run_id DESC, t.id ASC
		LIMIT ?`, args...)
	if err != nil {
		return nil, "", fmt.Errorf("read the inventory: %w", err)
	}
	defer rows.Close()
	var out []InventoryRow
	for rows.Next() {
		var row InventoryRow
		var since int64
		t, err := scanTask(scanFunc(func(dest ...any) error {
			return rows.Scan(append(dest, &row.Worktree, &since, &row.Attempts)...)
		}))
		if err != nil {
			return nil, "", fmt.Errorf("read the inventory: %w", err)
		}
		row.Run, row.Task, row.Since = t.RunID, t, fromMS(since)
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("read the inventory: %w", err)
	}
	rows.Close()
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[len(out)-1]
		next = encodeCursor(ms(last.Since), last.Run, last.Task.ID)
	}
	for i := range out {
		as, err := tx.attempts(`WHERE run_id = ? AND task_id = ? ORDER BY n DESC LIMIT 1`, out[i].Run, out[i].Task.ID)
		if err != nil {
			return nil, "", fmt.Errorf("read the inventory: %w", err)
		}
		if len(as) > 0 {
			out[i].Latest = &as[0]
		}
	}
	return out, next, nil
}

// scanFunc adapts a Scan function to the scanner the row readers take.
type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

func prefixed(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}

// A cursor is the sort key of the last row of a page, opaque to the user.
func encodeCursor(since int64, run, task string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(since, 10) + "/" + run + "/" + task))
}

func decodeCursor(c string) (since int64, run, task string, err error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", "", fmt.Errorf("%w %q", ErrBadCursor, c)
	}
	parts := strings.SplitN(string(b), "/", 3)
	if len(parts) != 3 {
		return 0, "", "", fmt.Errorf("%w %q", ErrBadCursor, c)
	}
	if since, err = strconv.ParseInt(parts[0], 10, 64); err != nil || !runIDRe.MatchString(parts[1]) || !taskIDRe.MatchString(parts[2]) {
		return 0, "", "", fmt.Errorf("%w %q", ErrBadCursor, c)
	}
	return since, parts[1], parts[2], nil
}
