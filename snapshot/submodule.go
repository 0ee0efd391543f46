package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"golang.org/x/sys/unix"
)

// SubmoduleResult is what a restore did to one submodule whose checked-out commit differs
// between the tree it replaced and the tree it set.
type SubmoduleResult struct {
	Path   string
	Commit plumbing.Hash // the commit it was set to (detached), as the target tree's gitlink says
	// UndoRef, in the submodule's own repository, keeps its working tree as it was.
	UndoRef string
	// Skipped says why the submodule was left as it is ("" when it was put back).
	Skipped string
	// Changes are the paths of its working tree that RestoreSubmodules wrote, deleted or
	// re-moded.
	Changes []Change
}

// restoreSubmodule puts a submodule back to the commit the target tree's gitlink names, as
// `git submodule update` would, without running git: its working tree is restored to that
// commit's tree through the same Restore (the files it held go to an undo ref of its own), its
// index is written for that tree and its HEAD is detached at the commit. Only a submodule whose
// git directory is a plain one under the superproject's modules/ is touched; any other is left
// alone and said so.
func (x *restorer) restoreSubmodule(c Change) SubmoduleResult {
	res := SubmoduleResult{Path: c.Path, Commit: c.To.Hash}
	dir := filepath.Join(x.r.root, filepath.FromSlash(c.Path))
	gd, err := readGitFile(filepath.Join(dir, ".git"))
	if err != nil {
		res.Skipped = "its .git is not a gitdir file (not an absorbed submodule)"
		return res
	}
	modules := filepath.Join(x.r.commonDir, "modules") + string(filepath.Separator)
	if real, err := filepath.EvalSymlinks(gd); err == nil {
		gd = real
	}
	if !strings.HasPrefix(gd, modules) || !isGitDir(gd) || commonDirOf(gd) != gd {
		res.Skipped = "its git directory is not a plain one under " + modules
		return res
	}
	sub, err := openAt(dir, dir, gd, false)
	if err != nil {
		res.Skipped = err.Error()
		return res
	}
	defer sub.Close()
	if t, _, err := sub.readObject(c.To.Hash); err != nil || t != plumbing.CommitObject {
		res.Skipped = fmt.Sprintf("commit %s is not in its repository", c.To.Hash)
		return res
	}
	id := NewID(time.Now())
	res.UndoRef = UndoRef(id)
	r, err := sub.Restore(x.ctx, c.To.Hash, RestoreOptions{UndoRef: res.UndoRef,
		UndoMessage: fmt.Sprintf("mulligan undo %s\n\nThe submodule's working tree before the superproject's restore set it to %s.\n", id, c.To.Hash)})
	if err != nil {
		res.Skipped = err.Error()
		if r == nil || r.Undo == nil {
			res.UndoRef = ""
		}
		return res
	}
	tree, _, err := sub.peel(c.To.Hash)
	if err == nil {
		err = sub.writeIndexFor(tree)
	}
	if err == nil {
		err = writeDetachedHead(gd, c.To.Hash)
	}
	if err != nil {
		res.Skipped = "files restored, but: " + err.Error()
	}
	return res
}

// writeIndexFor writes the repository's index for tree, with the stat data of the files on disk
// (as checkout leaves it), through index.lock.
func (r *Repo) writeIndexFor(tree plumbing.Hash) error {
	var files []keptFile
	if err := r.flatten(tree, "", &files); err != nil {
		return err
	}
	idx := &index.Index{Version: 2}
	for _, f := range files {
		e := &index.Entry{Name: f.path, Hash: f.blob, Mode: filemode.FileMode(f.mode)}
		var st unix.Stat_t
		if f.mode != modeGitlink && unix.Lstat(filepath.Join(r.root, filepath.FromSlash(f.path)), &st) == nil {
			e.CreatedAt = time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
			e.ModifiedAt = time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
			e.Dev, e.Inode = uint32(st.Dev), uint32(st.Ino)
			e.UID, e.GID = st.Uid, st.Gid
			e.Size = uint32(st.Size)
		}
		idx.Entries = append(idx.Entries, e)
	}
	slices.SortFunc(idx.Entries, func(a, b *index.Entry) int { return strings.Compare(a.Name, b.Name) })
	var buf bytes.Buffer
	if err := index.NewEncoder(&buf).Encode(idx); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	lock, err := acquireLock(r.indexFile)
	if err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	if err := lock.commit(buf.Bytes()); err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	return nil
}

// writeDetachedHead points gitDir's HEAD at commit, detached, through HEAD.lock.
func writeDetachedHead(gitDir string, commit plumbing.Hash) error {
	lock, err := acquireLock(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("HEAD is locked: %w", err)
		}
		return err
	}
	return lock.commit([]byte(commit.String() + "\n"))
}

// A submodule's working tree is not in the superproject's snapshot (a tree holds a gitlink: the
// commit it has checked out, nothing of its files), so an edit inside a submodule whose HEAD did
// not move is invisible to it. SnapshotSubmodules keeps each submodule's working tree in the
// submodule's own repository, under the same ref name as the superproject's snapshot it goes
// with, and RestoreSubmodules puts it back from there (SPEC §2.1).

// SubmoduleSnap is one submodule's working tree, kept in its own repository.
type SubmoduleSnap struct {
	Path   string        // in the superproject, slash-separated
	GitDir string        // its git directory (under the superproject's modules/)
	Tree   plumbing.Hash // its working tree as a snapshot holds it
	Commit plumbing.Hash // the commit ref points to, in its repository
}

// HasSubmodules reports whether .gitmodules on disk names a submodule whose git directory is
// under the superproject's modules/: the ones SnapshotSubmodules and RestoreSubmodules act on
// (without one they do nothing).
func (r *Repo) HasSubmodules() bool { return len(r.submodules()) > 0 }

// submodule is an entry of .gitmodules: its name and where it is checked out.
type submodule struct {
	name, path string
	gitDir     string // <common>/modules/<name>
}

// submodules lists the submodules .gitmodules (on disk) names whose git directory is a plain one
// under the superproject's modules/ (as `git submodule add` and `absorbgitdirs` leave them).
func (r *Repo) submodules() []submodule {
	data, err := os.ReadFile(filepath.Join(r.root, ".gitmodules"))
	if err != nil {
		return nil
	}
	paths, err := gitmodulesPaths(data)
	if err != nil {
		return nil
	}
	modules := filepath.Join(r.commonDir, "modules")
	var out []submodule
	for name, path := range paths {
		p := filepath.ToSlash(filepath.Clean(path))
		if path == "" || filepath.IsAbs(path) || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(name, "..") {
			continue // not a path inside the working tree, or a name out of modules/
		}
		gd := filepath.Join(modules, filepath.FromSlash(name))
		if !isGitDir(gd) || commonDirOf(gd) != gd {
			continue
		}
		out = append(out, submodule{name: name, path: p, gitDir: gd})
	}
	slices.SortFunc(out, func(a, b submodule) int { return strings.Compare(a.path, b.path) })
	return out
}

// checkedOut reports whether the submodule's directory holds a .git file pointing to its git
// directory (a directory `git submodule update` checked out).
func (r *Repo) checkedOut(s submodule) bool {
	gd, err := readGitFile(filepath.Join(r.abs(s.path), ".git"))
	if err != nil {
		return false
	}
	if real, err := filepath.EvalSymlinks(gd); err == nil {
		gd = real
	}
	want := s.gitDir
	if real, err := filepath.EvalSymlinks(want); err == nil {
		want = real
	}
	return gd == want
}

func (r *Repo) openSubmodule(s submodule) (*Repo, error) {
	dir := r.abs(s.path)
	return openAt(dir, dir, s.gitDir, false)
}

// SnapshotSubmodules keeps the working tree of every checked-out submodule (tracked files and
// untracked ones that are not ignored, as a snapshot of the superproject holds them) in the
// submodule's own repository at ref, replacing what ref held there. A submodule whose directory
// is gone or not its own checkout is left out; the first error stops it.
func (r *Repo) SnapshotSubmodules(ctx context.Context, ref, message string) ([]SubmoduleSnap, error) {
	var out []SubmoduleSnap
	for _, s := range r.submodules() {
		if !r.checkedOut(s) {
			continue
		}
		sub, err := r.openSubmodule(s)
		if err != nil {
			return out, fmt.Errorf("submodule %s: %w", s.path, err)
		}
		res, err := sub.Snapshot(ctx, SnapshotOptions{Ref: ref, Message: message, Replace: true})
		sub.Close()
		if err != nil {
			return out, fmt.Errorf("submodule %s: %w", s.path, err)
		}
		out = append(out, SubmoduleSnap{Path: s.path, GitDir: s.gitDir, Tree: res.Tree, Commit: res.Commit})
	}
	return out, nil
}

// RestoreSubmodules sets the working tree of every submodule whose repository holds ref (written
// by SnapshotSubmodules) back to the tree ref holds there: only the paths that differ are
// written, what they held is kept in an undo ref of the submodule's own (refs/mulligan/undo/<id>
// in its repository), ignored files are left alone, as Restore does. A submodule directory that
// is gone (an agent's `rm -rf`) is checked out again: its .git file, then the tree. Submodules
// whose working tree already is that tree are not listed.
func (r *Repo) RestoreSubmodules(ctx context.Context, ref string) []SubmoduleResult {
	var out []SubmoduleResult
	for _, s := range r.submodules() {
		res, changed := r.restoreSubmoduleTree(ctx, s, ref)
		if changed || res.Skipped != "" {
			out = append(out, res)
		}
	}
	return out
}

func (r *Repo) restoreSubmoduleTree(ctx context.Context, s submodule, ref string) (SubmoduleResult, bool) {
	res := SubmoduleResult{Path: s.path}
	probe := &Repo{gitDir: s.gitDir, commonDir: s.gitDir}
	commit, found, err := probe.resolveRef(ref)
	if err != nil || !found {
		return res, false // no snapshot of it there: not a submodule of that tree
	}
	res.Commit = commit
	dir := r.abs(s.path)
	if !r.checkedOut(s) {
		if err := r.checkOutAgain(s); err != nil {
			res.Skipped = err.Error()
			return res, false
		}
	}
	sub, err := r.openSubmodule(s)
	if err != nil {
		res.Skipped = err.Error()
		return res, false
	}
	defer sub.Close()
	tree, _, err := sub.peel(commit)
	if err != nil {
		res.Skipped = fmt.Sprintf("its snapshot %s: %v", ref, err)
		return res, false
	}
	cur, err := sub.WriteTree(ctx)
	if err != nil {
		res.Skipped = err.Error()
		return res, false
	}
	if cur.Tree == tree {
		return res, false
	}
	id := NewID(time.Now())
	res.UndoRef = UndoRef(id)
	rr, err := sub.Restore(ctx, tree, RestoreOptions{UndoRef: res.UndoRef,
		UndoMessage: fmt.Sprintf("mulligan undo %s\n\nThe submodule's working tree before it was set back to %s (%s).\n", id, ref, dir)})
	if err != nil {
		res.Skipped = err.Error()
		if rr == nil || rr.Undo == nil {
			res.UndoRef = ""
		}
		return res, false
	}
	res.Changes = rr.Changes
	return res, true
}

// checkOutAgain makes a submodule directory an agent deleted a checkout of its git directory
// again (as `git submodule update` would): the directory and its .git file; the files follow
// from the restore. Anything else in the way is left alone.
func (r *Repo) checkOutAgain(s submodule) error {
	dir := r.abs(s.path)
	if _, err := os.Lstat(filepath.Join(dir, ".git")); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s/.git is not a checkout of %s: not replaced", s.path, s.gitDir)
	}
	// The git directory is shared by the superproject's worktrees but checked out in one: its
	// core.worktree. Checking it out anywhere else would move that checkout's HEAD and index.
	if wt := moduleWorktree(s.gitDir); wt == "" || !samePath(wt, dir) {
		return fmt.Errorf("its git directory %s is the checkout of %q, not of this directory: not checked out here", s.gitDir, wt)
	}
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("%s is not a directory: not replaced", s.path)
	}
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) > 0 {
		return fmt.Errorf("%s is not empty and has no .git: not replaced", s.path)
	}
	rel, err := filepath.Rel(dir, s.gitDir)
	if err != nil {
		rel = s.gitDir
	}
	return os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: "+filepath.ToSlash(rel)+"\n"), 0o666)
}

// submoduleAt is the submodule checked out at path, as .gitmodules names it (or, with no entry
// for it, the git directory modules/<path> that `git submodule add` names after the path).
func (r *Repo) submoduleAt(path string) (submodule, bool) {
	for _, s := range r.submodules() {
		if s.path == path {
			return s, true
		}
	}
	gd := filepath.Join(r.commonDir, "modules", filepath.FromSlash(path))
	if !strings.Contains(path, "..") && isGitDir(gd) && commonDirOf(gd) == gd {
		return submodule{name: path, path: path, gitDir: gd}, true
	}
	return submodule{}, false
}

// moduleWorktree is a submodule git directory's core.worktree, absolute ("" when unset).
func moduleWorktree(gitDir string) string {
	l := &configLoader{cfg: &gitConfig{}, gitDir: gitDir}
	if err := l.loadFile(filepath.Join(gitDir, "config")); err != nil {
		return ""
	}
	wt := l.cfg.str("core.worktree")
	if wt == "" {
		return ""
	}
	if !filepath.IsAbs(wt) {
		wt = filepath.Join(gitDir, wt)
	}
	return filepath.Clean(wt)
}

// samePath reports whether a and b name the same directory (b may not exist yet: its parent is
// resolved instead).
func samePath(a, b string) bool {
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		if r, err := filepath.EvalSymlinks(filepath.Dir(p)); err == nil {
			return filepath.Join(r, filepath.Base(p))
		}
		return filepath.Clean(p)
	}
	return real(a) == real(b)
}
