package store_test

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/mulligan-dev/mulligan/store"
)

func TestFencing(t *testing.T) {
	db, clock := openDB(t)
	first := store.Owner{PID: 100, Host: "h", StartTicks: 1}
	r := newRun("run1")
	r.Owner = &first
	insertRun(t, db, r)
	if r.Epoch != 1 || r.HeartbeatAt == nil {
		t.Fatalf("owned run: epoch %d heartbeat %v", r.Epoch, r.HeartbeatAt)
	}
	// the owner writes under its epoch
	write := func(epoch int64) error {
		return db.Update(ctx, func(tx *store.Tx) error {
			if err := tx.CheckOwner("run1", epoch); err != nil {
				return err
			}
			_, err := tx.AppendEvent("run1", "", 0, "x", nil)
			return err
		})
	}
	if err := write(1); err != nil {
		t.Fatalf("owner's write: %v", err)
	}
	clock.Advance(10_000_000)
	update(t, db, func(tx *store.Tx) error { return tx.Heartbeat("run1", 1) })
	if hb := getRun(t, db, "run1").HeartbeatAt; hb == nil || !hb.Equal(clock.Now()) {
		t.Errorf("heartbeat_at = %v, want %v", hb, clock.Now())
	}

	// a supervisor claims it: the first owner is fenced
	second := store.Owner{PID: 200, Host: "h", StartTicks: 2}
	var epoch int64
	update(t, db, func(tx *store.Tx) (err error) { epoch, err = tx.ClaimRun("run1", 1, second); return err })
	if epoch != 2 {
		t.Errorf("ClaimRun epoch = %d, want 2", epoch)
	}
	if got := getRun(t, db, "run1"); got.Owner == nil || *got.Owner != second || got.Epoch != 2 {
		t.Errorf("owner after claim: %+v epoch %d", got.Owner, got.Epoch)
	}
	if err := write(1); !errors.Is(err, store.ErrFenced) {
		t.Errorf("old owner's write after ClaimRun: %v, want ErrFenced", err)
	}
	err := db.Update(ctx, func(tx *store.Tx) error { return tx.Heartbeat("run1", 1) })
	if !errors.Is(err, store.ErrFenced) {
		t.Errorf("old owner's heartbeat: %v, want ErrFenced", err)
	}
	// a second supervisor that read epoch 1 loses the race
	err = db.Update(ctx, func(tx *store.Tx) error {
		_, err := tx.ClaimRun("run1", 1, store.Owner{PID: 300})
		return err
	})
	if !errors.Is(err, store.ErrFenced) {
		t.Errorf("stale ClaimRun: %v, want ErrFenced", err)
	}
	if err := write(2); err != nil {
		t.Errorf("new owner's write: %v", err)
	}

	// kill fences without a new owner
	update(t, db, func(tx *store.Tx) (err error) { epoch, err = tx.FenceRun("run1"); return err })
	if epoch != 3 {
		t.Errorf("FenceRun epoch = %d, want 3", epoch)
	}
	if err := write(2); !errors.Is(err, store.ErrFenced) {
		t.Errorf("write after FenceRun: %v, want ErrFenced", err)
	}
	if got := getRun(t, db, "run1"); got.Owner == nil || got.Owner.PID != 200 {
		t.Errorf("FenceRun must keep naming the fenced owner: %+v", got.Owner)
	}

	for name, fn := range map[string]func(tx *store.Tx) error{
		"CheckOwner": func(tx *store.Tx) error { return tx.CheckOwner("nosuch", 1) },
		"Heartbeat":  func(tx *store.Tx) error { return tx.Heartbeat("nosuch", 1) },
		"ClaimRun":   func(tx *store.Tx) error { _, err := tx.ClaimRun("nosuch", 0, second); return err },
		"FenceRun":   func(tx *store.Tx) error { _, err := tx.FenceRun("nosuch"); return err },
	} {
		if err := db.Update(ctx, fn); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of a missing run: %v, want ErrNotFound", name, err)
		}
	}
}

func TestWorktreeLock(t *testing.T) {
	db, _ := openDB(t)
	insertRun(t, db, newRun("run1"))
	insertRun(t, db, newRun("run2"))
	insertRun(t, db, newRun("run3"))
	holder := store.Owner{PID: 100, Host: "h", StartTicks: 5}
	other := store.Owner{PID: 200, Host: "h", StartTicks: 6}
	liveSet := map[store.Owner]bool{holder: true, other: true}
	alive := func(o store.Owner) bool { return liveSet[o] }
	acquire := func(wt, run string, o store.Owner) error {
		return db.Update(ctx, func(tx *store.Tx) error { return tx.AcquireWorktreeLock(wt, run, o, alive) })
	}

	if err := acquire("/w", "run1", holder); err != nil {
		t.Fatal(err)
	}
	if err := acquire("/w", "run1", holder); err != nil {
		t.Errorf("re-acquire by the holder: %v", err)
	}
	err := acquire("/w", "run2", other)
	var le *store.LockedError
	if !errors.As(err, &le) || !errors.Is(err, store.ErrLocked) || le.RunID != "run1" || le.Owner != holder {
		t.Fatalf("lock held by a live owner: %v", err)
	}
	if want := "worktree /w is in use by run run1 (pid 100 on h)"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	// another worktree of the same repository is independent
	if err := acquire("/w2", "run2", other); err != nil {
		t.Errorf("other worktree: %v", err)
	}

	// the holder dies: its lock is taken over
	delete(liveSet, holder)
	if err := acquire("/w", "run3", other); err != nil {
		t.Fatalf("lock of a dead owner: %v", err)
	}
	view(t, db, func(tx *store.Tx) error {
		l, err := tx.WorktreeLock("/w")
		if err != nil || l.RunID != "run3" || l.Owner != other {
			t.Errorf("lock after takeover: %+v %v", l, err)
		}
		return nil
	})
	// the dead owner's late release must not free the new holder's lock
	update(t, db, func(tx *store.Tx) error { return tx.ReleaseWorktreeLock("/w", "run1") })
	if err := acquire("/w", "run1", holder); !errors.Is(err, store.ErrLocked) {
		t.Errorf("stale release freed the lock: %v", err)
	}

	// a finished run's lock is free even while its process lingers
	update(t, db, func(tx *store.Tx) error { return runTo(tx, "run3", store.RunSucceeded, "") })
	liveSet[holder] = true
	if err := acquire("/w", "run1", holder); err != nil {
		t.Errorf("lock of a finished run: %v", err)
	}
	update(t, db, func(tx *store.Tx) error { return tx.ReleaseWorktreeLock("/w", "run1") })
	view(t, db, func(tx *store.Tx) error {
		if _, err := tx.WorktreeLock("/w"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("lock after release: %v, want ErrNotFound", err)
		}
		return nil
	})
}

func TestSelfAndProcessAlive(t *testing.T) {
	me := store.Self()
	if me.PID != os.Getpid() || me.StartTicks == 0 || me.Host == "" {
		t.Fatalf("Self() = %+v", me)
	}
	if !store.ProcessAlive(me) {
		t.Error("this process is not alive")
	}
	recycled := me
	recycled.StartTicks++
	if store.ProcessAlive(recycled) {
		t.Error("same pid with another start time counted as alive")
	}
	if store.ProcessAlive(store.Owner{PID: 0}) || store.ProcessAlive(store.Owner{PID: -1}) {
		t.Error("pid <= 0 counted as alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true binary:", err)
	}
	gone := store.Owner{PID: cmd.Process.Pid, Host: me.Host}
	if store.ProcessAlive(gone) {
		t.Errorf("exited child %d counted as alive", gone.PID)
	}
	if !store.ProcessAlive(store.Owner{PID: gone.PID, Host: me.Host + ".elsewhere"}) {
		t.Error("an owner on another host cannot be checked and must count as alive")
	}
}

func TestParseProcStat(t *testing.T) {
	// field 2 may hold spaces and parentheses
	line := "4242 (we ird) (x) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 100\n"
	state, ticks, err := store.ParseProcStatForTest([]byte(line))
	if err != nil || state != 'S' || ticks != 987654 {
		t.Errorf("parse = %c %d %v", state, ticks, err)
	}
	if _, _, err := store.ParseProcStatForTest([]byte("4242 (short) S 1 2")); err == nil {
		t.Error("short stat line accepted")
	}
}
