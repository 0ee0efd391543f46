package snapshot

import (
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/mulligan-dev/mulligan/snapshot/ignore"
)

// ignoreRules answers "do these rules ignore path" for one set of .gitignore files: those of a
// tree (the target of a restore) or those on disk now (the tree being replaced). The
// repository-wide sources (info/exclude, core.excludesFile) are shared by both.
type ignoreRules struct {
	root  *ignore.Matcher
	fold  func(string) string
	read  func(dir string) []byte // the .gitignore of dir, nil when there is none
	cache map[string]*ignore.Matcher
}

func (g *ignoreRules) matcher(dir string) *ignore.Matcher {
	if m, ok := g.cache[dir]; ok {
		return m
	}
	m := g.root
	if dir != "" {
		parent, _ := splitPath(dir)
		m = g.matcher(parent)
	}
	if data := g.read(dir); data != nil {
		m = m.Child(g.fold(dir), []byte(g.fold(string(data))))
	}
	g.cache[dir] = m
	return m
}

// ignored reports whether path (a file, or with isDir a directory) is excluded, by itself or by
// one of its parent directories, as git would decide for an untracked path.
func (g *ignoreRules) ignored(path string, isDir bool) bool {
	dir, _ := splitPath(path)
	return g.matcher(dir).IgnoredPath(g.fold(path), isDir)
}

// treeIgnoreRules are the rules the .gitignore files of tree lay down.
func (r *Repo) treeIgnoreRules(tree plumbing.Hash, root *ignore.Matcher, fold func(string) string) *ignoreRules {
	dirs := map[string][]treeEntry{}
	var treeAt func(dir string) []treeEntry
	treeAt = func(dir string) []treeEntry {
		if ents, ok := dirs[dir]; ok {
			return ents
		}
		var ents []treeEntry
		if dir == "" {
			ents, _ = r.readTree(tree)
		} else {
			parent, name := splitPath(dir)
			for _, e := range treeAt(parent) {
				if e.name == name && e.isDir() {
					ents, _ = r.readTree(e.hash)
					break
				}
			}
		}
		dirs[dir] = ents
		return ents
	}
	read := func(dir string) []byte {
		for _, e := range treeAt(dir) {
			if e.name == ".gitignore" && (e.mode == modeRegular || e.mode == modeExec) {
				var data []byte
				if r.withBlob(e.hash, func(rd io.Reader) error {
					var err error
					data, err = io.ReadAll(io.LimitReader(rd, 100<<20))
					return err
				}) != nil {
					return nil
				}
				return data
			}
		}
		return nil
	}
	return &ignoreRules{root: root, fold: fold, read: read, cache: map[string]*ignore.Matcher{}}
}

// diskIgnoreRules are the rules of the .gitignore files on disk now, read as the walk reads them
// (no symbolic link followed, in the directory or on the way to it).
func (r *Repo) diskIgnoreRules(root *ignore.Matcher, fold func(string) string) *ignoreRules {
	read := func(dir string) []byte {
		fd, err := openDirNoFollow(r.root, dir)
		if err != nil {
			return nil
		}
		defer unix.Close(fd)
		data, _ := readSpecial(fd, ".gitignore")
		return data
	}
	return &ignoreRules{root: root, fold: fold, read: read, cache: map[string]*ignore.Matcher{}}
}

// openDirNoFollow opens directory rel below root one component at a time, following no
// symbolic link.
func openDirNoFollow(root, rel string) (int, error) {
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil || rel == "" {
		return fd, err
	}
	for _, comp := range strings.Split(rel, "/") {
		nfd, err := unix.Openat(fd, comp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = nfd
	}
	return fd, nil
}

// spareIgnored splits changes into those a restore may apply and those it must leave alone: a
// file on disk that the rules of the tree being replaced (on disk now) or of the target tree
// ignore is never deleted or overwritten, even when an agent edited a .gitignore so that the
// file was snapshotted. Paths the user's index tracks are never ignored, as in git.
//
//   - A deletion (the path is in the tree being replaced, not in the target) is left alone when
//     the target's rules ignore the path: after the restore it is an ignored file again.
//   - An addition over a file the replaced tree did not hold is left alone when the current
//     rules ignore that file (it is the user's ignored file, not a snapshot's).
func (r *Repo) spareIgnored(ws *walkState, target plumbing.Hash, changes []Change) (apply, spared []Change, err error) {
	var cur, tgt *ignoreRules
	rules := func() error {
		if cur != nil {
			return nil
		}
		root, _, _, _, err := r.rootMatchers()
		if err != nil {
			return err
		}
		fold := func(s string) string { return s }
		if r.set.ignoreCase {
			fold = strings.ToLower
		}
		cur, tgt = r.diskIgnoreRules(root, fold), r.treeIgnoreRules(target, root, fold)
		return nil
	}
	recorded := func(path string) *entry {
		i, ok := searchEntries(ws.entries, path)
		if !ok {
			return nil
		}
		return ws.entries[i]
	}
	apply = changes[:0:0]
	for _, c := range changes {
		spare := false
		switch {
		case c.Action == Delete && !isGitlink(c.From.Mode):
			if e := recorded(c.Path); e != nil && e.flags&fTracked != 0 {
				break
			}
			if err := rules(); err != nil {
				return nil, nil, err
			}
			spare = tgt.ignored(c.Path, false)
		case c.Action == Add && !isGitlink(c.To.Mode):
			if recorded(c.Path) != nil || !existsNoFollow(r.root, c.Path) {
				break
			}
			if err := rules(); err != nil {
				return nil, nil, err
			}
			spare = cur.ignored(c.Path, false)
		}
		if spare {
			spared = append(spared, c)
		} else {
			apply = append(apply, c)
		}
	}
	return apply, spared, nil
}

// existsNoFollow reports whether something (of any type) is at rel below root, reached without
// following a symbolic link.
func existsNoFollow(root, rel string) bool {
	dir, name := splitPath(rel)
	fd, err := openDirNoFollow(root, dir)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

func searchEntries(ents []*entry, path string) (int, bool) {
	lo, hi := 0, len(ents)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := strings.Compare(ents[m].path, path); {
		case c == 0:
			return m, true
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return lo, false
}
