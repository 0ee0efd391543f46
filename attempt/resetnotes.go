package attempt

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// A reset that replaces something the user may want says so, naming the paths, with the command
// that brings any of them back (SPEC §2.1 "Edits made during an attempt"; STYLE #15): the paths
// the attempt changed come back from its post ref, edits no attempt recorded (made during verify
// or backoff, or while the run was stopped) from the undo ref the reset wrote first. Never
// `mulligan undo`, which would bring back a failed attempt's whole tree over later work.

// maxNamedPaths is how many paths a notice names before it gives a count.
const maxNamedPaths = 10

// postState is an attempt's post snapshot as this process took it.
type postState struct {
	task      string
	n         int
	ref       string
	pre, tree plumbing.Hash
	changed   []snapshot.Change // pre to tree, when this process diffed them
}

// noteReset prints what a reset replaced.
func (r *runner) noteReset(res *snapshot.RestoreResult) {
	if res == nil || r.lane != nil {
		return // (a lane's worktree is mulligan's own: nothing of the user's was replaced)
	}
	if r.lastPost.tree.IsZero() {
		r.lastPost = r.recordedPost()
	}
	lp := r.lastPost
	replaced := map[string]bool{}
	for _, c := range res.Changes {
		replaced[c.Path] = true
	}
	if res.Undo != nil && res.Undo.Ref != "" {
		// Only what differs from the tree the run last recorded is the user's; the rest is in
		// the attempt's post ref already.
		var paths []string
		if !lp.tree.IsZero() && lp.tree != res.UndoTree {
			if cs, err := r.env.Repo.DiffTrees(lp.tree, res.UndoTree); err == nil {
				for _, c := range cs {
					paths = append(paths, c.Path)
				}
			}
		}
		if paths == nil {
			for _, c := range res.Changes {
				paths = append(paths, c.Path)
			}
		}
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: r.current, Message: fmt.Sprintf(
			"the working tree held changes no attempt recorded (made during verify or backoff, or while the run was stopped): %s; kept in %s: `mulligan restore %s -- PATH` brings one back",
			listPaths(paths), res.Undo.Ref, res.Undo.Ref)})
	}
	if lp.tree.IsZero() || lp.ref == "" || len(replaced) == 0 {
		return
	}
	cs := lp.changed
	if cs == nil {
		var err error
		if cs, err = r.env.Repo.DiffTrees(lp.pre, lp.tree); err != nil {
			return
		}
	}
	var paths []string
	for _, c := range cs {
		if replaced[c.Path] {
			paths = append(paths, c.Path)
		}
	}
	if len(paths) == 0 {
		return
	}
	r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: r.current, Message: fmt.Sprintf(
		"the reset replaced %d path%s that changed during %s@%d: %s; `mulligan restore %s -- PATH` brings one back",
		len(paths), plural1s(len(paths)), lp.task, lp.n, listPaths(paths), lp.ref)})
	r.lastPost.ref = "" // said once
}

// recordedPost is the latest finished attempt of the current task as the history holds it (a
// process that resumed or continued the run did not take it itself).
func (r *runner) recordedPost() postState {
	var lp postState
	if r.current == "" {
		return lp
	}
	_ = r.env.DB.View(context.Background(), func(tx *store.Tx) error {
		t, err := tx.GetTask(r.run.ID, r.current)
		if err != nil {
			return err
		}
		for i := len(t.Attempts) - 1; i >= 0; i-- {
			a := t.Attempts[i]
			if a.Tree != "" && a.PreTree != "" && a.Ref != "" {
				lp = postState{task: t.ID, n: a.N, ref: a.Ref, pre: plumbing.NewHash(a.PreTree), tree: plumbing.NewHash(a.Tree)}
				return nil
			}
		}
		return nil
	})
	return lp
}

func plural1s(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// listPaths names up to maxNamedPaths paths, then how many more.
func listPaths(paths []string) string {
	if len(paths) <= maxNamedPaths {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:maxNamedPaths], ", "), len(paths)-maxNamedPaths)
}
