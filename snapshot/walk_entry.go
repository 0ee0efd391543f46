package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/mulligan-dev/mulligan/snapshot/attr"
)

// fold and foldBytes implement core.ignoreCase for ignore matching by lowercasing both the
// patterns and the paths (the ignore package matches case-sensitively). Only ASCII-and-Unicode
// case folding of plain text: a pattern like [[:upper:]] would not survive it.
func (w *walker) fold(p string) string {
	if !w.set.ignoreCase {
		return p
	}
	return strings.ToLower(p)
}

func (w *walker) foldBytes(b []byte) []byte {
	if !w.set.ignoreCase {
		return b
	}
	return bytes.ToLower(b)
}

// unchanged decides whether e still describes the file whose fresh stat data is sd. Content
// mulligan read itself is trusted on an exact match only (and only under the same attributes);
// content from the user's index is judged the way git judges it, blind spots included, because
// the snapshot must be what `git add -A` makes of that index.
func (w *walker) unchanged(e *entry, sd *statData, fpSame bool) bool {
	if e.flags&fHashed != 0 {
		// Content mulligan hashed itself may be in no ref yet (an untracked file only a dry run
		// saw), and `git gc` prunes such objects: the entry is trusted only while its blob is
		// still there, or the next snapshot would name an object that no longer exists. A blob
		// the user's index names is (the index is one of gc's roots; a changed index reseeds
		// the entries first): a file a reset or restore rewrote with the index's content, most
		// of a tree after a few runs, costs no look in the object store.
		return fpSame && e.st.matches(sd, w.fileMode) &&
			(e.mode == modeGitlink || e.ub != nil && *e.ub == e.blob || w.r.objs.Has(e.blob))
	}
	if e.st.size == 0 && e.blob != emptyBlob {
		return false // git's racily-smudged entry
	}
	return e.st.gitMatches(sd, w.fileMode, w.set.trustCtime, w.set.checkStat)
}

// gitlinkKid handles a tracked gitlink whose directory exists: its checked-out HEAD, or the
// index's commit when the submodule is not checked out.
func (w *walker) gitlinkKid(s *scratch, path string, nameLen int, e *entry) kid {
	head, _, ok := nestedHead(w.abs(path))
	if !ok {
		head = e.userBlob()
	}
	return w.gitlinkAt(s, path, nameLen, e, head)
}

func (w *walker) gitlinkAt(s *scratch, path string, nameLen int, e *entry, head plumbing.Hash) kid {
	k := kid{name: path[len(path)-nameLen:], old: e}
	if e != nil && e.mode == modeGitlink && e.blob == head {
		k.e = e
		return k
	}
	ne := s.newEntry()
	if e != nil {
		*ne = *e
	} else {
		*ne = entry{}
	}
	ne.path = path
	ne.st = statData{}
	ne.mode = modeGitlink
	ne.blob = head
	ne.flags &^= fHashed | fCRCalled | fCRValue
	w.newEntries.Add(1)
	k.e = ne
	return k
}

// nestedHead reports whether dir holds a repository (.git directory or gitdir file) and the
// commit its HEAD resolves to.
func nestedHead(dir string) (head plumbing.Hash, isRepo, ok bool) {
	gd, found, err := resolveDotGit(filepath.Join(dir, ".git"))
	if err != nil || !found {
		return plumbing.ZeroHash, false, false
	}
	sub := &Repo{gitDir: gd, commonDir: commonDirOf(gd)}
	h, found, err := sub.resolveRef("HEAD")
	if err != nil || !found {
		return plumbing.ZeroHash, true, false
	}
	return h, true, true
}

// doIgnoredDir handles a directory git does not descend into for untracked files: only the
// tracked paths recorded below it are looked at.
func (w *walker) doIgnoredDir(s *scratch, j *dirJob, fd int, attrs *attr.Matcher, fp uint64) error {
	n := j.node
	fpSame := n.info != nil && n.info.fp == fp
	kids := s.kids[:0]
	s.items = s.items[:0]
	for i := range s.oldKids {
		ok := &s.oldKids[i]
		if ok.isDir && !ok.tracked || !ok.isDir && ok.e.flags&fTracked == 0 {
			continue
		}
		if ok.e != nil && ok.e.flags&fSkipWT != 0 {
			ok.matched = true
			kids = append(kids, kid{name: ok.name, e: ok.e, old: ok.e})
			continue
		}
		if err := fstatat(fd, s.cString(ok.name), &s.st); err != nil {
			if err == unix.ENOENT || err == unix.ENOTDIR {
				continue
			}
			return fmt.Errorf("lstat %s: %w", w.abs(joinPath(n.path, []byte(ok.name))), err)
		}
		typ := typeOfMode(uint32(s.st.Mode))
		switch {
		case ok.isDir && typ == dtDir:
			ok.matched = true
			path := w.old[ok.lo].path[:len(n.path)+len(ok.name)+min(len(n.path), 1)]
			kids = append(kids, w.childDir(path, len(ok.name), ok.lo, ok.hi, true, j.ign, attrs, fp, fpSame, true))
		case ok.isDir:
			// replaced by a file: the tracked paths below are gone (the file itself is ignored)
		case typ == dtReg || typ == dtLink:
			ok.matched = true
			kids = append(kids, w.fileKid(s, ok.e.path, len(ok.name), ok.e, typ, fpSame))
		case typ == dtDir:
			n.volatile = true
			if uint32(ok.e.umode) == modeGitlink {
				ok.matched = true
				kids = append(kids, w.gitlinkKid(s, ok.e.path, len(ok.name), ok.e))
			} else if head, _, found := nestedHead(w.abs(ok.e.path)); found {
				ok.matched = true
				if ok.e.flags&fAssumeValid != 0 {
					kids = append(kids, kid{name: ok.name, e: ok.e, old: ok.e})
				} else {
					kids = append(kids, w.gitlinkAt(s, ok.e.path, len(ok.name), ok.e, head))
				}
			}
		}
	}
	return w.finishDir(s, n, kids, j.lo, j.hi, fd, attrs, fp)
}

// finishDir keeps the skip-worktree paths disk does not show, orders the kids as a tree and
// reads the files that need it.
func (w *walker) finishDir(s *scratch, n *dirNode, kids []kid, lo, hi int, fd int, attrs *attr.Matcher, fp uint64) error {
	for i := range s.oldKids {
		ok := &s.oldKids[i]
		if ok.matched {
			continue
		}
		if k, kept := w.keepOld(s, n, ok); kept {
			ok.matched = true
			kids = append(kids, k)
			continue
		}
		n.unmatchedOld = true
	}
	if w.unchangedLeaf(s, n, kids, lo, hi) {
		// Nothing to keep but the range: a clean walk allocates per changed directory only.
		n.reused, n.leaf, n.lo, n.hi = true, true, lo, hi
		s.kids = kids[:0]
		return nil
	}
	slices.SortFunc(kids, func(a, b kid) int { return treeCompare(a.name, a.isDir(), b.name, b.isDir()) })
	n.kids = slices.Clone(kids)
	s.kids = kids[:0]
	if len(s.items) == 0 {
		return nil
	}
	if len(s.items) <= 16 {
		for _, it := range s.items {
			if err := w.hashItem(s, fd, it, attrs); err != nil {
				return err
			}
		}
		return nil
	}
	// Many changed files in one directory: spread them over the workers.
	for len(s.items) > 0 {
		m := min(len(s.items), 32)
		items := slices.Clone(s.items[:m])
		s.items = s.items[m:]
		w.push(job{hash: &hashJob{node: n, items: items, attrs: attrs, fp: fp}})
	}
	return nil
}

func (w *walker) doHashJob(s *scratch, h *hashJob) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	fd, err := unix.Open(w.abs(h.node.path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP {
			for _, it := range h.items {
				it.e.mode = 0
			}
			return nil
		}
		return fmt.Errorf("open directory %s: %w", w.abs(h.node.path), err)
	}
	defer unix.Close(fd)
	for _, it := range h.items {
		if err := w.hashItem(s, fd, it, h.attrs); err != nil {
			return err
		}
	}
	return nil
}

// keepOld decides what becomes of an old child that disk no longer shows: a skip-worktree entry
// stays as the user's index has it, a tracked file stays as an absent entry (mode 0: in no tree,
// but the next walk that finds the file again knows the user's index tracks it, as `git add -A`
// does), and a directory keeps whichever of those it held. Untracked paths simply go.
func (w *walker) keepOld(s *scratch, n *dirNode, ok *oldKid) (kid, bool) {
	switch {
	case ok.e != nil && ok.e.flags&fSkipWT != 0:
		return kid{name: ok.name, e: ok.e, old: ok.e}, true
	case ok.isDir && ok.e == nil:
		path := w.old[ok.lo].path[:len(n.path)+len(ok.name)+min(len(n.path), 1)]
		if c := w.absentDir(s, path, len(ok.name), ok.lo, ok.hi); c != nil {
			return kid{name: c.name, d: c}, true
		}
	case !ok.isDir && ok.e.flags&fTracked != 0:
		return kid{name: ok.name, e: absentEntry(s, ok.e), old: ok.e}, true
	}
	return kid{}, false
}

// absentEntry is e as a tracked path missing from disk: no content, no stat data.
func absentEntry(s *scratch, e *entry) *entry {
	if e.mode == 0 && e.st == (statData{}) && e.blob.IsZero() {
		return e
	}
	ne := s.newEntry()
	*ne = *e
	ne.mode, ne.st, ne.blob = 0, statData{}, plumbing.ZeroHash
	ne.flags &^= fHashed | fCRCalled | fCRValue
	return ne
}

// keepAbsent fills a directory missing from disk with the old entries it keeps (keepOld).
func (w *walker) keepAbsent(s *scratch, n *dirNode, kids []oldKid) {
	var out []kid
	for i := range kids {
		if k, kept := w.keepOld(s, n, &kids[i]); kept {
			out = append(out, k)
			continue
		}
		n.unmatchedOld = true
	}
	n.kids = out
}

// absentDir builds the node of a directory missing from disk, holding its skip-worktree entries
// (a sparse checkout leaves whole directories out) and its tracked paths as absent entries; nil
// when there are none.
func (w *walker) absentDir(s *scratch, path string, nameLen, lo, hi int) *dirNode {
	any := false
	for i := lo; i < hi; i++ {
		if w.old[i].flags&(fSkipWT|fTracked) != 0 {
			any = true
			break
		}
	}
	if !any {
		return nil
	}
	c := &dirNode{path: path, name: path[len(path)-nameLen:], info: w.dirInfo(path), hadOld: true}
	if c.info != nil {
		c.fp = c.info.fp
	}
	w.keepAbsent(s, c, w.collectOldKids(nil, lo, hi, len(path)+1))
	return c
}

// fileModeFor is the mode `git add` records for a file (git's ce_mode_from_stat).
func (w *walker) fileModeFor(canon uint32, e *entry) uint32 {
	if canon == modeSymlink {
		return modeSymlink
	}
	tracked := e.flags&fTracked != 0
	if !w.set.symlinks && tracked && uint32(e.umode) == modeSymlink {
		return modeSymlink
	}
	if !w.set.fileMode {
		if tracked && (uint32(e.umode) == modeRegular || uint32(e.umode) == modeExec) {
			return uint32(e.umode)
		}
		return modeRegular
	}
	return canon
}

// unchangedLeaf reports whether the directory just read is exactly what the old entries
// old[lo:hi] say: no subdirectory, every kid the old entry itself, none gone, nothing to read,
// and the old tree id still valid under the same attributes.
func (w *walker) unchangedLeaf(s *scratch, n *dirNode, kids []kid, lo, hi int) bool {
	if len(s.items) > 0 || n.unmatchedOld || n.volatile || n.info == nil || !n.info.valid || n.info.fp != n.fp || len(kids) != hi-lo {
		return false
	}
	for i := range kids {
		if k := &kids[i]; k.d != nil || k.old == nil || k.e != k.old {
			return false
		}
	}
	return true
}

// errVanished means a file disappeared between readdir and read: it is simply not in the tree.
var errVanished = errors.New("vanished")
