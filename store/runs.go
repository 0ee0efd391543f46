package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Timestamps are stored as unix milliseconds: integers sort and compare in SQL without
// parsing, and millisecond precision is what durations are reported in.

func ms(t time.Time) int64 { return t.UnixMilli() }

func msOrNil(t *time.Time) any {
	if t == nil || t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func fromNullMS(v sql.Null[int64]) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMS(v.V)
	return &t
}

func fromNull[T any](v sql.Null[T]) *T {
	if !v.Valid {
		return nil
	}
	x := v.V
	return &x
}

func orNil[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func textOrNil(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

type scanner interface{ Scan(dest ...any) error }

const runCols = `id, worktree, git_dir, task_file, task_file_hash, task_file_content, base_ref,
	base_tree, state, reason, started_at, finished_at, max_cost_usd, options_json, owner_pid,
	owner_host, owner_start_ticks, owner_epoch, heartbeat_at, resumes_without_progress, pruned`

func scanRun(sc scanner) (*Run, error) {
	var (
		r                  Run
		started            int64
		finished, hb       sql.Null[int64]
		maxCost            sql.Null[float64]
		options, host      sql.Null[string]
		pid, ticks, pruned sql.Null[int64]
	)
	err := sc.Scan(&r.ID, &r.Worktree, &r.GitDir, &r.TaskFile, &r.TaskFileHash, &r.TaskFileContent,
		&r.BaseRef, &r.BaseTree, &r.State, &r.Reason, &started, &finished, &maxCost, &options,
		&pid, &host, &ticks, &r.Epoch, &hb, &r.ResumesWithoutProgress, &pruned)
	if err != nil {
		return nil, err
	}
	r.StartedAt = fromMS(started)
	r.FinishedAt = fromNullMS(finished)
	r.HeartbeatAt = fromNullMS(hb)
	r.MaxCostUSD = fromNull(maxCost)
	if options.Valid {
		r.Options = []byte(options.V)
	}
	if pid.Valid {
		r.Owner = &Owner{PID: int(pid.V), Host: host.V, StartTicks: uint64(ticks.V)}
	}
	r.Pruned = pruned.V != 0
	return &r, nil
}

// InsertRun records a new run and the tasks in r.Tasks (their Ord set to their index: task
// file order). State defaults to running and StartedAt to now. When r.Owner is set the caller
// becomes the owner at epoch 1 with a fresh heartbeat; r.Epoch and r.HeartbeatAt are updated.
func (tx *Tx) InsertRun(r *Run) error {
	if !runIDRe.MatchString(r.ID) {
		return fmt.Errorf("insert run: id %q is not [0-9a-z]+", r.ID)
	}
	if r.Worktree == "" {
		return fmt.Errorf("insert run %s: no worktree", r.ID)
	}
	if r.State == "" {
		r.State = RunRunning
	}
	if err := checkState("run", r.State, runStates); err != nil {
		return fmt.Errorf("insert run %s: %w", r.ID, err)
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = tx.now()
	}
	var pid, host, ticks any
	r.Epoch, r.HeartbeatAt = 0, nil
	if r.Owner != nil {
		pid, host, ticks = r.Owner.PID, r.Owner.Host, int64(r.Owner.StartTicks)
		now := tx.now()
		r.Epoch, r.HeartbeatAt = 1, &now
	}
	_, err := tx.exec(`INSERT INTO runs (`+runCols+`) VALUES
		(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Worktree, r.GitDir, r.TaskFile, r.TaskFileHash, r.TaskFileContent, r.BaseRef,
		r.BaseTree, r.State, r.Reason, ms(r.StartedAt), msOrNil(r.FinishedAt), orNil(r.MaxCostUSD),
		textOrNil(r.Options), pid, host, ticks, r.Epoch, msOrNil(r.HeartbeatAt),
		r.ResumesWithoutProgress, r.Pruned)
	if err != nil {
		return fmt.Errorf("insert run %s: %w", r.ID, err)
	}
	for i := range r.Tasks {
		t := &r.Tasks[i]
		t.RunID, t.Ord = r.ID, i
		if err := tx.InsertTask(t); err != nil {
			return err
		}
	}
	return nil
}

// RunHeader returns the run's row without its tasks.
func (tx *Tx) RunHeader(id string) (*Run, error) {
	r, err := scanRun(tx.queryRow(`SELECT `+runCols+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	return r, nil
}

// GetRun returns the run with its tasks in task-file order, each with its attempts in number
// order, and the run's token and cost sums.
func (tx *Tx) GetRun(id string) (*Run, error) {
	r, err := tx.RunHeader(id)
	if err != nil {
		return nil, err
	}
	r.Tasks, err = tx.tasks(`WHERE run_id = ? ORDER BY ord, id`, id)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	attempts, err := tx.attempts(`WHERE run_id = ? ORDER BY task_id, n`, id)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	if err := tx.fillGitChanges(id, attempts); err != nil {
		return nil, err
	}
	byTask := make(map[string]int, len(r.Tasks))
	for i, t := range r.Tasks {
		byTask[t.ID] = i
	}
	for _, a := range attempts {
		// the foreign key guarantees the task exists
		t := &r.Tasks[byTask[a.TaskID]]
		t.Attempts = append(t.Attempts, a)
		r.TokensIn = addp(r.TokensIn, a.TokensIn)
		r.TokensOut = addp(r.TokensOut, a.TokensOut)
		r.CostUSD = addp(r.CostUSD, a.CostUSD)
	}
	return r, nil
}

// addp adds b to a where b is known; unknown plus unknown stays unknown (null), like SQL SUM.
func addp[T int64 | float64](a, b *T) *T {
	if b == nil {
		return a
	}
	if a == nil {
		v := *b
		return &v
	}
	v := *a + *b
	return &v
}

// RunsInState returns the rows (without tasks) of every run in one of the states, oldest
// first: supervise's worklist.
func (tx *Tx) RunsInState(states ...string) ([]Run, error) {
	if len(states) == 0 {
		return nil, nil
	}
	args := make([]any, len(states))
	for i, s := range states {
		args[i] = s
	}
	rows, err := tx.query(`SELECT `+runCols+` FROM runs WHERE state IN (`+
		strings.TrimSuffix(strings.Repeat("?,", len(states)), ",")+`) ORDER BY started_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

// UpdateRun writes every field of r except the owner, epoch and heartbeat, which only
// ClaimRun, Heartbeat and FenceRun change, and the read-only sums.
//
// It refuses to change the run's state (ErrStateChange): that goes through TransitionRun.
func (tx *Tx) UpdateRun(r *Run) error {
	var stored string
	if err := tx.queryRow(`SELECT state FROM runs WHERE id = ?`, r.ID).Scan(&stored); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("update run %s: %w", r.ID, ErrNotFound)
		}
		return fmt.Errorf("update run %s: %w", r.ID, err)
	}
	if stored != r.State {
		return fmt.Errorf("update run %s from %s to %s: %w", r.ID, stored, r.State, ErrStateChange)
	}
	return tx.writeRun(r)
}

// writeRun writes the run's header: TransitionRun's, and UpdateRun's once it checked the state
// stays.
func (tx *Tx) writeRun(r *Run) error {
	if err := checkState("run", r.State, runStates); err != nil {
		return fmt.Errorf("update run %s: %w", r.ID, err)
	}
	res, err := tx.exec(`UPDATE runs SET worktree = ?, git_dir = ?, task_file = ?,
		task_file_hash = ?, task_file_content = ?, base_ref = ?, base_tree = ?, state = ?,
		reason = ?, started_at = ?, finished_at = ?, max_cost_usd = ?, options_json = ?,
		resumes_without_progress = ?, pruned = ? WHERE id = ?`,
		r.Worktree, r.GitDir, r.TaskFile, r.TaskFileHash, r.TaskFileContent, r.BaseRef, r.BaseTree,
		r.State, r.Reason, ms(r.StartedAt), msOrNil(r.FinishedAt), orNil(r.MaxCostUSD),
		textOrNil(r.Options), r.ResumesWithoutProgress, r.Pruned, r.ID)
	return checkOne(res, err, "update run", "run "+r.ID)
}

// listRunsSQL uses correlated subqueries, not a join with GROUP BY: each is a range scan of
// the primary key of tasks or attempts for one run, so the cost follows the page size, not
// the size of the history.
const listRunsSQL = `SELECT r.id, r.state, r.reason, r.worktree, r.started_at,
			r.finished_at, r.pruned,
			(SELECT count(*) FROM tasks t WHERE t.run_id = r.id),
			(SELECT count(*) FROM attempts a WHERE a.run_id = r.id),
			(SELECT sum(a.tokens_in) FROM attempts a WHERE a.run_id = r.id),
			(SELECT sum(a.tokens_out) FROM attempts a WHERE a.run_id = r.id),
			(SELECT sum(a.cost_usd) FROM attempts a WHERE a.run_id = r.id)
		FROM runs r ORDER BY r.started_at DESC, r.id DESC LIMIT ?`

// ListRuns returns up to limit runs (all when limit <= 0), newest first, with their task and
// attempt counts and spend sums.
func (tx *Tx) ListRuns(limit int) ([]RunSummary, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	rows, err := tx.query(listRunsSQL, limit)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	defer rows.Close()
	var out []RunSummary
	for rows.Next() {
		var (
			s                RunSummary
			started          int64
			finished, pruned sql.Null[int64]
			tokIn, tokOut    sql.Null[int64]
			cost             sql.Null[float64]
		)
		if err := rows.Scan(&s.ID, &s.State, &s.Reason, &s.Worktree, &started, &finished, &pruned,
			&s.Tasks, &s.Attempts, &tokIn, &tokOut, &cost); err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		s.StartedAt, s.FinishedAt = fromMS(started), fromNullMS(finished)
		s.Pruned = pruned.V != 0
		s.TokensIn, s.TokensOut, s.CostUSD = fromNull(tokIn), fromNull(tokOut), fromNull(cost)
		out = append(out, s)
	}
	return out, rows.Err()
}

// MinPrefix is the shortest run-id prefix ResolveRun accepts, as in SPEC §1.
const MinPrefix = 4

// AmbiguousError is returned when a prefix names several runs.
type AmbiguousError struct {
	Prefix     string
	Candidates []string // the first few matches, in id order
	More       bool     // there are more matches than Candidates
}

func (e *AmbiguousError) Error() string {
	more := ""
	if e.More {
		more = ", …"
	}
	return fmt.Sprintf("run prefix %q is ambiguous: it matches %s%s", e.Prefix, strings.Join(e.Candidates, ", "), more)
}

// Is makes errors.Is(err, ErrAmbiguous) true.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// ResolveRun turns what the user typed into a run id: "" or "last" is the newest run (of
// worktree, when worktree is not ""), anything else a full id or a unique prefix of at least
// MinPrefix characters. The prefix is matched against every run of the repository, whatever
// its worktree, because ids are unique there.
func (tx *Tx) ResolveRun(ref, worktree string) (string, error) {
	if ref == "" || ref == "last" {
		var (
			id  string
			err error
		)
		if worktree == "" {
			err = tx.queryRow(`SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT 1`).Scan(&id)
		} else {
			err = tx.queryRow(`SELECT id FROM runs WHERE worktree = ?
				ORDER BY started_at DESC, id DESC LIMIT 1`, worktree).Scan(&id)
		}
		if errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("no runs yet: %w", ErrNotFound)
		}
		if err != nil {
			return "", fmt.Errorf("find the last run: %w", err)
		}
		return id, nil
	}
	if !runIDRe.MatchString(ref) {
		return "", fmt.Errorf("no run %q (run ids are lowercase letters and digits): %w", ref, ErrNotFound)
	}
	var id string
	err := tx.queryRow(`SELECT id FROM runs WHERE id = ?`, ref).Scan(&id)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("find run %s: %w", ref, err)
	}
	if len(ref) < MinPrefix {
		return "", fmt.Errorf("%q: give at least %d characters of the run id: %w", ref, MinPrefix, ErrShortPrefix)
	}
	// A range on the primary key rather than LIKE, which is case-insensitive and so cannot
	// use the index. '~' sorts after every character an id may contain.
	const show = 10
	rows, err := tx.query(`SELECT id FROM runs WHERE id > ? AND id < ? ORDER BY id LIMIT ?`,
		ref, ref+"~", show+1)
	if err != nil {
		return "", fmt.Errorf("find run %s: %w", ref, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		if err := rows.Scan(&id); err != nil {
			return "", fmt.Errorf("find run %s: %w", ref, err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return "", fmt.Errorf("find run %s: %w", ref, err)
	}
	switch {
	case len(ids) == 0:
		return "", fmt.Errorf("no run %q: %w", ref, ErrNotFound)
	case len(ids) == 1:
		return ids[0], nil
	}
	return "", &AmbiguousError{Prefix: ref, Candidates: ids[:min(len(ids), show)], More: len(ids) > show}
}

// checkOne turns an UPDATE or DELETE that should touch exactly one row into an error when it
// touched none.
func checkOne(res sql.Result, err error, op, what string) error {
	if err != nil {
		return fmt.Errorf("%s: %s: %w", op, what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s: %s: %w", op, what, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %s: %w", op, what, ErrNotFound)
	}
	return nil
}

func marshalNeeds(needs []string) (string, error) {
	if needs == nil {
		needs = []string{}
	}
	b, err := json.Marshal(needs)
	return string(b), err
}

// RunsWithTask returns, newest first, up to limit runs that have a task named task: what a bare
// task name in an address resolves against.
func (tx *Tx) RunsWithTask(task string, limit int) ([]string, error) {
	rows, err := tx.query(`SELECT r.id FROM runs r JOIN tasks t ON t.run_id = r.id WHERE t.id = ?
		ORDER BY r.started_at DESC, r.id DESC LIMIT ?`, task, limit)
	if err != nil {
		return nil, fmt.Errorf("find the runs of task %s: %w", task, err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// RecentTaskIDs returns the task names of the newest runs (up to runs of them), newest run
// first, each name once: the candidates an unknown task name is answered with.
func (tx *Tx) RecentTaskIDs(runs int) ([]string, error) {
	rows, err := tx.query(`SELECT t.id FROM tasks t JOIN (SELECT id, started_at FROM runs
		ORDER BY started_at DESC, id DESC LIMIT ?) r ON t.run_id = r.id
		ORDER BY r.started_at DESC, r.id DESC, t.ord`, runs)
	if err != nil {
		return nil, fmt.Errorf("list recent tasks: %w", err)
	}
	defer rows.Close()
	var ids []string
	seen := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, rows.Err()
}
