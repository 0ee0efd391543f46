package snapshot

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrTreeMoved is Restore's refusal, with RestoreOptions.Expect, of a working tree that is no
// longer the tree the caller planned against: nothing was written.
var ErrTreeMoved = errors.New("the working tree changed since it was read")

// CheckWrite reports every path of changes (the working tree's snapshot → a target) that a
// restore could not write without clobbering something no snapshot holds, before anything is
// written, as `git checkout` checks its whole change first: an ignored file or a directory
// holding ignored files where a new path goes, a file or a symbolic link where one of its
// directories goes. A restore would stop at the first of them with part of the change
// written; a caller that must write all or nothing checks first.
func (r *Repo) CheckWrite(changes []Change) []ConflictError {
	leaving := map[string]bool{} // paths the change removes or replaces
	for _, c := range changes {
		if c.Action != Add {
			leaving[c.Path] = true
		}
	}
	var out []ConflictError
	checkedDir := map[string]bool{}
	for _, c := range changes {
		if c.Action == Delete {
			continue
		}
		if why := r.dirsInTheWay(c.Path, leaving, checkedDir); why != "" {
			out = append(out, ConflictError{Path: c.Path, Reason: why})
			continue
		}
		if c.Action != Add {
			continue // the snapshot holds what is there: Restore checks it is unchanged
		}
		fi, err := os.Lstat(r.abs(c.Path))
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		case err != nil:
			out = append(out, ConflictError{Path: c.Path, Reason: err.Error()})
		case fi.IsDir():
			if !r.onlyLeaving(c.Path, leaving) {
				out = append(out, ConflictError{Path: c.Path, Reason: "a directory holding untracked or ignored files is in the way"})
			}
		default:
			out = append(out, ConflictError{Path: c.Path, Reason: "an untracked or ignored file is in the way"})
		}
	}
	return out
}

// dirsInTheWay says why path's directories cannot be made ("" when they can): one of them is
// on disk as a file or a symbolic link that the change does not remove.
func (r *Repo) dirsInTheWay(path string, leaving, checked map[string]bool) string {
	var dirs []string
	for d := parentDir(path); d != ""; d = parentDir(d) {
		dirs = append(dirs, d)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		if checked[d] {
			continue
		}
		fi, err := os.Lstat(r.abs(d))
		switch {
		case err != nil:
			return "" // absent: made as it is written, and nothing below it exists
		case fi.IsDir():
			checked[d] = true
			continue
		case leaving[d]:
			return "" // the change removes the file first
		case fi.Mode()&fs.ModeSymlink != 0:
			return "a symbolic link is where its directory " + d + " goes (never followed)"
		default:
			return "a file is where its directory " + d + " goes"
		}
	}
	return ""
}

// onlyLeaving reports whether the directory at path holds nothing but files the change removes
// and empty directories.
func (r *Repo) onlyLeaving(path string, leaving map[string]bool) bool {
	ok := true
	filepath.WalkDir(r.abs(path), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			ok = false
			return fs.SkipAll
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(r.root, p)
		if err != nil || !leaving[filepath.ToSlash(rel)] {
			ok = false
			return fs.SkipAll
		}
		return nil
	})
	return ok
}

// SetPathHook makes Restore call f just before it checks and touches each path: a seam for
// tests that kill a process in the middle of a restore. Set it before any restore runs.
func SetPathHook(f func(path string)) { testHookBeforePath = f }
