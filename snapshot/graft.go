package snapshot

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// GraftPath returns dst with the entry at path (slash-separated, from the root) as src has it:
// replaced, added, or removed when src has none. Only the trees along the path are written; the
// rest of dst is shared. A run uses it to carry a file the operator edited (the task file of
// `resume --reload`) into the base trees its tasks reset to.
func (r *Repo) GraftPath(dst, src plumbing.Hash, path string) (plumbing.Hash, error) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if slices.Contains(parts, "") || slices.Contains(parts, ".") || slices.Contains(parts, "..") {
		return plumbing.ZeroHash, fmt.Errorf("graft %q: not a path inside the tree", path)
	}
	entry, err := r.lookupEntry(src, parts)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if entry != nil && entry.isDir() {
		return plumbing.ZeroHash, fmt.Errorf("graft %q: it is a directory", path)
	}
	out, err := r.graft(dst, parts, entry)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if out.IsZero() { // nothing left at all
		return r.objs.WriteBytes(plumbing.TreeObject, nil)
	}
	return out, nil
}

// lookupEntry finds the entry at parts in tree, nil when there is none.
func (r *Repo) lookupEntry(tree plumbing.Hash, parts []string) (*treeEntry, error) {
	for i, name := range parts {
		es, err := r.readTree(tree)
		if err != nil {
			return nil, err
		}
		j := slices.IndexFunc(es, func(e treeEntry) bool { return e.name == name })
		if j < 0 {
			return nil, nil
		}
		if i == len(parts)-1 {
			return &es[j], nil
		}
		if !es[j].isDir() {
			return nil, nil
		}
		tree = es[j].hash
	}
	return nil, nil
}

// graft writes tree with parts set to entry (nil: removed) and returns its id, zero when the
// tree is left with no entries (a directory git would not record).
func (r *Repo) graft(tree plumbing.Hash, parts []string, entry *treeEntry) (plumbing.Hash, error) {
	es, err := r.readTree(tree)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	name := parts[0]
	var old *treeEntry
	es = slices.DeleteFunc(es, func(e treeEntry) bool {
		if e.name == name {
			old = &e
			return true
		}
		return false
	})
	var put *treeEntry
	if len(parts) == 1 {
		if entry != nil {
			put = &treeEntry{name: name, mode: entry.mode, hash: entry.hash}
		}
	} else {
		var sub plumbing.Hash
		if old != nil && old.isDir() {
			sub = old.hash
		}
		id, err := r.graft(sub, parts[1:], entry)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if !id.IsZero() {
			put = &treeEntry{name: name, mode: modeTree, hash: id}
		}
	}
	if put != nil {
		es = append(es, *put)
		slices.SortFunc(es, func(a, b treeEntry) int { return strings.Compare(treeSortKey(a), treeSortKey(b)) })
	}
	if len(es) == 0 {
		return plumbing.ZeroHash, nil
	}
	return r.writeTreeEntries(es)
}

// treeSortKey is git's order of tree entries: by name, a directory as if it ended in '/'.
func treeSortKey(e treeEntry) string {
	if e.isDir() {
		return e.name + "/"
	}
	return e.name
}
