package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// Approval gates (SPEC §3 needs_approval, §6 approve/reject): a successful attempt of a task with
// `needs_approval: true` parks the task in waiting_approval; `approve` accepts the attempt (its
// change is carried into the working tree, then the run continues), `reject` sends the task back
// for another attempt with the operator's text.

// Events of the operator's approval decisions.
const (
	EventApproved = store.EventTaskApproved
	EventRejected = store.EventTaskRejected
)

// ErrNotWaitingApproval is returned by approve and reject for a task that waits for no approval.
var ErrNotWaitingApproval = errors.New("the task is not waiting for approval")

// ApprovalAttempt checks that the task waits for approval and returns the attempt it waits with
// and the base of the change approve carries into the working tree: the task's base (an
// isolated task's change, waiting in its worktree, is all of base → post), else the attempt's
// pre tree. The carrying is an apply like any other (Apply: a three-way merge, whole or not at
// all).
func ApprovalAttempt(ctx context.Context, db *store.DB, runID, task string) (*store.Attempt, plumbing.Hash, error) {
	var t *store.Task
	if err := db.View(ctx, func(tx *store.Tx) error {
		var err error
		_, t, err = heldTask(tx, runID, task, store.TaskWaitingApproval, ErrNotWaitingApproval)
		return err
	}); err != nil {
		return nil, plumbing.ZeroHash, err
	}
	if len(t.Attempts) == 0 {
		return nil, plumbing.ZeroHash, fmt.Errorf("task %s of run %s has no attempt to approve", task, runID)
	}
	a := *WaitingAttempt(t)
	base := t.BaseTree
	if base == "" {
		base = a.PreTree
	}
	return &a, plumbing.NewHash(base), nil
}

// Approve records `mulligan approve`: the task succeeded (reason approved) with the operator's
// payload in its task.approved event, and the run is paused for the continuation.
func Approve(ctx context.Context, db *store.DB, runID, task string, n int, payload json.RawMessage) error {
	return approve(ctx, db, runID, task, n, payload, store.TaskSucceeded, ReasonApproved)
}

// ApproveHeld records `mulligan approve` of an attempt whose change does not apply to the
// working tree (nothing of it was written): the approval is recorded, and the task is held
// blocked apply-conflict, like any apply that conflicts, until `mulligan apply` carries the
// change in.
func ApproveHeld(ctx context.Context, db *store.DB, runID, task string, n int, payload json.RawMessage) error {
	return approve(ctx, db, runID, task, n, payload, store.TaskBlocked, ReasonApplyConflict)
}

func approve(ctx context.Context, db *store.DB, runID, task string, n int, payload json.RawMessage, to store.TaskState, reason string) error {
	return db.Update(ctx, func(tx *store.Tx) error {
		run, t, err := heldTask(tx, runID, task, store.TaskWaitingApproval, ErrNotWaitingApproval)
		if err != nil {
			return err
		}
		if last := WaitingAttempt(t).N; last != n {
			return fmt.Errorf("task %s of run %s: attempt %d is the one waiting, not %d", task, runID, last, n)
		}
		ev := store.TaskApproved{Who: Who()}
		if len(payload) > 0 {
			ev.Payload = payload
		}
		if _, err := tx.AppendEvent(run.ID, t.ID, n, EventApproved, ev); err != nil {
			return err
		}
		if _, err := tx.TransitionTask(run.ID, t.ID, store.TaskTransition{To: to, Reason: reason,
			Attempt: n, Event: store.TaskStateChanged{Who: Who()}}); err != nil {
			return err
		}
		return pauseRun(tx, run, ReasonApproved, store.RunStateChanged{ForTask: t.ID, Who: Who()})
	})
}

// Reject records `mulligan reject`: the task goes back to pending, and its next attempt's prompt
// carries text (when given) as operator text, like `mulligan prompt`.
func Reject(ctx context.Context, db *store.DB, runID, task, text string) error {
	return db.Update(ctx, func(tx *store.Tx) error {
		run, t, err := heldTask(tx, runID, task, store.TaskWaitingApproval, ErrNotWaitingApproval)
		if err != nil {
			return err
		}
		n := 0
		if a := WaitingAttempt(t); a != nil {
			n = a.N
		}
		if _, err := tx.AppendEvent(run.ID, t.ID, n, EventRejected, store.TaskRejected{Text: store.OptString(text), Who: Who()}); err != nil {
			return err
		}
		if text != "" {
			if _, err := tx.AppendEvent(run.ID, t.ID, 0, EventOperatorPrompt, store.OperatorPrompt{Text: text, Who: Who()}); err != nil {
				return err
			}
		}
		if _, err := tx.TransitionTask(run.ID, t.ID, store.TaskTransition{To: store.TaskPending, Cause: ReasonRejected,
			Event: store.TaskStateChanged{Who: Who()}}); err != nil {
			return err
		}
		return pauseRun(tx, run, ReasonRejected, store.RunStateChanged{ForTask: t.ID, Who: Who()})
	})
}

// CompileApprovalSchema reads the task's approval_schema (and the files its $refs name) as the
// run's base holds it, not as the working tree holds it now: the agent whose work the approval
// judges may have rewritten it. A file outside the working tree is read from disk.
func CompileApprovalSchema(repo *snapshot.Repo, runID, file string) (*Schema, error) {
	commit, err := repo.Ref(snapshot.BaseRef(runID))
	if err != nil {
		return nil, fmt.Errorf("approval_schema %s: the run's base: %w", file, err)
	}
	base, err := repo.ReadCommit(commit)
	if err != nil {
		return nil, fmt.Errorf("approval_schema %s: the run's base: %w", file, err)
	}
	root := repo.Root()
	return compileSchema(root, file, "approval_schema", func(path string) ([]byte, error) {
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return os.ReadFile(path)
		}
		return repo.ReadPath(base.Tree, rel, 16<<20)
	})
}

// WaitingAttempt is the attempt a task waiting for approval waits with: its last successful one
// (a race's winner, which lanes superseded after it do not replace), else its last; nil when it
// has none.
func WaitingAttempt(t *store.Task) *store.Attempt {
	if len(t.Attempts) == 0 {
		return nil
	}
	for i := len(t.Attempts) - 1; i >= 0; i-- {
		if t.Attempts[i].State == store.AttemptSucceeded {
			return &t.Attempts[i]
		}
	}
	return &t.Attempts[len(t.Attempts)-1]
}
