package store

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
)

// AppendEvent appends an event and returns its sequence number. run may be "" for an event
// about no run, task "" and attempt 0 when the event is not about one. payload is marshalled
// to JSON (json.RawMessage and []byte are taken as JSON already) and must be an object or
// nil; its keys may not be seq, time, run, task, attempt or type, which the flattened event
// object already uses, and are written in sorted order. State changes do not come this way:
// TransitionTask and TransitionRun write them. An attempt.failed event takes an AttemptFailedPayload,
// whose class may fire on_timeout, and task.silent fires on_silent (hooks.go).
func (tx *Tx) AppendEvent(run, task string, attempt int, typ string, payload any) (int64, error) {
	switch typ {
	case EventTaskStateChanged, EventSupervision:
		return 0, fmt.Errorf("append event %s: a task's state changes through TransitionTask", typ)
	case EventRunStateChanged:
		return 0, fmt.Errorf("append event %s: a run's state changes through TransitionRun", typ)
	}
	seq, err := tx.appendEvent(run, task, attempt, typ, payload)
	if err != nil {
		return 0, err
	}
	if err := tx.fireEventHooks(run, task, attempt, typ, payload, seq); err != nil {
		return 0, err
	}
	return seq, nil
}

// appendEvent inserts the event row.
func (tx *Tx) appendEvent(run, task string, attempt int, typ string, payload any) (int64, error) {
	if typ == "" {
		return 0, fmt.Errorf("append event: no type")
	}
	p, err := eventPayload(payload)
	if err != nil {
		return 0, fmt.Errorf("append event %s: %w", typ, err)
	}
	var runArg, attemptArg, payloadArg any
	if run != "" {
		runArg = run
	}
	if attempt != 0 {
		attemptArg = attempt
	}
	if p != nil {
		payloadArg = string(p)
	}
	res, err := tx.exec(`INSERT INTO events (time, run_id, task_id, attempt, type, payload_json)
		VALUES (?, ?, ?, ?, ?, ?)`, ms(tx.now()), runArg, task, attemptArg, typ, payloadArg)
	if err != nil {
		return 0, fmt.Errorf("append event %s: %w", typ, err)
	}
	return res.LastInsertId()
}

// supervisionNeeded appends task.supervision_needed for a task entering blocked or
// waiting_approval (state) for reason: the one event a watcher needs for "something waits for
// you", written by the door of the change itself, so no path that holds a task can forget it.
func (tx *Tx) supervisionNeeded(run, task string, attempt int, state TaskState, reason string) error {
	p := SupervisionNeeded{State: state, Reason: OptString(reason)}
	as, err := tx.attempts(`WHERE run_id = ? AND task_id = ? ORDER BY n DESC LIMIT 1`, run, task)
	if err != nil {
		return fmt.Errorf("supervision_needed: %w", err)
	}
	if len(as) > 0 {
		a := as[0]
		if attempt == 0 {
			attempt = a.N
		}
		if a.Class != "" {
			p.Failure = &FailureInfo{Attempt: a.N, Class: a.Class, Code: a.Code, Message: a.Message,
				Fingerprint: OptString(a.Fingerprint)}
		}
		p.Ref = a.Ref
	}
	_, err = tx.appendEvent(run, task, attempt, EventSupervision, p)
	return err
}

func eventPayload(payload any) ([]byte, error) {
	var raw []byte
	given := true // JSON the caller wrote keeps its key order
	switch p := payload.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		raw = p
	case []byte:
		raw = p
	default:
		b, err := json.Marshal(payload)
		if err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
		raw, given = b, false
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil || keys == nil {
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return nil, nil
		}
		return nil, fmt.Errorf("payload must be a JSON object")
	}
	for k := range keys {
		if eventKeys[k] {
			return nil, fmt.Errorf("payload key %q is reserved for the event itself", k)
		}
	}
	if given {
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return nil, fmt.Errorf("payload: %w", err)
		}
		return buf.Bytes(), nil
	}
	// A Go value's keys in sorted order, whether a map or a payload struct wrote them: `events`
	// has always printed them so.
	out, err := json.Marshal(keys)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	return out, nil
}

// Events returns events after afterSeq in sequence order, of one run or of all (run ""), at
// most limit of them (all when limit <= 0). A follower passes the last seq it printed.
func (tx *Tx) Events(run string, afterSeq int64, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = -1
	}
	const cols = `SELECT seq, time, run_id, task_id, attempt, type, payload_json FROM events`
	var (
		rows *sql.Rows
		err  error
	)
	if run == "" {
		rows, err = tx.query(cols+` WHERE seq > ? ORDER BY seq LIMIT ?`, afterSeq, limit)
	} else {
		rows, err = tx.query(cols+` WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`, run, afterSeq, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var (
			e       Event
			t       int64
			runID   sql.Null[string]
			attempt sql.Null[int]
			payload sql.Null[string]
		)
		if err := rows.Scan(&e.Seq, &t, &runID, &e.Task, &attempt, &e.Type, &payload); err != nil {
			return nil, fmt.Errorf("read events: %w", err)
		}
		e.Time, e.Run, e.Attempt = fromMS(t), runID.V, attempt.V
		if payload.Valid {
			e.Payload = []byte(payload.V)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// DisableAgent records that an agent is disabled for the rest of the run (auth,
// agent_missing), replacing an earlier record for the same agent. It survives the process:
// a resumed run still skips the agent.
func (tx *Tx) DisableAgent(run, agent, class, reason string) error {
	_, err := tx.exec(`INSERT INTO agent_health (run_id, agent, disabled, class, reason, at)
		VALUES (?, ?, 1, ?, ?, ?)
		ON CONFLICT (run_id, agent) DO UPDATE SET disabled = 1, class = excluded.class,
			reason = excluded.reason, at = excluded.at`,
		run, agent, class, reason, ms(tx.now()))
	if err != nil {
		return fmt.Errorf("disable agent %s in run %s: %w", agent, run, err)
	}
	return nil
}

// EnableAgent lifts DisableAgent (the operator logged in again and retries the task).
func (tx *Tx) EnableAgent(run, agent string) error {
	_, err := tx.exec(`UPDATE agent_health SET disabled = 0, at = ? WHERE run_id = ? AND agent = ?`,
		ms(tx.now()), run, agent)
	if err != nil {
		return fmt.Errorf("enable agent %s in run %s: %w", agent, run, err)
	}
	return nil
}

// DisabledAgents returns the run's disabled agents by name.
func (tx *Tx) DisabledAgents(run string) (map[string]AgentHealth, error) {
	rows, err := tx.query(`SELECT agent, class, reason, at FROM agent_health
		WHERE run_id = ? AND disabled = 1`, run)
	if err != nil {
		return nil, fmt.Errorf("read disabled agents of run %s: %w", run, err)
	}
	defer rows.Close()
	out := map[string]AgentHealth{}
	for rows.Next() {
		h := AgentHealth{Disabled: true}
		var at int64
		if err := rows.Scan(&h.Agent, &h.Class, &h.Reason, &at); err != nil {
			return nil, fmt.Errorf("read disabled agents of run %s: %w", run, err)
		}
		h.At = fromMS(at)
		out[h.Agent] = h
	}
	return out, rows.Err()
}
