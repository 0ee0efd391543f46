package attempt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

// EventTimetravel is the audit record of a timetravel.
const EventTimetravel = store.EventTimetravel

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
	// LeftTree is the tree timetravel leaves in the working tree: recorded as the tree the run
	// stopped with, which resume compares the working tree with ("": none recorded).
	LeftTree string
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

// taskReplay is a task's recorded state at a point of the event stream.
type taskReplay struct {
	state, reason               string
	retries, consec             int
	base                        string
	resumeAt, started, finished *time.Time
}

// Timetravel resets the run's recorded state to just after attempt TASK@N finished, in one
// transaction: attempts that started later become superseded (and attempts an earlier
// timetravel superseded before that point come back), every task takes the state the event
// stream gave it at that point (tasks not started by then become pending; TASK takes the state
// its outcome implied), agents disabled later are enabled again, and the run becomes paused.
// A task's state at the point is the counters its last state change recorded (retries used,
// consecutive failures, base, resume and finish times), with the attempt events after it; events
// written before changes recorded counters are replayed as they were (replayEvent).
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
		point, err := timetravelPoint(evs, run.ID, opts.Task, opts.N)
		if err != nil {
			return err
		}
		rec := store.TimetravelRecord{
			Who:  Who(),
			From: store.TimetravelFrom{State: store.RunState(run.State), Tree: store.OptString(opts.FromTree)},
			To: store.TimetravelTo{Attempt: fmt.Sprintf("%s@%d", opts.Task, opts.N), Ref: target.Ref,
				Tree: target.Tree, Seq: point},
			TreeRestored: opts.Restored, UndoRef: store.OptString(opts.UndoRef),
		}
		if err := supersedeAfter(tx, run, evs, point, opts, &rec, res); err != nil {
			return err
		}
		if err := restoreTasks(tx, run, evs, point, &rec, res); err != nil {
			return err
		}
		if err := enableAgentsAfter(tx, run.ID, evs, point); err != nil {
			return err
		}
		rec.Superseded, rec.Restored = nonNil(rec.Superseded), nonNil(rec.Restored)
		if _, err := tx.AppendEvent(run.ID, opts.Task, opts.N, EventTimetravel, rec); err != nil {
			return err
		}
		if err := pauseRun(tx, run, ReasonTimetravel, store.RunStateChanged{}); err != nil {
			return err
		}
		if opts.LeftTree != "" {
			if err := tx.SetStopTree(run.ID, opts.LeftTree, time.Now()); err != nil {
				return err
			}
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

// timetravelPoint is the last event the runner wrote about attempt TASK@N (operators' audit
// records that name it, revert and timetravel, came later and do not count).
func timetravelPoint(evs []store.Event, run, task string, n int) (int64, error) {
	var point int64
	for _, ev := range evs {
		if ev.Task == task && ev.Attempt == n && ev.Type != "revert" && ev.Type != EventTimetravel {
			point = ev.Seq
		}
	}
	if point == 0 {
		return 0, fmt.Errorf("no events of %s@%d in run %s", task, n, run)
	}
	return point, nil
}

// supersedeAfter makes the attempts that started after the point superseded, and gives back
// their own state to the attempts an earlier timetravel superseded that had started by then.
func supersedeAfter(tx *store.Tx, run *store.Run, evs []store.Event, point int64, opts TimetravelOptions,
	rec *store.TimetravelRecord, res *TimetravelResult) error {
	started := map[string]int64{}
	supersededAt := map[string]bool{} // superseded as of the point, by earlier timetravels
	orig := map[string]string{}       // an attempt's state before the first timetravel superseded it
	for _, ev := range evs {
		switch ev.Type {
		case store.EventAttemptStarted:
			started[fmt.Sprintf("%s@%d", ev.Task, ev.Attempt)] = ev.Seq
		case EventTimetravel:
			var tr store.TimetravelRecord
			if ev.Decode(&tr) != nil {
				continue
			}
			for _, a := range tr.Superseded {
				if _, ok := orig[a.Attempt]; !ok {
					orig[a.Attempt] = a.State
				}
				if ev.Seq <= point {
					supersededAt[a.Attempt] = true
				}
			}
			if ev.Seq <= point {
				for _, a := range tr.Restored {
					delete(supersededAt, a.Attempt)
				}
			}
		}
	}
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
				rec.Superseded = append(rec.Superseded, store.TimetravelAttempt{Attempt: addr, State: a.State})
				res.Superseded = append(res.Superseded, addr)
			} else {
				rec.Restored = append(rec.Restored, store.TimetravelAttempt{Attempt: addr, State: want})
				res.Restored = append(res.Restored, addr)
			}
			a.State = want
			if err := tx.UpdateAttempt(a); err != nil {
				return err
			}
		}
	}
	return nil
}

// restoreTasks gives every task the state replayed from the events up to the point, each
// change recorded through TransitionTask with the counters it restored.
func restoreTasks(tx *store.Tx, run *store.Run, evs []store.Event, point int64, rec *store.TimetravelRecord, res *TimetravelResult) error {
	replays := map[string]*taskReplay{}
	for _, t := range run.Tasks {
		replays[t.ID] = &taskReplay{state: store.TaskPending}
	}
	for _, ev := range evs {
		if ev.Seq > point {
			break
		}
		if rp := replays[ev.Task]; rp != nil {
			replayEvent(rp, ev)
		}
	}
	for _, t := range run.Tasks {
		rp := replays[t.ID]
		cur, err := tx.GetTask(run.ID, t.ID)
		if err != nil {
			return err
		}
		next, changed := replayedRow(cur, rp)
		if !changed {
			continue
		}
		from := cur.State
		taskReason := &next.Reason
		if next.Reason == "" {
			taskReason = nil
		}
		row, err := tx.TransitionTask(run.ID, t.ID, store.TaskTransition{
			To: store.TaskState(next.State), Reason: next.Reason, Cause: ReasonTimetravel, ResumeAt: next.ResumeAt,
			At: at(next.FinishedAt), Row: next,
			Event: store.TaskStateChanged{TimetravelCounters: &store.TimetravelCounters{TaskReason: taskReason,
				RetriesUsed: &next.RetriesUsed, ConsecutiveFailures: &next.ConsecutiveFailures, BaseTree: &next.BaseTree}},
		})
		if err != nil {
			return err
		}
		if from != row.State {
			res.Tasks = append(res.Tasks, TaskChange{Task: t.ID, From: from, To: row.State})
		}
		rec.Tasks = append(rec.Tasks, store.TimetravelTask{Task: t.ID, From: store.TaskState(from), To: store.TaskState(row.State)})
	}
	return nil
}

// replayedRow is cur with the replayed state rp, and whether that changes it. A task that was
// running at the point is pending: it will start a new attempt.
func replayedRow(cur *store.Task, rp *taskReplay) (*store.Task, bool) {
	next := *cur
	next.Attempts = nil
	next.State, next.Reason = rp.state, rp.reason
	if next.State == store.TaskRunning {
		next.State = store.TaskPending
	}
	if next.State == store.TaskPending {
		next.Reason = ""
	}
	next.RetriesUsed, next.ConsecutiveFailures = rp.retries, rp.consec
	next.ResumeAt = nil
	if next.State == store.TaskBackoff || next.State == store.TaskWaitingQuota {
		next.ResumeAt = rp.resumeAt
	}
	if rp.base != cur.BaseTree || rp.base == "" {
		next.BaseTree, next.StartedAt = rp.base, rp.started
	}
	next.FinishedAt = nil
	if store.TaskFinished(next.State) {
		next.FinishedAt = rp.finished
	}
	same := next.State == cur.State && next.Reason == cur.Reason && next.RetriesUsed == cur.RetriesUsed &&
		next.ConsecutiveFailures == cur.ConsecutiveFailures && next.BaseTree == cur.BaseTree &&
		sameTime(next.ResumeAt, cur.ResumeAt)
	return &next, !same
}

func sameTime(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }

func at(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// enableAgentsAfter enables again the agents disabled after the point.
func enableAgentsAfter(tx *store.Tx, run string, evs []store.Event, point int64) error {
	for _, ev := range evs {
		if ev.Seq <= point || ev.Type != store.EventAgentDisabled {
			continue
		}
		var p store.AgentDisabled
		if ev.Decode(&p) == nil && p.Agent != "" {
			if err := tx.EnableAgent(run, p.Agent); err != nil {
				return err
			}
		}
	}
	return nil
}

// replayEvent applies one event to a task's replayed state. A state change that recorded its
// counters gives the task's row exactly as it was written; one written before counters existed
// is replayed from its keys and the events around it (a backoff used a retry, task.reset gave
// a fresh budget, the first attempt's pre tree is the base).
func replayEvent(rp *taskReplay, ev store.Event) {
	switch ev.Type {
	case store.EventTaskStateChanged:
		var p store.TaskStateChanged
		if ev.Decode(&p) != nil || p.To == "" {
			return
		}
		if c := p.Counters; c != nil {
			rp.state, rp.reason, rp.retries, rp.consec = string(p.To), string(c.Reason), c.RetriesUsed, c.ConsecutiveFailures
			rp.base, rp.resumeAt, rp.started, rp.finished = string(c.BaseTree), c.ResumeAt, c.StartedAt, c.FinishedAt
			return
		}
		replayLegacyChange(rp, ev, p)
	case store.EventTaskReset:
		rp.retries, rp.consec, rp.base, rp.started, rp.finished = 0, 0, "", nil, nil
	case store.EventAttemptStarted:
		var p store.AttemptStarted
		if rp.base == "" && ev.Decode(&p) == nil {
			t := ev.Time
			rp.base, rp.started = p.PreTree, &t
		}
	case store.EventAttemptFailed:
		var p store.AttemptFailedPayload
		if ev.Decode(&p) == nil && strings.Contains(string(ev.Payload), `"consecutive_failures"`) {
			rp.consec = p.ConsecutiveFailures
		}
	case store.EventAttemptSucceeded:
		rp.consec = 0
	}
}

// replayLegacyChange applies a task.state_changed written without counters.
func replayLegacyChange(rp *taskReplay, ev store.Event, p store.TaskStateChanged) {
	rp.state, rp.reason, rp.resumeAt = string(p.To), string(p.Reason), p.ResumeAt
	if p.To == store.TaskBackoff && ev.Attempt > 0 {
		rp.retries++
	}
	if p.Reason == ReasonTimetravel {
		// A timetravel's own record carries the counters it set.
		rp.reason = ""
		if c := p.TimetravelCounters; c != nil {
			if c.TaskReason != nil {
				rp.reason = *c.TaskReason
			}
			if c.RetriesUsed != nil {
				rp.retries = *c.RetriesUsed
			}
			if c.ConsecutiveFailures != nil {
				rp.consec = *c.ConsecutiveFailures
			}
			if c.BaseTree != nil {
				rp.base = *c.BaseTree
				if rp.base == "" {
					rp.started = nil
				}
			}
		}
	}
	if p.Reason == ReasonRetryTask || p.Reason == ReasonOperatorPrompt {
		rp.reason = ""
	}
	switch p.To {
	case store.TaskPending, store.TaskRunning, store.TaskBackoff:
		rp.reason = "" // the runner keeps no reason for these ("retry" only decorates the event)
	}
	if p.To.Finished() {
		t := ev.Time
		rp.finished = &t
	}
}
