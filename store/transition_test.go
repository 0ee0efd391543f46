package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

// lastEvent is the newest event of run of type typ, decoded into v.
func lastEvent(t *testing.T, db *store.DB, run, typ string, v any) store.Event {
	t.Helper()
	var evs []store.Event
	view(t, db, func(tx *store.Tx) (err error) {
		evs, err = tx.Events(run, 0, 0)
		return err
	})
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type == typ {
			if err := evs[i].Decode(v); err != nil {
				t.Fatal(err)
			}
			return evs[i]
		}
	}
	t.Fatalf("no %s event in %+v", typ, evs)
	return store.Event{}
}

// counters is the part of a row TaskCounters records.
func counters(r *store.Task) store.TaskCounters {
	return store.TaskCounters{Reason: store.OptString(r.Reason), RetriesUsed: r.RetriesUsed,
		ConsecutiveFailures: r.ConsecutiveFailures, ResumeAt: r.ResumeAt, BaseTree: store.OptString(r.BaseTree),
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
}

func sameCounters(a, b store.TaskCounters) bool {
	eq := func(x, y *time.Time) bool { return (x == nil) == (y == nil) && (x == nil || x.Equal(*y)) }
	return a.Reason == b.Reason && a.RetriesUsed == b.RetriesUsed && a.ConsecutiveFailures == b.ConsecutiveFailures &&
		a.BaseTree == b.BaseTree && eq(a.ResumeAt, b.ResumeAt) && eq(a.StartedAt, b.StartedAt) && eq(a.FinishedAt, b.FinishedAt)
}

// One call writes the row, the event with the counters the row then holds, and the hooks: the
// event read back decodes into the struct the writer used, and its counters are the row.
func TestTransitionTask(t *testing.T) {
	db, clock := openDB(t)
	hookRun(t, db)
	task := func() *store.Task {
		t.Helper()
		var cur *store.Task
		view(t, db, func(tx *store.Tx) (err error) {
			cur, err = tx.GetTask("run1", "a")
			return err
		})
		return cur
	}
	check := func(what string, from, to store.TaskState, reason string) store.TaskStateChanged {
		t.Helper()
		var ev store.TaskStateChanged
		lastEvent(t, db, "run1", store.EventTaskStateChanged, &ev)
		cur := task()
		if ev.From != from || ev.To != to || string(ev.Reason) != reason || cur.State != string(to) {
			t.Errorf("%s: event %+v, row %s", what, ev, cur.State)
		}
		if ev.Counters == nil || !sameCounters(*ev.Counters, counters(cur)) {
			t.Errorf("%s: counters %+v, row %+v", what, ev.Counters, counters(cur))
		}
		return ev
	}

	// running stamps started_at once
	update(t, db, func(tx *store.Tx) error {
		_, err := tx.TransitionTask("run1", "a", store.TaskTransition{To: store.TaskRunning})
		return err
	})
	check("running", store.TaskPending, store.TaskRunning, "")
	started := task().StartedAt
	if started == nil || !started.Equal(t0) {
		t.Fatalf("started_at = %v, want %v", started, t0)
	}

	// backoff: the row keeps no reason, the event says "retry"; the caller's row carries the
	// counters it changed; resume_at is written and recorded
	clock.Advance(1500 * time.Microsecond) // not a whole millisecond: recorded as the row keeps it
	resume := clock.Now().Add(time.Minute)
	update(t, db, func(tx *store.Tx) error {
		cur, err := tx.GetTask("run1", "a")
		if err != nil {
			return err
		}
		cur.RetriesUsed, cur.ConsecutiveFailures, cur.BaseTree = 1, 1, "abc"
		_, err = tx.TransitionTask("run1", "a", store.TaskTransition{To: store.TaskBackoff, Cause: "retry", Attempt: 1,
			ResumeAt: &resume, Row: cur, Event: store.TaskStateChanged{DelayMS: store.Ptr(int64(60000))}})
		return err
	})
	ev := check("backoff", store.TaskRunning, store.TaskBackoff, "retry")
	if ev.Counters.RetriesUsed != 1 || ev.Counters.ConsecutiveFailures != 1 || ev.Counters.BaseTree != "abc" ||
		ev.ResumeAt == nil || *ev.DelayMS != 60000 || ev.Counters.Reason != "" {
		t.Errorf("backoff event: %+v %+v", ev, ev.Counters)
	}
	if got := task().ResumeAt; got == nil || !got.Equal(resume.Truncate(time.Millisecond)) {
		t.Errorf("resume_at = %v, want %v", got, resume)
	}

	// blocked: supervision_needed with the latest attempt's failure, on_blocked queued
	update(t, db, func(tx *store.Tx) error {
		a, err := tx.Attempt("run1", "a", 1)
		if err != nil {
			return err
		}
		a.Class, a.Code, a.Message, a.Fingerprint = "agent_exit", "exit_1", "boom", "fp"
		if err := tx.UpdateAttempt(a); err != nil {
			return err
		}
		_, err = tx.TransitionTask("run1", "a", store.TaskTransition{To: store.TaskBlocked, Reason: "ask", Attempt: 1})
		return err
	})
	check("blocked", store.TaskBackoff, store.TaskBlocked, "ask")
	if task().ResumeAt != nil {
		t.Error("blocked kept resume_at")
	}
	var sup store.SupervisionNeeded
	if e := lastEvent(t, db, "run1", store.EventSupervision, &sup); e.Attempt != 1 || sup.State != store.TaskBlocked ||
		sup.Reason != "ask" || sup.Failure == nil || sup.Failure.Class != "agent_exit" || sup.Failure.Fingerprint != "fp" {
		t.Errorf("supervision_needed: %+v %+v", e, sup)
	}
	if got, want := commands(deliveries(t, db)), []string{"a-on_retry", "run-on_retry", "a-on_blocked"}; !slices.Equal(got, want) {
		t.Errorf("hooks after blocked: %q, want %q", got, want)
	}

	// staying blocked: the event, no hook, no second supervision_needed
	update(t, db, func(tx *store.Tx) error {
		_, err := tx.TransitionTask("run1", "a", store.TaskTransition{To: store.TaskBlocked, Reason: "ask", Cause: "resume-reset-attempts"})
		return err
	})
	check("staying", store.TaskBlocked, store.TaskBlocked, "resume-reset-attempts")
	var evs []store.Event
	view(t, db, func(tx *store.Tx) (err error) { evs, err = tx.Events("run1", 0, 0); return err })
	n := 0
	for _, e := range evs {
		if e.Type == store.EventSupervision {
			n++
		}
	}
	if n != 1 || len(deliveries(t, db)) != 3 {
		t.Errorf("staying blocked: %d supervision_needed, %d hooks", n, len(deliveries(t, db)))
	}

	// failed stamps finished_at (At when given), with the failure in the event
	at := t0.Add(time.Hour)
	update(t, db, func(tx *store.Tx) error {
		_, err := tx.TransitionTask("run1", "a", store.TaskTransition{To: store.TaskFailed, Reason: "budget_exhausted", At: at,
			Event: store.TaskStateChanged{Class: "budget_exhausted", Code: "max_cost"}})
		return err
	})
	ev = check("failed", store.TaskBlocked, store.TaskFailed, "budget_exhausted")
	if f := task().FinishedAt; f == nil || !f.Equal(at) || ev.Class != "budget_exhausted" || ev.Code != "max_cost" {
		t.Errorf("failed: finished_at %v, event %+v", f, ev)
	}
	// and leaving it clears finished_at
	update(t, db, func(tx *store.Tx) error {
		_, err := tx.TransitionTask("run1", "a", store.TaskTransition{To: store.TaskPending, Cause: "retry-task"})
		return err
	})
	check("pending", store.TaskFailed, store.TaskPending, "retry-task")
	if task().FinishedAt != nil {
		t.Error("pending kept finished_at")
	}

	if err := db.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.TransitionTask("run1", "a", store.TaskTransition{To: "done"})
		return err
	}); err == nil {
		t.Error("unknown task state accepted")
	}
	err := db.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.TransitionTask("run1", "zz", store.TaskTransition{To: store.TaskFailed})
		return err
	})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("transition of a missing task: %v, want ErrNotFound", err)
	}
}

// A run's transition writes its state, finished_at and the event (its reason the cause when one
// is given, the row's otherwise) and queues the run-level hook.
func TestTransitionRun(t *testing.T) {
	db, _ := openDB(t)
	hookRun(t, db)
	var from store.RunState
	update(t, db, func(tx *store.Tx) (err error) {
		from, err = tx.TransitionRun("run1", store.RunTransition{To: store.RunFailed, Reason: "internal",
			Event: store.RunStateChanged{Message: "disk full"}})
		return err
	})
	r := getRun(t, db, "run1")
	var ev store.RunStateChanged
	lastEvent(t, db, "run1", store.EventRunStateChanged, &ev)
	if from != store.RunRunning || r.State != store.RunFailed || r.Reason != "internal" || r.FinishedAt == nil ||
		ev.From != store.RunRunning || ev.To != store.RunFailed || ev.Reason != "internal" || ev.Message != "disk full" {
		t.Errorf("failed: from %s, row %s %s %v, event %+v", from, r.State, r.Reason, r.FinishedAt, ev)
	}
	if got := commands(deliveries(t, db)); len(got) != 1 || got[0] != "run-on_failed" {
		t.Errorf("hooks: %q", got)
	}
	update(t, db, func(tx *store.Tx) error {
		hdr, err := tx.RunHeader("run1")
		if err != nil {
			return err
		}
		hdr.ResumesWithoutProgress = 3
		_, err = tx.TransitionRun("run1", store.RunTransition{To: store.RunRunning, Cause: "resumed", Row: hdr,
			Event: store.RunStateChanged{PID: 42}})
		return err
	})
	r = getRun(t, db, "run1")
	lastEvent(t, db, "run1", store.EventRunStateChanged, &ev)
	if r.State != store.RunRunning || r.Reason != "" || r.FinishedAt != nil || r.ResumesWithoutProgress != 3 ||
		ev.Reason != "resumed" || ev.PID != 42 {
		t.Errorf("resumed: row %s %q %v %d, event %+v", r.State, r.Reason, r.FinishedAt, r.ResumesWithoutProgress, ev)
	}
}
