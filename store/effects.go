package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Effect states (SPEC §9 effects -o json).
const (
	EffectRecorded           = "recorded"
	EffectCompensated        = "compensated"
	EffectCompensationFailed = "compensation_failed"
	EffectUnresolved         = "unresolved"
	// EffectCompensating is not a SPEC state: a revert or timetravel decided to compensate the
	// effect and has not recorded the outcome yet. It outlives a crash, so the compensation is
	// owed and `mulligan compensate` delivers it again. JSON shows it as recorded.
	EffectCompensating = "compensating"
)

var effectStates = []string{EffectRecorded, EffectCompensated, EffectCompensationFailed, EffectUnresolved, EffectCompensating}

// Effect is one row of the effect ledger: a side effect an attempt recorded, with the argv
// that undoes it (nil: it cannot be undone) and what became of it.
type Effect struct {
	ID         int64
	RunID      string
	TaskID     string
	Attempt    int
	Name       string
	Idempotent bool
	Compensate []string
	Data       json.RawMessage // nil: no data
	State      string
	DeliveryID string // "<run>-<id>": the same on every delivery of its compensation
	Output     string // the compensation's output, once it ran
	RecordedAt time.Time
	ResolvedAt *time.Time
	// Implicit marks the possible effect the runner records for every started attempt of a
	// task marked `side_effects: non_idempotent` (Name ImplicitEffect, no compensation): the
	// attempt may have acted on the world without saying how. An effect the attempt records
	// itself replaces it.
	Implicit bool
}

// ImplicitEffect is the name of an attempt's implicit effect.
const ImplicitEffect = "attempt"

const effectCols = `id, run, task, attempt, name, idempotent, compensate, data, state, delivery_id,
	output, recorded_at, resolved_at, implicit`

func scanEffect(sc scanner) (Effect, error) {
	var (
		e          Effect
		comp, data string
		recorded   int64
		resolved   sql.Null[int64]
	)
	err := sc.Scan(&e.ID, &e.RunID, &e.TaskID, &e.Attempt, &e.Name, &e.Idempotent, &comp, &data,
		&e.State, &e.DeliveryID, &e.Output, &recorded, &resolved, &e.Implicit)
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(comp), &e.Compensate); err != nil {
		return e, fmt.Errorf("effect %d: compensate: %w", e.ID, err)
	}
	if data != "null" && data != "" {
		e.Data = json.RawMessage(data)
	}
	e.RecordedAt, e.ResolvedAt = fromMS(recorded), fromNullMS(resolved)
	return e, nil
}

// RecordEffect appends an effect of an attempt that exists and fills ID, DeliveryID, State
// and RecordedAt. Data, when set, must be valid JSON. The first effect an attempt records
// itself takes over the attempt's implicit one (while still recorded), its id and delivery id
// included: it is the finer account of what the attempt did.
func (tx *Tx) RecordEffect(e *Effect) error {
	if e.Implicit {
		e.Name, e.Idempotent, e.Compensate = ImplicitEffect, false, nil
	}
	if e.Name == "" {
		return fmt.Errorf("record effect: no name")
	}
	if _, err := tx.Attempt(e.RunID, e.TaskID, e.Attempt); err != nil {
		return fmt.Errorf("record effect %s: %w", e.Name, err)
	}
	comp := e.Compensate
	if comp == nil {
		comp = []string{}
	}
	cb, err := json.Marshal(comp)
	if err != nil {
		return err
	}
	data := "null"
	if len(e.Data) > 0 {
		if !json.Valid(e.Data) {
			return fmt.Errorf("record effect %s: data is not valid JSON", e.Name)
		}
		data = string(e.Data)
	}
	e.State = EffectRecorded
	e.RecordedAt = tx.now()
	if !e.Implicit {
		var id int64
		err := tx.queryRow(`SELECT id FROM effects WHERE run = ? AND task = ? AND attempt = ?
			AND implicit = 1 AND state = ? ORDER BY id LIMIT 1`, e.RunID, e.TaskID, e.Attempt, EffectRecorded).Scan(&id)
		switch {
		case err == nil:
			res, err := tx.exec(`UPDATE effects SET name = ?, idempotent = ?, compensate = ?, data = ?,
				recorded_at = ?, implicit = 0 WHERE id = ?`, e.Name, e.Idempotent, string(cb), data, ms(e.RecordedAt), id)
			if err := checkOne(res, err, "record", fmt.Sprintf("effect %d", id)); err != nil {
				return err
			}
			e.ID, e.DeliveryID = id, e.RunID+"-"+strconv.FormatInt(id, 10)
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("record effect %s: %w", e.Name, err)
		}
	}
	res, err := tx.exec(`INSERT INTO effects (run, task, attempt, name, idempotent, compensate, data,
		state, recorded_at, implicit) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.RunID, e.TaskID, e.Attempt, e.Name,
		e.Idempotent, string(cb), data, e.State, ms(e.RecordedAt), e.Implicit)
	if err != nil {
		return fmt.Errorf("record effect %s: %w", e.Name, err)
	}
	if e.ID, err = res.LastInsertId(); err != nil {
		return err
	}
	e.DeliveryID = e.RunID + "-" + strconv.FormatInt(e.ID, 10)
	_, err = tx.exec(`UPDATE effects SET delivery_id = ? WHERE id = ?`, e.DeliveryID, e.ID)
	return err
}

// DropImplicitEffect deletes the implicit effect of an attempt while nothing has been decided
// about it (state recorded): the attempt's agent never started.
func (tx *Tx) DropImplicitEffect(run, task string, attempt int) error {
	_, err := tx.exec(`DELETE FROM effects WHERE run = ? AND task = ? AND attempt = ? AND implicit = 1
		AND state = ?`, run, task, attempt, EffectRecorded)
	return err
}

func (tx *Tx) effects(where string, args ...any) ([]Effect, error) {
	rows, err := tx.query(`SELECT `+effectCols+` FROM effects `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Effect
	for rows.Next() {
		e, err := scanEffect(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// Effects returns a run's effects in the order they were recorded (all runs' when run is "").
func (tx *Tx) Effects(run string) ([]Effect, error) {
	if run == "" {
		return tx.effects(`ORDER BY id`)
	}
	return tx.effects(`WHERE run = ? ORDER BY id`, run)
}

// TaskEffects returns the effects one task's attempts recorded, in recording order.
func (tx *Tx) TaskEffects(run, task string) ([]Effect, error) {
	return tx.effects(`WHERE run = ? AND task = ? ORDER BY id`, run, task)
}

// Effect returns one effect by id.
func (tx *Tx) Effect(id int64) (*Effect, error) {
	es, err := tx.effects(`WHERE id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, fmt.Errorf("effect %d: %w", id, ErrNotFound)
	}
	return &es[0], nil
}

// ResolveEffect sets an effect's state and the output of its compensation; resolved_at is
// set for every state but recorded and compensating.
func (tx *Tx) ResolveEffect(id int64, state, output string) error {
	if !slices.Contains(effectStates, state) {
		return fmt.Errorf("unknown effect state %q", state)
	}
	var at any
	if state != EffectRecorded && state != EffectCompensating {
		at = ms(tx.now())
	}
	res, err := tx.exec(`UPDATE effects SET state = ?, output = ?, resolved_at = ? WHERE id = ?`,
		state, output, at, id)
	return checkOne(res, err, "resolve", fmt.Sprintf("effect %d", id))
}

// effectJSON is the `effects -o json` element (SPEC §9).
type effectJSON struct {
	ID         int64    `json:"id"`
	Run        string   `json:"run"`
	Task       string   `json:"task"`
	Attempt    int      `json:"attempt"`
	Name       string   `json:"name"`
	Idempotent bool     `json:"idempotent"`
	Compensate []string `json:"compensate"` // null: cannot be compensated
	State      string   `json:"state"`
	DeliveryID string   `json:"delivery_id"`
	RecordedAt *string  `json:"recorded_at"`
	Implicit   bool     `json:"implicit"`
}

// MarshalJSON writes the SPEC §9 shape.
func (e Effect) MarshalJSON() ([]byte, error) {
	j := effectJSON{ID: e.ID, Run: e.RunID, Task: e.TaskID, Attempt: e.Attempt, Name: e.Name,
		Idempotent: e.Idempotent, State: e.State, DeliveryID: e.DeliveryID, RecordedAt: jtime(e.RecordedAt), Implicit: e.Implicit}
	if j.State == EffectCompensating {
		j.State = EffectRecorded // not compensated yet, as far as anyone can know
	}
	if len(e.Compensate) > 0 {
		j.Compensate = e.Compensate
	}
	return json.Marshal(j)
}
