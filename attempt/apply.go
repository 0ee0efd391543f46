package attempt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/mulligan-dev/mulligan/internal/merge"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// The apply (SPEC §4.1): an attempt's change (base → post) carried into a working tree as it is
// then, as a three-way merge (snapshot.MergeTrees: text merges by hunks, as git merge-file
// merges it), whole or not at all:
//
//  1. Applies into one working tree are serialized by a lock in its git directory (an flock,
//     so it holds across goroutines and mulligan processes alike): each merges onto the tree as
//     the one before it left it, and none is lost.
//  2. The plan (under the lock): the working tree's snapshot, the merge, what it changes, and
//     every path checked on disk before any is written (snapshot.CheckWrite). A conflict or a
//     blocked path refuses the whole apply: nothing is written.
//  3. The intent (store.ApplyIntent: the tree before, kept under an undo ref, the tree after and
//     the paths) is recorded before the first write; Restore then writes only those paths, and
//     only over the very tree the plan read (RestoreOptions.Expect).
//  4. The intent is deleted in the transaction that records the apply (and, for a run's own
//     apply, makes the task succeeded). An intent found later is an apply a crash interrupted:
//     RecoverApplies finishes it when every path is either as it was or as it was to become, and
//     otherwise puts back the paths it wrote.

// EventApply is the event an apply appends to the attempt's run.
const EventApply = "apply"

// ReasonApplying is the reason of an isolated task whose attempt succeeded while its change is
// applied to the working tree: it succeeds once the change is in.
const ReasonApplying = "applying"

// ApplyPayload is the apply event's payload.
type ApplyPayload struct {
	Who      *store.Operator `json:"who"`
	Worktree string          `json:"worktree"`
	Tree     string          `json:"tree"`
	Changed  int             `json:"changed"`
	Merged   []string        `json:"merged,omitempty"`
	Marked   []string        `json:"marked,omitempty"`
	UndoRef  *string         `json:"undo_ref"`
	// Recovered: the apply a crash interrupted, finished by the next process.
	Recovered bool `json:"recovered,omitempty"`
}

// ApplyOptions are the inputs of an apply.
type ApplyOptions struct {
	// Base is the change's base when it is not the attempt's pre tree (an isolated task's whole
	// change starts at the task's base).
	Base plumbing.Hash
	// Markers writes text conflicts with conflict markers instead of refusing (`apply --merge`).
	Markers bool
	// DryRun plans only.
	DryRun bool
	// Settle is how the task's state follows the apply: SettleRun for a run's own apply of an
	// isolated task, SettleHeld for an operator's apply of a task held apply-conflict.
	Settle Settle
	// UndoRef and UndoMessage name the undo point ("": a new refs/mulligan/undo/<id>).
	UndoRef, UndoMessage string
}

// Settle says what an apply does with the task's state once its change is in.
type Settle int

const (
	SettleNone Settle = iota
	SettleRun         // running (applying) → succeeded
	SettleHeld        // blocked apply-conflict → succeeded (applied), for the task's winning attempt
)

// ApplyPlan is what an apply does: the working tree now (Current), it with the change merged
// (Tree), the paths that differ (Changes), and what refuses it.
type ApplyPlan struct {
	Run     string
	Attempt store.Attempt
	Base    plumbing.Hash
	Current plumbing.Hash
	Tree    plumbing.Hash
	Changes []snapshot.Change
	// Conflicts are the paths both sides changed in ways that do not merge; with Markers the
	// text ones are written marked and listed here too (Marked).
	Conflicts []snapshot.MergeConflict
	// Blocked are the paths that cannot be written without clobbering what no snapshot holds.
	Blocked []snapshot.ConflictError
	// Merged are the paths both sides changed whose text merged by hunks.
	Merged  []string
	Markers bool
}

// Refused reports whether the plan writes nothing: a conflict it may not mark, or a blocked
// path.
func (p *ApplyPlan) Refused() bool {
	if len(p.Blocked) > 0 {
		return true
	}
	for _, c := range p.Conflicts {
		if !c.Marked {
			return true
		}
	}
	return false
}

// ConflictPaths lists the paths that refuse the plan, or that it marks.
func (p *ApplyPlan) ConflictPaths() []string {
	var out []string
	for _, c := range p.Conflicts {
		out = append(out, c.Path)
	}
	for _, b := range p.Blocked {
		out = append(out, b.Path)
	}
	return out
}

// ErrNotFinished is returned for an attempt that has no post tree yet.
var ErrNotFinished = errors.New("the attempt is still running: it has no tree to apply yet")

// ApplyConflictError refuses an apply whose change conflicts with the working tree or whose
// paths are blocked on disk: nothing was written.
type ApplyConflictError struct{ Plan *ApplyPlan }

func (e *ApplyConflictError) Error() string {
	var parts []string
	for _, c := range e.Plan.Conflicts {
		if !c.Marked {
			parts = append(parts, c.Path+" ("+c.Reason+")")
		}
	}
	for _, b := range e.Plan.Blocked {
		parts = append(parts, b.Path+" ("+b.Reason+")")
	}
	n := len(parts)
	return fmt.Sprintf("%d path%s of the change do%s not apply: %s; nothing was written", n, plural1s(n), map[bool]string{true: "es", false: ""}[n == 1], strings.Join(parts, ", "))
}

// ApplyResult is a done apply.
type ApplyResult struct {
	Plan    *ApplyPlan
	Restore *snapshot.RestoreResult // nil when nothing was written
	UndoRef string                  // the undo point taken before the first write ("": none)
	Settled bool                    // the task's state followed (Settle)
}

// Apply carries attempt a's change into repo's working tree (see the top of this file). A plan
// that refuses returns *ApplyConflictError with the plan; a dry run returns the plan unexecuted.
func Apply(ctx context.Context, repo *snapshot.Repo, db *store.DB, a store.Attempt, opts ApplyOptions) (*ApplyResult, error) {
	if a.Tree == "" || a.PreTree == "" && opts.Base.IsZero() {
		return nil, fmt.Errorf("%s@%d of run %s: %w", a.TaskID, a.N, a.RunID, ErrNotFinished)
	}
	unlock, err := LockApply(ctx, repo)
	if err != nil {
		return nil, err
	}
	defer unlock()
	for try := 1; ; try++ {
		res, err := applyLocked(ctx, repo, db, a, opts)
		// The user saved a file between the plan and the first write: nothing was written;
		// merge again onto the tree as it is now.
		if errors.Is(err, snapshot.ErrTreeMoved) && try < 3 {
			continue
		}
		return res, err
	}
}

// applyLocked is Apply under the working tree's apply lock.
func applyLocked(ctx context.Context, repo *snapshot.Repo, db *store.DB, a store.Attempt, opts ApplyOptions) (*ApplyResult, error) {
	p, err := planApply(ctx, repo, a, opts)
	if err != nil {
		return nil, err
	}
	res := &ApplyResult{Plan: p}
	if opts.DryRun {
		return res, nil
	}
	if p.Refused() {
		return res, &ApplyConflictError{Plan: p}
	}
	if opts.Settle != SettleRun {
		if err := db.View(ctx, func(tx *store.Tx) error { return CheckWorktreeIdle(tx, repo.Root()) }); err != nil {
			return nil, err
		}
	}
	if len(p.Changes) == 0 {
		res.Settled, err = finishApply(context.WithoutCancel(ctx), repo, db, a, opts.Settle, 0, ApplyPayload{Tree: p.Tree.String()})
		return res, err
	}
	ref, msg := opts.UndoRef, opts.UndoMessage
	if ref == "" {
		id := snapshot.NewID(db.Now())
		ref = snapshot.UndoRef(id)
		msg = fmt.Sprintf("mulligan undo %s\n\nThe working tree just before %s/%s@%d was applied.\n", id, a.RunID, a.TaskID, a.N)
	}
	// The undo point is the tree the plan read: Restore refuses any other (Expect).
	undo, err := repo.CommitTree(p.Current, 0, snapshot.SnapshotOptions{Ref: ref, Message: msg})
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(p.Changes))
	for i, c := range p.Changes {
		paths[i] = c.Path
	}
	var id int64
	if err := db.Update(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		id, err = tx.AddApplyIntent(store.ApplyIntent{Worktree: repo.Root(), RunID: a.RunID, TaskID: a.TaskID, Attempt: a.N,
			UndoRef: undo.Ref, From: p.Current.String(), Tree: p.Tree.String(), Paths: paths, Settle: opts.Settle == SettleRun})
		return err
	}); err != nil {
		return nil, err
	}
	res.UndoRef = undo.Ref
	crashPoint("apply-before-write")
	applying.Add(1)
	// p.Tree differs from p.Current, which Restore expects, only at paths: no Paths limit.
	rr, err := repo.Restore(context.WithoutCancel(ctx), p.Tree, snapshot.RestoreOptions{Expect: p.Current,
		NoUndoRef: true, Kept: func(t plumbing.Hash) bool { return t == p.Current }})
	applying.Add(-1)
	res.Restore = rr
	if err != nil {
		// Something changed under the apply (the user saved a file as it ran): what was
		// written goes back, and the intent with it.
		if rerr := rollBack(context.WithoutCancel(ctx), repo, db, store.ApplyIntent{ID: id, From: p.Current.String(), Tree: p.Tree.String(), Paths: paths}); rerr != nil {
			return res, errors.Join(err, rerr)
		}
		if c := (*snapshot.ConflictError)(nil); errors.As(err, &c) {
			// A path in the way after all: refused like a path found blocked by the plan.
			p.Blocked, p.Tree, p.Changes = append(p.Blocked, *c), p.Current, nil
			return res, &ApplyConflictError{Plan: p}
		}
		return res, err
	}
	crashPoint("apply-after-write")
	res.Settled, err = finishApply(context.WithoutCancel(ctx), repo, db, a, opts.Settle, id, ApplyPayload{
		Tree: p.Tree.String(), Changed: len(rr.Changes), Merged: p.Merged, Marked: p.MarkedPaths(), UndoRef: &undo.Ref})
	return res, err
}

// MarkedPaths lists the paths the plan writes with conflict markers.
func (p *ApplyPlan) MarkedPaths() []string {
	var out []string
	for _, c := range p.Conflicts {
		if c.Marked {
			out = append(out, c.Path)
		}
	}
	return out
}

// PlanApply plans attempt a's apply into repo's working tree as it is now, changing nothing
// (`apply --dry-run`).
func PlanApply(ctx context.Context, repo *snapshot.Repo, a store.Attempt, opts ApplyOptions) (*ApplyPlan, error) {
	opts.DryRun = true
	res, err := Apply(ctx, repo, nil, a, opts)
	if err != nil {
		return nil, err
	}
	return res.Plan, nil
}

func planApply(ctx context.Context, repo *snapshot.Repo, a store.Attempt, opts ApplyOptions) (*ApplyPlan, error) {
	base := opts.Base
	if base.IsZero() {
		base = plumbing.NewHash(a.PreTree)
	}
	cur, err := repo.WriteTree(ctx)
	if err != nil {
		return nil, err
	}
	p := &ApplyPlan{Run: a.RunID, Attempt: a, Base: base, Current: cur.Tree, Markers: opts.Markers}
	m, err := repo.MergeTrees(base, plumbing.NewHash(a.Tree), cur.Tree, snapshot.MergeOptions{Markers: opts.Markers,
		Labels: merge.Labels{Ours: "working tree", Theirs: fmt.Sprintf("%s/%s@%d", a.RunID, a.TaskID, a.N)}})
	if err != nil {
		return nil, err
	}
	p.Tree, p.Conflicts, p.Merged = m.Tree, m.Conflicts, m.Merged
	if p.Refused() {
		p.Tree = cur.Tree // nothing is applied
		return p, nil
	}
	if p.Changes, err = repo.DiffTrees(cur.Tree, p.Tree); err != nil {
		return nil, err
	}
	p.Blocked = repo.CheckWrite(p.Changes)
	if len(p.Blocked) == 0 && len(p.Changes) > 0 {
		// Restore leaves alone a file on disk that either tree's rules ignore (SPEC §2). Kept
		// where the change deletes it (the agent's new rules ignore it: nothing is lost); where
		// the change writes it, the apply would be partial, so that path refuses it too.
		dry, err := repo.Restore(ctx, p.Tree, snapshot.RestoreOptions{DryRun: true, Expect: cur.Tree})
		if err != nil {
			return nil, err
		}
		for _, c := range dry.Spared {
			if c.Action != snapshot.Delete {
				p.Blocked = append(p.Blocked, snapshot.ConflictError{Path: c.Path, Reason: "an ignored file is there, which is never overwritten"})
			}
		}
	}
	if len(p.Blocked) > 0 {
		p.Tree, p.Changes = cur.Tree, nil
	}
	return p, nil
}

// finishApply records a done apply in one transaction: the apply event, the intent (id, 0 for
// none) deleted, and the task's state as settle says. It reports whether the task settled.
func finishApply(ctx context.Context, repo *snapshot.Repo, db *store.DB, a store.Attempt, settle Settle, id int64, ev ApplyPayload) (bool, error) {
	settled := false
	ev.Who, ev.Worktree = Who(), repo.Root()
	err := db.Update(ctx, func(tx *store.Tx) error {
		if id != 0 {
			if err := tx.DoneApplyIntent(id); err != nil {
				return err
			}
		}
		if ev.Changed > 0 || ev.Recovered {
			if _, err := tx.AppendEvent(a.RunID, a.TaskID, a.N, EventApply, ev); err != nil {
				return err
			}
		}
		var err error
		settled, err = settleTask(tx, a.RunID, a.TaskID, a.N, settle)
		return err
	})
	return settled, err
}

// settleTask makes the task succeeded after its attempt n's change was applied: a run's task
// applying it, or a task held apply-conflict whose winning attempt it is.
func settleTask(tx *store.Tx, runID, task string, n int, settle Settle) (bool, error) {
	if settle == SettleNone {
		return false, nil
	}
	t, err := tx.GetTask(runID, task)
	if err != nil {
		return false, err
	}
	reason := ""
	switch {
	case settle == SettleRun && t.State == store.TaskRunning && t.Reason == ReasonApplying:
	case settle == SettleHeld && t.State == store.TaskBlocked && t.Reason == ReasonApplyConflict:
		reason = ReasonApplied
	default:
		return false, nil
	}
	won := 0
	for _, x := range t.Attempts {
		if x.State == store.AttemptSucceeded {
			won = x.N
		}
	}
	if won != n {
		return false, nil
	}
	if _, err := tx.TransitionTask(runID, task, store.TaskTransition{To: store.TaskSucceeded, Reason: reason, Attempt: n}); err != nil {
		return false, err
	}
	return true, nil
}

// RecoverApplies finishes the applies into repo's working tree that a crash interrupted (their
// intents are still recorded): one whose every path is as it was or as it was to become is
// finished (and its task, for a run's own apply, succeeds); one where something else changed a
// path since is rolled back to the tree before it for the paths it wrote, and its task, for a
// run's own apply, is held apply-conflict. It returns what it did, one line each.
func RecoverApplies(ctx context.Context, repo *snapshot.Repo, db *store.DB) ([]string, error) {
	var intents []store.ApplyIntent
	read := func() error {
		return db.View(ctx, func(tx *store.Tx) error {
			var err error
			intents, err = tx.ApplyIntents(repo.Root())
			return err
		})
	}
	if err := read(); err != nil || len(intents) == 0 {
		return nil, err
	}
	unlock, err := LockApply(ctx, repo)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// Read again under the lock: an apply in flight holds it to its end, so what is left now
	// is what a process that died left.
	if err := read(); err != nil {
		return nil, err
	}
	var notes []string
	for _, in := range intents {
		addr := fmt.Sprintf("%s/%s@%d", in.RunID, in.TaskID, in.Attempt)
		cur, err := repo.WriteTree(ctx)
		if err != nil {
			return notes, err
		}
		todo, _, other, err := pathStates(repo, cur.Tree, in)
		if err != nil {
			return notes, err
		}
		a := store.Attempt{RunID: in.RunID, TaskID: in.TaskID, N: in.Attempt}
		settle := SettleNone
		if in.Settle {
			settle = SettleRun
		}
		if len(other) == 0 {
			// Only the paths not written yet: one the apply deleted is in neither tree now.
			target, err := repo.TakePaths(cur.Tree, plumbing.NewHash(in.Tree), todo)
			if err != nil {
				return notes, err
			}
			if _, err := repo.Restore(ctx, target, snapshot.RestoreOptions{Expect: cur.Tree,
				NoUndoRef: true, Kept: func(t plumbing.Hash) bool { return t == cur.Tree }}); err != nil {
				return notes, fmt.Errorf("finish the interrupted apply of %s: %w", addr, err)
			}
			if _, err := finishApply(ctx, repo, db, a, settle, in.ID, ApplyPayload{Tree: in.Tree, Changed: len(in.Paths), UndoRef: &in.UndoRef, Recovered: true}); err != nil {
				return notes, err
			}
			notes = append(notes, fmt.Sprintf("finished the apply of %s that was interrupted (%d path%s); undo point %s", addr, len(in.Paths), plural1s(len(in.Paths)), in.UndoRef))
			continue
		}
		if err := rollBack(ctx, repo, db, in); err != nil {
			return notes, err
		}
		if in.Settle {
			if err := db.Update(ctx, func(tx *store.Tx) error {
				t, err := tx.GetTask(in.RunID, in.TaskID)
				if err != nil || t.State != store.TaskRunning || t.Reason != ReasonApplying {
					return err
				}
				_, err = tx.TransitionTask(in.RunID, in.TaskID, store.TaskTransition{To: store.TaskBlocked, Reason: ReasonApplyConflict, Attempt: in.Attempt})
				return err
			}); err != nil {
				return notes, err
			}
		}
		notes = append(notes, fmt.Sprintf("rolled back the apply of %s that was interrupted: %s changed since; apply it again with mulligan apply %s --merge",
			addr, strings.Join(other, ", "), addr))
	}
	return notes, nil
}

// recoverApplies finishes the run's applies a crash interrupted (RecoverApplies), and applies
// the change of each isolated task whose attempt succeeded but whose apply never began.
func (r *runner) recoverApplies(ctx context.Context) error {
	notes, err := RecoverApplies(ctx, r.env.Repo, r.env.DB)
	for _, n := range notes {
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Message: n})
	}
	if err != nil {
		return err
	}
	run, err := r.reload(ctx)
	if err != nil {
		return err
	}
	for i := range run.Tasks {
		t := &run.Tasks[i]
		if t.State != store.TaskRunning || t.Reason != ReasonApplying || t.BaseTree == "" {
			continue
		}
		var w *snapshot.Worktree
		if w, err = taskWorktree(r.env.Repo, r.run.ID, t.ID); err != nil {
			return err
		}
		if _, err := r.applyIsolated(ctx, t, plumbing.NewHash(t.BaseTree), w); err != nil {
			return err
		}
	}
	return nil
}

// pathStates sorts an intent's paths by what the working tree (cur) holds at each: the tree
// before the apply's version, the version it was writing, or another.
func pathStates(repo *snapshot.Repo, cur plumbing.Hash, in store.ApplyIntent) (atFrom, atTo, other []string, err error) {
	differs := func(tree string) (map[string]bool, error) {
		ch, err := repo.DiffTrees(cur, plumbing.NewHash(tree))
		if err != nil {
			return nil, err
		}
		out := make(map[string]bool, len(ch))
		for _, c := range ch {
			out[c.Path] = true
		}
		return out, nil
	}
	notFrom, err := differs(in.From)
	if err != nil {
		return nil, nil, nil, err
	}
	notTo, err := differs(in.Tree)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, p := range in.Paths {
		switch {
		case !notFrom[p]:
			atFrom = append(atFrom, p)
		case !notTo[p]:
			atTo = append(atTo, p)
		default:
			other = append(other, p)
		}
	}
	return atFrom, atTo, other, nil
}

// rollBack puts back the paths of an interrupted or failed apply that hold what it wrote, and
// deletes its intent; a path that holds a third version (someone else's) is left as it is.
func rollBack(ctx context.Context, repo *snapshot.Repo, db *store.DB, in store.ApplyIntent) error {
	cur, err := repo.WriteTree(ctx)
	if err != nil {
		return err
	}
	_, written, _, err := pathStates(repo, cur.Tree, in)
	if err != nil {
		return err
	}
	if len(written) > 0 {
		target, err := repo.TakePaths(cur.Tree, plumbing.NewHash(in.From), written)
		if err != nil {
			return err
		}
		if _, err := repo.Restore(ctx, target, snapshot.RestoreOptions{Expect: cur.Tree,
			UndoMessage: "mulligan: the working tree before an apply was rolled back"}); err != nil {
			return fmt.Errorf("roll back the apply of %s/%s@%d: %w", in.RunID, in.TaskID, in.Attempt, err)
		}
	}
	return db.Update(ctx, func(tx *store.Tx) error { return tx.DoneApplyIntent(in.ID) })
}

// LockApply takes the working tree's apply lock (an flock on a file in its git directory: it
// excludes other goroutines and other mulligan processes alike) and returns its release.
func LockApply(ctx context.Context, repo *snapshot.Repo) (func(), error) {
	dir := filepath.Join(repo.GitDir(), "mulligan")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("apply lock: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "apply.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("apply lock: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		for {
			err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
			if err != unix.EINTR {
				done <- err
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("apply lock: %w", err)
		}
	case <-ctx.Done():
		// The flock may still be granted: its goroutine releases it by closing the file.
		go func() { <-done; f.Close() }()
		return nil, ctx.Err()
	}
	return func() { f.Close() }, nil
}

// applying counts the applies writing in this process, and appliedPaths the paths they started:
// the crash seam MULLIGAN_TEST_CRASH_AT=apply-path:N kills the process before an apply's Nth.
var applying, appliedPaths atomic.Int64

func init() {
	at, ok := strings.CutPrefix(os.Getenv("MULLIGAN_TEST_CRASH_AT"), "apply-path:")
	if !ok {
		return
	}
	n, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return
	}
	snapshot.SetPathHook(func(string) {
		if applying.Load() > 0 && appliedPaths.Add(1) == n {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	})
}
