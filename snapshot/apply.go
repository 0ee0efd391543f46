package snapshot

import (
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// ApplyChange returns onto with the change from → to applied path by path: a three-way merge at
// the level of paths. A path the change touches that onto left as from had it takes to's entry; a
// path onto changed the same way already is left alone; a path onto changed otherwise, or a path
// under (or over) one onto changed, is a conflict: it is listed and onto's entry kept. Only the
// trees along the changed paths are written. The working tree is not touched.
func (r *Repo) ApplyChange(from, to, onto plumbing.Hash) (plumbing.Hash, []string, error) {
	change, err := r.DiffTrees(from, to)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	theirs, err := r.DiffTrees(from, onto)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	moved := make(map[string]Change, len(theirs))
	for _, c := range theirs {
		moved[c.Path] = c
	}
	// touchedNear: onto changed a path above or below p (a file that became a directory, or the
	// reverse), which a graft at p would clobber.
	touchedNear := func(p string) bool {
		for q := range moved {
			if strings.HasPrefix(q, p+"/") || strings.HasPrefix(p, q+"/") {
				return true
			}
		}
		return false
	}
	// Deletions first, so a file that becomes a directory is removed before its children land.
	slices.SortStableFunc(change, func(a, b Change) int {
		return boolInt(a.Action != Delete) - boolInt(b.Action != Delete)
	})
	out := onto
	var conflicts []string
	for _, c := range change {
		if o, ok := moved[c.Path]; ok {
			if o.To != c.To {
				conflicts = append(conflicts, c.Path)
			}
			continue
		}
		if touchedNear(c.Path) {
			conflicts = append(conflicts, c.Path)
			continue
		}
		src := to
		if c.Action == Delete {
			src = plumbing.ZeroHash // no entry: removed (to may hold a directory there now)
		}
		if out, err = r.GraftPath(out, src, c.Path); err != nil {
			return plumbing.ZeroHash, nil, err
		}
	}
	return out, conflicts, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
