package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// GCRun is one run gc pruned (or, on a dry run, would prune).
type GCRun struct {
	ID         string    `json:"id"`
	State      string    `json:"state"`
	FinishedAt time.Time `json:"finished_at"`
	Refs       []string  `json:"refs"`
	Logs       string    `json:"logs"` // the run's log directory, "" when it has none
}

// GCOptions are the inputs of GC.
type GCOptions struct {
	OlderThan time.Duration
	Now       time.Time
	DryRun    bool
}

// GC deletes the refs (refs/mulligan/runs/<run>/…, refs/mulligan-local/runs/<run>/…) and logs of runs that finished more than
// OlderThan ago and marks their rows pruned; their rows, attempts and events stay. A run that has
// not finished is never touched.
func GC(ctx context.Context, repo *snapshot.Repo, db *store.DB, opts GCOptions) ([]GCRun, error) {
	var runs []store.Run
	if err := db.View(ctx, func(tx *store.Tx) error {
		var err error
		runs, err = tx.RunsInState(store.RunSucceeded, store.RunFailed, store.RunCancelled)
		return err
	}); err != nil {
		return nil, err
	}
	cutoff := opts.Now.Add(-opts.OlderThan)
	out := []GCRun{}
	modules := repo.ModuleRepos()
	defer closeAll(modules)
	for _, run := range runs {
		if run.Pruned || run.FinishedAt == nil || !run.FinishedAt.Before(cutoff) {
			continue
		}
		prefix := snapshot.RunPrefix(run.ID)
		refs, err := repo.Refs(prefix)
		if err != nil {
			return out, err
		}
		// The ignored files the run kept (outside the pushable namespace) go with it.
		local, err := repo.Refs(snapshot.LocalRunPrefix(run.ID))
		if err != nil {
			return out, err
		}
		refs = append(refs, local...)
		g := GCRun{ID: run.ID, State: run.State, FinishedAt: *run.FinishedAt, Refs: []string{}}
		for _, r := range refs {
			g.Refs = append(g.Refs, r.Name)
		}
		// The submodules' working trees kept with its attempts, in their own repositories.
		subRefs := map[*snapshot.Repo][]snapshot.RefEntry{}
		for name, sub := range modules {
			rs, err := sub.Refs(prefix)
			if err != nil {
				return out, err
			}
			subRefs[sub] = rs
			for _, r := range rs {
				g.Refs = append(g.Refs, "modules/"+name+":"+r.Name)
			}
		}
		logs, err := store.LogDir(repo.CommonDir(), run.ID)
		if err != nil {
			return out, err
		}
		if _, err := os.Stat(logs); err == nil {
			g.Logs = logs
		}
		if opts.DryRun {
			out = append(out, g)
			continue
		}
		// Mark first, in a transaction that re-checks the run is still finished: a retry-task or
		// timetravel that revived it since the listing wins, and gc leaves it alone.
		revived := false
		err = db.Update(ctx, func(tx *store.Tx) error {
			hdr, err := tx.RunHeader(run.ID)
			if err != nil {
				return err
			}
			if !store.RunFinished(hdr.State) {
				revived = true
				return nil
			}
			hdr.Pruned = true
			if err := tx.UpdateRun(hdr); err != nil {
				return err
			}
			_, err = tx.AppendEvent(run.ID, "", 0, store.EventRunPruned, store.RunPruned{Refs: len(g.Refs), Who: Who()})
			return err
		})
		if err != nil {
			return out, err
		}
		if revived {
			continue
		}
		for _, r := range refs {
			if err := repo.DeleteRef(r.Name, r.Hash); err != nil && !errors.Is(err, snapshot.ErrRefNotFound) {
				return out, fmt.Errorf("gc run %s: %w", run.ID, err)
			}
		}
		for sub, rs := range subRefs {
			for _, r := range rs {
				if err := sub.DeleteRef(r.Name, r.Hash); err != nil && !errors.Is(err, snapshot.ErrRefNotFound) {
					return out, fmt.Errorf("gc run %s: %w", run.ID, err)
				}
			}
		}
		if g.Logs != "" {
			if err := os.RemoveAll(g.Logs); err != nil {
				return out, fmt.Errorf("gc run %s: %w", run.ID, err)
			}
		}
		out = append(out, g)
	}
	return out, nil
}

// GCUndo is one undo ref gc deleted (or, on a dry run, would delete).
type GCUndo struct {
	Ref   string    `json:"ref"`
	Taken time.Time `json:"taken"`
}

// GCUndoRefs deletes the undo refs taken more than olderThan before now — refs/mulligan/undo/*,
// refs/mulligan-local/undo/* (what a reset replaced of the ignored files) and the undo refs in
// the submodules' own repositories — always keeping the keep newest of each, so the last few
// destructive steps stay undoable however old. A ref that moved since it was listed is left
// alone.
func GCUndoRefs(repo *snapshot.Repo, olderThan time.Duration, keep int, now time.Time, dryRun bool) ([]GCUndo, error) {
	out, err := gcUndo(repo, "", snapshot.UndoPrefix, olderThan, keep, now, dryRun)
	if err != nil {
		return out, err
	}
	local, err := gcUndo(repo, "", snapshot.LocalUndo, olderThan, keep, now, dryRun)
	out = append(out, local...)
	if err != nil {
		return out, err
	}
	modules := repo.ModuleRepos()
	defer closeAll(modules)
	names := make([]string, 0, len(modules))
	for name := range modules {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sub, err := gcUndo(modules[name], "modules/"+name+":", snapshot.UndoPrefix, olderThan, keep, now, dryRun)
		out = append(out, sub...)
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

func closeAll(repos map[string]*snapshot.Repo) {
	for _, r := range repos {
		r.Close()
	}
}

// gcUndo deletes the refs under prefix of repo taken before now-olderThan but the keep newest;
// label prefixes the names it reports.
func gcUndo(repo *snapshot.Repo, label, prefix string, olderThan time.Duration, keep int, now time.Time, dryRun bool) ([]GCUndo, error) {
	refs, err := repo.Refs(prefix)
	if err != nil {
		return nil, err
	}
	type dated struct {
		ref   snapshot.RefEntry
		taken time.Time
	}
	all := make([]dated, 0, len(refs))
	for _, r := range refs {
		t, err := repo.CommitTime(r.Hash)
		if err != nil {
			continue // not a commit of ours: not gc's to judge
		}
		all = append(all, dated{r, t})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].taken.After(all[j].taken) })
	cutoff := now.Add(-olderThan)
	out := []GCUndo{}
	for i, d := range all {
		if i < keep || !d.taken.Before(cutoff) {
			continue
		}
		if !dryRun {
			if err := repo.DeleteRef(d.ref.Name, d.ref.Hash); err != nil && !errors.Is(err, snapshot.ErrRefNotFound) {
				return out, fmt.Errorf("gc %s: %w", d.ref.Name, err)
			}
		}
		out = append(out, GCUndo{Ref: label + d.ref.Name, Taken: d.taken})
	}
	return out, nil
}

// indexCopyGrace is how long a kept index copy no run refers to is left alone: a run may have
// just kept it, before the attempt that names it is recorded.
const indexCopyGrace = time.Hour

// GCIndexCopies deletes the copies of the user's index (kept with the attempts' git states, under
// <git-dir>/mulligan/user-index/) and of the git operations in progress (…/git-ops/) that no
// attempt of a run gc has not pruned refers to, once they are an hour old. It returns their sums.
func GCIndexCopies(ctx context.Context, repo *snapshot.Repo, db *store.DB, now time.Time, dryRun bool) (index, ops []string, err error) {
	var pres [][]byte
	if err := db.View(ctx, func(tx *store.Tx) (err error) {
		pres, err = tx.LiveGitPres()
		return err
	}); err != nil {
		return nil, nil, err
	}
	usedIndex, usedOps := map[string]bool{}, map[string]bool{}
	for _, p := range pres {
		var st snapshot.GitState
		if json.Unmarshal(p, &st) == nil {
			usedIndex[st.Index.Sum], usedOps[st.Ops.Sum] = true, true
		}
	}
	if index, err = gcCopies(repo.IndexCopies, repo.RemoveIndexCopy, usedIndex, now, dryRun); err != nil {
		return index, nil, fmt.Errorf("gc index copy: %w", err)
	}
	if ops, err = gcCopies(repo.OpsCopies, repo.RemoveOpsCopy, usedOps, now, dryRun); err != nil {
		return index, ops, fmt.Errorf("gc copy of git operations: %w", err)
	}
	return index, ops, nil
}

// gcCopies removes the kept copies list gives that used does not name, once past the grace.
func gcCopies(list func() ([]snapshot.IndexCopy, error), remove func(string) error, used map[string]bool, now time.Time, dryRun bool) ([]string, error) {
	copies, err := list()
	out := []string{}
	if err != nil {
		return out, err
	}
	for _, c := range copies {
		if used[c.Sum] || now.Sub(c.Kept) < indexCopyGrace {
			continue
		}
		if !dryRun {
			if err := remove(c.Sum); err != nil {
				return out, fmt.Errorf("%s: %w", c.Sum, err)
			}
		}
		out = append(out, c.Sum)
	}
	return out, nil
}
