package attempt

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// Work done after the run (SPEC §2.1): `resume` and `supervise` of a run whose last known tree
// is not the tree on disk (the user, or a later run, changed it since) must not reset it to the
// run's base. supervise holds such a run `blocked` (reason tree-moved-on) and says the command;
// resume refuses (exit 6) unless --force, which keeps the tree in an undo ref first.

// ReasonTreeMovedOn holds a run whose working tree changed after the run stopped.
const ReasonTreeMovedOn = "tree-moved-on"

// movedOnSlack is how long after a dead run's last heartbeat a file may still have been written
// by it (its process was stopped between two heartbeats).
const movedOnSlack = 5 * time.Second

// TreeMovedOnError refuses to resume a run over work done after it stopped.
type TreeMovedOnError struct {
	Run string
	Why string
}

func (e *TreeMovedOnError) Error() string {
	return fmt.Sprintf("run %s: the working tree moved on since the run stopped (%s); resuming would reset it to the run's trees", e.Run, e.Why)
}

// Hints name the two ways on.
func (e *TreeMovedOnError) Hints() []string {
	return []string{
		fmt.Sprintf("mulligan resume %s --force continues it over the current tree, kept first in an undo ref", e.Run),
		fmt.Sprintf("mulligan cancel %s gives it up and leaves the tree alone", e.Run),
	}
}

// MovedOnCommand is the command a tree-moved-on report names.
func MovedOnCommand(run string) string {
	return fmt.Sprintf("mulligan resume %s --force (keeps the current tree in an undo ref first), or mulligan cancel %s", run, run)
}

// TreeMovedOn reports whether the working tree holds work done after run stopped: a later run
// started in this worktree, or the tree on disk is not the one the run last knew. For a run that
// died mid-attempt (the agent's edits are expected), a path the attempt's pre tree does not hold
// as it is now counts only when it changed after the run's last heartbeat, and only once the
// attempt's own processes are gone.
//
// A running attempt whose processes live (the runner died, its agent did not) is in flight: the
// tree is its, and edits made meanwhile are the attempt's to reset, each named with the command
// that brings it back (SPEC §2.1, edits made during an attempt).
func TreeMovedOn(ctx context.Context, repo *snapshot.Repo, db *store.DB, run *store.Run) (string, bool, error) {
	return treeMovedOn(ctx, repo, db, run, false)
}

// TreeMovedOnEnded is TreeMovedOn for a caller that owns run and has just ended what its running
// attempt left running (supervise: EndLeftRunning); inFlight says something was: the attempt
// was in flight until now, so only a later run counts as work done after it.
func TreeMovedOnEnded(ctx context.Context, repo *snapshot.Repo, db *store.DB, run *store.Run, inFlight bool) (string, bool, error) {
	return treeMovedOn(ctx, repo, db, run, inFlight)
}

func treeMovedOn(ctx context.Context, repo *snapshot.Repo, db *store.DB, run *store.Run, inFlight bool) (string, bool, error) {
	if isolatedRest(run) {
		return "", false, nil // the rest of the run never resets the working tree (isolate.go)
	}
	if run.State == store.RunBlocked && run.Reason == ReasonTreeMovedOn {
		// supervise found it so (and claimed it, which moved its heartbeat): that stands until
		// the operator forces it.
		return movedOnFinding(ctx, db, run.ID), true, nil
	}
	lastBeat := run.StartedAt
	if run.HeartbeatAt != nil && run.HeartbeatAt.After(lastBeat) {
		lastBeat = *run.HeartbeatAt
	}
	var later string
	var stop *store.StopTree
	var groups map[string][]int
	err := db.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		var err error
		if later, err = tx.RunStartedAfter(run.Worktree, run.ID, lastBeat); err != nil {
			return err
		}
		if stop, err = tx.GetStopTree(run.ID); err != nil {
			return err
		}
		groups, err = attemptGroups(tx, run)
		return err
	})
	if err != nil {
		return "", false, err
	}
	if later != "" {
		return fmt.Sprintf("run %s started in this worktree after it", later), true, nil
	}
	if repo.Root() != run.Worktree {
		return "", false, nil // another worktree's tree is not read from here
	}
	started := false
	for _, t := range run.Tasks {
		started = started || t.BaseTree != ""
	}
	if !started {
		return "", false, nil // no task has a base to reset to: resuming takes the tree as it is
	}
	tr, err := repo.WriteTree(context.WithoutCancel(ctx))
	if err != nil {
		return "", false, err
	}
	cur := tr.Tree
	// The run's own task file is the operator's to edit between stops (`resume --reload`).
	taskFile := taskFileInTree(run)
	var running *store.Attempt
	var last *store.Attempt
	for i := range run.Tasks {
		for j := range run.Tasks[i].Attempts {
			a := &run.Tasks[i].Attempts[j]
			if a.State == store.AttemptRunning {
				running = a
			}
			if last == nil || a.StartedAt.After(last.StartedAt) {
				last = a
			}
		}
	}
	if running != nil && running.PreTree != "" {
		if inFlight {
			return "", false, nil
		}
		for i := range run.Tasks {
			for _, a := range run.Tasks[i].Attempts {
				if a.State == store.AttemptRunning && len(attemptProcs(groups, run.ID, a.TaskID, a.N)) > 0 {
					return "", false, nil // the attempt's agent still works on the tree: its edits
				}
			}
		}
		changes, err := repo.DiffTrees(plumbing.NewHash(running.PreTree), cur)
		if err != nil {
			return "", false, err
		}
		var after []string
		for i, c := range changes {
			if i >= 10000 {
				break
			}
			if c.Path == taskFile {
				continue
			}
			if changedAfter(filepath.Join(repo.Root(), filepath.FromSlash(c.Path)), lastBeat.Add(movedOnSlack)) {
				after = append(after, c.Path)
			}
		}
		if len(after) > 0 {
			return fmt.Sprintf("%s changed after its process died (last heartbeat %s)", namePaths(after, 3), lastBeat.UTC().Format(time.RFC3339)), true, nil
		}
		return "", false, nil
	}
	// The run stopped between attempts: the tree it left is the one it recorded when it stopped
	// (blocked, parked, paused), else one of its recorded trees.
	if stop != nil && (last == nil || !stop.At.Before(last.StartedAt)) {
		if stop.Tree == cur.String() {
			return "", false, nil
		}
		return describeMoved(repo, plumbing.NewHash(stop.Tree), cur, "the tree it left when it stopped", taskFile)
	}
	var recorded bool
	if err := db.View(context.WithoutCancel(ctx), func(tx *store.Tx) (err error) {
		recorded, err = tx.TreeRecorded(run.ID, cur.String())
		return err
	}); err != nil {
		return "", false, err
	}
	if recorded {
		return "", false, nil
	}
	ref := plumbing.ZeroHash
	what := "its base"
	if run.BaseTree != "" {
		ref = plumbing.NewHash(run.BaseTree)
	}
	if last != nil && last.Tree != "" {
		ref, what = plumbing.NewHash(last.Tree), fmt.Sprintf("the tree %s@%d left", last.TaskID, last.N)
	}
	if ref.IsZero() {
		return "the tree is none the run recorded", true, nil
	}
	return describeMoved(repo, ref, cur, what, taskFile)
}

// taskFileInTree is the run's task file as a path of the working tree ("" when outside it).
func taskFileInTree(run *store.Run) string {
	p := run.TaskFile
	if p == "" {
		return ""
	}
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(run.Worktree, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			return ""
		}
		p = rel
	}
	return filepath.ToSlash(filepath.Clean(p))
}

// movedOnFinding is what supervise recorded when it held the run tree-moved-on.
func movedOnFinding(ctx context.Context, db *store.DB, run string) string {
	why := "supervise found its working tree moved on"
	_ = db.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		evs, err := tx.Events(run, 0, 0)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if ev.Type != store.EventRunStateChanged {
				continue
			}
			var p store.RunStateChanged
			if ev.Decode(&p) == nil && p.Reason == ReasonTreeMovedOn && p.Why != "" {
				why = p.Why
			}
		}
		return nil
	})
	return why
}

func describeMoved(repo *snapshot.Repo, from, to plumbing.Hash, what, skip string) (string, bool, error) {
	changes, err := repo.DiffTrees(from, to)
	if err != nil {
		return "", false, err
	}
	var paths []string
	for _, c := range changes {
		if c.Path != skip {
			paths = append(paths, c.Path)
		}
	}
	if len(paths) == 0 {
		return "", false, nil
	}
	return fmt.Sprintf("%s differ%s from %s", namePaths(paths, 3), plural1(len(paths)), what), true, nil
}

func plural1(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

// namePaths names up to max paths, then how many more.
func namePaths(paths []string, max int) string {
	if len(paths) <= max {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:max], ", "), len(paths)-max)
}

// changedAfter reports whether the file at path changed (ctime, which touch cannot set back) after t.
func changedAfter(path string, t time.Time) bool {
	fi, err := os.Lstat(path)
	if err != nil {
		return false // deleted: no time to go by
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fi.ModTime().After(t)
	}
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec).After(t)
}

// recordStopTree keeps the tree the run leaves on disk as it stops without finishing (blocked,
// parked, paused), so a later resume can tell work done since.
func (r *runner) recordStopTree(ctx context.Context) {
	if r.inWorktree || r.noStopTree {
		return // the working tree is the user's while an isolated task runs: nothing to compare
	}
	tree, err := r.currentTree(ctx)
	if err != nil {
		return // then resume falls back to the trees the run recorded
	}
	now := r.env.Now().UTC()
	_ = r.update(ctx, func(tx *store.Tx) error {
		return tx.SetStopTree(r.run.ID, tree.String(), now)
	})
}
