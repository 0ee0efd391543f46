package compensate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/store/storetest"
)

// hookFixture is a database with run r1 owned by owner, whose task t has the given hooks, and a
// deliverer whose hooks append to log.
type hookFixture struct {
	db    *store.DB
	hooks *Hooks
	log   string
	alive map[int]bool
	// worktree is the run's working tree, where its hooks run.
	worktree string
}

func newHookFixture(t *testing.T, owner store.Owner, defs ...store.HookDef) *hookFixture {
	t.Helper()
	f := &hookFixture{db: storetest.OpenTemp(t), log: filepath.Join(t.TempDir(), "hooks.log"), alive: map[int]bool{},
		worktree: t.TempDir()}
	err := f.db.Update(context.Background(), func(tx *store.Tx) error {
		if err := tx.InsertRun(&store.Run{ID: "r1", Worktree: f.worktree, State: store.RunRunning, Owner: &owner,
			Tasks: []store.Task{{ID: "t"}}}); err != nil {
			return err
		}
		if err := tx.InsertHooks("r1", defs); err != nil {
			return err
		}
		return tx.InsertAttempt(&store.Attempt{RunID: "r1", TaskID: "t"})
	})
	if err != nil {
		t.Fatal(err)
	}
	f.hooks = &Hooks{
		DB:      f.db,
		Environ: append(os.Environ(), "HOOKLOG="+f.log),
		Timeout: 5 * time.Second,
		Self:    store.Owner{PID: 1, Host: "here", StartTicks: 1},
		Alive:   func(o store.Owner) bool { return f.alive[o.PID] },
		Expand: func(d store.HookDelivery) ([]string, error) {
			out := make([]string, len(d.Command))
			for i, a := range d.Command {
				out[i] = strings.ReplaceAll(a, "{{task}}", d.TaskID)
			}
			return out, nil
		},
	}
	return f
}

func (f *hookFixture) fire(t *testing.T, typ, task, to string) {
	t.Helper()
	err := f.db.Update(context.Background(), func(tx *store.Tx) error {
		if typ == store.EventRunStateChanged {
			_, err := tx.TransitionRun("r1", store.RunTransition{To: store.RunState(to)})
			return err
		}
		_, err := tx.TransitionTask("r1", task, store.TaskTransition{To: store.TaskState(to), Attempt: 1})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *hookFixture) logged(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(f.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

func (f *hookFixture) deliveries(t *testing.T) []store.HookDelivery {
	t.Helper()
	var ds []store.HookDelivery
	if err := f.db.View(context.Background(), func(tx *store.Tx) (err error) {
		ds, err = tx.HookDeliveries("r1")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return ds
}

var appendHook = []string{"sh", "-c", `echo "$MULLIGAN_EVENT {{task}} $MULLIGAN_TASK@$MULLIGAN_ATTEMPT $MULLIGAN_STATE $MULLIGAN_DELIVERY_ID" >> "$HOOKLOG"; pwd > "$HOOKLOG.pwd"`}

func TestHooksDeliverInOrderWithTheirEnvironment(t *testing.T) {
	f := newHookFixture(t, store.Owner{PID: 1, Host: "here", StartTicks: 1},
		store.HookDef{Task: "t", Hook: store.HookOnFailed, Command: appendHook},
		store.HookDef{Task: "t", Hook: store.HookOnFailed, Command: []string{"sh", "-c", "echo broken; exit 7"}},
		store.HookDef{Hook: store.HookOnFailed, Command: appendHook})
	f.fire(t, "task.state_changed", "t", store.TaskFailed)
	f.fire(t, "run.state_changed", "", store.RunFailed)
	res, err := f.hooks.DeliverRun(context.Background(), "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].Err != nil || res[1].Err == nil || res[2].Err != nil {
		t.Fatalf("results: %+v", res)
	}
	if want := "on_failed t t@1 failed r1-h1\non_failed  @ failed r1-h3\n"; f.logged(t) != want {
		t.Errorf("log:\n%s\nwant:\n%s", f.logged(t), want)
	}
	if pwd, _ := os.ReadFile(f.log + ".pwd"); strings.TrimSpace(string(pwd)) != f.worktree {
		t.Errorf("hook ran in %q, want the run's worktree %q", pwd, f.worktree)
	}
	ds := f.deliveries(t)
	if ds[1].State != store.HookFailed || *ds[1].ExitCode != 7 || ds[1].Output != "broken\n" || ds[1].Error != "exit status 7" {
		t.Errorf("failing hook: %+v", ds[1])
	}
	if ds[0].State != store.HookDelivered || ds[2].State != store.HookDelivered {
		t.Errorf("states: %+v", ds)
	}
	// nothing left: a second pass delivers nothing again
	if res, err := f.hooks.DeliverRun(context.Background(), "r1"); err != nil || len(res) != 0 {
		t.Errorf("second pass: %+v %v", res, err)
	}
}

// A hook that hangs is ended at the timeout (its whole process group) and recorded failed.
func TestHookThatHangsIsBounded(t *testing.T) {
	f := newHookFixture(t, store.Owner{PID: 1, Host: "here", StartTicks: 1},
		store.HookDef{Task: "t", Hook: store.HookOnBlocked, Command: []string{"sh", "-c", "sleep 60 & sleep 60"}})
	f.hooks.Timeout = 200 * time.Millisecond
	f.fire(t, "task.state_changed", "t", store.TaskBlocked)
	res, err := f.hooks.DeliverRun(context.Background(), "r1")
	if err != nil || len(res) != 1 || res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "timed out") {
		t.Fatalf("results: %+v %v", res, err)
	}
	if d := f.deliveries(t)[0]; d.State != store.HookFailed || !strings.Contains(d.Error, "timed out after 200ms") {
		t.Errorf("recorded: %+v", d)
	}
}

// Orphans: a run whose owner lives elsewhere keeps its deliveries; once the owner is dead, the
// next process delivers them, a claim by a dead process included, with the same delivery id.
func TestDeliverOrphans(t *testing.T) {
	other := store.Owner{PID: 2, Host: "here", StartTicks: 2}
	f := newHookFixture(t, other, store.HookDef{Task: "t", Hook: store.HookOnSuccess, Command: appendHook})
	f.alive[2] = true
	f.fire(t, "task.state_changed", "t", store.TaskSucceeded)
	if res, err := f.hooks.DeliverOrphans(context.Background()); err != nil || len(res) != 0 {
		t.Fatalf("delivered a live run's hooks: %+v %v", res, err)
	}
	// the owner claimed it, then died before recording it
	err := f.db.Update(context.Background(), func(tx *store.Tx) error {
		ds, err := tx.PendingHookDeliveries("r1")
		if err != nil {
			return err
		}
		return tx.ClaimHookDelivery(&ds[0], other, time.Now().Add(time.Hour))
	})
	if err != nil {
		t.Fatal(err)
	}
	f.alive[2] = false
	res, err := f.hooks.DeliverOrphans(context.Background())
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("orphan delivery: %+v %v", res, err)
	}
	if want := "on_success t t@1 succeeded r1-h1\n"; f.logged(t) != want {
		t.Errorf("log %q, want %q", f.logged(t), want)
	}
	if d := f.deliveries(t)[0]; d.State != store.HookDelivered || d.Tries != 2 {
		t.Errorf("recorded: %+v", d)
	}
}

// The background deliverer runs what each wake finds and, on Close, what is left.
func TestBackgroundDelivery(t *testing.T) {
	f := newHookFixture(t, store.Owner{PID: 1, Host: "here", StartTicks: 1},
		store.HookDef{Task: "t", Hook: store.HookOnRetry, Command: appendHook},
		store.HookDef{Task: "t", Hook: store.HookOnCancelled, Command: appendHook})
	ctx, cancel := context.WithCancel(context.Background())
	b := f.hooks.Start(ctx, "r1")
	f.fire(t, "task.state_changed", "t", store.TaskBackoff)
	b.Wake()
	cancel() // a cancelled run still delivers its hooks
	f.fire(t, "task.state_changed", "t", store.TaskCancelled)
	b.Close()
	b.Wake() // after Close: nothing, no panic
	if want := "on_retry t t@1 backoff r1-h1\non_cancelled t t@1 cancelled r1-h2\n"; f.logged(t) != want {
		t.Errorf("log %q, want %q", f.logged(t), want)
	}
}
