package snapshot

import (
	"bytes"
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
