package attempt

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// What an attempt must never take from the user besides the working tree (SPEC §2.1): HEAD,
// branches, tags, the stash, the index and the git operations in progress (a merge, a rebase…). The state is recorded with the pre snapshot
// (store.attempt_git), compared when the attempt ends (git_changes, attempt.git_changed), and
// put back by compare-and-swap whenever the tree goes back to the task's base — unless the task
// says `git: allow`, or the attempt succeeded and the task does not say `git: isolate`.

// gitMode is the task's `git:` value ("" in a definition stored before the key existed).
func gitMode(def *taskfile.Task) string {
	if def == nil || def.Git == "" {
		return taskfile.GitRestore
	}
	return def.Git
}

// readGitPre records the git state an attempt starts from, keeping a copy of the index.
func (r *runner) readGitPre() ([]byte, error) {
	st, err := r.env.Repo.ReadGitState(true)
	if err != nil {
		return nil, err
	}
	return json.Marshal(st)
}

// recordGitPost compares the git state with the one attempt n started from and records what
// changed, keeping the agent's commits reachable: HEAD's commit in …/<n>/head, and every ref the
// attempt moved at its new value under …/<n>/refs/ (the stash, which may hold ignored files,
// under refs/mulligan-local/, which is not pushed with refs/mulligan/*).
func (r *runner) recordGitPost(ctx context.Context, task string, n int, preJSON []byte) error {
	if preJSON == nil {
		return nil
	}
	var pre snapshot.GitState
	if err := json.Unmarshal(preJSON, &pre); err != nil {
		return fmt.Errorf("read the git state %s@%d started from: %w", task, n, err)
	}
	post, err := r.env.Repo.ReadGitState(false)
	if err != nil {
		return fmt.Errorf("read the git state %s@%d left: %w", task, n, err)
	}
	return r.saveGitPost(ctx, task, n, &pre, post)
}

func (r *runner) saveGitPost(ctx context.Context, task string, n int, pre, post *snapshot.GitState) error {
	delta := post.Delta(pre)
	changes := snapshot.DiffGitState(pre, delta)
	var headRef string
	if len(changes) > 0 {
		var err error
		if headRef, err = r.keepAgentRefs(task, n, pre, delta, changes); err != nil {
			return err
		}
	}
	deltaJSON, err := json.Marshal(delta)
	if err != nil {
		return err
	}
	changesJSON, err := json.Marshal(nonNilChanges(changes))
	if err != nil {
		return err
	}
	err = r.update(ctx, func(tx *store.Tx) error {
		if err := tx.SetAttemptGitPost(r.run.ID, task, n, deltaJSON, changesJSON); err != nil {
			return err
		}
		if len(changes) == 0 {
			return tx.SetAttemptGitReset(r.run.ID, task, n, store.GitPutBack) // nothing to put back
		}
		return r.event(tx, task, n, store.EventGitChanged, store.GitChanged{Changes: changesJSON, HeadRef: store.OptString(headRef)})
	})
	if err != nil {
		return err
	}
	if len(changes) > 0 {
		msg := fmt.Sprintf("%s@%d changed git state: %s", task, n, describeChanges(changes))
		if headRef != "" {
			msg += "; its commit is kept in " + headRef
		}
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: task, N: n, Message: msg})
	}
	return nil
}

func nonNilChanges(c []snapshot.GitChange) []snapshot.GitChange {
	if c == nil {
		return []snapshot.GitChange{}
	}
	return c
}

// describeUndo says what putting the changes back did.
func describeUndo(cs []snapshot.GitChange) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		switch {
		case c.Op != "":
			parts[i] = "the git operations in progress as they were (" + c.Op + ")"
		case c.Index:
			parts[i] = "the index as it was"
		case c.Stash != "":
			parts[i] = "the stash list as it was"
		case c.From == "":
			parts[i] = fmt.Sprintf("deleted %s (was %s)", c.Ref, shortValue(c.To))
		case c.To == "":
			parts[i] = fmt.Sprintf("%s recreated at %s", c.Ref, shortValue(c.From))
		default:
			parts[i] = fmt.Sprintf("%s back to %s (from %s)", c.Ref, shortValue(c.From), shortValue(c.To))
		}
	}
	return strings.Join(parts, ", ")
}

func shortValue(v string) string {
	if _, ok := objectID(v); ok {
		return v[:7]
	}
	return v
}

func describeChanges(cs []snapshot.GitChange) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return strings.Join(parts, ", ")
}

// keepAgentRefs writes the attempt's head ref (when HEAD's commit or a branch moved) and a copy
// of every ref it moved, so a put-back never leaves the agent's commits unreachable.
func (r *runner) keepAgentRefs(task string, n int, pre, post *snapshot.GitState, changes []snapshot.GitChange) (string, error) {
	repo := r.env.Repo
	set := func(ref, value string) error {
		h, ok := objectID(value)
		if !ok {
			return nil
		}
		old, err := repo.Ref(ref)
		if err != nil {
			old = plumbing.ZeroHash
		}
		if old == h {
			return nil
		}
		return repo.UpdateRef(ref, h, old)
	}
	moved := pre.Head.Commit != post.Head.Commit
	for _, c := range changes {
		switch {
		case c.Stash != "":
			if err := set(snapshot.AttemptStashRef(r.run.ID, task, n), c.To); err != nil {
				return "", err
			}
		case c.Ref != "" && c.Ref != "HEAD":
			if strings.HasPrefix(c.Ref, "refs/heads/") {
				moved = true
			}
			if err := set(snapshot.AttemptKeptRef(r.run.ID, task, n, c.Ref), c.To); err != nil {
				return "", err
			}
		}
	}
	if !moved || post.Head.Commit == "" {
		return "", nil
	}
	head := snapshot.AttemptRef(r.run.ID, task, n, snapshot.Head)
	if err := set(head, post.Head.Commit); err != nil {
		return "", err
	}
	return head, nil
}

func objectID(v string) (plumbing.Hash, bool) {
	if len(v) != 40 || !plumbing.IsHash(v) {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(v), true
}

// gitSettled is what putBackGit did, for the notices of the reset it goes with.
type gitSettled struct {
	restored, kept []string
	skipped        []string
}

// putBackGit settles the task's attempts whose git changes are still pending, newest first:
// under `git: allow` (or keep) they are kept and said so; otherwise each is put back by
// compare-and-swap, and whatever changed again since is left and named. An attempt whose end
// was never seen (its runner died) is compared with the state on disk now.
func (r *runner) putBackGit(ctx context.Context, task string, def *taskfile.Task, keep bool) error {
	var rows []store.AttemptGit
	if err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) (err error) {
		rows, err = tx.PendingGit(r.run.ID, task)
		return err
	}); err != nil {
		return err
	}
	if r.lane != nil {
		// A lane puts back what its own attempts did: the other lanes' are theirs (one may be
		// running in its worktree right now).
		rows = slices.DeleteFunc(rows, func(row store.AttemptGit) bool { return !r.lane.mine[row.N] })
	}
	mode := gitMode(def)
	for _, row := range rows {
		var pre snapshot.GitState
		if err := json.Unmarshal(row.Pre, &pre); err != nil {
			return fmt.Errorf("read the git state %s@%d started from: %w", task, row.N, err)
		}
		var post *snapshot.GitState
		if row.Post == nil {
			cur, err := r.env.Repo.ReadGitState(false)
			if err != nil {
				return err
			}
			if err := r.saveGitPost(ctx, task, row.N, &pre, cur); err != nil {
				return err
			}
			post = cur.Delta(&pre)
		} else {
			post = new(snapshot.GitState)
			if err := json.Unmarshal(row.Post, post); err != nil {
				return fmt.Errorf("read the git state %s@%d left: %w", task, row.N, err)
			}
		}
		changes := snapshot.DiffGitState(&pre, post)
		if len(changes) == 0 {
			if err := r.update(ctx, func(tx *store.Tx) error {
				return tx.SetAttemptGitReset(r.run.ID, task, row.N, store.GitPutBack)
			}); err != nil {
				return err
			}
			continue
		}
		if keep || mode == taskfile.GitAllow {
			if err := r.update(ctx, func(tx *store.Tx) error {
				if err := tx.SetAttemptGitReset(r.run.ID, task, row.N, store.GitKept); err != nil {
					return err
				}
				kept, err := json.Marshal(changes)
				if err != nil {
					return err
				}
				return r.event(tx, task, row.N, store.EventGitReset, store.GitKeptPayload{Kept: kept, Git: string(mode)})
			}); err != nil {
				return err
			}
			if !keep {
				r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: task, N: row.N,
					Message: fmt.Sprintf("kept what %s@%d did to git (git: allow): %s", task, row.N, describeChanges(changes))})
			}
			continue
		}
		res, err := r.env.Repo.PutBackGit(&pre, post, fmt.Sprintf("mulligan: put back after %s/%s@%d", r.run.ID, task, row.N))
		if err != nil {
			return err
		}
		state := store.GitPutBack
		skipped := make([]store.GitSkipped, len(res.Skipped))
		for i, s := range res.Skipped {
			state = store.GitPartial
			change, err := json.Marshal(s.Change)
			if err != nil {
				return err
			}
			skipped[i] = store.GitSkipped{Change: change, Reason: s.Reason}
		}
		restored, err := json.Marshal(nonNilChanges(res.Restored))
		if err != nil {
			return err
		}
		if err := r.update(ctx, func(tx *store.Tx) error {
			if err := tx.SetAttemptGitReset(r.run.ID, task, row.N, state); err != nil {
				return err
			}
			return r.event(tx, task, row.N, store.EventGitReset, store.GitResetPayload{Restored: restored, Skipped: skipped, Git: string(mode)})
		}); err != nil {
			return err
		}
		if len(res.Restored) > 0 {
			msg := fmt.Sprintf("put back what %s@%d did to git: %s", task, row.N, describeUndo(res.Restored))
			if head := snapshot.AttemptRef(r.run.ID, task, row.N, snapshot.Head); r.refExists(head) {
				msg += "; its commits stay in " + head
			}
			r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: task, N: row.N, Message: msg})
		}
		for _, s := range res.Skipped {
			r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: task, N: row.N,
				Message: fmt.Sprintf("did not put back %s (%s@%d): %s; left as it is", s.Change, task, row.N, s.Reason)})
		}
	}
	return nil
}

func (r *runner) refExists(name string) bool {
	_, err := r.env.Repo.Ref(name)
	return err == nil
}

// settleGitOnSuccess decides the git changes of a task whose attempt succeeded: kept (its
// commits are its work), or put back under `git: isolate`.
func (r *runner) settleGitOnSuccess(ctx context.Context, task string, def *taskfile.Task) error {
	return r.putBackGit(ctx, task, def, gitMode(def) != taskfile.GitIsolate)
}

// resetTask puts the task's git changes back (by policy) and the tree to the task's base.
func (r *runner) resetTask(ctx context.Context, task string, def *taskfile.Task, base plumbing.Hash) error {
	if err := r.ensureWorktree(ctx); err != nil {
		return err
	}
	if err := r.putBackGit(ctx, task, def, false); err != nil {
		return err
	}
	if err := r.restore(ctx, base); err != nil {
		return err
	}
	r.putBackSubmodules(ctx, task, base)
	return nil
}
