package snapshot

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/mulligan-dev/mulligan/snapshot/attr"
)

var tmpSeq atomic.Uint64

const tmpPrefix = ".mulligan-restore-"

func tmpName() string {
	return tmpPrefix + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatUint(tmpSeq.Add(1), 36)
}

// isRestoreTemp reports whether name is one of tmpName's: a file a restore writes before it
// renames it into place, left behind only when that restore was killed. Snapshots leave such
// files out (unless the user tracks one): they are mulligan's half-written files, not the user's
// work, and would otherwise ride along in every later snapshot.
func isRestoreTemp(name []byte) bool {
	rest, ok := bytes.CutPrefix(name, []byte(tmpPrefix))
	if !ok {
		return false
	}
	pid, seq, ok := bytes.Cut(rest, []byte("-"))
	return ok && len(pid) > 0 && len(seq) > 0 &&
		!bytes.ContainsFunc(pid, func(r rune) bool { return r < '0' || r > '9' }) &&
		!bytes.ContainsFunc(seq, func(r rune) bool { return (r < '0' || r > '9') && (r < 'a' || r > 'z') })
}

func (x *restorer) writeSymlink(fd int, name string, c Change) (*entry, error) {
	var target []byte
	err := x.r.withBlob(c.To.Hash, func(rd io.Reader) error {
		var err error
		target, err = io.ReadAll(io.LimitReader(rd, 1<<20))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("restore: read %s: %w", c.Path, err)
	}
	tmp := tmpName()
	if err := unix.Symlinkat(string(target), fd, tmp); err != nil {
		return nil, fmt.Errorf("restore: symlink %s: %w", c.Path, err)
	}
	if err := unix.Renameat(fd, tmp, fd, name); err != nil {
		unix.Unlinkat(fd, tmp, 0)
		return nil, fmt.Errorf("restore: rename %s: %w", c.Path, err)
	}
	return x.record(fd, name, c, true), nil
}

// writeFile writes c's content at name in directory fd: through a temporary file renamed into
// place, or straight at name when inPlace and nothing is there (anything there: renamed as usual).
func (x *restorer) writeFile(fd int, name string, c Change, inPlace bool) (*entry, error) {
	a := x.attrsFor(c.Path)
	perm := uint32(0o666)
	if uint32(c.To.Mode) == modeExec {
		perm = 0o777
	}
	const create = unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW | unix.O_CLOEXEC
	tmp := tmpName()
	if inPlace {
		tmp = name
	}
	tfd, err := unix.Openat(fd, tmp, create, perm)
	if err == unix.EEXIST && inPlace {
		tmp, inPlace = tmpName(), false
		tfd, err = unix.Openat(fd, tmp, create, perm)
	}
	if err != nil {
		return nil, fmt.Errorf("restore: create %s: %w", c.Path, err)
	}
	f := os.NewFile(uintptr(tfd), c.Path)
	smudge := x.conv.NeedsSmudge(a)
	err = x.r.withBlob(c.To.Hash, func(rd io.Reader) error {
		if smudge {
			return x.conv.Smudge(x.fctx, c.Path, a, rd, f)
		}
		_, err := io.Copy(f, rd)
		return err
	})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(fd, tmp, 0)
		return nil, fmt.Errorf("restore: write %s: %w", c.Path, err)
	}
	if err := x.renameInto(fd, tmp, name, c.Path, inPlace); err != nil {
		return nil, err
	}
	// Only content that needs no conversion may skip the next snapshot's read: elsewhere
	// clean(smudge(blob)) is not always blob, and `git add` would see the difference.
	return x.record(fd, name, c, !smudge && !x.conv.NeedsClean(a)), nil
}

// renameInto renames the temporary file tmp to name (nothing to do when the file was written in
// place).
func (x *restorer) renameInto(fd int, tmp, name, path string, inPlace bool) error {
	if inPlace {
		return nil
	}
	if err := unix.Renameat(fd, tmp, fd, name); err != nil {
		unix.Unlinkat(fd, tmp, 0)
		if err == unix.EISDIR || err == unix.ENOTEMPTY || err == unix.EEXIST {
			return &ConflictError{Path: path, Reason: "a directory holding untracked or ignored files is in the way"}
		}
		return fmt.Errorf("restore: rename %s: %w", path, err)
	}
	return nil
}

// record notes what now sits at name, with the stat data that lets the next snapshot trust it.
func (x *restorer) record(fd int, name string, c Change, trusted bool) *entry {
	e := &entry{path: c.Path}
	if old := x.recorded(c.Path); old != nil {
		*e = *old
	}
	e.flags = e.flags&^(fCRCalled|fCRValue) | fHashed
	e.mode, e.blob = uint32(c.To.Mode), c.To.Hash
	var st unix.Stat_t
	if !trusted || unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		x.done[c.Path] = nil
		return nil
	}
	e.st = statFromUnix(&st)
	x.done[c.Path] = e
	return e
}

// attrsFor looks up path's attributes in the target tree's .gitattributes files (plus info/
// and core.attributesFile), as checkout does for the files it writes.
func (x *restorer) attrsFor(path string) attr.Attrs {
	dir, _ := splitPath(path)
	return x.matcher(dir).Lookup(path)
}

func (x *restorer) matcher(dir string) *attr.Matcher {
	if m, ok := x.attrs[dir]; ok {
		return m
	}
	var m *attr.Matcher
	if dir == "" {
		_, root, _, _, err := x.r.rootMatchers()
		if err != nil {
			root = attr.NewMatcher(nil, nil)
		}
		m = root
	} else {
		parent, _ := splitPath(dir)
		m = x.matcher(parent)
	}
	if ents := x.treeAt(dir); ents != nil {
		for _, e := range ents {
			if e.name == ".gitattributes" && (e.mode == modeRegular || e.mode == modeExec) {
				var data []byte
				if err := x.r.withBlob(e.hash, func(rd io.Reader) error {
					var err error
					data, err = io.ReadAll(rd)
					return err
				}); err == nil {
					m = m.Child(dir, data)
				}
				break
			}
		}
	}
	x.attrs[dir] = m
	return m
}

// treeAt returns the entries of directory dir in the target tree (nil if it has none).
func (x *restorer) treeAt(dir string) []treeEntry {
	if ents, ok := x.trees[dir]; ok {
		return ents
	}
	var ents []treeEntry
	if dir == "" {
		ents, _ = x.r.readTree(x.target)
	} else {
		parent, name := splitPath(dir)
		for _, e := range x.treeAt(parent) {
			if e.name == name && e.isDir() {
				ents, _ = x.r.readTree(e.hash)
				break
			}
		}
	}
	x.trees[dir] = ents
	return ents
}
