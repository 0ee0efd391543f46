package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

// EventTimetravel is the audit record of a timetravel.
const EventTimetravel = "timetravel"

// ErrAttemptRunning is returned when timetravel targets an attempt that has not finished.
var ErrAttemptRunning = errors.New("the attempt has not finished")

// TimetravelOptions are the inputs of Timetravel's state change.
type TimetravelOptions struct {
	RunID string
	Task  string
	N     int
	Force bool
	// What the caller did to the tree, for the audit record: Restored false means the tree was
	// left alone (--no-restore).
	Restored bool
	UndoRef  string
	FromTree string // the tree before (the undo snapshot's), "" when unknown
	// DryRun computes the result in a transaction that is rolled back: what a timetravel would
	// change, nothing changed (the plan's preview).
	DryRun bool
}

// errDryRun rolls back a dry run's transaction.
var errDryRun = errors.New("dry run")

// TaskChange is one task whose recorded state timetravel changed.
type TaskChange struct {
	Task string `json:"task"`
	From string `json:"from"`
	To   string `json:"to"`
}

// TimetravelResult says what Timetravel changed.
type TimetravelResult struct {
	Superseded []string     // attempts (TASK@N) that started after the target
	Restored   []string     // attempts a previous timetravel superseded that are back
	Tasks      []TaskChange // tasks whose state changed
}

// ttRecord is the payload of a timetravel event the replay reads back.
type ttRecord struct {
	Superseded []ttAttempt `json:"superseded"`
	Restored   []ttAttempt `json:"restored"`
}

type ttAttempt struct {
	Attempt string `json:"attempt"`
	State   string `json:"state"` // its state before this timetravel
}

// taskReplay is a task's recorded state at a point of the event stream.
type taskReplay struct {
	state, reason     string
	retries, consec   int
	base              string
	started, finished *time.Time
}

// Timetravel resets the run's recorded state to just after attempt TASK@N finished, in one
// transaction: attempts that started later become superseded (and attempts an earlier
// timetravel superseded before that point come back), every task takes the state the event
// stream gave it at that point (tasks not started by then become pending; TASK takes the state
// its outcome implied), agents disabled later are enabled again, and the run becomes paused.
// The state at the point is replayed from the run's events, so counters (retries used,
// consecutive failures) and task bases come back as they were.
func Timetravel(ctx context.Context, db *store.DB, opts TimetravelOptions) (*TimetravelResult, error) {
	var res *TimetravelResult
	err := db.Update(ctx, func(tx *store.Tx) error {
		res = &TimetravelResult{}
		run, err := tx.GetRun(opts.RunID)
		if err != nil {
			return err
		}
		if err := CheckIdle(tx, run, opts.Force); err != nil {
			return err
		}
		target, err := tx.Attempt(run.ID, opts.Task, opts.N)
		if err != nil {
			return err
		}
		if target.State == store.AttemptRunning {
			return fmt.Errorf("%s@%d of run %s: %w", opts.Task, opts.N, run.ID, ErrAttemptRunning)
		}
		if opts.Force {
			if _, err := tx.FenceRun(run.ID); err != nil {
				return err
			}
		}
		evs, err := tx.Events(run.ID, 0, 0)
		if err != nil {
			return err
		}
		// The point: the last event the runner wrote about the target attempt (operators' audit
		// records that name it, revert and timetravel, came later and do not count).
		var point int64
		started := map[string]int64{}
		for _, ev := range evs {
			if ev.Task == opts.Task && ev.Attempt == opts.N && ev.Type != "revert" && ev.Type != EventTimetravel {
				point = ev.Seq
			}
			if ev.Type == "attempt.started" {
				started[fmt.Sprintf("%s@%d", ev.Task, ev.Attempt)] = ev.Seq
			}
		}
		if point == 0 {
			return fmt.Errorf("no events of %s@%d in run %s", opts.Task, opts.N, run.ID)
		}

		// Attempts: superseded as of the point (by earlier timetravels), and their states before.
		supersededAt := map[string]bool{}
		orig := map[string]string{}
		for _, ev := range evs {
			if ev.Type != EventTimetravel {
				continue
			}
			var rec ttRecord
			if json.Unmarshal(ev.Payload, &rec) != nil {
				continue
			}
			for _, a := range rec.Superseded {
				if _, ok := orig[a.Attempt]; !ok {
					orig[a.Attempt] = a.State
				}
				if ev.Seq <= point {
					supersededAt[a.Attempt] = true
				}
			}
			if ev.Seq <= point {
				for _, a := range rec.Restored {
					delete(supersededAt, a.Attempt)
				}
			}
		}
		var rec ttRecord
		for i := range run.Tasks {
			t := &run.Tasks[i]
			for j := range t.Attempts {
				a := &t.Attempts[j]
				addr := fmt.Sprintf("%s@%d", t.ID, a.N)
				seq, ok := started[addr]
				later := (ok && seq > point) || (t.ID == opts.Task && a.N > opts.N)
				want := a.State
				switch {
				case later || supersededAt[addr]:
					want = store.AttemptSuperseded
				case a.State == store.AttemptSuperseded && orig[addr] != "":
					want = orig[addr]
				}
				if want == a.State {
					continue
				}
				if want == store.AttemptSuperseded {
					rec.Superseded = append(rec.Superseded, ttAttempt{Attempt: addr, State: a.State})
					res.Superseded = append(res.Superseded, addr)
				} else {
					rec.Restored = append(rec.Restored, ttAttempt{Attempt: addr, State: want})
					res.Restored = append(res.Restored, addr)
				}
				a.State = want
				if err := tx.UpdateAttempt(a); err != nil {
					return err
				}
			}
		}

		// Tasks: replayed from the events up to the point.
		replays := map[string]*taskReplay{}
		for _, t := range run.Tasks {
			replays[t.ID] = &taskReplay{state: store.TaskPending}
		}
		for _, ev := range evs {
			if ev.Seq > point {
				break
			}
			rp := replays[ev.Task]
			if rp == nil {
				continue
			}
			replayEvent(rp, ev)
		}
		var changes []map[string]any
		for i := range run.Tasks {
			t := &run.Tasks[i]
			rp := replays[t.ID]
			state := rp.state
			if state == store.TaskRunning {
				state = store.TaskPending // it will start a new attempt
			}
			cur, err := tx.GetTask(run.ID, t.ID)
			if err != nil {
				return err
			}
			from := cur.State
			next := *cur
			next.State, next.Reason = state, rp.reason
			if state == store.TaskPending {
				next.Reason = ""
			}
			next.RetriesUsed, next.ConsecutiveFailures = rp.retries, rp.consec
			next.ResumeAt = nil
			if rp.base != cur.BaseTree || rp.base == "" {
				next.BaseTree, next.StartedAt = rp.base, rp.started
			}
			next.FinishedAt = nil
			if store.TaskFinished(state) {
				next.FinishedAt = rp.finished
			}
			if next.State == cur.State && next.Reason == cur.Reason && next.RetriesUsed == cur.RetriesUsed &&
				next.ConsecutiveFailures == cur.ConsecutiveFailures && next.BaseTree == cur.BaseTree &&
				cur.ResumeAt == nil {
				continue
			}
			next.Attempts = nil
			if err := tx.UpdateTask(&next); err != nil {
				return err
			}
			if from != next.State {
				res.Tasks = append(res.Tasks, TaskChange{Task: t.ID, From: from, To: next.State})
			}
			payload := map[string]any{
				"from": from, "to": next.State, "reason": ReasonTimetravel, "task_reason": nullable(next.Reason),
				"retries_used": next.RetriesUsed, "consecutive_failures": next.ConsecutiveFailures,
				"base_tree": next.BaseTree,
			}
			if _, err := tx.AppendEvent(run.ID, t.ID, 0, "task.state_changed", payload); err != nil {
				return err
			}
			changes = append(changes, map[string]any{"task": t.ID, "from": from, "to": next.State})
		}

		// Agents disabled after the point are enabled again.
		for _, ev := range evs {
			if ev.Seq <= point || ev.Type != "agent.disabled" {
				continue
			}
			var p struct {
				Agent string `json:"agent"`
			}
			if json.Unmarshal(ev.Payload, &p) == nil && p.Agent != "" {
				if err := tx.EnableAgent(run.ID, p.Agent); err != nil {
					return err
				}
			}
		}

		payload := map[string]any{
			"who":  Who(),
			"from": map[string]any{"state": run.State, "tree": nullable(opts.FromTree)},
			"to": map[string]any{"attempt": fmt.Sprintf("%s@%d", opts.Task, opts.N), "ref": target.Ref,
				"tree": target.Tree, "seq": point},
			"superseded": nonNilAttempts(rec.Superseded), "restored": nonNilAttempts(rec.Restored),
			"tasks": changes, "tree_restored": opts.Restored, "undo_ref": nullable(opts.UndoRef),
		}
		if _, err := tx.AppendEvent(run.ID, opts.Task, opts.N, EventTimetravel, payload); err != nil {
			return err
		}
		if err := pauseRun(tx, run, ReasonTimetravel, nil); err != nil {
			return err
		}
		if opts.DryRun {
			return errDryRun
		}
		return nil
	})
	if errors.Is(err, errDryRun) {
		err = nil
	}
	return res, err
}

func nonNilAttempts(s []ttAttempt) []ttAttempt {
	if s == nil {
		return []ttAttempt{}
	}
	return s
}

// replayEvent applies one event to a task's replayed state.
func replayEvent(rp *taskReplay, ev store.Event) {
	var p struct {
		To          string  `json:"to"`
		Reason      *string `json:"reason"`
		TaskReason  *string `json:"task_reason"`
		Consecutive *int    `json:"consecutive_failures"`
		Retries     *int    `json:"retries_used"`
		BaseTree    *string `json:"base_tree"`
		PreTree     string  `json:"pre_tree"`
	}
	if len(ev.Payload) > 0 && json.Unmarshal(ev.Payload, &p) != nil {
		return
	}
	t := ev.Time
	switch ev.Type {
	case "task.state_changed":
		if p.To == "" {
			return
		}
		rp.state, rp.reason = p.To, ""
		if p.Reason != nil {
			rp.reason = *p.Reason
		}
		if p.To == store.TaskBackoff && ev.Attempt > 0 {
			rp.retries++
		}
		if p.Reason != nil && *p.Reason == ReasonTimetravel {
			// A timetravel's own record carries the counters it set.
			rp.reason = ""
			if p.TaskReason != nil {
				rp.reason = *p.TaskReason
			}
			if p.Retries != nil {
				rp.retries = *p.Retries
			}
			if p.Consecutive != nil {
				rp.consec = *p.Consecutive
			}
			if p.BaseTree != nil {
				rp.base = *p.BaseTree
				if rp.base == "" {
					rp.started = nil
				}
			}
		}
		if p.Reason != nil && (*p.Reason == ReasonRetryTask || *p.Reason == "operator-prompt") {
			rp.reason = ""
		}
		switch p.To {
		case store.TaskPending, store.TaskRunning, store.TaskBackoff:
			rp.reason = "" // the runner keeps no reason for these ("retry" only decorates the event)
		}
		if store.TaskFinished(p.To) {
			rp.finished = &t
		}
	case EventTaskReset:
		rp.retries, rp.base, rp.started, rp.finished = 0, "", nil, nil
	case "attempt.started":
		if rp.base == "" {
			rp.base = p.PreTree
			rp.started = &t
		}
	case "attempt.failed":
		if p.Consecutive != nil {
			rp.consec = *p.Consecutive
		}
	case "attempt.succeeded":
		rp.consec = 0
	}
}
