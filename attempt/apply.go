package attempt

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// EventApply is the event `mulligan apply` appends to the attempt's run.
const EventApply = "apply"

// ApplyPlan is what `mulligan apply ADDR` will do (SPEC §4.1, §6): carry an attempt's change
// (pre → post) into a working tree as it is now, path by path, as a three-way merge. A path the
// attempt changed that the tree still holds as the attempt found it takes the attempt's version;
// one the tree already holds the attempt's way is left alone; one the tree changed otherwise
// since is a conflict, and with any conflict nothing is applied.
type ApplyPlan struct {
	Run     string
	Attempt store.Attempt
	// Current is the working tree now; Tree is it with the change applied (equal to Current when
	// the tree already holds the whole change).
	Current, Tree plumbing.Hash
	// Changes are what applying changes in the working tree (Current → Tree).
	Changes []snapshot.Change
	// Conflicts are the paths of the change the working tree changed otherwise since.
	Conflicts []string
}

// ErrNotFinished is returned for an attempt that has no post tree yet.
var ErrNotFinished = errors.New("the attempt is still running: it has no tree to apply yet")

// PlanApply works out how attempt a of run carries into repo's working tree, changing nothing.
func PlanApply(ctx context.Context, repo *snapshot.Repo, run string, a store.Attempt) (*ApplyPlan, error) {
	if a.Tree == "" || a.PreTree == "" {
		return nil, fmt.Errorf("%s@%d of run %s: %w", a.TaskID, a.N, run, ErrNotFinished)
	}
	cur, err := repo.WriteTree(ctx)
	if err != nil {
		return nil, err
	}
	p := &ApplyPlan{Run: run, Attempt: a, Current: cur.Tree}
	p.Tree, p.Conflicts, err = repo.ApplyChange(plumbing.NewHash(a.PreTree), plumbing.NewHash(a.Tree), cur.Tree)
	if err != nil {
		return nil, err
	}
	if len(p.Conflicts) > 0 {
		p.Tree = cur.Tree // nothing is applied
		return p, nil
	}
	if p.Changes, err = repo.DiffTrees(cur.Tree, p.Tree); err != nil {
		return nil, err
	}
	return p, nil
}

// Execute applies the plan: it refuses a plan with conflicts (ConflictPathsError) and a working
// tree a live run owns (ErrActive); otherwise it takes an undo ref of the working tree, writes
// only the paths that change (an edit anywhere else stays as it is; never a file either tree's
// rules ignore, SPEC §2), and records an `apply` event in the attempt's run. The undo ref is in
// the result; nothing is written when the tree already holds the change.
func (p *ApplyPlan) Execute(ctx context.Context, repo *snapshot.Repo, db *store.DB, undoRef, undoMessage string) (*snapshot.RestoreResult, error) {
	a := p.Attempt
	if len(p.Conflicts) > 0 {
		return nil, &ConflictPathsError{Ref: a.Ref, Paths: p.Conflicts}
	}
	if err := db.View(ctx, func(tx *store.Tx) error { return CheckWorktreeIdle(tx, repo.Root()) }); err != nil {
		return nil, err
	}
	if len(p.Changes) == 0 {
		return nil, nil
	}
	paths := make([]string, len(p.Changes))
	for i, ch := range p.Changes {
		paths[i] = ch.Path
	}
	// The undo snapshot is of the whole tree as it is at this moment, so even an edit made to one
	// of these paths since the plan was made is kept.
	res, err := repo.Restore(ctx, p.Tree, snapshot.RestoreOptions{UndoRef: undoRef, UndoMessage: undoMessage, Paths: paths})
	if err != nil {
		return res, err
	}
	payload := map[string]any{"who": Who(), "worktree": repo.Root(), "tree": p.Tree.String(), "changed": len(res.Changes)}
	if res.Undo != nil {
		payload["undo_ref"] = res.Undo.Ref
	}
	return res, RecordEvent(context.WithoutCancel(ctx), db, p.Run, a.TaskID, a.N, EventApply, payload)
}
