package attempt

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// A submodule's working tree is part of an attempt (SPEC §2.1), but the superproject's snapshot
// holds only its gitlink: each attempt's pre and post also keep every submodule's working tree
// in the submodule's own repository (same ref names), and a reset to the task's base puts the
// submodules back to what they held when the task started — an edit inside a submodule whose
// HEAD did not move included, and a submodule directory an agent deleted.

// snapshotSubmodules keeps the submodules' working trees with the attempt's ref; a failure is a
// note (the superproject's snapshot stands, the reset cannot put that submodule back).
func (r *runWriter) snapshotSubmodules(ctx context.Context, task string, n int, ref, what string) {
	msg := fmt.Sprintf("mulligan %s %s@%d: %s (submodule)\n\nThe submodule's working tree with the superproject's %s.\n", r.run.ID, task, n, what, ref)
	if _, err := r.env.Repo.SnapshotSubmodules(context.WithoutCancel(ctx), ref, msg); err != nil {
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: task, N: n,
			Message: fmt.Sprintf("could not keep a submodule's working tree with %s: %v; a reset will not put it back", ref, err)})
	}
}

// putBackSubmodules sets the submodules back to what they held when the task's first attempt
// from base started (its pre ref in their repositories), after the tree was reset to base.
func (r *runner) putBackSubmodules(ctx context.Context, task string, base plumbing.Hash) {
	if !r.env.Repo.HasSubmodules() {
		return // (the tree is base already: its .gitmodules decides) nothing to put back
	}
	var t *store.Task
	if err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) (err error) {
		t, err = tx.GetTask(r.run.ID, task)
		return err
	}); err != nil {
		return
	}
	n := 0
	for _, a := range t.Attempts {
		if a.PreTree == base.String() && (n == 0 || a.N < n) {
			n = a.N
		}
	}
	if n == 0 {
		return // no attempt started from it yet: nothing of the submodules to put back
	}
	ref := snapshot.AttemptRef(r.run.ID, task, n, snapshot.Pre)
	for _, sm := range r.env.Repo.RestoreSubmodules(context.WithoutCancel(ctx), ref) {
		msg := fmt.Sprintf("submodule %s: %s not put back: %s", sm.Path, ref, sm.Skipped)
		if sm.Skipped == "" {
			msg = fmt.Sprintf("submodule %s: put back its working tree as %s@%d found it (%s); what it held is in its %s (git -C %s show %s)",
				sm.Path, task, n, describePaths(sm.Changes), sm.UndoRef, sm.Path, sm.UndoRef)
		}
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: task, Message: msg})
		payload := store.SubmoduleRestored{Path: sm.Path, Ref: ref, UndoRef: store.OptString(sm.UndoRef), Reason: store.OptString(sm.Skipped)}
		_ = r.update(ctx, func(tx *store.Tx) error {
			return r.event(tx, task, 0, store.EventSubmoduleRestored, payload)
		})
	}
}

// describePaths names up to 10 changed paths, then a count.
func describePaths(cs []snapshot.Change) string {
	paths := make([]string, 0, len(cs))
	for _, c := range cs {
		paths = append(paths, c.Path)
	}
	if len(paths) > 10 {
		return fmt.Sprintf("%s and %d more", strings.Join(paths[:10], ", "), len(paths)-10)
	}
	return strings.Join(paths, ", ")
}
