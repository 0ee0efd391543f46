package snapshot

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// treeEdit sets one path of a tree to an entry (a file, symlink or gitlink), or removes it
// (entry nil).
type treeEdit struct {
	path  string
	entry *treeEntry
}

// editTree returns root with edits applied. Each tree along the edited paths is read and
// written once, whatever the number of edits in it: the cost grows with the edits and the size
// of the trees that hold them, not with the product (one graft per path rewrote a directory of
// n new files n times). A directory left empty is removed, as git records none.
func (r *Repo) editTree(root plumbing.Hash, edits []treeEdit) (plumbing.Hash, error) {
	for _, e := range edits {
		parts := strings.Split(e.path, "/")
		if e.path == "" || slices.Contains(parts, "") || slices.Contains(parts, ".") || slices.Contains(parts, "..") {
			return plumbing.ZeroHash, fmt.Errorf("edit tree at %q: not a path inside the tree", e.path)
		}
	}
	edits = slices.Clone(edits)
	slices.SortStableFunc(edits, func(a, b treeEdit) int { return comparePaths(a.path, b.path) })
	out, err := r.editDir(root, edits)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if out.IsZero() {
		return r.objs.WriteBytes(plumbing.TreeObject, nil)
	}
	return out, nil
}

// editDir applies edits (paths relative to tree, sorted) to tree and returns the new tree's
// id, zero when it is left empty.
func (r *Repo) editDir(tree plumbing.Hash, edits []treeEdit) (plumbing.Hash, error) {
	es, err := r.readTree(tree)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	byName := make(map[string]int, len(es))
	for i, e := range es {
		byName[e.name] = i
	}
	removed := make([]bool, len(es))
	var added []treeEntry
	for len(edits) > 0 {
		name, _, _ := strings.Cut(edits[0].path, "/")
		// The edits of this name: the entry itself, and those under it (sorted, they follow).
		var direct *treeEdit
		var sub []treeEdit
		k := 0
		for ; k < len(edits); k++ {
			p := edits[k].path
			switch {
			case p == name:
				direct = &edits[k]
			case strings.HasPrefix(p, name+"/"):
				sub = append(sub, treeEdit{path: p[len(name)+1:], entry: edits[k].entry})
			default:
				goto done
			}
		}
	done:
		edits = edits[k:]
		var old *treeEntry
		if i, ok := byName[name]; ok {
			old = &es[i]
			removed[i] = true
		}
		var put *treeEntry
		if len(sub) > 0 {
			var base plumbing.Hash
			if old != nil && old.isDir() && (direct == nil || direct.entry == nil) {
				base = old.hash
			}
			id, err := r.editDir(base, sub)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			if !id.IsZero() {
				put = &treeEntry{name: name, mode: modeTree, hash: id}
			}
		}
		switch {
		case direct != nil && direct.entry != nil:
			if put != nil {
				return plumbing.ZeroHash, fmt.Errorf("edit tree: %s is set as a file and as a directory", name)
			}
			put = &treeEntry{name: name, mode: direct.entry.mode, hash: direct.entry.hash}
		case direct == nil && len(sub) == 0:
			put = old
		}
		if put != nil {
			added = append(added, *put)
		}
	}
	var out []treeEntry
	for i, e := range es {
		if !removed[i] {
			out = append(out, e)
		}
	}
	out = append(out, added...)
	if len(out) == 0 {
		return plumbing.ZeroHash, nil
	}
	slices.SortFunc(out, func(a, b treeEntry) int { return treeCompare(a.name, a.isDir(), b.name, b.isDir()) })
	return r.writeTreeEntries(out)
}

// comparePaths orders paths component by component ("a", "a/b", "a-b"), so the paths under a
// directory follow it.
func comparePaths(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return int(pathByte(a[i])) - int(pathByte(b[i]))
		}
	}
	return len(a) - len(b)
}

func pathByte(c byte) byte {
	if c == '/' {
		return 0
	}
	return c
}

// writeTreeEntries writes a tree of entries already in git's order.
func (r *Repo) writeTreeEntries(es []treeEntry) (plumbing.Hash, error) {
	var buf []byte
	for _, e := range es {
		buf = strconv.AppendUint(buf, uint64(e.mode), 8)
		buf = append(buf, ' ')
		buf = append(buf, e.name...)
		buf = append(buf, 0)
		buf = append(buf, e.hash[:]...)
	}
	return r.objs.WriteBytes(plumbing.TreeObject, buf)
}

// TakePaths returns dst with each of paths (files, as DiffTrees names them) set as src has it:
// replaced, added, or removed where src has none. Its cost grows with the differences between
// the trees, not with their size: the tree a crash-interrupted apply finishes (or rolls back)
// to, without touching the paths it did not write.
func (r *Repo) TakePaths(dst, src plumbing.Hash, paths []string) (plumbing.Hash, error) {
	want := make(map[string]bool, len(paths))
	for _, p := range paths {
		want[p] = true
	}
	diff, err := r.DiffTrees(dst, src)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var edits []treeEdit
	for _, c := range diff {
		if want[c.Path] {
			edits = append(edits, editFor(c.Path, c.To))
		}
	}
	if len(edits) == 0 {
		return dst, nil
	}
	return r.editTree(dst, edits)
}
