package attempt

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// Reverting the tree to an attempt's pre (`revert ADDR --pre`, `revert RUN --base`) puts back the
// git state that attempt started from too (SPEC §2.1): HEAD, the refs, the stash and the index,
// each by compare-and-swap. Only what an attempt of this run left is put back: a thing whose
// value now is the one this attempt, or an attempt of the run that started after it, left when
// it ended. Anything else (the user's commit since, another run's) is left as it is and named.

// GitRevert is what putting an attempt's pre git state back did (or, for a dry run, would do).
type GitRevert struct {
	// Attempt is the attempt whose pre state it is ("task@n"); "" when none was recorded.
	Attempt  string
	Restored []snapshot.GitChange // from: the value now, to: the value put back
	Left     []snapshot.GitSkip   // differs from the pre state, and left as it is
}

// RevertGit puts the git state back to what attempt task@n of run started from; with task ""
// to what the run's first attempt started from (the run's base). dryRun only says what it would
// do. message goes into the reflogs of the refs it moves.
func RevertGit(ctx context.Context, repo *snapshot.Repo, db *store.DB, run *store.Run, task string, n int, dryRun bool, message string) (*GitRevert, error) {
	var rows []store.AttemptGit
	if err := db.View(context.WithoutCancel(ctx), func(tx *store.Tx) (err error) {
		rows, err = tx.RunGits(run.ID)
		return err
	}); err != nil {
		return nil, err
	}
	started := map[string]store.Attempt{}
	for _, t := range run.Tasks {
		for _, a := range t.Attempts {
			started[fmt.Sprintf("%s@%d", t.ID, a.N)] = a
		}
	}
	key := func(g store.AttemptGit) string { return fmt.Sprintf("%s@%d", g.TaskID, g.N) }
	var target *store.AttemptGit
	for i := range rows {
		g := &rows[i]
		a, ok := started[key(*g)]
		if !ok {
			continue
		}
		if task != "" {
			if g.TaskID == task && g.N == n {
				target = g
			}
			continue
		}
		if target == nil || a.StartedAt.Before(started[key(*target)].StartedAt) {
			target = g
		}
	}
	if target == nil {
		return &GitRevert{}, nil // recorded before mulligan kept git states, or its agent never ran
	}
	var pre snapshot.GitState
	if err := json.Unmarshal(target.Pre, &pre); err != nil {
		return nil, fmt.Errorf("read the git state %s started from: %w", key(*target), err)
	}
	since := started[key(*target)].StartedAt
	// What the attempts from this one on left, as full states over the one each started from.
	var lefts []*snapshot.GitState
	for _, g := range rows {
		a, ok := started[key(g)]
		if !ok || g.Post == nil || a.StartedAt.Before(since) {
			continue
		}
		var gpre, gpost snapshot.GitState
		if json.Unmarshal(g.Pre, &gpre) != nil || json.Unmarshal(g.Post, &gpost) != nil {
			continue
		}
		lefts = append(lefts, full(&gpre, &gpost))
	}
	cur, err := repo.ReadGitState(false)
	if err != nil {
		return nil, err
	}
	out := &GitRevert{Attempt: key(*target)}
	// post is the state to put back from: the values now of the things an attempt left so.
	post := &snapshot.GitState{Head: pre.Head, Refs: map[string]string{}, Partial: true,
		StashLog: pre.StashLog, StashLogSum: pre.StashLogSum, Index: pre.Index, Ops: pre.Ops}
	notOurs := func(c snapshot.GitChange) {
		out.Left = append(out.Left, snapshot.GitSkip{Change: c, Reason: "not left so by an attempt of this run since " + out.Attempt})
	}
	for _, c := range snapshot.DiffGitState(&pre, cur) {
		ours := false
		for _, l := range lefts {
			switch {
			case c.Ref == "HEAD":
				ours = ours || (l.Head == cur.Head)
			case c.Index:
				ours = ours || (l.Index.Entries == cur.Index.Entries)
			case c.Op != "":
				ours = ours || (l.Ops.Sum == cur.Ops.Sum)
			case c.Stash != "":
				ours = ours || (l.Refs["refs/stash"] == cur.Refs["refs/stash"] && l.StashLogSum == cur.StashLogSum)
			default:
				ours = ours || (l.Refs[c.Ref] == cur.Refs[c.Ref])
			}
		}
		if !ours {
			notOurs(c)
			continue
		}
		switch {
		case c.Ref == "HEAD":
			post.Head = cur.Head
		case c.Index:
			post.Index = cur.Index
		case c.Op != "":
			post.Ops = cur.Ops
		case c.Stash != "":
			post.Refs["refs/stash"] = cur.Refs["refs/stash"]
			post.StashLog, post.StashLogSum = cur.StashLog, cur.StashLogSum
		default:
			post.Refs[c.Ref] = cur.Refs[c.Ref]
		}
	}
	if dryRun {
		out.Restored = snapshot.DiffGitState(&pre, post)
		return out, nil
	}
	res, err := repo.PutBackGit(&pre, post, message)
	if err != nil {
		return nil, err
	}
	out.Restored = res.Restored
	out.Left = append(out.Left, res.Skipped...)
	return out, nil
}

// full is an attempt's end state post (a delta over pre) as a complete state.
func full(pre, post *snapshot.GitState) *snapshot.GitState {
	if !post.Partial {
		return post
	}
	f := *post
	f.Partial = false
	f.Refs = make(map[string]string, len(pre.Refs))
	for k, v := range pre.Refs {
		f.Refs[k] = v
	}
	for k, v := range post.Refs {
		if v == "" {
			delete(f.Refs, k)
		} else {
			f.Refs[k] = v
		}
	}
	if f.StashLogSum == pre.StashLogSum && f.StashLog == "" {
		f.StashLog = pre.StashLog
	}
	return &f
}

// DescribeRestored says what a GitRevert put back, as a reset's notice does.
func (g *GitRevert) DescribeRestored() string { return describeUndo(g.Restored) }

// RestoredList is git_restored in JSON: what was put back (never null).
func (g *GitRevert) RestoredList() []snapshot.GitChange {
	if g.Restored == nil {
		return []snapshot.GitChange{}
	}
	return g.Restored
}

// LeftList is git_left in JSON: what was left as it is, and why.
func (g *GitRevert) LeftList() []store.GitSkipped {
	out := make([]store.GitSkipped, len(g.Left))
	for i, l := range g.Left {
		change, _ := json.Marshal(l.Change) // a GitChange always marshals
		out[i] = store.GitSkipped{Change: change, Reason: l.Reason}
	}
	return out
}
