package store_test

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// hookRun is run1 with a task hook for each name on a, an on_retry on b, and run-level hooks.
func hookRun(t *testing.T, db *store.DB) {
	t.Helper()
	insertRun(t, db, newRun("run1"))
	var defs []store.HookDef
	for _, h := range []string{store.HookOnRetry, store.HookOnSuccess, store.HookOnFailed, store.HookOnBlocked,
		store.HookOnWaitingQuota, store.HookOnCancelled} {
		defs = append(defs, store.HookDef{Task: "a", Hook: h, Command: []string{"a-" + h}})
		defs = append(defs, store.HookDef{Hook: h, Command: []string{"run-" + h, "{{run}}"}})
	}
	defs = append(defs, store.HookDef{Task: "a", Hook: store.HookOnFailed, Command: []string{"a-on_failed-2"}})
	update(t, db, func(tx *store.Tx) error {
		if err := tx.InsertHooks("run1", defs); err != nil {
			return err
		}
		return tx.InsertAttempt(&store.Attempt{RunID: "run1", TaskID: "a", Agent: "x"})
	})
}

func deliveries(t *testing.T, db *store.DB) []store.HookDelivery {
	t.Helper()
	var ds []store.HookDelivery
	view(t, db, func(tx *store.Tx) (err error) {
		ds, err = tx.HookDeliveries("run1")
		return err
	})
	return ds
}

func commands(ds []store.HookDelivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Command[0])
	}
	return out
}

// A state change fires its hooks in the transaction that records it: rolled back with it, and
// mapped from the state entered to the hook of that name, task or run level.
func TestHooksFireWithTheirStateChange(t *testing.T) {
	db, _ := openDB(t)
	hookRun(t, db)
	change := func(task string, n int, from, to string) {
		t.Helper()
		update(t, db, func(tx *store.Tx) error {
			if task == "" {
				if _, err := tx.TransitionRun("run1", store.RunTransition{To: store.RunState(from)}); err != nil {
					return err
				}
				_, err := tx.TransitionRun("run1", store.RunTransition{To: store.RunState(to), Reason: "why"})
				return err
			}
			setState(t, tx, "run1", task, from)
			_, err := tx.TransitionTask("run1", task, store.TaskTransition{To: store.TaskState(to), Reason: "why", Attempt: n})
			return err
		})
	}
	// rolled back with the change: nothing fired
	boom := errors.New("boom")
	err := db.Update(ctx, func(tx *store.Tx) error {
		if _, err := tx.TransitionTask("run1", "a", store.TaskTransition{To: store.TaskFailed, Attempt: 1}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || len(deliveries(t, db)) != 0 {
		t.Fatalf("rolled-back change left deliveries: %v %v", err, deliveries(t, db))
	}

	change("a", 1, "running", "backoff")      // on_retry: task's and run's
	change("a", 1, "backoff", "running")      // nothing
	change("a", 1, "failed", "failed")        // staying: nothing
	change("a", 0, "blocked", "failed")       // operator stop: latest attempt
	change("b", 1, "running", "succeeded")    // b has no hooks
	change("", 0, "paused", "paused")         // staying: nothing
	change("", 0, "running", "waiting_quota") // run level only
	update(t, db, func(tx *store.Tx) error {  // not a state change: nothing
		_, err := tx.AppendEvent("run1", "a", 1, store.EventAttemptFailed, store.AttemptFailedPayload{Class: "transport"})
		return err
	})
	if err := db.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.TransitionRun("run1", store.RunTransition{To: store.RunState(store.TaskBackoff)})
		return err
	}); err == nil {
		t.Error("a run entered backoff, a task state")
	}

	ds := deliveries(t, db)
	want := []string{"a-on_retry", "run-on_retry", "a-on_failed", "a-on_failed-2", "run-on_waiting_quota"}
	if got := commands(ds); !slices.Equal(got, want) {
		t.Fatalf("fired %q, want %q", got, want)
	}
	for i, d := range ds {
		if d.State != store.HookPending || d.DeliveryID != "run1-h"+strconv.FormatInt(d.ID, 10) || d.Tries != 0 {
			t.Errorf("delivery %d: %+v", i, d)
		}
	}
	if d := ds[1]; d.Level != store.HookLevelRun || d.TaskID != "a" || d.Attempt != 1 || d.To != "backoff" || d.Reason != "why" {
		t.Errorf("run-level on_retry: %+v", d)
	}
	if d := ds[2]; d.Level != store.HookLevelTask || d.Attempt != 1 || d.Hook != store.HookOnFailed {
		t.Errorf("operator stop: %+v", d)
	}
	if d := ds[4]; d.TaskID != "" || d.Attempt != 0 || !slices.Equal(d.Command, []string{"run-on_waiting_quota", "{{run}}"}) {
		t.Errorf("run-level on_waiting_quota: %+v", d)
	}

	if err := db.Update(ctx, func(tx *store.Tx) error {
		return tx.InsertHooks("run1", []store.HookDef{{Hook: "on_fail", Command: []string{"x"}}})
	}); err == nil {
		t.Error("unknown hook name accepted")
	}
}

// Of two processes claiming one delivery, one wins; only the claimer records the outcome; a
// failed delivery goes back to pending with its delivery id on redelivery.
func TestHookDeliveryClaim(t *testing.T) {
	db, clock := openDB(t)
	hookRun(t, db)
	update(t, db, func(tx *store.Tx) error {
		_, err := tx.TransitionTask("run1", "a", store.TaskTransition{To: store.TaskSucceeded, Attempt: 1})
		return err
	})
	var pending []store.HookDelivery
	view(t, db, func(tx *store.Tx) (err error) {
		pending, err = tx.PendingHookDeliveries("")
		return err
	})
	if len(pending) != 1 {
		t.Fatalf("pending: %+v", pending)
	}
	hasPending := func(run string) bool {
		t.Helper()
		var has bool
		view(t, db, func(tx *store.Tx) (err error) {
			has, err = tx.HasPendingHooks(run)
			return err
		})
		return has
	}
	if !hasPending("") || !hasPending("run1") || hasPending("run2") {
		t.Error("HasPendingHooks before delivery")
	}
	p1 := store.Owner{PID: 11, Host: "h", StartTicks: 1}
	p2 := store.Owner{PID: 22, Host: "h", StartTicks: 2}
	d1, d2 := pending[0], pending[0]
	until := clock.Now().Add(time.Minute)
	update(t, db, func(tx *store.Tx) error { return tx.ClaimHookDelivery(&d1, p1, until) })
	if err := db.Update(ctx, func(tx *store.Tx) error { return tx.ClaimHookDelivery(&d2, p2, until) }); !errors.Is(err, store.ErrClaimed) {
		t.Fatalf("second claim: %v, want ErrClaimed", err)
	}
	if err := db.Update(ctx, func(tx *store.Tx) error {
		return tx.FinishHookDelivery(&d1, p2, store.HookDelivered, nil, "", "")
	}); !errors.Is(err, store.ErrClaimed) {
		t.Fatalf("record by a process that did not claim it: %v", err)
	}
	update(t, db, func(tx *store.Tx) error {
		return tx.FinishHookDelivery(&d1, p1, store.HookFailed, store.Ptr(3), "out\n", "exit status 3")
	})
	if hasPending("") {
		t.Error("HasPendingHooks after the delivery was recorded")
	}
	got := deliveries(t, db)[0]
	if got.State != store.HookFailed || got.Tries != 1 || *got.ExitCode != 3 || got.Output != "out\n" || got.DeliveredAt == nil {
		t.Errorf("recorded: %+v", got)
	}
	var evs []store.Event
	view(t, db, func(tx *store.Tx) (err error) {
		evs, err = tx.Events("run1", 0, 0)
		return err
	})
	if last := evs[len(evs)-1]; last.Type != "hook.delivered" || last.Task != "a" {
		t.Errorf("last event: %+v", last)
	}

	var n int
	update(t, db, func(tx *store.Tx) (err error) {
		n, err = tx.RedeliverHooks("run1")
		return err
	})
	again := deliveries(t, db)[0]
	if n != 1 || again.State != store.HookPending || again.DeliveryID != got.DeliveryID {
		t.Errorf("redeliver: %d %+v", n, again)
	}
	// the claim of a process that died is taken over with a new try
	update(t, db, func(tx *store.Tx) error { return tx.ClaimHookDelivery(&again, p2, until) })
	if again.Tries != 2 || *again.Claim != p2 {
		t.Errorf("re-claimed: %+v", again)
	}
}

// BenchmarkStateChangeEvent is the cost a state change pays for the outbox: an event that fires
// nothing (attempt.process), then the same task.state_changed event in a run without hooks and in
// one whose change fires two.
func BenchmarkStateChangeEvent(b *testing.B) {
	for _, c := range []struct {
		name, typ string
		withHooks bool
	}{{"other-event", "attempt.process", false}, {"no-hooks", "task.state_changed", false}, {"two-hooks", "task.state_changed", true}} {
		withHooks := c.withHooks
		b.Run(c.name, func(b *testing.B) {
			db, _ := openDB(b)
			update(b, db, func(tx *store.Tx) error {
				if err := tx.InsertRun(newRun("run1")); err != nil {
					return err
				}
				if !withHooks {
					return nil
				}
				return tx.InsertHooks("run1", []store.HookDef{
					{Task: "a", Hook: store.HookOnFailed, Command: []string{"page"}},
					{Task: "a", Hook: store.HookOnFailed, Command: []string{"notify"}}})
			})
			b.ResetTimer()
			for b.Loop() {
				update(b, db, func(tx *store.Tx) error {
					if c.typ != store.EventTaskStateChanged {
						_, err := tx.AppendEvent("run1", "a", 0, c.typ, store.AttemptProcess{Pgid: 7})
						return err
					}
					setState(b, tx, "run1", "a", store.TaskRunning)
					_, err := tx.TransitionTask("run1", "a", store.TaskTransition{To: store.TaskFailed})
					return err
				})
			}
		})
	}
}

// ReplaceHooks (resume --reload) swaps the run's hook commands: later changes fire the new ones,
// and deliveries already in the outbox keep theirs.
func TestReplaceHooks(t *testing.T) {
	db, _ := openDB(t)
	hookRun(t, db)
	fail := func() {
		t.Helper()
		update(t, db, func(tx *store.Tx) error {
			_, err := tx.TransitionTask("run1", "a", store.TaskTransition{To: store.TaskFailed, Attempt: 1})
			return err
		})
	}
	fail()
	update(t, db, func(tx *store.Tx) error {
		if _, err := tx.TransitionTask("run1", "a", store.TaskTransition{To: store.TaskRunning}); err != nil {
			return err
		}
		return tx.ReplaceHooks("run1", []store.HookDef{{Task: "a", Hook: store.HookOnFailed, Command: []string{"new-on_failed"}}})
	})
	fail()
	if got, want := commands(deliveries(t, db)), []string{"a-on_failed", "a-on_failed-2", "new-on_failed"}; !slices.Equal(got, want) {
		t.Errorf("deliveries = %v, want %v", got, want)
	}
}

// DeleteTask removes a task without attempts (resume --reload) and refuses one with attempts.
func TestDeleteTask(t *testing.T) {
	db, _ := openDB(t)
	hookRun(t, db) // a has an attempt, b none
	err := db.Update(ctx, func(tx *store.Tx) error { return tx.DeleteTask("run1", "a") })
	if !errors.Is(err, store.ErrHasAttempts) {
		t.Fatalf("DeleteTask(a) = %v, want ErrHasAttempts", err)
	}
	update(t, db, func(tx *store.Tx) error { return tx.DeleteTask("run1", "b") })
	if r := getRun(t, db, "run1"); len(r.Tasks) != 1 || r.Tasks[0].ID != "a" || len(r.Tasks[0].Attempts) != 1 {
		t.Errorf("after DeleteTask(b): %+v", r.Tasks)
	}
	err = db.Update(ctx, func(tx *store.Tx) error { return tx.DeleteTask("run1", "b") })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteTask(b) again = %v, want ErrNotFound", err)
	}
}

// The task file spells the hook names the store queues; a rename on either side must fail here.
func TestHookNamesMatchTaskFile(t *testing.T) {
	want := []string{store.HookOnRetry, store.HookOnSuccess, store.HookOnFailed, store.HookOnBlocked,
		store.HookOnWaitingQuota, store.HookOnCancelled, store.HookOnTimeout, store.HookOnPaused, store.HookOnSilent,
		store.HookOnWaitingApproval, store.HookOnNoProgress}
	if !slices.Equal(taskfile.HookNames, want) {
		t.Fatalf("taskfile.HookNames = %q, store's = %q", taskfile.HookNames, want)
	}
}
