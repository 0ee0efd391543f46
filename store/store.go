// Package store owns mulligan's history: the SQLite database under the git common dir that
// records every run, task, attempt, event, disabled agent and worktree lock, and the owner
// fencing that lets exactly one runner process write a run at a time.
//
// It records what the runner decided and answers what ls, show and events ask; it must never
// decide policy, run agents, touch the working tree or git refs, or scrub output (the printers
// scrub secrets). Every write happens inside Update's transaction, so a process killed at any
// moment leaves the database as of its last commit.
package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"
)

// DB is an open history database. It is safe for concurrent use.
type DB struct {
	path string
	// w holds the one connection that writes: its transactions begin IMMEDIATE, so a writer
	// takes the write lock up front instead of failing with SQLITE_BUSY half-way through when
	// it upgrades from reading. One connection also serialises writers inside this process
	// without spending busy_timeout on each other.
	w *sql.DB
	// r holds query_only connections for View: in WAL mode readers never wait for the writer.
	r           *sql.DB
	now         func() time.Time
	busyTimeout time.Duration
}

// Option configures Open.
type Option func(*DB)

// WithClock replaces time.Now for every timestamp the store writes (tests, replay).
func WithClock(now func() time.Time) Option {
	return func(db *DB) { db.now = now }
}

// WithBusyTimeout replaces the 5 s SQLite waits for another process's write lock before a
// transaction is retried from the start.
func WithBusyTimeout(d time.Duration) Option {
	return func(db *DB) { db.busyTimeout = d }
}

// DefaultPath is where a repository's database lives: <commonDir>/mulligan/mulligan.db.
func DefaultPath(commonDir string) string {
	return filepath.Join(commonDir, "mulligan", "mulligan.db")
}

// Open opens (creating if needed) the database at path and applies pending migrations. The
// directory is created 0700 and the file 0600: attempts hold prompts, which may hold secrets.
func Open(path string, opts ...Option) (*DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open history database: %w", err)
	}
	db := &DB{path: abs, now: time.Now, busyTimeout: 5 * time.Second}
	for _, o := range opts {
		o(db)
	}
	if err := prepareFile(abs); err != nil {
		var empty *EmptyError
		if errors.As(err, &empty) {
			return nil, err
		}
		return nil, fmt.Errorf("open history database: %w", err)
	}
	// synchronous=NORMAL: in WAL mode a commit is appended to the -wal file without an fsync;
	// the data is in the kernel's page cache the moment COMMIT returns, so a killed process
	// (kill -9, panic, OOM) loses nothing. Only a power cut or kernel crash can lose the last
	// few commits, and even then the database stays consistent (never corrupt). FULL would add
	// an fsync per state change for a guarantee a history database does not need.
	pragmas := fmt.Sprintf("_foreign_keys=on&_busy_timeout=%d&_journal_mode=WAL&_synchronous=NORMAL",
		db.busyTimeout.Milliseconds())
	uri := "file:" + escapeURIPath(abs) + "?" + pragmas
	db.w, err = sql.Open("sqlite3", uri+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open history database: %w", err)
	}
	db.w.SetMaxOpenConns(1)
	db.w.SetMaxIdleConns(1)
	db.w.SetConnMaxLifetime(0)
	db.w.SetConnMaxIdleTime(0)
	if err := db.migrate(context.Background()); err != nil {
		db.w.Close()
		return nil, fmt.Errorf("open history database %s: %w", abs, err)
	}
	db.r, err = sql.Open("sqlite3", uri+"&_txlock=deferred&_query_only=true")
	if err != nil {
		db.w.Close()
		return nil, fmt.Errorf("open history database: %w", err)
	}
	db.r.SetMaxOpenConns(4)
	db.r.SetMaxIdleConns(4)
	// SQLite creates -wal and -shm with the main file's mode already; this only tightens
	// files left looser by something else. Best effort: in a repository shared with other
	// users the files may belong to someone else, and that must not stop ls.
	for _, suffix := range []string{"-wal", "-shm"} {
		os.Chmod(abs+suffix, 0o600)
	}
	return db, nil
}

// prepareFile creates the directory 0700 and the empty database file 0600 before SQLite opens
// it, so the file never exists with the umask's looser mode.
func prepareFile(path string) error {
	dir := filepath.Dir(path)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		// MkdirAll applies the umask; make the mode exactly 0700 whatever the umask is
		if err := os.Chmod(dir, 0o700); err != nil {
			return err
		}
	}
	if err := checkNotEmptied(path); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err == nil && st.Size() == 0 {
		err = f.Chmod(0o600)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// EmptyError refuses a database file of 0 bytes in a repository that has recorded runs: SQLite
// would take it for a new database and every recorded run would silently vanish from the
// history.
type EmptyError struct {
	Path     string
	Evidence string // what says runs were recorded
}

func (e *EmptyError) Error() string {
	return fmt.Sprintf("the history database %s is empty (0 bytes), but this repository has recorded runs (%s): refusing to start an empty history over it", e.Path, e.Evidence)
}

// checkNotEmptied returns an *EmptyError when path exists with 0 bytes, no write-ahead log holds
// its pages (in WAL mode a young database may live in -wal alone), and the repository around it
// (<common>/mulligan/mulligan.db) shows recorded runs: logs, autopsies or run refs. An empty
// file with nothing recorded around it is a new history, as a missing one is.
func checkNotEmptied(path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Size() != 0 {
		return nil
	}
	if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
		return nil
	}
	mdir := filepath.Dir(path)
	common := filepath.Dir(mdir)
	for _, d := range []struct{ path, what string }{
		{filepath.Join(mdir, "logs"), "attempt logs in " + filepath.Join(mdir, "logs")},
		{filepath.Join(mdir, "autopsy"), "autopsies in " + filepath.Join(mdir, "autopsy")},
		{filepath.Join(common, "refs", "mulligan", "runs"), "refs/mulligan/runs/"},
	} {
		if ents, err := os.ReadDir(d.path); err == nil && len(ents) > 0 {
			return &EmptyError{Path: path, Evidence: d.what}
		}
	}
	if packed, err := os.ReadFile(filepath.Join(common, "packed-refs")); err == nil && bytes.Contains(packed, []byte(" refs/mulligan/runs/")) {
		return &EmptyError{Path: path, Evidence: "refs/mulligan/runs/ in packed-refs"}
	}
	return nil
}

// escapeURIPath escapes the characters that would end or corrupt the path part of an SQLite
// file: URI; a git directory may well contain '#' or '%'.
func escapeURIPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '%', '?', '#':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Now is the store's clock, truncated to the millisecond precision timestamps are stored at.
func (db *DB) Now() time.Time { return db.now().UTC().Truncate(time.Millisecond) }

// Close closes the database.
func (db *DB) Close() error {
	var errs []error
	if db.r != nil {
		errs = append(errs, db.r.Close())
	}
	if db.w != nil {
		errs = append(errs, db.w.Close())
	}
	return errors.Join(errs...)
}

// onBusyRetry, when set (by tests), is called each time Update starts over after SQLITE_BUSY.
var onBusyRetry func()

// busyTries bounds how often Update starts over after SQLITE_BUSY. Each try already waited
// busy_timeout (5 s by default) inside SQLite, so giving up after a few means another process
// has held the write lock for most of half a minute: a bug to report, not a wait to prolong.
const busyTries = 5

// Update runs fn in one write transaction (BEGIN IMMEDIATE … COMMIT). If fn returns an error
// the transaction is rolled back and that error returned unchanged. When the database stays
// locked by another process past busy_timeout, the whole transaction is retried from the
// start, so fn must not have effects outside tx that cannot be repeated. Do not call Update
// or View from inside fn.
func (db *DB) Update(ctx context.Context, fn func(tx *Tx) error) error {
	for try := 1; ; try++ {
		err := db.run(ctx, db.w, true, fn)
		if !isBusy(err) || try == busyTries {
			return err
		}
		if onBusyRetry != nil {
			onBusyRetry()
		}
		// jitter so two processes that collided do not collide again in lockstep
		d := time.Duration(try)*50*time.Millisecond + rand.N(50*time.Millisecond)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
		}
	}
}

// View runs fn in one read transaction: every query in fn sees the same snapshot. Like
// Update, it may run fn again after SQLITE_BUSY (rare for WAL readers: only while another
// process recovers the WAL after a crash).
func (db *DB) View(ctx context.Context, fn func(tx *Tx) error) error {
	for try := 1; ; try++ {
		err := db.run(ctx, db.r, false, fn)
		if !isBusy(err) || try == busyTries {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(try) * 20 * time.Millisecond):
		}
	}
}

func (db *DB) run(ctx context.Context, pool *sql.DB, write bool, fn func(tx *Tx) error) error {
	stx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	done := false
	defer func() {
		if !done {
			stx.Rollback()
		}
	}()
	tx := &Tx{ctx: ctx, tx: stx, now: db.Now, write: write}
	if err := fn(tx); err != nil {
		return err
	}
	done = true
	if err := stx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func isBusy(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked
	}
	return false
}

// Tx is one transaction, valid only inside the Update or View callback that received it.
type Tx struct {
	ctx   context.Context
	tx    *sql.Tx
	now   func() time.Time
	write bool
}

// Now is the store's clock (see DB.Now).
func (tx *Tx) Now() time.Time { return tx.now() }

func (tx *Tx) exec(query string, args ...any) (sql.Result, error) {
	if !tx.write {
		return nil, errReadOnly
	}
	return tx.tx.ExecContext(tx.ctx, query, args...)
}

func (tx *Tx) query(query string, args ...any) (*sql.Rows, error) {
	return tx.tx.QueryContext(tx.ctx, query, args...)
}

func (tx *Tx) queryRow(query string, args ...any) *sql.Row {
	return tx.tx.QueryRowContext(tx.ctx, query, args...)
}

var errReadOnly = errors.New("write inside a read-only transaction (use Update, not View)")
