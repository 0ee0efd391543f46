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

// Linked worktrees of mulligan's own (SPEC §4.1): a directory with a `.git` file naming an admin
// directory under <common>/worktrees/, laid out as `git worktree add --detach` lays it out, so
// git (and an agent running git in it) sees an ordinary linked worktree on a detached HEAD, and
// `git worktree list` / `git worktree prune` know it.

// WorktreesDir is where mulligan keeps its worktrees: <common>/mulligan/worktrees.
func WorktreesDir(common string) string { return filepath.Join(common, "mulligan", "worktrees") }

// worktreeAdminPrefix starts the name of the admin directory of each of mulligan's worktrees
// (<common>/worktrees/mulligan-<name>), so they are told apart from the user's.
const worktreeAdminPrefix = "mulligan-"

// Worktree is one of mulligan's linked worktrees.
type Worktree struct {
	Name  string // [0-9a-z._-]: the directory's and the admin directory's name
	Dir   string // the working tree
	Admin string // its git directory: <common>/worktrees/mulligan-<name>
}

// WorktreeFor names the worktree name of repo r's repository (not yet made).
func (r *Repo) WorktreeFor(name string) (*Worktree, error) {
	if name == "" || strings.ContainsAny(name, "/\\\x00") || name == "." || name == ".." || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("worktree name %q: use letters, digits, '.', '_' and '-'", name)
	}
	return &Worktree{Name: name, Dir: filepath.Join(WorktreesDir(r.commonDir), name),
		Admin: filepath.Join(r.commonDir, "worktrees", worktreeAdminPrefix+name)}, nil
}

// SetWorktree makes w a linked worktree of r's repository holding commit's tree on a detached
// HEAD at commit, with an index matching it (git status is clean there). A worktree that exists
// already is reused: only the paths that differ are written (the restore engine), and what it
// held is not kept (it is mulligan's own, and every attempt's tree is in its refs). It returns
// the worktree opened as a Repo; the caller closes it.
func (r *Repo) SetWorktree(ctx context.Context, w *Worktree, commit plumbing.Hash) (*Repo, error) {
	info, err := r.ReadCommit(commit)
	if err != nil {
		return nil, fmt.Errorf("worktree %s: %w", w.Name, err)
	}
	if err := os.MkdirAll(w.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(w.Admin, 0o755); err != nil {
		return nil, err
	}
	files := map[string]string{
		filepath.Join(w.Admin, "commondir"): "../..\n",
		filepath.Join(w.Admin, "gitdir"):    filepath.Join(w.Dir, ".git") + "\n",
		filepath.Join(w.Admin, "HEAD"):      commit.String() + "\n",
		filepath.Join(w.Dir, ".git"):        "gitdir: " + w.Admin + "\n",
	}
	for p, content := range files {
		if err := writeFileAtomic(p, []byte(content)); err != nil {
			return nil, fmt.Errorf("worktree %s: %w", w.Name, err)
		}
	}
	wr, err := Open(w.Dir)
	if err != nil {
		return nil, fmt.Errorf("worktree %s: %w", w.Name, err)
	}
	if wr.root != w.Dir && !sameDir(wr.root, w.Dir) {
		wr.Close()
		return nil, fmt.Errorf("worktree %s: opened %s, not its own directory", w.Name, wr.root)
	}
	res, err := wr.Restore(ctx, info.Tree, RestoreOptions{NoUndoRef: true, InPlace: true})
	if err != nil {
		wr.Close()
		return nil, fmt.Errorf("worktree %s: %w", w.Name, err)
	}
	if err := wr.updateIndex(w, info.Tree, res.Changes); err != nil {
		wr.Close()
		return nil, fmt.Errorf("worktree %s: index: %w", w.Name, err)
	}
	return wr, nil
}

// indexStamp is the file in a worktree's admin directory that says which tree the index was last
// written for and the index's own checksum then: "TREE SUM\n".
const indexStamp = "mulligan-index"

// updateIndex makes the worktree's index tree's entries. A reused worktree whose index is the
// very one mulligan wrote (its checksum is the stamp's: no agent ran `git add` or `git reset`
// there since) gets only the entries that differ — the paths of the stamp's tree that tree
// changes, and those the restore rewrote on disk — with the rest kept, stat data included (their
// files were not touched). Any other index is written whole.
func (r *Repo) updateIndex(w *Worktree, tree plumbing.Hash, rewritten []Change) error {
	idx, prev := r.stampedIndex(w)
	if idx == nil {
		return r.writeIndex(w, tree)
	}
	r.indexUpdated = "entries"
	changes, err := r.DiffTrees(prev, tree)
	if err != nil {
		return r.writeIndex(w, tree) // the stamp's tree is gone: start over
	}
	want := map[string]*Entry{} // path → its entry in tree; nil: not in tree
	for _, chs := range [][]Change{changes, rewritten} {
		for i := range chs {
			ch := &chs[i]
			if ch.Action == Delete {
				want[ch.Path] = nil
			} else {
				want[ch.Path] = &ch.To
			}
		}
	}
	kept := idx.Entries[:0]
	for _, e := range idx.Entries {
		if _, ok := want[e.Name]; !ok {
			kept = append(kept, e)
		}
	}
	idx.Entries = kept
	for path, to := range want {
		if to != nil {
			idx.Entries = append(idx.Entries, r.indexEntry(path, to.Hash, to.Mode))
		}
	}
	slices.SortFunc(idx.Entries, func(a, b *index.Entry) int { return strings.Compare(a.Name, b.Name) })
	return r.saveIndex(w, tree, idx)
}

// stampedIndex reads the worktree's index when it is the one mulligan wrote last, with the tree
// it was written for; nil otherwise.
func (r *Repo) stampedIndex(w *Worktree) (*index.Index, plumbing.Hash) {
	stamp, err := os.ReadFile(filepath.Join(w.Admin, indexStamp))
	if err != nil {
		return nil, plumbing.ZeroHash
	}
	tree, sum, ok := strings.Cut(strings.TrimSpace(string(stamp)), " ")
	if !ok || len(tree) != 40 || len(sum) != 40 {
		return nil, plumbing.ZeroHash
	}
	data, err := os.ReadFile(r.indexFile)
	if err != nil || len(data) < 20 || fmt.Sprintf("%x", data[len(data)-20:]) != sum {
		return nil, plumbing.ZeroHash
	}
	idx := &index.Index{}
	if err := index.NewDecoder(bytes.NewReader(data)).Decode(idx); err != nil || idx.Version != 2 {
		return nil, plumbing.ZeroHash
	}
	return idx, plumbing.NewHash(tree)
}

// writeIndex writes r's index (the worktree's own) as tree's entries with the stat data of the
// files now on disk, as a checkout leaves it.
func (r *Repo) writeIndex(w *Worktree, tree plumbing.Hash) error {
	changes, err := r.DiffTrees(plumbing.ZeroHash, tree)
	if err != nil {
		return err
	}
	idx := &index.Index{Version: 2}
	for _, ch := range changes {
		idx.Entries = append(idx.Entries, r.indexEntry(ch.Path, ch.To.Hash, ch.To.Mode))
	}
	r.indexUpdated = "whole"
	return r.saveIndex(w, tree, idx)
}

// indexEntry is path's index entry: its id and mode, and the stat data of the file now on disk
// (none when it cannot be read, or for a gitlink: git then looks at the content).
func (r *Repo) indexEntry(path string, id plumbing.Hash, mode filemode.FileMode) *index.Entry {
	e := &index.Entry{Hash: id, Name: path, Mode: mode}
	if mode != filemode.Submodule {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(r.root, filepath.FromSlash(path)), &st); err == nil {
			e.CreatedAt = time.Unix(st.Ctim.Sec, st.Ctim.Nsec)
			e.ModifiedAt = time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
			e.Dev, e.Inode = uint32(st.Dev), uint32(st.Ino)
			e.UID, e.GID, e.Size = st.Uid, st.Gid, uint32(st.Size)
		}
	}
	return e
}

// saveIndex writes idx as r's index and stamps it as tree's.
func (r *Repo) saveIndex(w *Worktree, tree plumbing.Hash, idx *index.Index) error {
	var buf bytes.Buffer
	if err := index.NewEncoder(&buf).Encode(idx); err != nil {
		return err
	}
	data := buf.Bytes()
	// The stamp goes first: a crash between the two leaves a stamp that matches no index, and
	// the next set-up writes the index whole.
	stamp := fmt.Sprintf("%s %x\n", tree, data[len(data)-20:])
	if err := writeFileAtomic(filepath.Join(w.Admin, indexStamp), []byte(stamp)); err != nil {
		return err
	}
	return writeFileAtomic(r.indexFile, data)
}

// RemoveWorktree deletes w's directory and its admin directory, so `git worktree prune` has
// nothing left to do and `git worktree list` no longer shows it.
func (r *Repo) RemoveWorktree(w *Worktree) error {
	if err := os.RemoveAll(w.Dir); err != nil {
		return err
	}
	return os.RemoveAll(w.Admin)
}

// Worktrees lists mulligan's worktrees of r's repository (by their admin directories).
func (r *Repo) Worktrees() ([]*Worktree, error) {
	ents, err := os.ReadDir(filepath.Join(r.commonDir, "worktrees"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []*Worktree
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), worktreeAdminPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		if w, err := r.WorktreeFor(name); err == nil {
			out = append(out, w)
		}
	}
	return out, nil
}

// writeFileAtomic writes data to path through a temporary file and a rename.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mulligan-tmp-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

func sameDir(a, b string) bool {
	x, err1 := os.Stat(a)
	y, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(x, y)
}
