package attempt

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// rowReplay is the part of a task's row timetravel restores, as a replay gives it.
func rowReplay(tk *store.Task) taskReplay {
	return taskReplay{state: tk.State, reason: tk.Reason, retries: tk.RetriesUsed, consec: tk.ConsecutiveFailures,
		base: tk.BaseTree, resumeAt: tk.ResumeAt, started: tk.StartedAt, finished: tk.FinishedAt}
}

func sameReplay(a, b taskReplay) bool {
	return a.state == b.state && a.reason == b.reason && a.retries == b.retries && a.consec == b.consec &&
		a.base == b.base && sameTime(a.resumeAt, b.resumeAt) && sameTime(a.started, b.started) && sameTime(a.finished, b.finished)
}

func (rp taskReplay) String() string {
	f := func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(map[string]any{"state": rp.state, "reason": rp.reason, "retries": rp.retries,
		"consec": rp.consec, "base": rp.base, "resume_at": f(rp.resumeAt), "started": f(rp.started), "finished": f(rp.finished)})
	return string(b)
}

// replayAll replays every event of task; legacy drops the counters first, as a database written
// before they existed holds the events.
func replayAll(evs []store.Event, task string, legacy bool) taskReplay {
	rp := &taskReplay{state: store.TaskPending}
	for _, ev := range evs {
		if ev.Task != task {
			continue
		}
		if legacy && ev.Type == store.EventTaskStateChanged {
			var m map[string]json.RawMessage
			json.Unmarshal(ev.Payload, &m)
			delete(m, "counters")
			ev.Payload, _ = json.Marshal(m)
		}
		replayEvent(rp, ev)
	}
	return *rp
}

// TestReplayCounters drives one task through the runner's and the operator's own writers
// (retries, a reset budget, prompt, a quota park lifted at once, stop, retry-task, success) and
// checks after each step that replaying the events gives the row exactly: a key renamed on the
// writing side, or a change written without its counters, fails here. After the budget reset
// (which keeps the state) the old replay, without counters, is wrong: the counters are what
// makes timetravel exact.
func TestReplayCounters(t *testing.T) {
	ctx := context.Background()
	env := testEnv(t)
	env.defaults()
	db := env.DB
	run := &store.Run{ID: "r1", Worktree: "/w", State: store.RunRunning, Owner: store.Ptr(store.Self()),
		Tasks: []store.Task{{ID: "x"}}}
	if err := db.Update(ctx, func(tx *store.Tx) error { return tx.InsertRun(run) }); err != nil {
		t.Fatal(err)
	}
	r := newRunner(env, &taskfile.File{Tasks: []*taskfile.Task{{ID: "x"}}}, run)
	def := &taskfile.Task{ID: "x"}
	task := func() *store.Task {
		t.Helper()
		var tk *store.Task
		if err := db.View(ctx, func(tx *store.Tx) (err error) { tk, err = tx.GetTask("r1", "x"); return err }); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	check := func(step string, legacyWrong bool) {
		t.Helper()
		var evs []store.Event
		if err := db.View(ctx, func(tx *store.Tx) (err error) { evs, err = tx.Events("r1", 0, 0); return err }); err != nil {
			t.Fatal(err)
		}
		want := rowReplay(task())
		if got := replayAll(evs, "x", false); !sameReplay(got, want) {
			t.Fatalf("%s: replay %v\n want the row %v", step, got, want)
		}
		if legacyWrong && sameReplay(replayAll(evs, "x", true), want) {
			t.Fatalf("%s: the replay without counters gets it right too: the step tests nothing", step)
		}
	}
	// start: what prepare (the base) and startAttempt (running, attempt.started) write
	start := func(n int, base string) {
		t.Helper()
		err := r.update(ctx, func(tx *store.Tx) error {
			cur, err := tx.GetTask("r1", "x")
			if err != nil {
				return err
			}
			if cur.BaseTree == "" {
				cur.BaseTree, cur.StartedAt = base, store.Ptr(time.Now())
				if err := tx.UpdateTask(cur); err != nil {
					return err
				}
			}
			if _, err := tx.TransitionTask("r1", "x", store.TaskTransition{To: store.TaskRunning}); err != nil {
				return err
			}
			return r.event(tx, "x", n, store.EventAttemptStarted, store.AttemptStarted{PreTree: base})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// fail: attempt.failed and the task's state as recordOutcome and recordTaskState write them
	fail := func(n int, d Decision) {
		t.Helper()
		err := r.update(ctx, func(tx *store.Tx) error {
			cur, err := tx.GetTask("r1", "x")
			if err != nil {
				return err
			}
			cur.ConsecutiveFailures++
			if err := r.event(tx, "x", n, store.EventAttemptFailed, store.AttemptFailedPayload{Class: "agent_exit",
				ConsecutiveFailures: cur.ConsecutiveFailures}); err != nil {
				return err
			}
			tk := *cur
			return r.recordTaskState(tx, &attemptRun{t: &tk, cur: cur, n: n, def: def, decision: d, finished: time.Now().UTC()})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	update := func(fn func(tx *store.Tx) error) {
		t.Helper()
		if err := db.Update(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	getRun := func(tx *store.Tx) *store.Run {
		got, err := tx.GetRun("r1")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	start(1, "base1")
	check("running", false)
	fail(1, Decision{Action: ActRetry, Delay: time.Minute})
	check("backoff", false)
	update(func(tx *store.Tx) error { return applyResumeMode(tx, getRun(tx), ResumeResetAttempts) })
	check("resume --mode reset-attempts", true)
	start(2, "base1")
	fail(2, Decision{Action: ActBlock, Reason: ReasonRetriesExhausted})
	check("blocked", false)
	if err := PromptTask(ctx, db, "r1", "x", "try harder"); err != nil {
		t.Fatal(err)
	}
	check("prompt", false)
	start(3, "base1")
	tk := task()
	if _, err := r.park(ctx, tk, 3, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	check("waiting_quota", false)
	update(func(tx *store.Tx) error { return applyResumeMode(tx, getRun(tx), ResumeImmediate) })
	check("resume --mode immediate", false)
	start(4, "base1")
	fail(4, Decision{Action: ActBlock, Reason: ReasonAsk})
	if _, err := StopTask(ctx, db, "r1", "x"); err != nil {
		t.Fatal(err)
	}
	check("stop", false)
	if _, err := ResetTasks(ctx, db, ResetOptions{RunID: "r1", Task: "x",
		Load: func(*store.Run) (*taskfile.File, error) { return r.file, nil }}); err != nil {
		t.Fatal(err)
	}
	check("retry-task", false)
	start(5, "base2")
	update(func(tx *store.Tx) error {
		cur, err := tx.GetTask("r1", "x")
		if err != nil {
			return err
		}
		cur.ConsecutiveFailures = 0
		if err := r.event(tx, "x", 5, store.EventAttemptSucceeded, store.AttemptSucceededPayload{}); err != nil {
			return err
		}
		tk := *cur
		return r.recordTaskState(tx, &attemptRun{t: &tk, cur: cur, n: 5, def: def,
			decision: Decision{Action: ActSucceed}, finished: time.Now().UTC()})
	})
	check("succeeded", false)
}

// TestReplayLegacyEvents replays events exactly as versions before the counters wrote them (a
// database from then is read by timetravel today): the keys of those payloads are fixed here
// as text, so renaming one in the payload structs fails this test.
func TestReplayLegacyEvents(t *testing.T) {
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	ev := func(typ string, attempt int, payload string) store.Event {
		at = at.Add(time.Second)
		var p []byte
		if payload != "" {
			p = []byte(payload)
		}
		return store.Event{Type: typ, Attempt: attempt, Task: "x", Time: at, Payload: p}
	}
	rp := &taskReplay{state: store.TaskPending}
	for _, e := range []store.Event{
		ev("task.state_changed", 0, `{"from":"pending","to":"running"}`),
		ev("attempt.started", 1, `{"agent":"sh","argv0":"sh","pre_ref":"refs/mulligan/runs/r1/x/1/pre","pre_tree":"base1"}`),
		ev("attempt.failed", 1, `{"class":"agent_exit","code":"exit_1","consecutive_failures":1,"exit_code":1,"fingerprint":null,"message":"m","ref":"r","retry_eligible":true}`),
		ev("task.state_changed", 1, `{"delay_ms":10,"from":"running","reason":"retry","resume_at":"2025-06-01T12:00:04Z","to":"backoff"}`),
		ev("task.state_changed", 0, `{"from":"backoff","reason":null,"to":"running"}`),
		ev("attempt.started", 2, `{"agent":"sh","argv0":"sh","pre_ref":"p","pre_tree":"base1"}`),
		ev("attempt.failed", 2, `{"class":"agent_exit","code":"exit_1","consecutive_failures":2,"exit_code":1,"fingerprint":null,"message":"m","ref":"r","retry_eligible":true}`),
		ev("task.state_changed", 2, `{"from":"running","reason":"retries-exhausted","to":"blocked"}`),
	} {
		replayEvent(rp, e)
	}
	if rp.state != "blocked" || rp.reason != "retries-exhausted" || rp.retries != 1 || rp.consec != 2 || rp.base != "base1" ||
		rp.started == nil || !rp.started.Equal(time.Date(2025, 6, 1, 12, 0, 2, 0, time.UTC)) {
		t.Fatalf("after two failures: %v", rp)
	}
	// retry-task: fresh budget and base, the breaker's count with them.
	replayEvent(rp, ev("task.reset", 0, `{"consecutive_failures":2,"from":"blocked","reason":"retry-task"}`))
	replayEvent(rp, ev("task.state_changed", 0, `{"from":"blocked","reason":"retry-task","to":"pending"}`))
	if rp.state != "pending" || rp.reason != "" || rp.retries != 0 || rp.consec != 0 || rp.base != "" {
		t.Fatalf("after retry-task: %v", rp)
	}
	replayEvent(rp, ev("attempt.started", 3, `{"agent":"sh","pre_tree":"base2"}`))
	replayEvent(rp, ev("attempt.succeeded", 3, `{"files_changed":0,"ref":"r"}`))
	replayEvent(rp, ev("task.state_changed", 3, `{"from":"running","to":"succeeded"}`))
	if rp.state != "succeeded" || rp.consec != 0 || rp.base != "base2" || rp.finished == nil || !rp.finished.Equal(at) {
		t.Fatalf("after success: %v", rp)
	}
	// A timetravel's record of then set the counters it chose.
	replayEvent(rp, ev("task.state_changed", 0, `{"base_tree":"base1","consecutive_failures":1,"from":"succeeded","reason":"timetravel","retries_used":1,"task_reason":null,"to":"backoff"}`))
	if rp.state != "backoff" || rp.reason != "" || rp.retries != 1 || rp.consec != 1 || rp.base != "base1" {
		t.Fatalf("after timetravel: %v", rp)
	}
	// A change with counters, after old ones, gives the row as written.
	replayEvent(rp, ev("task.state_changed", 4, `{"counters":{"base_tree":"b","consecutive_failures":3,"finished_at":null,"reason":"ask","resume_at":null,"retries_used":2,"started_at":"2025-06-01T12:00:00Z"},"from":"running","reason":"ask","to":"blocked"}`))
	if rp.state != "blocked" || rp.reason != "ask" || rp.retries != 2 || rp.consec != 3 || rp.base != "b" ||
		rp.started == nil || !rp.started.Equal(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)) {
		t.Fatalf("after a change with counters: %v", rp)
	}
}
