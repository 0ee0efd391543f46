// Package storetest opens throw-away history databases for tests of the packages that use
// store. It must never be imported by non-test code.
package storetest

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

// OpenTemp opens a fresh database in t's temp dir, laid out like a real one
// (<dir>/mulligan/mulligan.db), and closes it when the test ends.
func OpenTemp(t testing.TB, opts ...store.Option) *store.DB {
	t.Helper()
	db, err := store.Open(store.DefaultPath(t.TempDir()), opts...)
	if err != nil {
		t.Fatalf("open temp history database: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close temp history database: %v", err)
		}
	})
	return db
}

// OpenTempPath is OpenTemp for a database file at path, for tests that reopen it.
func OpenTempPath(t testing.TB, path string, opts ...store.Option) *store.DB {
	t.Helper()
	db, err := store.Open(path, opts...)
	if err != nil {
		t.Fatalf("open history database %s: %v", filepath.Base(path), err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Clock is a manual clock for store.WithClock: time moves only when the test says so.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts a clock at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the clock's current time; pass c.Now to store.WithClock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
