package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/mulligan-dev/mulligan/snapshot/internal/odb"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/mulligan-dev/mulligan/snapshot/ignore"
)

// Limits of what KeepIgnored keeps: ignored files are secrets and local settings (.env, a
// debug.log, editor files), not build output, which lives in ignored directories.
const (
	KeepIgnoredFileMax  = 1 << 20  // larger files are left out, and named
	KeepIgnoredTotalMax = 16 << 20 // once the files kept reach this, the rest are left out
)

// KeptIgnored is what KeepIgnored kept, and what it could not.
type KeptIgnored struct {
	Ref    string // "" when there was nothing to keep
	Commit plumbing.Hash
	Files  int
	Bytes  int64
	// TooLarge are ignored files left out for their size or for the total.
	TooLarge []string
	// Nested are the untracked nested repositories (directories with their own .git that are not
	// submodules): a snapshot holds only the commit they have checked out, never their files.
	Nested []string
}

type keptFile struct {
	path string
	mode uint32 // git mode: 100644, 100755 or 120000
	perm uint32 // the file's permission bits, put back as they were
	blob plumbing.Hash
	size int64
}

// KeepIgnored keeps the working tree's individually ignored files (those the ignore rules
// exclude by themselves, not the files inside an ignored directory such as node_modules/ or
// .venv/) in a commit at ref, which must be outside refs/mulligan/ so that pushing
// 'refs/mulligan/*' never publishes a secret. Files over KeepIgnoredFileMax, and those past
// KeepIgnoredTotalMax in all, are left out and named. The same walk finds the untracked nested
// repositories, which no snapshot can hold. Content is kept byte for byte (no filter, no eol
// conversion): it is the file, not what `git add` would make of it.
func (r *Repo) KeepIgnored(ctx context.Context, ref, message string) (*KeptIgnored, error) {
	if strings.HasPrefix(ref, RefRoot) {
		return nil, fmt.Errorf("keep ignored files: %s is under refs/mulligan/, which users push", ref)
	}
	files, out, err := r.ignoredFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("keep ignored files: %w", err)
	}
	if len(files) == 0 {
		return out, nil
	}
	tree, err := r.writeFlatTree(files)
	if err != nil {
		return nil, fmt.Errorf("keep ignored files: %w", err)
	}
	var modes strings.Builder
	for _, f := range files {
		if f.mode != modeSymlink && f.perm != 0o644 && f.perm != 0o755 {
			fmt.Fprintf(&modes, "perm %04o %s\n", f.perm, strconv.Quote(f.path))
		}
	}
	if modes.Len() > 0 {
		message = strings.TrimRight(message, "\n") + "\n\n" + modes.String()
	}
	commit, err := r.Commit(tree, nil, message)
	if err != nil {
		return nil, fmt.Errorf("keep ignored files: %w", err)
	}
	old, err := r.Ref(ref)
	if err != nil && !errors.Is(err, ErrRefNotFound) {
		return nil, err
	}
	if err := r.UpdateRef(ref, commit, old); err != nil {
		return nil, fmt.Errorf("keep ignored files: %w", err)
	}
	out.Ref, out.Commit = ref, commit
	return out, nil
}

// ignoredSeen is what a walk met that KeepIgnored keeps or names: the individually ignored files
// and the untracked nested repositories, in no particular order. A walk that read every
// directory (not an incremental one) has seen exactly what scanIgnored would find.
type ignoredSeen struct {
	files, nested []string
}

// maxIgnoredSeen bounds the ignored files a walk notes for KeepIgnored; past it (a tree of
// ignored build output beside its sources, say) KeepIgnored scans for itself.
const maxIgnoredSeen = 1 << 16

// ignoredFiles finds and stores what KeepIgnored keeps. When the last walk (the run's base
// snapshot, just before) read every directory and the watcher has seen nothing change since, the
// walk already found the ignored files and nested repositories: only those are looked at again.
// Otherwise (not watched, something changed, no walk) the tree is scanned.
func (r *Repo) ignoredFiles(ctx context.Context) ([]keptFile, *KeptIgnored, error) {
	r.mu.Lock()
	seen := r.ignSeen
	r.ignSeen = nil
	if seen != nil && (r.watch == nil || !r.watch.quiet()) {
		seen = nil
	}
	r.mu.Unlock()
	if seen == nil {
		return r.scanIgnored(ctx)
	}
	return r.keepSeen(ctx, seen)
}

// keepSeen keeps the ignored files a walk found, in the order scanIgnored meets them (which
// decides the ones past KeepIgnoredTotalMax).
func (r *Repo) keepSeen(ctx context.Context, seen *ignoredSeen) ([]keptFile, *KeptIgnored, error) {
	out := &KeptIgnored{Nested: slices.Clone(seen.nested)}
	slices.SortFunc(out.Nested, walkOrder)
	paths := slices.Clone(seen.files)
	slices.SortFunc(paths, walkOrder)
	var files []keptFile
	var total int64
	dirfd, cur := -1, ""
	defer func() {
		if dirfd >= 0 {
			unix.Close(dirfd)
		}
	}()
	for _, path := range paths {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		dir, name := splitPath(path)
		if dirfd < 0 || dir != cur {
			if dirfd >= 0 {
				unix.Close(dirfd)
			}
			cur = dir
			var err error
			if dirfd, err = unix.Open(r.abs(dir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
				dirfd = -1
				continue // gone since the walk
			}
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			continue
		}
		if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFLNK {
			continue
		}
		if err := r.keepIgnoredFile(dirfd, name, path, &st, &files, &total, out); err != nil {
			return nil, nil, err
		}
	}
	out.Files, out.Bytes = len(files), total
	return files, out, nil
}

// walkOrder orders paths as a walk visiting each directory's names in byte order meets them:
// component by component ("a/x" before "a-b").
func walkOrder(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] == b[i] {
			continue
		}
		ca, cb := a[i], b[i]
		if ca == '/' {
			ca = 0
		}
		if cb == '/' {
			cb = 0
		}
		return int(ca) - int(cb)
	}
	return len(a) - len(b)
}

// keepIgnoredFile keeps one ignored file (lstat in st), or names it too large.
func (r *Repo) keepIgnoredFile(dirfd int, name, path string, st *unix.Stat_t, files *[]keptFile, total *int64, out *KeptIgnored) error {
	if st.Size > KeepIgnoredFileMax || *total+st.Size > KeepIgnoredTotalMax {
		out.TooLarge = append(out.TooLarge, path)
		return nil
	}
	f, err := r.keepOne(dirfd, name, path, st)
	if err != nil || f == nil {
		return err
	}
	*total += f.size
	*files = append(*files, *f)
	return nil
}

// scanIgnored walks the working tree for KeepIgnored: directories the rules ignore and nested
// repositories are not entered, tracked paths are never ignored, no symbolic link is followed.
func (r *Repo) scanIgnored(ctx context.Context) ([]keptFile, *KeptIgnored, error) {
	root, _, _, _, err := r.rootMatchers()
	if err != nil {
		return nil, nil, err
	}
	tracked := map[string]bool{}
	trackedDirs := map[string]bool{}
	gitlinks := map[string]bool{}
	if ui, err := readIndexFile(r.indexFile, r.gitDir); err == nil {
		for _, e := range ui.entries {
			name := strings.TrimSuffix(e.name, "/")
			tracked[name] = true
			if e.mode == modeGitlink {
				gitlinks[name] = true
			}
			for d, _ := splitPath(name); d != "" && !trackedDirs[d]; d, _ = splitPath(d) {
				trackedDirs[d] = true
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	fold := func(s string) string { return s }
	if r.set.ignoreCase {
		fold = strings.ToLower
	}
	out := &KeptIgnored{}
	var files []keptFile
	var total int64
	s := &scratch{dents: make([]byte, 32<<10)}
	var walk func(dir string, fd int, m *ignore.Matcher) error
	walk = func(dir string, fd int, m *ignore.Matcher) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if data, err := readSpecial(fd, ".gitignore"); err != nil {
			return err
		} else if data != nil {
			m = m.Child(fold(dir), []byte(fold(string(data))))
		}
		s.arena, s.names = s.arena[:0], s.names[:0] // the names are copied out before recursing
		if err := readDirents(fd, s); err != nil {
			return fmt.Errorf("read directory %s: %w", r.abs(dir), err)
		}
		type dent struct {
			name string
			typ  uint8
		}
		ents := make([]dent, 0, len(s.names))
		for _, nr := range s.names {
			ents = append(ents, dent{string(s.name(nr)), nr.typ})
		}
		slices.SortFunc(ents, func(a, b dent) int { return strings.Compare(a.name, b.name) })
		for _, d := range ents {
			name := d.name
			if name == ".git" {
				continue
			}
			path := name
			if dir != "" {
				path = dir + "/" + name
			}
			// Only what may be kept (or a type readdir did not give) costs an lstat: the walk
			// runs once per run, over every file of the tree.
			if (d.typ == dtReg || d.typ == dtLink) && (tracked[path] || !m.Ignored(fold(path), false)) {
				continue
			}
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue // gone since readdir
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFDIR:
				if gitlinks[path] || m.Ignored(fold(path), true) {
					continue
				}
				if _, isRepo, _ := nestedHead(r.abs(path)); isRepo && !trackedDirs[path] {
					out.Nested = append(out.Nested, path)
					continue
				}
				sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					continue
				}
				err = walk(path, sub, m)
				unix.Close(sub)
				if err != nil {
					return err
				}
			case unix.S_IFREG, unix.S_IFLNK:
				if tracked[path] || !m.Ignored(fold(path), false) || isRestoreTemp([]byte(name)) {
					continue
				}
				if err := r.keepIgnoredFile(fd, name, path, &st, &files, &total, out); err != nil {
					return err
				}
			}
		}
		return nil
	}
	fd, err := unix.Open(r.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(fd)
	if err := walk("", fd, root); err != nil {
		return nil, nil, err
	}
	out.Files, out.Bytes = len(files), total
	return files, out, nil
}

func (r *Repo) abs(rel string) string {
	if rel == "" {
		return r.root
	}
	return r.root + "/" + rel
}

// keepOne stores one ignored file's content as a blob; nil when it changed type or vanished.
func (r *Repo) keepOne(dirfd int, name, path string, st *unix.Stat_t) (*keptFile, error) {
	f := &keptFile{path: path, perm: uint32(st.Mode) & 0o7777}
	var data []byte
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return nil, nil
		}
		data, f.mode = buf[:n], modeSymlink
	} else {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return nil, nil // unreadable to us (mode 000, say): nothing we could keep
		}
		file := os.NewFile(uintptr(fd), path)
		data, err = io.ReadAll(io.LimitReader(file, KeepIgnoredFileMax+1))
		file.Close()
		if err != nil || len(data) > KeepIgnoredFileMax {
			return nil, nil
		}
		f.mode = modeRegular
		if st.Mode&0o100 != 0 {
			f.mode = modeExec
		}
	}
	id, err := r.objs.WriteBytes(plumbing.BlobObject, data)
	if err != nil {
		return nil, err
	}
	f.blob, f.size = id, int64(len(data))
	return f, nil
}

// writeFlatTree writes the trees holding files (paths sorted, no directory among them).
func (r *Repo) writeFlatTree(files []keptFile) (plumbing.Hash, error) {
	type node struct {
		ents []treeEntry
	}
	dirs := map[string]*node{"": {}}
	var order []string
	var ensure func(dir string) *node
	ensure = func(dir string) *node {
		if n, ok := dirs[dir]; ok {
			return n
		}
		n := &node{}
		dirs[dir] = n
		order = append(order, dir)
		parent, name := splitPath(dir)
		ensure(parent).ents = append(ensure(parent).ents, treeEntry{name: name, mode: modeTree})
		return n
	}
	for _, f := range files {
		dir, name := splitPath(f.path)
		n := ensure(dir)
		n.ents = append(n.ents, treeEntry{name: name, mode: f.mode, hash: f.blob})
	}
	// Deepest first, so each directory's id is known before its parent is written.
	slices.SortFunc(order, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	order = append(order, "")
	ids := map[string]plumbing.Hash{}
	for _, dir := range order {
		n := dirs[dir]
		for i := range n.ents {
			if n.ents[i].mode == modeTree {
				child := n.ents[i].name
				if dir != "" {
					child = dir + "/" + child
				}
				n.ents[i].hash = ids[child]
			}
		}
		slices.SortFunc(n.ents, func(a, b treeEntry) int { return treeCompare(a.name, a.isDir(), b.name, b.isDir()) })
		var buf []byte
		for _, e := range n.ents {
			buf = strconv.AppendUint(buf, uint64(e.mode), 8)
			buf = append(buf, ' ')
			buf = append(buf, e.name...)
			buf = append(buf, 0)
			buf = append(buf, e.hash[:]...)
		}
		id, err := r.objs.WriteBytes(plumbing.TreeObject, buf)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		ids[dir] = id
	}
	return ids[""], nil
}

// IgnoredPutBack is what RestoreIgnored did.
type IgnoredPutBack struct {
	// Restored are the kept files that were missing or different on disk and are now as kept.
	Restored []string
	// Replaced is the commit (at ReplacedRef) holding what the changed ones held before they were
	// put back; zero when only missing files came back.
	ReplacedRef string
	Replaced    plumbing.Hash
	// Failed are kept files that could not be put back, with the reason.
	Failed []string
}

// RestoreIgnored puts back the files KeepIgnored kept at ref that are missing or changed on disk
// (an agent's `git clean -fdx`, say), after the working tree was set to tree. It leaves alone a
// path that tree holds (the tree restore owns it) or that the rules on disk no longer ignore.
// What a changed file held is kept first in a commit at replacedRef (never under refs/mulligan/).
// A ref that does not exist means nothing was kept: nothing to do.
func (r *Repo) RestoreIgnored(ctx context.Context, ref string, tree plumbing.Hash, replacedRef string) (*IgnoredPutBack, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ignSeen = nil // it writes ignored files
	out := &IgnoredPutBack{}
	commit, err := r.Ref(ref)
	if errors.Is(err, ErrRefNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	keptTree, perms, err := r.keptCommit(commit)
	if err != nil {
		return nil, fmt.Errorf("put back ignored files: %w", err)
	}
	var kept []keptFile
	if err := r.flatten(keptTree, "", &kept); err != nil {
		return nil, fmt.Errorf("put back ignored files: %w", err)
	}
	root, _, _, _, err := r.rootMatchers()
	if err != nil {
		return nil, err
	}
	fold := func(s string) string { return s }
	if r.set.ignoreCase {
		fold = strings.ToLower
	}
	rules := r.diskIgnoreRules(root, fold)
	x := &restorer{ctx: ctx, r: r, rootfd: -1}
	if x.rootfd, err = unix.Open(r.root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return nil, err
	}
	x.pcache.fd = -1
	defer func() {
		x.dropParent()
		unix.Close(x.rootfd)
	}()
	var replaced []keptFile
	type todo struct {
		f       keptFile
		changed bool
	}
	var work []todo
	for _, f := range kept {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if e, _ := r.lookupEntry(tree, strings.Split(f.path, "/")); e != nil {
			continue
		}
		if !rules.ignored(f.path, false) {
			continue
		}
		fd, name, err := x.parent(f.path, false)
		if err != nil {
			out.Failed = append(out.Failed, f.path+": "+err.Error())
			continue
		}
		if fd < 0 {
			work = append(work, todo{f: f})
			continue
		}
		same, cur, err := r.sameAsKept(fd, name, f)
		if err != nil {
			out.Failed = append(out.Failed, f.path+": "+err.Error())
			continue
		}
		if same {
			continue
		}
		if cur != nil {
			cur.path = f.path
			replaced = append(replaced, *cur)
		}
		work = append(work, todo{f: f, changed: cur != nil})
	}
	if len(replaced) > 0 {
		t, err := r.writeFlatTree(replaced)
		if err == nil {
			var c plumbing.Hash
			if c, err = r.Commit(t, []plumbing.Hash{commit}, "mulligan: ignored files as they were before they were put back\n"); err == nil {
				err = r.UpdateRef(replacedRef, c, plumbing.ZeroHash)
			}
			out.ReplacedRef, out.Replaced = replacedRef, c
		}
		if err != nil {
			return out, fmt.Errorf("put back ignored files: keep the changed ones first: %w", err)
		}
	}
	paths := make([]string, 0, len(work))
	for _, w := range work {
		paths = append(paths, w.f.path)
	}
	if len(paths) > 0 {
		unnote, err := r.noteRestoring(paths)
		if err != nil {
			return out, fmt.Errorf("put back ignored files: %w", err)
		}
		defer unnote()
	}
	for _, w := range work {
		f := w.f
		if p, ok := perms[f.path]; ok {
			f.perm = p
		} else if f.mode == modeExec {
			f.perm = 0o755
		} else {
			f.perm = 0o644
		}
		if err := x.putBack(f); err != nil {
			out.Failed = append(out.Failed, f.path+": "+err.Error())
			continue
		}
		out.Restored = append(out.Restored, f.path)
	}
	return out, nil
}

// keptCommit reads KeepIgnored's commit: its tree and the permissions its message records.
func (r *Repo) keptCommit(commit plumbing.Hash) (plumbing.Hash, map[string]uint32, error) {
	t, obj, err := r.readObject(commit)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if t != plumbing.CommitObject {
		return plumbing.ZeroHash, nil, fmt.Errorf("%s is not a commit", commit)
	}
	c, err := decodeCommit(obj)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	perms := map[string]uint32{}
	for _, line := range strings.Split(c.message, "\n") {
		rest, ok := strings.CutPrefix(line, "perm ")
		if !ok {
			continue
		}
		mode, q, ok := strings.Cut(rest, " ")
		if !ok {
			continue
		}
		p, err1 := strconv.ParseUint(mode, 8, 32)
		path, err2 := strconv.Unquote(q)
		if err1 == nil && err2 == nil {
			perms[path] = uint32(p) & 0o7777
		}
	}
	return c.tree, perms, nil
}

func (r *Repo) flatten(tree plumbing.Hash, prefix string, out *[]keptFile) error {
	ents, err := r.readTree(tree)
	if err != nil {
		return err
	}
	for _, e := range ents {
		path := prefix + e.name
		if e.isDir() {
			if err := r.flatten(e.hash, path+"/", out); err != nil {
				return err
			}
			continue
		}
		*out = append(*out, keptFile{path: path, mode: e.mode, blob: e.hash})
	}
	return nil
}

// sameAsKept compares what is at name with the kept file: same (nothing to do), or different
// with cur holding what is there now, stored as a blob (nil when nothing is: missing).
func (r *Repo) sameAsKept(dirfd int, name string, f keptFile) (same bool, cur *keptFile, err error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if err == unix.ENOENT {
			return false, nil, nil
		}
		return false, nil, err
	}
	var data []byte
	mode := uint32(modeRegular)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		buf := make([]byte, 4096)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return false, nil, err
		}
		data, mode = buf[:n], modeSymlink
	case unix.S_IFREG:
		if st.Size > KeepIgnoredTotalMax {
			return false, nil, errors.New("a larger file is there now; left as it is")
		}
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return false, nil, err
		}
		file := os.NewFile(uintptr(fd), name)
		data, err = io.ReadAll(file)
		file.Close()
		if err != nil {
			return false, nil, err
		}
		if st.Mode&0o100 != 0 {
			mode = modeExec
		}
	default:
		return false, nil, errors.New("something other than a file is there now; left as it is")
	}
	if odb.ObjectID(plumbing.BlobObject, data) == f.blob && (mode == f.mode || mode != modeSymlink && f.mode != modeSymlink) {
		return true, nil, nil
	}
	c := &keptFile{mode: mode, perm: uint32(st.Mode) & 0o7777, size: int64(len(data))}
	if c.blob, err = r.objs.WriteBytes(plumbing.BlobObject, data); err != nil {
		return false, nil, err
	}
	return false, c, nil
}

// putBack writes a kept file in place (its directories made as needed), through a temporary
// file renamed over the path, never following a symbolic link.
func (x *restorer) putBack(f keptFile) error {
	fd, name, err := x.parent(f.path, true)
	if err != nil {
		return err
	}
	var data []byte
	if err := x.r.withBlob(f.blob, func(rd io.Reader) error {
		data, err = io.ReadAll(rd)
		return err
	}); err != nil {
		return err
	}
	tmp := tmpName()
	if f.mode == modeSymlink {
		if err := unix.Symlinkat(string(data), fd, tmp); err != nil {
			return err
		}
	} else {
		tfd, err := unix.Openat(fd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		file := os.NewFile(uintptr(tfd), tmp)
		_, err = io.Copy(file, bytes.NewReader(data))
		if err == nil {
			err = unix.Fchmod(tfd, f.perm)
		}
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			unix.Unlinkat(fd, tmp, 0)
			return err
		}
	}
	if err := unix.Renameat(fd, tmp, fd, name); err != nil {
		unix.Unlinkat(fd, tmp, 0)
		return err
	}
	return nil
}
