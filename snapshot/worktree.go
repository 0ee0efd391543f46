package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"golang.org/x/sys/unix"
)

// Linked worktrees of mulligan's own (SPEC §4.1): a directory with a `.git` file naming an admin
// directory under <common>/worktrees/, laid out as `git worktree add --detach` lays it out, so
// git (and an agent running git in it) sees an ordinary linked worktree on a detached HEAD, and
// `git worktree list` / `git worktree prune` know it. The directories themselves live outside the
// git directory — agents treat every path under .git/ as protected (Claude Code refuses to edit
// there) — and outside the working tree (a snapshot would take them in).

// WorktreesRoot is where mulligan keeps the worktrees of every repository: MULLIGAN_WORKTREES,
// else $XDG_DATA_HOME/mulligan/worktrees, else ~/.local/share/mulligan/worktrees.
func WorktreesRoot() (string, error) {
	if dir := os.Getenv("MULLIGAN_WORKTREES"); dir != "" {
		return filepath.Abs(dir)
	}
	if data := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(data) { // the XDG spec ignores a relative one
		return filepath.Join(data, "mulligan", "worktrees"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no place for worktrees (%w): set MULLIGAN_WORKTREES", err)
	}
	return filepath.Join(home, ".local", "share", "mulligan", "worktrees"), nil
}

// ErrWorktreesInRepo is a worktrees directory inside the repository's git directory or working tree.
var ErrWorktreesInRepo = errors.New("the worktrees directory lies inside the repository")

// WorktreesDir is the directory of r's repository's worktrees: WorktreesRoot/<name>-<hash>, the
// repository's directory name and a hash of its git directory (two clones named alike get two).
func (r *Repo) WorktreesDir() (string, error) {
	root, err := WorktreesRoot()
	if err != nil {
		return "", err
	}
	common := r.commonDir
	if real, err := filepath.EvalSymlinks(common); err == nil {
		common = real
	}
	name := filepath.Base(common)
	if name == ".git" {
		name = filepath.Base(filepath.Dir(common))
	}
	name = strings.Map(func(c rune) rune {
		if c < 0x80 && (unicode.IsLetter(c) || unicode.IsDigit(c) || c == '-' || c == '_' || c == '.') {
			return c
		}
		return '_'
	}, strings.TrimSuffix(name, ".git"))
	sum := sha256.Sum256([]byte(common))
	dir := filepath.Join(root, fmt.Sprintf("%s-%x", strings.TrimLeft(name, "."), sum[:6]))
	if r.inside(root) || r.inside(dir) {
		return "", fmt.Errorf("%w: %s: set MULLIGAN_WORKTREES to a directory outside %s", ErrWorktreesInRepo, root, r.root)
	}
	return dir, nil
}

// within reports whether path is dir or lies under it (both absolute and clean; symlinks resolved
// where they can be).
func within(dir, path string) bool {
	for _, p := range []*string{&dir, &path} {
		if real, err := filepath.EvalSymlinks(*p); err == nil {
			*p = real
		}
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// worktreeAdminPrefix starts the name of the admin directory of each of mulligan's worktrees
// (<common>/worktrees/mulligan-<name>), so they are told apart from the user's.
const worktreeAdminPrefix = "mulligan-"

// Worktree is one of mulligan's linked worktrees.
type Worktree struct {
	Name  string // [0-9a-z._-]: the directory's and the admin directory's name
	Dir   string // the working tree
	Admin string // its git directory: <common>/worktrees/mulligan-<name>
}

// WorktreeFor names the worktree name of repo r's repository. One that exists is where its admin
// directory says it is (where it was made, whatever MULLIGAN_WORKTREES says now), unless that is
// inside the repository (the layout of old versions, under .git/mulligan/worktrees): it is then
// made afresh in WorktreesDir.
func (r *Repo) WorktreeFor(name string) (*Worktree, error) {
	if name == "" || strings.ContainsAny(name, "/\\\x00") || name == "." || name == ".." || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("worktree name %q: use letters, digits, '.', '_' and '-'", name)
	}
	w := &Worktree{Name: name, Admin: filepath.Join(r.commonDir, "worktrees", worktreeAdminPrefix+name)}
	if dir := w.recordedDir(); dir != "" && !r.inside(dir) && w.pointsHere(dir) {
		w.Dir = dir
		return w, nil
	}
	dir, err := r.WorktreesDir()
	if err != nil {
		return nil, err
	}
	w.Dir = filepath.Join(dir, name)
	return w, nil
}

// recordedDir is the working tree w's admin directory names (its gitdir file), "" when none.
func (w *Worktree) recordedDir() string {
	b, err := os.ReadFile(filepath.Join(w.Admin, "gitdir"))
	if err != nil {
		return ""
	}
	gitfile := strings.TrimSpace(string(b))
	if !filepath.IsAbs(gitfile) || filepath.Base(gitfile) != ".git" {
		return ""
	}
	return filepath.Dir(gitfile)
}

// pointsHere reports whether dir is w's: named w.Name, with a .git file naming w's admin directory.
func (w *Worktree) pointsHere(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, ".git"))
	return err == nil && filepath.Base(dir) == w.Name && strings.TrimSpace(string(b)) == "gitdir: "+w.Admin
}

// legacyDir is w's directory where an old version made it, under <common>/mulligan/worktrees,
// "" when it is not there.
func (r *Repo) legacyDir(w *Worktree) string {
	dir := w.recordedDir()
	if dir == "" || dir == w.Dir || filepath.Base(dir) != w.Name || !within(filepath.Join(r.commonDir, "mulligan", "worktrees"), dir) {
		return ""
	}
	return dir
}

// inside reports whether path lies in r's git directory or working tree.
func (r *Repo) inside(path string) bool {
	return within(r.commonDir, path) || within(r.gitDir, path) || within(r.root, path)
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
	if old := r.legacyDir(w); old != "" {
		if err := os.RemoveAll(old); err != nil { // its trees are in the attempt refs
			return nil, err
		}
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

// ErrWorktreeGone is a worktree of mulligan's that is no longer there, or no longer its own.
var ErrWorktreeGone = errors.New("the worktree is gone")

// CheckWorktree reports, as ErrWorktreeGone with what is wrong, a worktree that vanished (an
// agent ran `git worktree remove --force` on it, the user deleted it) or no longer belongs to
// mulligan (its .git file names another git directory, its admin directory another place): its
// directory then holds nothing of the attempt that ran there.
func (r *Repo) CheckWorktree(w *Worktree) error {
	gone := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s %s", ErrWorktreeGone, w.Dir, fmt.Sprintf(format, args...))
	}
	fi, err := os.Lstat(w.Dir)
	switch {
	case err != nil:
		return gone("no longer exists")
	case !fi.IsDir():
		return gone("is no longer a directory")
	}
	b, err := os.ReadFile(filepath.Join(w.Dir, ".git"))
	if err != nil {
		return gone("has no .git file")
	}
	if got := strings.TrimSpace(string(b)); got != "gitdir: "+w.Admin {
		return gone("has a .git file that names another git directory (%q)", got)
	}
	if _, err := os.Stat(filepath.Join(w.Admin, "HEAD")); err != nil {
		return gone("has lost its git directory %s", w.Admin)
	}
	if dir := w.recordedDir(); dir != w.Dir {
		return gone("is no longer where its git directory says (%s)", dir)
	}
	return nil
}

// RemoveWorktree deletes w's directory and its admin directory, so `git worktree prune` has
// nothing left to do and `git worktree list` no longer shows it, and the repository's directory
// of worktrees once it is empty. A directory an old version made inside the git directory goes
// too.
func (r *Repo) RemoveWorktree(w *Worktree) error {
	if old := r.legacyDir(w); old != "" {
		if err := os.RemoveAll(old); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(w.Dir); err != nil {
		return err
	}
	if err := os.RemoveAll(w.Admin); err != nil {
		return err
	}
	_ = os.Remove(filepath.Dir(w.Dir)) // fails while another worktree is there: it stays
	return nil
}

// Worktrees lists mulligan's worktrees of r's repository: by their admin directories, and the
// directories in WorktreesDir whose admin directory is gone (`git worktree prune` ran, or an agent
// removed its worktree's admin files).
func (r *Repo) Worktrees() ([]*Worktree, error) {
	ents, err := os.ReadDir(filepath.Join(r.commonDir, "worktrees"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var out []*Worktree
	seen := map[string]bool{}
	for _, e := range ents {
		name, ok := strings.CutPrefix(e.Name(), worktreeAdminPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		if w, err := r.WorktreeFor(name); err == nil {
			out = append(out, w)
			seen[w.Dir] = true
		}
	}
	dir, err := r.WorktreesDir()
	if err != nil {
		return out, nil // nowhere to look: nothing made there
	}
	ents, err = os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return out, err
	}
	for _, e := range ents {
		w := &Worktree{Name: e.Name(), Dir: filepath.Join(dir, e.Name()), Admin: filepath.Join(r.commonDir, "worktrees", worktreeAdminPrefix+e.Name())}
		if _, err := os.Lstat(w.Admin); err == nil || !e.IsDir() || seen[w.Dir] || strings.HasPrefix(w.Name, ".") {
			continue // an admin directory names another place for it: that one is the worktree
		}
		out = append(out, w)
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
