package snapshot

import (
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/mulligan-dev/mulligan/internal/merge"
)

// MergeOptions control MergeTrees.
type MergeOptions struct {
	// Markers writes a text conflict into the result with git's conflict markers (labelled
	// Labels), as `git checkout -m` does, instead of keeping ours' version of the file.
	Markers bool
	Labels  merge.Labels
	// WholePaths makes any path both sides changed differently a conflict, its text unmerged
	// (timetravel's rule: a path both changed refuses).
	WholePaths bool
}

// MergeResult is a three-way merge of trees.
type MergeResult struct {
	// Tree is ours with theirs' change merged in. With conflicts it holds ours' version of each
	// conflicting path (with MergeOptions.Markers, a text conflict's marked file).
	Tree plumbing.Hash
	// Conflicts are the paths both sides changed in ways that do not merge.
	Conflicts []MergeConflict
	// Merged are the paths both sides changed whose text merged by hunks.
	Merged []string
}

// MergeConflict is one path that does not merge, and why.
type MergeConflict struct {
	Path   string
	Reason string
	// Text: both changed the same lines of a text file (MergeOptions.Markers can mark it).
	Text bool
	// Marked: the result holds the file with conflict markers (a text conflict, with Markers).
	Marked bool
}

// Paths lists the conflicting paths.
func (m *MergeResult) Paths() []string {
	out := make([]string, len(m.Conflicts))
	for i, c := range m.Conflicts {
		out[i] = c.Path
	}
	return out
}

// MergeTrees merges the change base → theirs into ours, as `git read-tree -m` and `git
// merge-file` together merge it: a path only theirs changed takes theirs' entry; a path both
// changed the same way is left alone; a text file both changed merges by hunks (its mode apart);
// anything else both changed — overlapping hunks, a binary file, a deletion against an edit, a
// file against a directory — is a conflict, and ours keeps its version there. Only the trees
// along the changed paths are written; the working tree is not touched.
func (r *Repo) MergeTrees(base, theirs, ours plumbing.Hash, opts MergeOptions) (*MergeResult, error) {
	change, err := r.DiffTrees(base, theirs)
	if err != nil {
		return nil, err
	}
	res := &MergeResult{Tree: ours}
	if len(change) == 0 {
		return res, nil
	}
	mine, err := r.DiffTrees(base, ours)
	if err != nil {
		return nil, err
	}
	moved := make(map[string]Change, len(mine))
	under := map[string]bool{} // every directory above a path ours changed
	for _, c := range mine {
		moved[c.Path] = c
		for d := parentDir(c.Path); d != ""; d = parentDir(d) {
			if under[d] {
				break
			}
			under[d] = true
		}
	}
	// aboveMoved: ours changed a path above p (a file where p's directory was, or the reverse).
	aboveMoved := func(p string) bool {
		for d := parentDir(p); d != ""; d = parentDir(d) {
			if _, ok := moved[d]; ok {
				return true
			}
		}
		return false
	}
	var edits []treeEdit
	conflict := func(p, why string) { res.Conflicts = append(res.Conflicts, MergeConflict{Path: p, Reason: why}) }
	for _, c := range change {
		o, both := moved[c.Path]
		switch {
		case both && o.To == c.To:
			continue // ours made the same change
		case under[c.Path] && c.Action != Delete:
			conflict(c.Path, "your tree has files under it")
			continue
		case aboveMoved(c.Path):
			conflict(c.Path, "your tree changed a path above it")
			continue
		case !both:
			edits = append(edits, editFor(c.Path, c.To))
			continue
		}
		e, why, err := r.mergeFile(c, o, opts, res)
		if err != nil {
			return nil, err
		}
		if why != "" {
			conflict(c.Path, why)
			last := &res.Conflicts[len(res.Conflicts)-1]
			last.Text = strings.HasPrefix(why, whyLines)
			if e == nil {
				continue
			}
			last.Marked = true
		} else {
			res.Merged = append(res.Merged, c.Path)
		}
		edits = append(edits, treeEdit{path: c.Path, entry: e})
	}
	if len(edits) == 0 {
		return res, nil
	}
	if res.Tree, err = r.editTree(ours, edits); err != nil {
		return nil, err
	}
	return res, nil
}

// mergeFile merges one path both sides changed (c theirs, o ours) from the same base entry. It
// returns the entry to write (nil with a reason: keep ours) and, for a conflict, why; with
// Markers a text conflict returns the marked file and its reason.
func (r *Repo) mergeFile(c, o Change, opts MergeOptions, res *MergeResult) (*treeEntry, string, error) {
	if opts.WholePaths {
		return nil, "changed on both sides", nil
	}
	if c.To.Hash.IsZero() || o.To.Hash.IsZero() {
		return nil, "deleted on one side, changed on the other", nil
	}
	if !regular(c.To.Mode) || !regular(o.To.Mode) || !c.From.Hash.IsZero() && !regular(c.From.Mode) {
		return nil, "changed on both sides (not a regular file)", nil
	}
	mode, ok := merge.Mode(uint32(c.From.Mode), uint32(o.To.Mode), uint32(c.To.Mode))
	if c.From.Hash.IsZero() { // added on both sides: no base mode to merge from
		mode, ok = uint32(o.To.Mode), o.To.Mode == c.To.Mode
	}
	if !ok {
		return nil, "mode changed both ways", nil
	}
	hash := o.To.Hash
	switch {
	case c.To.Hash == o.To.Hash || c.To.Hash == c.From.Hash:
	case o.To.Hash == c.From.Hash:
		hash = c.To.Hash
	default:
		read := func(h plumbing.Hash) ([]byte, error) {
			if h.IsZero() {
				return nil, nil
			}
			return r.ReadBlob(h, 0)
		}
		b, err := read(c.From.Hash)
		if err != nil {
			return nil, "", err
		}
		ours, err := read(o.To.Hash)
		if err != nil {
			return nil, "", err
		}
		theirs, err := read(c.To.Hash)
		if err != nil {
			return nil, "", err
		}
		if merge.Binary(b) || merge.Binary(ours) || merge.Binary(theirs) {
			return nil, "binary file changed on both sides", nil
		}
		m := merge.Text(b, ours, theirs, opts.Labels)
		if m.Conflicts > 0 && !opts.Markers {
			return nil, fmt.Sprintf(whyLines+" (%d conflict%s)", m.Conflicts, plural(m.Conflicts)), nil
		}
		if hash, err = r.objs.WriteBytes(plumbing.BlobObject, m.Text); err != nil {
			return nil, "", err
		}
		if m.Conflicts > 0 {
			return &treeEntry{mode: mode, hash: hash}, fmt.Sprintf(whyLines+" (%d conflict%s, marked in the file)", m.Conflicts, plural(m.Conflicts)), nil
		}
	}
	return &treeEntry{mode: mode, hash: hash}, "", nil
}

// whyLines begins the reason of a text conflict.
const whyLines = "both sides changed the same lines"

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func regular(m filemode.FileMode) bool {
	return entryKind(uint32(m)) == modeRegular
}

func editFor(path string, e Entry) treeEdit {
	if e.Hash.IsZero() && e.Mode == 0 {
		return treeEdit{path: path}
	}
	return treeEdit{path: path, entry: &treeEntry{mode: uint32(e.Mode), hash: e.Hash}}
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// ApplyChange returns onto with the change from → to merged in path by path (MergeTrees with
// WholePaths) and the paths that conflict; with any conflict the caller applies nothing.
func (r *Repo) ApplyChange(from, to, onto plumbing.Hash) (plumbing.Hash, []string, error) {
	m, err := r.MergeTrees(from, to, onto, MergeOptions{WholePaths: true})
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	return m.Tree, m.Paths(), nil
}
