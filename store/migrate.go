package store

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// migrations lists the embedded files NNNN_name.sql in version order. Versions must run
// 1, 2, 3… without gaps: a gap means a file was lost, and applying the rest would build a
// schema no released mulligan ever had.
func migrations() ([]migration, error) {
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, f := range files {
		base := strings.TrimPrefix(f, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_name.sql", base)
		}
		body, err := migrationFS.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(body)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: expected version %d", m.name, i+1)
		}
	}
	return ms, nil
}

// SchemaVersion is the number of migrations this build knows.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// migrate applies each pending migration in its own IMMEDIATE transaction, bumping
// PRAGMA user_version inside the same transaction: a crash leaves either the old schema at the
// old version or the new one at the new version. Reading the version inside the transaction
// means two processes opening a fresh database at once apply each migration once.
func (db *DB) migrate(ctx context.Context) error {
	ms, err := migrations()
	if err != nil {
		return err
	}
	// The common case, an up-to-date file, must not take the write lock: every ls and show
	// opens the database, and a runner may be holding the lock.
	//
	// On a fresh file that other processes are opening too (switching it to WAL, applying the
	// first migration), SQLite can answer this first read with SQLITE_BUSY at once, without
	// waiting busy_timeout: TestOpenConcurrentFreshDatabase failed so 7 times in 100 before
	// the read was tried again.
	var v int
	for try := 1; ; try++ {
		err := db.w.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
		if err == nil {
			break
		}
		if !isBusy(err) || try == busyTries*4 {
			return fmt.Errorf("read schema version: %w", err)
		}
		time.Sleep(time.Duration(try) * 20 * time.Millisecond)
	}
	if v == len(ms) {
		return nil
	}
	for {
		applied, err := db.applyNext(ctx, ms)
		if err != nil {
			return err
		}
		if !applied {
			return nil
		}
	}
}

func (db *DB) applyNext(ctx context.Context, ms []migration) (applied bool, err error) {
	err = db.Update(ctx, func(tx *Tx) error {
		applied = false // Update may run this again after SQLITE_BUSY
		var v int
		if err := tx.queryRow("PRAGMA user_version").Scan(&v); err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		if v > len(ms) {
			return fmt.Errorf("database schema version %d is newer than this mulligan knows (%d): upgrade mulligan", v, len(ms))
		}
		if v == len(ms) {
			return nil
		}
		m := ms[v]
		if _, err := tx.exec(m.sql); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		// PRAGMA takes no bind parameters; the version is an int we produced.
		if _, err := tx.exec("PRAGMA user_version = " + strconv.Itoa(m.version)); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, err)
		}
		applied = true
		return nil
	})
	return applied, err
}

// UserVersion reports the schema version recorded in the database file.
func (db *DB) UserVersion(ctx context.Context) (int, error) {
	var v int
	err := db.View(ctx, func(tx *Tx) error {
		return tx.queryRow("PRAGMA user_version").Scan(&v)
	})
	return v, err
}
