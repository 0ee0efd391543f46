package attempt

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/compensate"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// runWriter writes one run's history and refs as the holder of one owner epoch: every
// transaction checks the epoch first and every snapshot checks the fence, so a process that
// lost the run (killed, or claimed elsewhere) never writes again. The runner is one; Kill,
// which only records what a killed run left, uses one on its own.
type runWriter struct {
	env   Env
	run   *store.Run
	epoch int64

	// known is the tree the working tree is known to hold right now (just snapshotted or
	// restored, no agent run since), so consecutive steps don't walk the tree again: the task's
	// base and attempt 1's pre snapshot reuse the run's base walk, and a pre snapshot after a
	// reset reuses the tree the reset wrote. Zero when unknown.
	known plumbing.Hash
	// bound gives a snapshot its context: the filters' time bound of the runner's current task
	// (filterbound.go); nil: the caller's context, never cancelled.
	bound func(context.Context) (context.Context, context.CancelFunc)

	// inWorktree is true while an isolated task's attempts run: env.Repo is then the task's
	// worktree, not the user's working tree (isolate.go).
	inWorktree bool

	mu     sync.Mutex
	fenced bool
	// hooks delivers the hooks the run's state changes fire, while execute runs; nil otherwise.
	hooks *compensate.Background
}

func (r *runWriter) update(ctx context.Context, fn func(tx *store.Tx) error) error {
	err := r.env.DB.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		if err := tx.CheckOwner(r.run.ID, r.epoch); err != nil {
			return err
		}
		return fn(tx)
	})
	if errors.Is(err, store.ErrFenced) {
		r.mu.Lock()
		r.fenced = true
		r.mu.Unlock()
	}
	if err == nil && r.hooks != nil {
		r.hooks.Wake() // the change may have fired hooks
	}
	return err
}

func (r *runWriter) event(tx *store.Tx, task string, n int, typ string, payload any) error {
	_, err := tx.AppendEvent(r.run.ID, task, n, typ, payload)
	return err
}

func (r *runWriter) isFenced() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fenced
}

// snapshot writes the working tree, a commit and ref (replacing whatever the ref held: a crashed
// process may have written it before recording it).
//
// A snapshot is never skipped for a cancelled context: the tree a cancelled attempt left is
// exactly what must be kept.
func (r *runWriter) snapshot(ctx context.Context, ref, message string, parent plumbing.Hash) (*snapshot.Result, error) {
	if r.isFenced() {
		return nil, fmt.Errorf("snapshot %s: %w", ref, store.ErrFenced)
	}
	tree, err := r.currentTree(ctx)
	if err != nil {
		return nil, err
	}
	return r.commitSnapshot(ref, tree, message, parent)
}

// commitSnapshot writes a commit of tree (taken earlier) and points ref at it, unless this
// runner was fenced.
func (r *runWriter) commitSnapshot(ref string, tree plumbing.Hash, message string, parent plumbing.Hash) (*snapshot.Result, error) {
	if r.isFenced() {
		// Killed or taken over: the refs are the new owner's now, like the database.
		return nil, fmt.Errorf("snapshot %s: %w", ref, store.ErrFenced)
	}
	return r.env.Repo.CommitTree(tree, 0, snapshot.SnapshotOptions{Ref: ref, Message: message, Parent: parent, Replace: true})
}

// currentTree returns the working tree's tree id, walking the tree only when it is not known.
func (r *runWriter) currentTree(ctx context.Context) (plumbing.Hash, error) {
	if !r.known.IsZero() {
		return r.known, nil
	}
	sctx, done := context.WithoutCancel(ctx), func() {}
	if r.bound != nil {
		sctx, done = r.bound(ctx)
	}
	defer done()
	tr, err := r.env.Repo.WriteTree(sctx)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	r.known = tr.Tree
	return tr.Tree, nil
}

// recordInterrupted records an attempt its process did not finish (runner_died, kill) as state
// with failure f, with the tree as the attempt left it kept in its post ref.
func (r *runWriter) recordInterrupted(ctx context.Context, t *store.Task, a *store.Attempt, state string, f *agentcli.Failure) error {
	postRef := snapshot.AttemptRef(r.run.ID, t.ID, a.N, snapshot.Post)
	// A post ref the dead process already wrote holds the attempt's own tree; keep it. Otherwise
	// the tree as it is now is what the attempt left.
	var tree plumbing.Hash
	if commit, err := r.env.Repo.Ref(postRef); err == nil && !commit.IsZero() {
		if tree, _, err = r.env.Repo.ResolveRevision(commit.String()); err != nil {
			return err
		}
	} else {
		pre := plumbing.ZeroHash
		if c, err := r.env.Repo.Ref(a.PreRef); err == nil {
			pre = c
		}
		var res *snapshot.Result
		var err error
		inPlace := false
		if wt := r.openTaskWorktree(t.ID, a.Lane); wt != nil {
			// An isolated task's attempt ran in its worktree: that is the tree it left.
			tr, werr := wt.WriteTree(context.WithoutCancel(ctx))
			wt.Close()
			if werr != nil {
				return fmt.Errorf("post snapshot of interrupted %s@%d in its worktree: %w", t.ID, a.N, werr)
			}
			res, err = r.commitSnapshot(postRef, tr.Tree, attemptMessage(r.run.ID, t.ID, a.N, state, f), pre)
		} else if a.Lane > 0 || TaskIsolated(r.run, t.ID) {
			// Its worktree vanished: nothing of it is left, and the working tree never held it.
			res, err = r.commitSnapshot(postRef, plumbing.NewHash(a.PreTree), attemptMessage(r.run.ID, t.ID, a.N, state, f), pre)
		} else {
			res, err = r.snapshot(ctx, postRef, attemptMessage(r.run.ID, t.ID, a.N, state, f), pre)
			inPlace = true
		}
		if err != nil {
			return fmt.Errorf("post snapshot of interrupted %s@%d: %w", t.ID, a.N, err)
		}
		tree = res.Tree
		if inPlace {
			r.snapshotSubmodules(ctx, t.ID, a.N, postRef, "post") // what it left in the submodules
		}
	}
	files := 0
	if a.PreTree != "" {
		changed, err := r.env.Repo.DiffTrees(plumbing.NewHash(a.PreTree), tree)
		if err != nil {
			return err
		}
		files = len(changed)
	}
	now := r.env.Now().UTC()
	return r.update(ctx, func(tx *store.Tx) error {
		a.State = state
		a.FinishedAt = &now
		a.Ref, a.Tree = postRef, tree.String()
		a.FilesChanged = store.Ptr(files)
		applyFailure(a, f)
		if err := tx.UpdateAttempt(a); err != nil {
			return err
		}
		return r.event(tx, t.ID, a.N, store.EventAttemptFailed, store.AttemptFailedPayload{
			Class: string(f.Class), Code: f.Code, Message: f.Message, RetryEligible: f.RetryEligible,
			ConsecutiveFailures: t.ConsecutiveFailures, Counted: a.Counted, ExitCode: a.ExitCode, Ref: store.OptString(postRef),
		})
	})
}
