package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/mulligan-dev/mulligan/snapshot/attr"
	"github.com/mulligan-dev/mulligan/snapshot/ignore"
)

// readSpecial reads a .gitignore or .gitattributes next to the walk; like git (2.32+) it does not
// follow a symbolic link there.
func readSpecial(dirfd int, name string) ([]byte, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ELOOP || err == unix.ENOTDIR {
			return nil, nil
		}
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, nil
	}
	buf := make([]byte, 0, st.Size+1)
	for {
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil || n == 0 {
			break
		}
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 4096)
		}
	}
	return buf, nil
}

func (w *walker) doDir(s *scratch, j *dirJob) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	n := j.node
	prefixLen := 0
	if n.path != "" {
		prefixLen = len(n.path) + 1
	}
	s.oldKids = w.collectOldKids(s.oldKids[:0], j.lo, j.hi, prefixLen)
	fd, err := unix.Open(w.abs(n.path), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP {
			// Gone (or replaced) since its parent was read: only skip-worktree and absent
			// tracked entries survive.
			w.keepAbsent(s, n, s.oldKids)
			return nil
		}
		return fmt.Errorf("open directory %s: %w", w.abs(n.path), err)
	}
	defer unix.Close(fd)
	w.dirsRead.Add(1)
	if w.watch != nil {
		w.watch.add(fd, n.path) // before reading: a change after this point raises an event
	}

	attrs, fp := j.attrs, j.fp
	if j.ignored {
		data, err := readSpecial(fd, ".gitattributes")
		if err != nil {
			return fmt.Errorf("read %s: %w", filepath.Join(w.abs(n.path), ".gitattributes"), err)
		}
		if data != nil {
			attrs, fp = attrs.Child(n.path, data), mixFP(fp, data)
		}
		n.fp = fp
		return w.doIgnoredDir(s, j, fd, attrs, fp)
	}

	s.arena, s.names = s.arena[:0], s.names[:0]
	if err := readDirents(fd, s); err != nil {
		return fmt.Errorf("read directory %s: %w", w.abs(n.path), err)
	}
	ign := j.ign
	for _, nr := range s.names {
		name := s.name(nr)
		if nr.typ != dtReg && nr.typ != dtUnknown {
			continue
		}
		switch string(name) {
		case ".gitignore":
			data, err := readSpecial(fd, ".gitignore")
			if err != nil {
				return fmt.Errorf("read %s: %w", filepath.Join(w.abs(n.path), ".gitignore"), err)
			}
			if data != nil {
				ign = ign.Child(w.fold(n.path), w.foldBytes(data))
			}
		case ".gitattributes":
			data, err := readSpecial(fd, ".gitattributes")
			if err != nil {
				return fmt.Errorf("read %s: %w", filepath.Join(w.abs(n.path), ".gitattributes"), err)
			}
			if data != nil {
				attrs, fp = attrs.Child(n.path, data), mixFP(fp, data)
			}
		}
	}
	n.fp = fp
	fpSame := n.info != nil && n.info.fp == fp

	kids := s.kids[:0]
	s.items = s.items[:0]
	for _, nr := range s.names {
		name := s.name(nr)
		if len(name) == 4 && string(name) == ".git" {
			continue
		}
		typ := nr.typ
		if typ == dtReg || typ == dtLink || typ == dtUnknown {
			if err := fstatat(fd, s.cName(nr), &s.st); err != nil {
				if err == unix.ENOENT {
					continue // deleted since readdir
				}
				return fmt.Errorf("lstat %s: %w", w.abs(joinPath(n.path, name)), err)
			}
			typ = typeOfMode(uint32(s.st.Mode))
		}
		switch typ {
		case dtReg, dtLink:
			fk := findOldKid(s.oldKids, name, false)
			var e *entry
			if fk >= 0 {
				e = s.oldKids[fk].e
			}
			if (e == nil || e.flags&fTracked == 0) && isRestoreTemp(name) {
				continue // a restore killed half-way left it: never part of a snapshot
			}
			var path string
			if e != nil {
				if e.flags&fTracked == 0 && ign.Ignored(w.fold(e.path), false) {
					s.ignored = append(s.ignored, e.path)
					continue // was untracked, now ignored: drops out
				}
				path = e.path
			} else {
				path = joinPath(n.path, name)
				if ign.Ignored(w.fold(path), false) {
					s.ignored = append(s.ignored, path)
					continue
				}
			}
			if fk >= 0 {
				s.oldKids[fk].matched = true
			}
			kids = append(kids, w.fileKid(s, path, len(name), e, typ, fpSame))
		case dtDir:
			k, ok, err := w.dirKid(s, j, n, ign, attrs, fp, fpSame, name)
			if err != nil {
				return err
			}
			if ok {
				kids = append(kids, k)
			}
		}
	}
	w.noteSeen(s)
	return w.finishDir(s, n, kids, j.lo, j.hi, fd, attrs, fp)
}

// noteSeen hands over what the directory just read showed KeepIgnored.
func (w *walker) noteSeen(s *scratch) {
	if len(s.ignored) == 0 && len(s.nested) == 0 {
		return
	}
	w.seenMu.Lock()
	if len(w.seen.files)+len(s.ignored) > maxIgnoredSeen {
		w.seenPartial.Store(true) // that many: KeepIgnored's own scan names them
	} else {
		w.seen.files = append(w.seen.files, s.ignored...)
		w.seen.nested = append(w.seen.nested, s.nested...)
	}
	w.seenMu.Unlock()
	s.ignored, s.nested = s.ignored[:0], s.nested[:0]
}

// dirKid decides what a directory found on disk is: a gitlink (submodule or nested repository),
// a directory to walk, or nothing (ignored, or an unborn nested repository).
func (w *walker) dirKid(s *scratch, j *dirJob, n *dirNode, ign *ignore.Matcher, attrs *attr.Matcher, fp uint64, fpSame bool, name []byte) (kid, bool, error) {
	fk := findOldKid(s.oldKids, name, false)
	dk := findOldKid(s.oldKids, name, true)
	if dk >= 0 && s.oldKids[dk].sparse() {
		w.seenPartial.Store(true) // KeepIgnored's scan enters it: the walk does not
		ok := &s.oldKids[dk]
		ok.matched = true
		return kid{name: ok.name, e: ok.e, old: ok.e}, true, nil
	}
	var fe *entry
	if fk >= 0 {
		fe = s.oldKids[fk].e
	}
	var path string
	switch {
	case fe != nil:
		path = fe.path
	case dk >= 0:
		path = w.old[s.oldKids[dk].lo].path[:len(n.path)+len(name)+min(len(n.path), 1)]
	default:
		path = joinPath(n.path, name)
	}
	if fe != nil && fe.flags&fTracked != 0 {
		if fe.flags&fSkipWT != 0 {
			w.seenPartial.Store(true) // as for a sparse directory
			s.oldKids[fk].matched = true
			return kid{name: path[len(path)-len(name):], e: fe, old: fe}, true, nil
		}
		if uint32(fe.umode) == modeGitlink {
			s.oldKids[fk].matched = true
			n.volatile = true
			return w.gitlinkKid(s, path, len(name), fe), true, nil
		}
	}
	if dk >= 0 && s.oldKids[dk].tracked {
		// A directory with tracked files is walked even when it holds a .git of its own.
		ok := &s.oldKids[dk]
		ok.matched = true
		return w.childDir(path, len(name), ok.lo, ok.hi, true, ign, attrs, fp, fpSame, ign.Ignored(w.fold(path), true)), true, nil
	}
	if fe != nil && fe.flags&fTracked != 0 {
		// A tracked file replaced by a directory: a repository there becomes a gitlink (git's
		// check_removed); otherwise the file is gone and the directory is untracked.
		n.volatile = true
		if head, _, ok := nestedHead(w.abs(path)); ok {
			s.oldKids[fk].matched = true
			if !ign.Ignored(w.fold(path), true) {
				s.nested = append(s.nested, path) // no submodule: nested, for KeepIgnored
			}
			if fe.flags&fAssumeValid != 0 {
				return kid{name: path[len(path)-len(name):], e: fe, old: fe}, true, nil
			}
			return w.gitlinkAt(s, path, len(name), fe, head), true, nil
		}
	}
	if ign.Ignored(w.fold(path), true) {
		return kid{}, false, nil
	}
	if head, isRepo, ok := nestedHead(w.abs(path)); isRepo {
		n.volatile = true
		s.nested = append(s.nested, path)
		if !ok {
			return kid{}, false, nil // git add refuses a repository without a commit; leave it out
		}
		var old *entry
		if fe != nil && fe.flags&fTracked == 0 {
			old = fe
			s.oldKids[fk].matched = true
		}
		return w.gitlinkAt(s, path, len(name), old, head), true, nil
	}
	lo, hi, had := 0, 0, false
	if dk >= 0 {
		ok := &s.oldKids[dk]
		ok.matched = true
		lo, hi, had = ok.lo, ok.hi, true
	}
	return w.childDir(path, len(name), lo, hi, had, ign, attrs, fp, fpSame, false), true, nil
}

// childDir queues a subdirectory to be walked, or (a watched walk, nothing happened below it)
// takes it whole from the last walk. fpSame says the parent's attribute fingerprint is the one
// the last walk saw.
func (w *walker) childDir(path string, nameLen, lo, hi int, had bool, ign *ignore.Matcher, attrs *attr.Matcher, fp uint64, fpSame, ignored bool) kid {
	c := &dirNode{path: path, name: path[len(path)-nameLen:], info: w.dirInfo(path), hadOld: had}
	if w.reusable(path, c.info, fpSame) {
		c.reused, c.lo, c.hi, c.fp = true, lo, hi, c.info.fp
		return kid{name: c.name, d: c}
	}
	w.push(job{dir: &dirJob{node: c, lo: lo, hi: hi, ign: ign, attrs: attrs, fp: fp, ignored: ignored}})
	return kid{name: c.name, d: c}
}

func typeOfMode(m uint32) uint8 {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return dtReg
	case unix.S_IFDIR:
		return dtDir
	case unix.S_IFLNK:
		return dtLink
	}
	return dtOther
}

// fileKid handles a regular file or symlink whose lstat is in s.st: keep the old entry when its
// stat data still matches, otherwise queue the file to be read.
func (w *walker) fileKid(s *scratch, path string, nameLen int, e *entry, typ uint8, fpSame bool) kid {
	k := kid{name: path[len(path)-nameLen:], old: e}
	if e != nil && e.flags&(fSkipWT|fAssumeValid) != 0 && e.mode != 0 {
		k.e = e // kept as in the user's index while the path exists
		return k
	}
	sd := statFromUnix(&s.st)
	var verify *entry
	if e != nil && e.mode != 0 && e.mode != modeGitlink && w.unchanged(e, &sd, fpSame) {
		if e.flags&fHashed != 0 || e.st.matches(&sd, w.fileMode) {
			k.e = e
			return k
		}
		// git calls it unchanged but the exact stat data differs (a rewrite within the same
		// second, say). The tree keeps git's answer; reading the file once tells whether the
		// exact stat data may be recorded (same content) or the user's must stay, so that
		// Restore's exact check still protects content the snapshot does not hold.
		verify = e
	}
	ne := s.newEntry()
	if e != nil {
		*ne = *e
	} else {
		*ne = entry{}
	}
	ne.path = path
	ne.st = sd
	ne.mode = 0
	ne.blob = plumbing.ZeroHash
	ne.flags = ne.flags&^(fCRCalled|fCRValue) | fHashed
	w.newEntries.Add(1)
	k.e = ne
	s.items = append(s.items, hashItem{e: ne, typ: typ, verify: verify})
	return k
}
