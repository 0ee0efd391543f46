package attempt

import (
	"context"
	"fmt"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Held tasks (SPEC §4 step 2): a task held blocked, waiting_quota or waiting_approval does not
// stop the run. The tasks that do not depend on it go on, in place from the held task's base
// (its attempts' trees stay in their refs), and the run takes the held state only when nothing
// else can proceed.

// Reasons of the held states this file adds.
const (
	ReasonNeedsApproval = "needs-approval"
	ReasonApproved      = "approved"
	ReasonRejected      = "rejected"
)

// nextTask returns the first task, in the run's order, that can proceed: not finished, not
// held, every dependency done. skip is true when a dependency ended without its work (failed,
// skipped, cancelled) and does not allow failure. When no task can proceed, held lists the held
// tasks (nil: the run is done).
//
// A task waiting_quota proceeds when its reset has passed, or when another process held it (a
// resume is the decision to try again: supervise resumes a parked run only after its reset).
// blocked and waiting_approval wait for an operator's decision, which makes the task pending.
func nextTask(run *store.Run, allowFail func(task string) bool, heldHere map[string]bool, now time.Time) (task *store.Task, skip bool, held []*store.Task) {
	byID := map[string]*store.Task{}
	for i := range run.Tasks {
		byID[run.Tasks[i].ID] = &run.Tasks[i]
	}
	for i := range run.Tasks {
		t := &run.Tasks[i]
		if store.TaskFinished(t.State) {
			continue
		}
		if store.TaskHeld(t.State) && !quotaOver(t, heldHere, now) {
			held = append(held, t)
			continue
		}
		switch met, skip := needsMet(t, byID, allowFail); {
		case skip:
			return t, true, nil
		case met:
			return t, false, nil
		}
	}
	return nil, false, held
}

// quotaOver reports whether t, held waiting_quota, may proceed: its reset has passed, or another
// process held it (a resume is the decision to try again).
func quotaOver(t *store.Task, heldHere map[string]bool, now time.Time) bool {
	return t.State == store.TaskWaitingQuota && (!heldHere[t.ID] || t.ResumeAt != nil && !now.Before(*t.ResumeAt))
}

// needsMet reports whether every dependency of t is done with its work (succeeded, or failed or
// skipped with allow_fail), and skip when one ended without it (failed, skipped, cancelled). A
// dependency the run does not hold is not waited for.
func needsMet(t *store.Task, byID map[string]*store.Task, allowFail func(task string) bool) (met, skip bool) {
	met = true
	for _, n := range t.Needs {
		d := byID[n]
		if d == nil {
			continue
		}
		switch {
		case d.State == store.TaskSucceeded:
		case (d.State == store.TaskFailed || d.State == store.TaskSkipped) && allowFail(n):
		case d.State == store.TaskFailed || d.State == store.TaskSkipped || d.State == store.TaskCancelled:
			return false, true
		default:
			met = false // pending, running, held, in backoff or paused: not yet
		}
	}
	return met, false
}

// allowFail reports whether the task may fail without its dependents being skipped.
func (r *runner) allowFail(task string) bool {
	if r.file == nil {
		return false
	}
	def := r.file.Task(task)
	return def != nil && def.AllowFail
}

// hold records that the task was held by this process and that the working tree still holds its
// last attempt's tree: it goes back to base before another task runs (resetHeldTree). If no
// other task runs, the tree stays as the held attempt left it, for inspection.
func (r *runner) hold(ctx context.Context, t *store.Task, base plumbing.Hash) error {
	r.heldHere[t.ID] = true
	if !r.inWorktree { // an isolated task's attempts never touched the working tree
		r.heldTree = base
	}
	// Its parked time does not count against its deadline.
	return r.update(ctx, func(tx *store.Tx) error { return tx.ParkTask(r.run.ID, t.ID) })
}

// resetHeldTree puts the working tree back to the base of the task held last, before next runs.
// A tree that cannot be put back stops the run in its held state: nothing runs on a tree
// mulligan does not know.
func (r *runner) resetHeldTree(ctx context.Context, next *store.Task) (*Outcome, error) {
	if r.heldTree.IsZero() {
		return nil, nil
	}
	base := r.heldTree
	r.heldTree = plumbing.ZeroHash
	if err := r.restore(ctx, base); err != nil {
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: next.ID,
			Message: "could not put the tree back to the held task's base before " + next.ID + ": " + err.Error()})
		var held []*store.Task
		for i := range r.run.Tasks {
			if store.TaskHeld(r.run.Tasks[i].State) {
				held = append(held, &r.run.Tasks[i])
			}
		}
		return r.endHeld(ctx, held)
	}
	r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: next.ID,
		Message: "the held task's tree is kept in its refs; the tree is back at its base for " + next.ID})
	return nil, nil
}

// endHeld ends the run in the state its held tasks imply: blocked when one waits for a decision
// (exit 3), else waiting_approval, else waiting_quota (exit 4).
func (r *runner) endHeld(ctx context.Context, held []*store.Task) (*Outcome, error) {
	pick := func(state string) *store.Task {
		for _, t := range held {
			if t.State == state {
				return t
			}
		}
		return nil
	}
	if t := pick(store.TaskBlocked); t != nil {
		r.noteHeldEdits(held)
		return r.end(ctx, store.RunBlocked, t.Reason)
	}
	if t := pick(store.TaskWaitingApproval); t != nil {
		return r.end(ctx, store.RunWaitingApproval, ReasonNeedsApproval)
	}
	if len(held) == 0 {
		return nil, fmt.Errorf("run %s: no held task to end with", r.run.ID)
	}
	return r.end(ctx, store.RunWaitingQuota, ReasonQuota)
}

// noteHeldEdits names, when the run stops with a held in-place task's last attempt still in the
// working tree (kept for inspection), the paths that attempt left changed from the task's base,
// and the command that puts them back.
func (r *runner) noteHeldEdits(held []*store.Task) {
	lp := r.lastPost
	if r.heldTree.IsZero() || lp.tree.IsZero() || lp.task == "" {
		return
	}
	isHeld := false
	for _, t := range held {
		isHeld = isHeld || t.ID == lp.task
	}
	if !isHeld {
		return
	}
	changes, err := r.env.Repo.DiffTrees(r.heldTree, lp.tree)
	if err != nil || len(changes) == 0 {
		return
	}
	paths := make([]string, len(changes))
	for i, c := range changes {
		paths[i] = c.Path
	}
	r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: lp.task, Message: fmt.Sprintf(
		"%s@%d left %d path%s changed in the working tree, kept for you to inspect: %s; `mulligan revert %s/%s@%d --pre` puts the tree back as the task found it",
		lp.task, lp.n, len(paths), plural1s(len(paths)), listPaths(paths), r.run.ID, lp.task, lp.n)})
}

// workLandedSince reports whether another task of the run succeeded after t's latest attempt
// ended: t was held while independent tasks went on, and its next attempt starts from the tree
// they left, not from its old base (which would drop their work).
func workLandedSince(run *store.Run, t *store.Task) bool {
	last := t.StartedAt // a task restarted on its recorded base (retry-task --from-base) keeps it
	for _, a := range t.Attempts {
		if a.FinishedAt != nil && (last == nil || a.FinishedAt.After(*last)) {
			last = a.FinishedAt
		}
	}
	if last == nil {
		return false
	}
	for _, o := range run.Tasks {
		if o.ID != t.ID && o.State == store.TaskSucceeded && o.FinishedAt != nil && o.FinishedAt.After(*last) {
			return true
		}
	}
	return false
}

// deadlineOf is when the task's deadline passes: started_at + deadline + the time it spent
// parked (zero: no deadline).
func deadlineOf(def *taskfile.Task, t *store.Task) time.Time {
	if def.Deadline <= 0 || t.StartedAt == nil {
		return time.Time{}
	}
	return t.StartedAt.Add(def.Deadline + time.Duration(t.ParkedMS)*time.Millisecond)
}
