package store_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/store/storetest"
)

func TestDefaultPath(t *testing.T) {
	if got, want := store.DefaultPath("/r/.git"), "/r/.git/mulligan/mulligan.db"; got != want {
		t.Errorf("DefaultPath = %q, want %q", got, want)
	}
}

func TestOpenAppliesMigrationsOnce(t *testing.T) {
	path := store.DefaultPath(t.TempDir())
	db := storetest.OpenTempPath(t, path)
	v, err := db.UserVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v != store.SchemaVersion() || v < 1 {
		t.Fatalf("user_version = %d, want %d", v, store.SchemaVersion())
	}
	insertRun(t, db, newRun("run1"))
	db.Close()

	// Reopening must neither fail (0001 re-applied would hit "table runs already exists")
	// nor lose data.
	db2 := storetest.OpenTempPath(t, path)
	if v2, _ := db2.UserVersion(context.Background()); v2 != v {
		t.Errorf("user_version after reopen = %d, want %d", v2, v)
	}
	if r := getRun(t, db2, "run1"); len(r.Tasks) != 2 {
		t.Errorf("run after reopen has %d tasks, want 2", len(r.Tasks))
	}
}

func TestOpenConcurrentFreshDatabase(t *testing.T) {
	path := store.DefaultPath(t.TempDir())
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := store.Open(path)
			if err == nil {
				err = db.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("open %d: %v", i, err)
		}
	}
	db := storetest.OpenTempPath(t, path)
	if v, _ := db.UserVersion(context.Background()); v != store.SchemaVersion() {
		t.Errorf("user_version = %d, want %d", v, store.SchemaVersion())
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := store.DefaultPath(t.TempDir())
	db := storetest.OpenTempPath(t, path)
	db.Close()
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("PRAGMA user_version = 999"); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, err = store.Open(path)
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open of a version-999 database: err = %v, want a 'newer' error", err)
	}
}

func TestFileModes(t *testing.T) {
	old := setUmask(0o022)
	defer setUmask(old)
	dir := filepath.Join(t.TempDir(), "common")
	path := store.DefaultPath(dir)
	db := storetest.OpenTempPath(t, path)
	insertRun(t, db, newRun("run1")) // make sure -wal and -shm exist
	checkMode(t, filepath.Dir(path), 0o700)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		checkMode(t, p, 0o600)
	}
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != want {
		t.Errorf("%s: mode %o, want %o", filepath.Base(path), got, want)
	}
}

func TestConnectionSettings(t *testing.T) {
	db, _ := openDB(t)
	check := func(tx *store.Tx, name string, want int64) {
		t.Helper()
		got, err := tx.QueryIntForTest("PRAGMA " + name)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %d, want %d", name, got, want)
		}
	}
	for _, run := range []func(context.Context, func(*store.Tx) error) error{db.Update, db.View} {
		err := run(context.Background(), func(tx *store.Tx) error {
			mode, err := tx.QueryStringForTest("PRAGMA journal_mode")
			if err != nil {
				return err
			}
			if mode != "wal" {
				t.Errorf("journal_mode = %q, want wal", mode)
			}
			check(tx, "foreign_keys", 1)
			check(tx, "busy_timeout", 5000)
			check(tx, "synchronous", 1) // NORMAL
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestUpdateRollsBackOnError(t *testing.T) {
	db, _ := openDB(t)
	boom := errors.New("boom")
	err := db.Update(context.Background(), func(tx *store.Tx) error {
		if err := tx.InsertRun(newRun("run1")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want the callback's error", err)
	}
	view(t, db, func(tx *store.Tx) error {
		if _, err := tx.RunHeader("run1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("run of a rolled-back transaction: err = %v, want ErrNotFound", err)
		}
		return nil
	})
}

func TestUpdateRollsBackOnPanic(t *testing.T) {
	db, _ := openDB(t)
	func() {
		defer func() { recover() }()
		db.Update(context.Background(), func(tx *store.Tx) error {
			tx.InsertRun(newRun("run1"))
			panic("boom")
		})
	}()
	// the one write connection must have been released, and the insert undone
	update(t, db, func(tx *store.Tx) error {
		if _, err := tx.RunHeader("run1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("run of a panicked transaction: err = %v, want ErrNotFound", err)
		}
		return nil
	})
}

func TestViewIsReadOnly(t *testing.T) {
	db, _ := openDB(t)
	err := db.View(context.Background(), func(tx *store.Tx) error { return tx.InsertRun(newRun("run1")) })
	if err == nil {
		t.Fatal("InsertRun inside View succeeded")
	}
}

func TestForeignKeysEnforced(t *testing.T) {
	db, _ := openDB(t)
	err := db.Update(context.Background(), func(tx *store.Tx) error {
		return tx.InsertTask(&store.Task{RunID: "nosuchrun", ID: "a"})
	})
	if err == nil {
		t.Fatal("task of a missing run was inserted")
	}
}

// Two handles on one file behave like two processes: the second writer waits for the
// first's transaction instead of failing with SQLITE_BUSY.
func TestUpdateWaitsForAnotherWriter(t *testing.T) {
	path := store.DefaultPath(t.TempDir())
	a := storetest.OpenTempPath(t, path)
	b := storetest.OpenTempPath(t, path)
	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- a.Update(context.Background(), func(tx *store.Tx) error {
			if err := tx.InsertRun(newRun("runa")); err != nil {
				return err
			}
			close(holding)
			<-release
			return nil
		})
	}()
	<-holding
	errB := make(chan error, 1)
	go func() {
		errB <- b.Update(context.Background(), func(tx *store.Tx) error { return tx.InsertRun(newRun("runb")) })
	}()
	time.Sleep(100 * time.Millisecond) // let b block on the lock; not an assertion
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("first writer: %v", err)
	}
	if err := <-errB; err != nil {
		t.Fatalf("second writer: %v", err)
	}
	var runs []store.RunSummary
	view(t, a, func(tx *store.Tx) (err error) { runs, err = tx.ListRuns(0); return err })
	if len(runs) != 2 {
		t.Errorf("%d runs, want 2", len(runs))
	}
}

// When the lock stays taken past busy_timeout, Update starts the transaction over instead of
// failing at once.
func TestUpdateRetriesAfterBusyTimeout(t *testing.T) {
	path := store.DefaultPath(t.TempDir())
	a := storetest.OpenTempPath(t, path)
	b := storetest.OpenTempPath(t, path, store.WithBusyTimeout(10*time.Millisecond))
	retried := make(chan struct{}, 16)
	aDone := make(chan struct{})
	// the retry waits for the holder to commit, so the test does not race the retry budget
	store.SetOnBusyRetryForTest(func() { retried <- struct{}{}; <-aDone })
	defer store.SetOnBusyRetryForTest(nil)

	holding, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- a.Update(context.Background(), func(tx *store.Tx) error {
			close(holding)
			<-release
			return tx.InsertRun(newRun("runa"))
		})
	}()
	<-holding
	errB := make(chan error, 1)
	go func() {
		errB <- b.Update(context.Background(), func(tx *store.Tx) error {
			return tx.InsertRun(newRun("runb"))
		})
	}()
	<-retried // b hit SQLITE_BUSY at least once and is starting over
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("first writer: %v", err)
	}
	close(aDone)
	if err := <-errB; err != nil {
		t.Fatalf("writer that met a busy database: %v", err)
	}

	view(t, a, func(tx *store.Tx) error {
		_, err := tx.RunHeader("runb")
		return err
	})
}
