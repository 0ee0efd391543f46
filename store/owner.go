package store

import (
	"database/sql"
	"errors"
	"fmt"
)

// Owner fencing. A run's row carries its owner and an epoch. A runner gets the epoch from
// InsertRun or ClaimRun and passes it to CheckOwner at the start of every write transaction;
// ClaimRun (resume, supervise) and FenceRun (kill) bump the epoch, so once they commit, every
// later transaction of the previous owner fails with ErrFenced, even if that process is still
// alive (stopped, swapped out, or SIGKILL not yet delivered). Because the check and the
// writes share one IMMEDIATE transaction, there is no window between them.

func fenced(run string, have, want int64) error {
	return fmt.Errorf("run %s: owner epoch is %d, not %d: %w", run, have, want, ErrFenced)
}

func (tx *Tx) epoch(run string) (int64, error) {
	var e int64
	err := tx.queryRow(`SELECT owner_epoch FROM runs WHERE id = ?`, run).Scan(&e)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("run %s: %w", run, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("read owner of run %s: %w", run, err)
	}
	return e, nil
}

// ClaimRun makes o the run's owner if its epoch is still expectEpoch (compare-and-swap) and
// returns the new epoch. It fails with ErrFenced when someone else claimed or fenced it first:
// of two supervisors resuming the same dead run, exactly one wins.
func (tx *Tx) ClaimRun(run string, expectEpoch int64, o Owner) (int64, error) {
	res, err := tx.exec(`UPDATE runs SET owner_epoch = owner_epoch + 1, owner_pid = ?,
			owner_host = ?, owner_start_ticks = ?, heartbeat_at = ?
		WHERE id = ? AND owner_epoch = ?`,
		o.PID, o.Host, int64(o.StartTicks), ms(tx.now()), run, expectEpoch)
	if err != nil {
		return 0, fmt.Errorf("claim run %s: %w", run, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return 0, fmt.Errorf("claim run %s: %w", run, err)
	} else if n == 1 {
		return expectEpoch + 1, nil
	}
	have, err := tx.epoch(run)
	if err != nil {
		return 0, err
	}
	return 0, fenced(run, have, expectEpoch)
}

// CheckOwner fails with ErrFenced unless the run's epoch is still epoch. Every runner write
// transaction calls it first; on ErrFenced the runner must stop without writing anything.
func (tx *Tx) CheckOwner(run string, epoch int64) error {
	have, err := tx.epoch(run)
	if err != nil {
		return err
	}
	if have != epoch {
		return fenced(run, have, epoch)
	}
	return nil
}

// Heartbeat stamps the run's heartbeat if the caller still owns it at epoch.
func (tx *Tx) Heartbeat(run string, epoch int64) error {
	res, err := tx.exec(`UPDATE runs SET heartbeat_at = ? WHERE id = ? AND owner_epoch = ?`,
		ms(tx.now()), run, epoch)
	if err != nil {
		return fmt.Errorf("heartbeat of run %s: %w", run, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("heartbeat of run %s: %w", run, err)
	} else if n == 1 {
		return nil
	}
	return tx.CheckOwner(run, epoch) // says which: not found or fenced
}

// DisownRun leaves the run without an owner process, if the caller still owns it at epoch: a
// supervisor that claimed a run only to hold it (blocked) must not look like a live process
// acting on it to the operator's resume, revert or cancel. The epoch stays: the next claim
// compares against it.
func (tx *Tx) DisownRun(run string, epoch int64) error {
	res, err := tx.exec(`UPDATE runs SET owner_pid = NULL, owner_host = NULL, owner_start_ticks = NULL
		WHERE id = ? AND owner_epoch = ?`, run, epoch)
	if err != nil {
		return fmt.Errorf("disown run %s: %w", run, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("disown run %s: %w", run, err)
	} else if n == 1 {
		return nil
	}
	return tx.CheckOwner(run, epoch)
}

// FenceRun bumps the run's epoch without naming a new owner (kill): the old owner can no
// longer commit. The owner columns keep naming the process that was fenced, so kill can
// still signal it. It returns the new epoch.
func (tx *Tx) FenceRun(run string) (int64, error) {
	if !tx.write {
		return 0, errReadOnly
	}
	var e int64
	err := tx.queryRow(`UPDATE runs SET owner_epoch = owner_epoch + 1 WHERE id = ?
		RETURNING owner_epoch`, run).Scan(&e)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("fence run %s: %w", run, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("fence run %s: %w", run, err)
	}
	return e, nil
}

// LockedError says which run holds a worktree. errors.Is(err, ErrLocked) is true.
type LockedError struct {
	Worktree string
	RunID    string
	Owner    Owner
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("worktree %s is in use by run %s (pid %d on %s)", e.Worktree, e.RunID, e.Owner.PID, e.Owner.Host)
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// WorktreeLock returns the worktree's lock row, or ErrNotFound when it is free.
func (tx *Tx) WorktreeLock(worktree string) (*Lock, error) {
	var (
		l         = Lock{Worktree: worktree}
		ticks, at int64
	)
	err := tx.queryRow(`SELECT run_id, owner_pid, owner_host, owner_start_ticks, acquired_at
		FROM worktree_locks WHERE worktree = ?`, worktree).
		Scan(&l.RunID, &l.Owner.PID, &l.Owner.Host, &ticks, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("lock of worktree %s: %w", worktree, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read lock of worktree %s: %w", worktree, err)
	}
	l.Owner.StartTicks, l.AcquiredAt = uint64(ticks), fromMS(at)
	return &l, nil
}

// AcquireWorktreeLock takes the worktree for run, owned by o: one active run per worktree.
// A lock held by the same owner is re-taken (for the new run, if it differs). Another
// holder's lock is taken over when its run has finished or alive reports its owner dead (nil
// means ProcessAlive); otherwise the result is a *LockedError naming the holder.
func (tx *Tx) AcquireWorktreeLock(worktree, run string, o Owner, alive func(Owner) bool) error {
	if alive == nil {
		alive = ProcessAlive
	}
	held, err := tx.WorktreeLock(worktree)
	switch {
	case errors.Is(err, ErrNotFound):
	case err != nil:
		return err
	case held.Owner != o:
		var state string
		err := tx.queryRow(`SELECT state FROM runs WHERE id = ?`, held.RunID).Scan(&state)
		if err != nil {
			return fmt.Errorf("read run %s holding worktree %s: %w", held.RunID, worktree, err)
		}
		if !RunFinished(state) && alive(held.Owner) {
			return &LockedError{Worktree: worktree, RunID: held.RunID, Owner: held.Owner}
		}
	}
	_, err = tx.exec(`INSERT INTO worktree_locks
			(worktree, run_id, owner_pid, owner_host, owner_start_ticks, acquired_at)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (worktree) DO UPDATE SET run_id = excluded.run_id,
			owner_pid = excluded.owner_pid, owner_host = excluded.owner_host,
			owner_start_ticks = excluded.owner_start_ticks, acquired_at = excluded.acquired_at`,
		worktree, run, o.PID, o.Host, int64(o.StartTicks), ms(tx.now()))
	if err != nil {
		return fmt.Errorf("lock worktree %s for run %s: %w", worktree, run, err)
	}
	return nil
}

// ReleaseWorktreeLock frees the worktree if run holds it; releasing a lock that was taken
// over (or never held) is not an error, so cleanup paths can call it unconditionally.
func (tx *Tx) ReleaseWorktreeLock(worktree, run string) error {
	_, err := tx.exec(`DELETE FROM worktree_locks WHERE worktree = ? AND run_id = ?`, worktree, run)
	if err != nil {
		return fmt.Errorf("unlock worktree %s: %w", worktree, err)
	}
	return nil
}
