package attempt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// SuperviseOptions are the inputs of one supervise sweep.
type SuperviseOptions struct {
	// Runs limits the sweep to these run ids; empty: every run of the database.
	Runs []string
	// StaleThreshold: a heartbeat older than this marks a run whose owner cannot be checked
	// from here (another host) as dead.
	StaleThreshold time.Duration
	// MaxResumes: a run resumed this many times in a row without finishing an attempt is held
	// blocked (reason resume-exhausted) instead of being resumed again.
	MaxResumes int
	// Slots is how many resumes this sweep may start (max-concurrent minus those running).
	Slots  int
	DryRun bool
	// Now is the clock of the stale and quota checks (default time.Now).
	Now func() time.Time
	// Alive reports whether an owner process lives (default store.ProcessAlive).
	Alive func(store.Owner) bool
	// Spawn starts the detached `mulligan resume` of a run claimed at epoch and returns its pid.
	Spawn func(run *store.Run, epoch int64) (int, error)
	// MovedOn says whether the run's working tree moved on since it stopped (TreeMovedOn); such
	// a run is held blocked (tree-moved-on) instead of resumed. nil: not checked.
	// inFlight says the run's running attempt still had processes, which supervise ended just
	// before asking (TreeMovedOnEnded).
	MovedOn func(run *store.Run, inFlight bool) (why string, moved bool, err error)
	// OpenRepo opens a run's worktree, to end what a run held resume-exhausted left running
	// (nil: the attempts are left to the operator's resume).
	OpenRepo func(worktree string) (*snapshot.Repo, error)

	// beforeClaim runs between reading the worklist and claiming a run (tests: races).
	beforeClaim func(run string)
}

// SuperviseDecision is one line of supervise's output.
type SuperviseDecision struct {
	Run string `json:"run"`
	// Action: resume (a detached resume started), block (held resume-exhausted, or tree-moved-on:
	// its working tree holds work done after it stopped, left alone), skip (left
	// alone: owner alive, claimed by another supervisor, quota not reset yet), wait (no slot
	// left this sweep), error.
	Action string `json:"action"`
	Reason string `json:"reason"`
	State  string `json:"state"` // the run's state when it was looked at
	PID    int    `json:"pid,omitempty"`
	DryRun bool   `json:"dry_run"`
}

// Supervise sweeps the unfinished runs once: it resumes those whose process is gone (or, on
// another host, whose heartbeat is stale) and parked runs whose quota reset has passed, each in
// a detached resume after claiming it by compare-and-swap on its owner epoch (of two
// supervisors, exactly one resumes a run). It never resumes a run whose owner is alive.
func Supervise(ctx context.Context, db *store.DB, opts SuperviseOptions) ([]SuperviseDecision, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Alive == nil {
		opts.Alive = store.ProcessAlive
	}
	if opts.StaleThreshold <= 0 {
		opts.StaleThreshold = 30 * time.Second
	}
	runs, err := supervised(ctx, db, opts)
	if err != nil {
		return nil, err
	}
	self := store.Self()
	now := opts.Now()
	var out []SuperviseDecision
	for i := range runs {
		d, err := superviseRun(ctx, db, &opts, &runs[i], self, now)
		out = append(out, d)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// supervised reads the runs a sweep looks at: running or parked, of opts.Runs when given.
func supervised(ctx context.Context, db *store.DB, opts SuperviseOptions) ([]store.Run, error) {
	var runs []store.Run
	err := db.View(ctx, func(tx *store.Tx) error {
		hdrs, err := tx.RunsInState(store.RunRunning, store.RunWaitingQuota)
		if err != nil {
			return err
		}
		for _, h := range hdrs {
			if len(opts.Runs) > 0 && !slices.Contains(opts.Runs, h.ID) {
				continue
			}
			run, err := tx.GetRun(h.ID)
			if err != nil {
				return err
			}
			runs = append(runs, *run)
		}
		return nil
	})
	return runs, err
}

// superviseRun decides on one run and acts: skip, wait for a slot, block (resume-exhausted,
// tree-moved-on) or claim and resume it in the background.
func superviseRun(ctx context.Context, db *store.DB, opts *SuperviseOptions, run *store.Run, self store.Owner, now time.Time) (SuperviseDecision, error) {
	d := SuperviseDecision{Run: run.ID, State: run.State, DryRun: opts.DryRun}
	why, ok := resumable(run, *opts, self, now)
	d.Reason = why
	if !ok {
		d.Action = "skip"
		return d, nil
	}
	exhausted := opts.MaxResumes > 0 && run.ResumesWithoutProgress >= opts.MaxResumes
	switch {
	case exhausted:
		d.Action = "block"
		d.Reason = fmt.Sprintf("%s; resumed %d times in a row without finishing an attempt", why, run.ResumesWithoutProgress)
	case opts.Slots <= 0:
		d.Action = "wait"
		d.Reason = why + "; --max-concurrent resumes already running"
		return d, nil
	default:
		d.Action = "resume"
	}
	if opts.DryRun {
		if !exhausted && opts.MovedOn != nil {
			// Nothing is ended in a dry run: an agent still running counts as in flight.
			movedWhy, moved, err := opts.MovedOn(run, false)
			switch {
			case err != nil:
				d.Action, d.Reason = "error", fmt.Sprintf("%s; could not compare the working tree: %v", why, err)
			case moved:
				d.Action, d.Reason = "block", movedOnReason(run.ID, movedWhy)
			}
		}
		return d, nil
	}
	if opts.beforeClaim != nil {
		opts.beforeClaim(run.ID)
	}
	var epoch int64
	err := db.Update(ctx, func(tx *store.Tx) error {
		var err error
		if epoch, err = tx.ClaimRun(run.ID, run.Epoch, self); err != nil {
			return err
		}
		if !exhausted {
			return nil
		}
		return holdRun(tx, run, epoch, store.RunTransition{Reason: ReasonResumeExhausted,
			Event: store.RunStateChanged{ResumesWithoutProgress: store.Ptr(run.ResumesWithoutProgress)}})
	})
	switch {
	case errors.Is(err, store.ErrFenced):
		d.Action, d.Reason = "skip", "claimed by another process first"
		return d, nil
	case err != nil:
		return d, err
	}
	if exhausted {
		// As resume does: end what the dead process's agent left running, record its attempt
		// runner_died, and hold the tasks it ran with the run.
		if err := endExhausted(ctx, db, *opts, run, epoch); err != nil {
			d.Reason += fmt.Sprintf("; could not end its attempts: %v", err)
		}
		return d, nil
	}
	if opts.MovedOn != nil {
		// Work done after the run stopped is not the run's to reset (SPEC §2.1). This
		// supervisor owns the run now: what its dead runner's agent still runs is ended first,
		// so the comparison sees what that agent did as the attempt's own (in flight until
		// now), not as someone else's later work.
		var ended []string
		if local(run, self) {
			if ended, err = EndLeftRunning(ctx, db, run); err != nil {
				d.Action, d.Reason = "error", fmt.Sprintf("%s; could not end what its agent left running: %v", why, err)
				return d, nil
			}
		}
		movedWhy, moved, err := opts.MovedOn(run, len(ended) > 0)
		if err != nil {
			d.Action, d.Reason = "error", fmt.Sprintf("%s; could not compare the working tree: %v", why, err)
			return d, nil
		}
		endedNote := ""
		if len(ended) > 0 {
			endedNote = "; ended what its dead runner's agent left running: " + strings.Join(ended, ", ")
			why += endedNote
			d.Reason = why
		}
		if moved {
			err := db.Update(ctx, func(tx *store.Tx) error {
				if err := tx.CheckOwner(run.ID, epoch); err != nil {
					return err
				}
				return holdRun(tx, run, epoch, store.RunTransition{Reason: ReasonTreeMovedOn,
					Event: store.RunStateChanged{Why: movedWhy, Command: MovedOnCommand(run.ID)}})
			})
			switch {
			case errors.Is(err, store.ErrFenced):
				d.Action, d.Reason = "skip", "claimed by another process first"
			case err != nil:
				return d, err
			default:
				d.Action, d.Reason = "block", movedOnReason(run.ID, movedWhy)+endedNote
			}
			return d, nil
		}
	}
	pid, err := opts.Spawn(run, epoch)
	if err != nil {
		d.Action, d.Reason = "error", fmt.Sprintf("%s; could not start the resume: %v", why, err)
	} else {
		d.PID = pid
		opts.Slots--
	}
	return d, nil
}

// movedOnReason is the decision's reason for a run held tree-moved-on.
func movedOnReason(run, why string) string {
	return fmt.Sprintf("%s: %s; left alone: %s", ReasonTreeMovedOn, why, MovedOnCommand(run))
}

// holdRun holds run, which this supervisor claimed at epoch, blocked (reason and the rest of
// the run.state_changed event in tr): it leaves the run without an owner process and the
// worktree unlocked, so the operator's resume, cancel or revert does not take this supervisor
// for a process acting on it.
func holdRun(tx *store.Tx, run *store.Run, epoch int64, tr store.RunTransition) error {
	tr.To = store.RunBlocked
	if _, err := tx.TransitionRun(run.ID, tr); err != nil {
		return err
	}
	if err := tx.DisownRun(run.ID, epoch); err != nil {
		return err
	}
	return tx.ReleaseWorktreeLock(run.Worktree, run.ID)
}

// local reports whether run's owner ran on this host (its processes can be seen from here).
func local(run *store.Run, self store.Owner) bool {
	o := run.Owner
	return o == nil || o.Host == "" || self.Host == "" || o.Host == self.Host
}

// endExhausted ends the attempts of a run supervise just held resume-exhausted (it owns the run at
// epoch): their process groups are killed and they are recorded runner_died with the tree they
// left, and the tasks that were running or waiting out a backoff are held blocked with the run.
func endExhausted(ctx context.Context, db *store.DB, opts SuperviseOptions, run *store.Run, epoch int64) error {
	if opts.OpenRepo == nil {
		return nil
	}
	repo, err := opts.OpenRepo(run.Worktree)
	if err != nil {
		return err
	}
	defer repo.Close()
	claimed := *run
	claimed.Epoch = epoch
	env := Env{Repo: repo, DB: db}
	env.defaults()
	r := newRunner(env, nil, &claimed)
	if err := r.recoverInterrupted(ctx); err != nil {
		return err
	}
	return r.update(ctx, func(tx *store.Tx) error {
		cur, err := tx.GetRun(run.ID)
		if err != nil {
			return err
		}
		for _, t := range cur.Tasks {
			if t.State != store.TaskRunning && t.State != store.TaskBackoff {
				continue
			}
			if _, err := tx.TransitionTask(run.ID, t.ID, store.TaskTransition{To: store.TaskBlocked, Reason: ReasonResumeExhausted}); err != nil {
				return err
			}
		}
		return tx.ParkTasks(run.ID)
	})
}

// resumable says whether a run needs resuming and why (or why not).
func resumable(run *store.Run, opts SuperviseOptions, self store.Owner, now time.Time) (string, bool) {
	stale := run.HeartbeatAt == nil || now.Sub(*run.HeartbeatAt) > opts.StaleThreshold
	var ownerAlive, remote bool
	if o := run.Owner; o != nil {
		remote = o.Host != "" && self.Host != "" && o.Host != self.Host
		ownerAlive = opts.Alive(*o)
	}
	if run.State == store.RunWaitingQuota {
		if ownerAlive && !remote {
			return fmt.Sprintf("parked, its process (pid %d) is alive", run.Owner.PID), false
		}
		var reset *time.Time
		for _, t := range run.Tasks {
			if t.State == store.TaskWaitingQuota && t.ResumeAt != nil && (reset == nil || t.ResumeAt.Before(*reset)) {
				reset = t.ResumeAt
			}
		}
		if reset == nil {
			return "parked for a quota reset with no known reset time: resume it by hand", false
		}
		if now.Before(*reset) {
			return "quota resets at " + reset.UTC().Format(time.RFC3339), false
		}
		return "quota reset passed at " + reset.UTC().Format(time.RFC3339), true
	}
	switch {
	case run.Owner == nil:
		return "no owner recorded", true
	case *run.Owner == self:
		// This supervisor claimed it, and the resume it started died before taking over.
		return "the resume this supervisor started did not take it over", true
	case remote && stale:
		return fmt.Sprintf("heartbeat of pid %d on %s is stale", run.Owner.PID, run.Owner.Host), true
	case remote:
		return fmt.Sprintf("running on %s (pid %d), heartbeat fresh", run.Owner.Host, run.Owner.PID), false
	case ownerAlive && stale:
		return fmt.Sprintf("heartbeat stale but its process (pid %d) is alive: not resumed", run.Owner.PID), false
	case ownerAlive:
		return fmt.Sprintf("running (pid %d)", run.Owner.PID), false
	}
	return fmt.Sprintf("its process (pid %d) is gone", run.Owner.PID), true
}
