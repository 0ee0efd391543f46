package attempt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Isolation (SPEC §4.1): a task with `isolation: worktree` (or every task of a run started with
// `run --isolate`) runs its attempts in a linked worktree of mulligan's own, set to the task's
// base; the user's working tree is not touched while it runs. When the task succeeds, its change
// (base → the successful attempt's post) is applied to the working tree as it is then, by a
// three-way merge of paths: a path the user changed meanwhile is never overwritten, and a
// conflict holds the task blocked (apply-conflict) with the command that applies it by hand.
//
// The runner runs an isolated task's attempts exactly as in place, with the worktree as its
// repository: snapshots, resets, the git guard and the agent's directory are the worktree's.

// ReasonApplyConflict holds an isolated task whose change the working tree conflicts with.
const ReasonApplyConflict = "apply-conflict"

// ReasonApplied is the reason of a task an operator's `mulligan apply` settled.
const ReasonApplied = "applied"

// RunOptions are a run's options kept with it (store.Run.Options), read again on resume.
type RunOptions struct {
	// Isolate runs every task in a worktree (`run --isolate`).
	Isolate bool `json:"isolate,omitempty"`
}

func runOptionsJSON(o RunOptions) []byte {
	if o == (RunOptions{}) {
		return nil
	}
	b, _ := json.Marshal(o) // a struct of plain fields always marshals
	return b
}

func readRunOptions(run *store.Run) RunOptions {
	var o RunOptions
	if len(run.Options) > 0 {
		_ = json.Unmarshal(run.Options, &o) // written by this package; unreadable means none
	}
	return o
}

// TaskIsolated reports whether task of run runs its attempts in a worktree of its own (the
// run's --isolate, or the task's isolation in the task file the run stored).
func TaskIsolated(run *store.Run, task string) bool {
	return isolatedIn(run, storedTaskFile(run), task)
}

// TaskInWorktree reports whether task of run runs its attempts in worktrees: isolated, or racing
// lanes (best_of).
func TaskInWorktree(run *store.Run, task string) bool {
	file := storedTaskFile(run)
	if isolatedIn(run, file, task) {
		return true
	}
	if file == nil {
		return false
	}
	def := file.Task(task)
	return def != nil && def.BestOf > 1
}

// isolatedRest reports whether every unfinished task of run runs in a worktree: then the run
// never resets the working tree, and the user's work since it stopped is not its to compare.
func isolatedRest(run *store.Run) bool {
	file := storedTaskFile(run)
	if file == nil && !readRunOptions(run).Isolate {
		return false // an ad-hoc run isolates only through --isolate, in its options
	}
	for _, t := range run.Tasks {
		if !store.TaskFinished(t.State) && !isolatedIn(run, file, t.ID) {
			return false
		}
	}
	return true
}

// isolatedIn is TaskIsolated with the run's task file already read (nil: none, or unreadable).
func isolatedIn(run *store.Run, file *taskfile.File, task string) bool {
	if readRunOptions(run).Isolate {
		return true
	}
	if file == nil {
		return false
	}
	def := file.Task(task)
	return def != nil && def.Isolation == taskfile.IsolationWorktree
}

// storedTaskFile is the task file run stored, nil for an ad-hoc run or one that no longer parses.
func storedTaskFile(run *store.Run) *taskfile.File {
	if run.TaskFile == "" {
		return nil
	}
	file, err := taskfile.Parse(run.TaskFile, run.TaskFileContent)
	if err != nil {
		return nil
	}
	return file
}

// checkWorktreesDir refuses, before a run is recorded, a run with an isolated task whose
// worktrees would have no place (no home directory, or MULLIGAN_WORKTREES inside the repository).
func checkWorktreesDir(repo *snapshot.Repo, order []*taskfile.Task, isolate bool) error {
	for _, t := range order {
		if isolate || t.Isolation == taskfile.IsolationWorktree || t.BestOf > 1 {
			_, err := repo.WorktreesDir()
			return err
		}
	}
	return nil
}

// taskWorktree is the name of task's worktree in run: <run>-<task>.
func taskWorktree(repo *snapshot.Repo, run, task string) (*snapshot.Worktree, error) {
	return repo.WorktreeFor(run + "-" + task)
}

// openTaskWorktree opens the worktree of task in this run (of its lane, for a racing lane's
// attempt; lane 0 otherwise) when there is one (nil otherwise): where an interrupted isolated
// attempt left its tree.
func (r *runWriter) openTaskWorktree(task string, lane int) *snapshot.Repo {
	if r.inWorktree {
		return nil // the runner's own repository is that worktree already
	}
	w, err := taskWorktree(r.env.Repo, r.run.ID, task)
	if lane > 0 {
		w, err = laneWorktree(r.env.Repo, r.run.ID, task, lane)
	}
	if err != nil {
		return nil
	}
	if r.env.Repo.CheckWorktree(w) != nil {
		return nil // vanished, or no longer mulligan's: it holds nothing of the attempt
	}
	wt, err := snapshot.Open(w.Dir)
	if err != nil {
		return nil
	}
	return wt
}

// isolated reports whether def's attempts run in a worktree.
func (r *runner) isolated(def *taskfile.Task) bool {
	return def.Isolation == taskfile.IsolationWorktree || readRunOptions(r.run).Isolate
}

// runIsolated sets up the task's worktree at base (a reused one gets only what differs), runs
// the attempts there, and applies a success to the working tree.
func (r *runner) runIsolated(ctx context.Context, t *store.Task, def *taskfile.Task, base plumbing.Hash) (*Outcome, error) {
	home := r.env.Repo
	w, err := taskWorktree(home, r.run.ID, t.ID)
	if err != nil {
		return nil, err
	}
	slot, err := r.setUpWorktree(ctx, t, def, base, w, "task "+t.ID)
	if err != nil {
		return nil, err
	}
	defer slot.close()

	r.env.Repo, r.known, r.inWorktree, r.slot = slot.repo, base, true, slot
	out, err := r.runAttempts(ctx, t, def, base)
	r.env.Repo, r.known, r.inWorktree, r.slot = home, plumbing.ZeroHash, false, nil // the user may have changed anything
	if out != nil || err != nil || t.State != store.TaskRunning || t.Reason != ReasonApplying {
		return out, err // a held or failed task keeps its worktree, for a look (gc removes it)
	}
	return r.applyIsolated(ctx, t, base, w)
}

// A worktreeSlot is the worktree an isolated task's attempts (or a lane's) run in, with what
// sets it up again when it vanished.
type worktreeSlot struct {
	home   *snapshot.Repo
	w      *snapshot.Worktree
	commit plumbing.Hash // the task's base, the worktree's HEAD
	files  taskfile.WorktreeFiles
	note   func(string)   // says what could not be brought in
	repo   *snapshot.Repo // the worktree opened: the runner's env.Repo while the task runs
}

func (s *worktreeSlot) close() { s.repo.Close() }

// setUpWorktree sets worktree w to base (a reused one gets only what differs), brings in the
// ignored files def asks for, says so for who (`task fix`, `lane 2 of task fix`), and opens it.
func (r *runner) setUpWorktree(ctx context.Context, t *store.Task, def *taskfile.Task, base plumbing.Hash, w *snapshot.Worktree, who string) (*worktreeSlot, error) {
	home := r.env.Repo
	commit, err := home.CommitTree(base, 0, snapshot.SnapshotOptions{Parent: r.baseCommit(),
		Message: fmt.Sprintf("mulligan %s %s: base\n\nThe tree task %s starts from in its worktree (run %s).\n", r.run.ID, t.ID, t.ID, r.run.ID)})
	if err != nil {
		return nil, fmt.Errorf("worktree of task %s: %w", t.ID, err)
	}
	slot := &worktreeSlot{home: home, w: w, commit: commit.Commit, files: def.Worktree, note: func(msg string) {
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: msg})
	}}
	brought, err := slot.set(ctx)
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("%s runs in its own worktree %s; your working tree is not touched until it succeeds", who, w.Dir)
	if len(brought) > 0 {
		msg += " (brought in: " + strings.Join(brought, ", ") + ")"
	}
	r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: msg})
	return slot, nil
}

// set sets the worktree to the task's base, brings in the ignored files the task asks for
// (noting what could not be), and opens it. It returns what it brought.
func (s *worktreeSlot) set(ctx context.Context) ([]string, error) {
	wt, err := s.home.SetWorktree(context.WithoutCancel(ctx), s.w, s.commit)
	if err != nil {
		return nil, err
	}
	if s.repo != nil {
		s.repo.Close()
	}
	s.repo = wt
	brought, err := bringIgnored(s.home.Root(), s.w.Dir, s.files)
	if err != nil {
		s.note("worktree: " + err.Error())
	}
	return brought, nil
}

// codeWorktreeGone is the code of an attempt whose worktree vanished or is no longer mulligan's.
const codeWorktreeGone = "worktree_gone"

// worktreeGone is the failure of an attempt whose worktree vanished (an agent ran `git worktree
// remove --force` on it, the user deleted it) or no longer belongs to mulligan: nothing of the
// attempt is there, so it is a failed attempt like one whose runner died (not counted), never
// an empty tree to record or apply. Nil while the worktree is there, or outside one.
func (r *runner) worktreeGone(task string) *agentcli.Failure {
	if r.slot == nil {
		return nil
	}
	err := r.slot.home.CheckWorktree(r.slot.w)
	if err == nil {
		return nil
	}
	return &agentcli.Failure{Class: taskfile.ClassRunnerDied, Code: codeWorktreeGone, RetryEligible: true,
		Message: err.Error() + ": nothing of the attempt was kept, nothing is applied",
		Hint:    fmt.Sprintf("an agent must not remove or move its worktree; a new attempt sets it up again: mulligan retry-task %s %s", r.run.ID, task)}
}

// ensureWorktree sets the task's worktree up again, at the task's base, when it vanished or is no
// longer mulligan's, so the next attempt (or the reset of a failed task) has one.
func (r *runner) ensureWorktree(ctx context.Context) error {
	s := r.slot
	if s == nil || s.home.CheckWorktree(s.w) == nil {
		return nil
	}
	if _, err := s.set(ctx); err != nil {
		return err
	}
	r.env.Repo, r.known = s.repo, plumbing.ZeroHash
	return nil
}

// baseCommit is the run's base commit (the parent of a worktree's HEAD), zero when unknown.
func (r *runner) baseCommit() plumbing.Hash {
	c, err := r.env.Repo.Ref(snapshot.BaseRef(r.run.ID))
	if err != nil {
		return plumbing.ZeroHash
	}
	return c
}

// applyIsolated applies the task's change to the working tree (the task succeeds with it), or
// holds the task apply-conflict with nothing written. A worktree whose change is in is removed
// (its trees are in the attempt refs).
func (r *runner) applyIsolated(ctx context.Context, t *store.Task, base plumbing.Hash, w *snapshot.Worktree) (*Outcome, error) {
	var a *store.Attempt
	if err := r.env.DB.View(context.WithoutCancel(ctx), func(tx *store.Tx) error {
		cur, err := tx.GetTask(r.run.ID, t.ID)
		if err != nil {
			return err
		}
		for i := range cur.Attempts {
			if cur.Attempts[i].State == store.AttemptSucceeded {
				a = &cur.Attempts[i]
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if a == nil {
		return nil, fmt.Errorf("task %s succeeded without a successful attempt to apply", t.ID)
	}
	addr := fmt.Sprintf("%s/%s@%d", r.run.ID, t.ID, a.N)
	id := snapshot.NewID(r.env.Now())
	res, err := Apply(ctx, r.env.Repo, r.env.DB, *a, ApplyOptions{Base: base, Settle: SettleRun, UndoRef: snapshot.UndoRef(id),
		UndoMessage: fmt.Sprintf("mulligan undo %s\n\nThe working tree just before run %s applied %s.\n", id, r.run.ID, addr)})
	// The apply wrote the working tree: the next snapshot walks it, never takes the tree known
	// before (the run's base, for a race) for what it holds.
	r.known = plumbing.ZeroHash
	var refused *ApplyConflictError
	switch {
	case errors.As(err, &refused):
		next := fmt.Sprintf("Merge it with your version, the conflicting lines marked in the files: mulligan apply %s --merge", addr)
		if len(refused.Plan.Blocked) > 0 {
			next = fmt.Sprintf("Move what is in the way aside (nothing of yours is overwritten), then: mulligan apply %s", addr)
		}
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: fmt.Sprintf(
			"%s's change conflicts with your working tree: %s. Its tree is in %s. %s", addr, refused, a.Ref, next)})
		if err := r.setTaskState(ctx, t, store.TaskBlocked, ReasonApplyConflict, nil); err != nil {
			return nil, err
		}
		r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskBlocked, Reason: ReasonApplyConflict})
		r.heldHere[t.ID] = true // held; the working tree never held its attempts (no heldTree)
		return nil, r.update(ctx, func(tx *store.Tx) error { return tx.ParkTask(r.run.ID, t.ID) })
	case err != nil:
		return nil, fmt.Errorf("apply %s to the working tree: %w", addr, err)
	}
	t.State, t.Reason = store.TaskSucceeded, ""
	if res.Restore != nil && len(res.Restore.Changes) > 0 {
		msg := fmt.Sprintf("applied %s to your working tree: %d path(s) changed", addr, len(res.Restore.Changes))
		if n := len(res.Plan.Merged); n > 0 {
			msg += fmt.Sprintf(", %d merged with your edits by hunks", n)
		}
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: msg + "; undo point " + snapshot.UndoRef(id)})
	}
	if err := r.env.Repo.RemoveWorktree(w); err != nil {
		r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: "could not remove the worktree " + w.Dir + ": " + err.Error()})
	}
	r.env.Progress.Event(ProgressEvent{Kind: KindTaskState, Task: t.ID, State: store.TaskSucceeded})
	return nil, nil
}

// bringIgnored copies (Copy globs) or links (Link globs) the user's files into a task's worktree,
// where the worktree has nothing at that path. It returns what it brought.
func bringIgnored(home, dir string, files taskfile.WorktreeFiles) ([]string, error) {
	var brought []string
	var errs []error
	for _, k := range []struct {
		globs []string
		link  bool
	}{{files.Copy, false}, {files.Link, true}} {
		for _, g := range k.globs {
			matches, err := filepath.Glob(filepath.Join(home, filepath.FromSlash(g)))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, src := range matches {
				rel, err := filepath.Rel(home, src)
				if err != nil || rel == ".git" || strings.HasPrefix(rel, ".git"+string(filepath.Separator)) {
					continue
				}
				dst := filepath.Join(dir, rel)
				if _, err := os.Lstat(dst); err == nil {
					continue // the worktree has it: the tree's version wins
				}
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					errs = append(errs, err)
					continue
				}
				if k.link {
					err = os.Symlink(src, dst)
				} else {
					err = copyTree(src, dst)
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("bring %s: %w", rel, err))
					continue
				}
				brought = append(brought, filepath.ToSlash(rel))
			}
		}
	}
	return brought, errors.Join(errs...)
}

// copyTree copies a file or directory, cloning file data where the filesystem can (reflinks on
// btrfs, XFS), else copying it. A symlink is copied as what it points to (SPEC §4.1): a link to a
// file outside the repository (`.env` → ~/secrets/app.env) would let the agent's writes through
// to it. A link inside a copied directory that points within that directory stays a link.
func copyTree(src, dst string) error {
	return copyEntry(src, src, dst, 0)
}

// maxLinkDepth bounds the links followed into directories (a link cycle).
const maxLinkDepth = 16

func copyEntry(top, src, dst string, depth int) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		if src != top && linkWithin(top, src, target) {
			return os.Symlink(target, dst)
		}
		if depth >= maxLinkDepth {
			return fmt.Errorf("%s: too many levels of links", src)
		}
		real, err := filepath.EvalSymlinks(src)
		if err != nil {
			return nil // a dangling link: nothing to bring
		}
		return copyEntry(real, real, dst, depth+1)
	}
	switch {
	case fi.IsDir():
		if err := os.Mkdir(dst, fi.Mode().Perm()|0o700); err != nil {
			return err
		}
		ents, err := os.ReadDir(src)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if err := copyEntry(top, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()), depth); err != nil {
				return err
			}
		}
		return nil
	case fi.Mode().IsRegular():
		return copyFile(src, dst, fi.Mode().Perm())
	}
	return nil // sockets, devices, fifos: not brought
}

// linkWithin reports whether the link at path, to target, points within the directory top.
func linkWithin(top, path, target string) bool {
	if filepath.IsAbs(target) {
		return false
	}
	rel, err := filepath.Rel(top, filepath.Join(filepath.Dir(path), target))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func copyFile(src, dst string, perm os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if unix.IoctlFileClone(int(out.Fd()), int(in.Fd())) != nil {
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
	}
	return out.Close()
}

// removeSettledWorktrees removes the worktrees of this run's tasks that succeeded while no runner
// ran them (an apply by hand, an approval): their trees are in their attempts' refs, and nothing
// will run there again.
func (r *runner) removeSettledWorktrees() {
	ws, err := r.env.Repo.Worktrees()
	if err != nil {
		return
	}
	for _, w := range ws {
		rest, ok := strings.CutPrefix(w.Name, r.run.ID+"-")
		if !ok {
			continue
		}
		task, _, _ := strings.Cut(rest, "+") // a lane's: <run>-<task>+<lane>
		for _, t := range r.run.Tasks {
			if t.ID != task || t.State != store.TaskSucceeded {
				continue
			}
			if err := r.env.Repo.RemoveWorktree(w); err != nil {
				r.env.Progress.Event(ProgressEvent{Kind: KindNote, Task: t.ID, Message: "could not remove the worktree " + w.Dir + ": " + err.Error()})
			}
		}
	}
}

// GCWorktrees removes the worktrees of runs that have finished (whatever their age: every
// attempt's tree is in the run's refs) and of runs the history does not know. A live or
// resumable run's worktrees stay. It returns the worktree directories removed (on a dry run,
// those it would remove).
func GCWorktrees(ctx context.Context, repo *snapshot.Repo, db *store.DB, dryRun bool) ([]string, error) {
	ws, err := repo.Worktrees()
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, w := range ws {
		runID, _, ok := strings.Cut(w.Name, "-")
		if !ok {
			continue
		}
		var finished bool
		err := db.View(ctx, func(tx *store.Tx) error {
			run, err := tx.RunHeader(runID)
			if errors.Is(err, store.ErrNotFound) {
				finished = true
				return nil
			}
			if err != nil {
				return err
			}
			finished = store.RunFinished(run.State)
			return nil
		})
		if err != nil {
			return out, err
		}
		if !finished {
			continue
		}
		if !dryRun {
			if err := repo.RemoveWorktree(w); err != nil {
				return out, fmt.Errorf("gc worktree %s: %w", w.Dir, err)
			}
		}
		out = append(out, w.Dir)
	}
	return out, nil
}
