package snapshot

import (
	"errors"
	"fmt"
)

var (
	// ErrNotRepository means no git repository contains the directory.
	ErrNotRepository = errors.New("not a git repository")
	// ErrBareRepository means the repository has no working tree to snapshot.
	ErrBareRepository = errors.New("bare repository has no working tree")
	// ErrUnsupportedEnv means a git environment variable asks for a layout mulligan does not
	// read (objects or the common directory moved elsewhere).
	ErrUnsupportedEnv = errors.New("unsupported git environment")
	// ErrRefConflict means a compare-and-swap ref update found another value (or a lock).
	ErrRefConflict = errors.New("ref changed concurrently")
	// ErrRefNotFound means the ref does not exist.
	ErrRefNotFound = errors.New("ref not found")
	// ErrBadRevision means a revision string names no object.
	ErrBadRevision = errors.New("bad revision")
	// ErrPathNotFound means a path given to a path-limited restore is in neither tree.
	ErrPathNotFound = errors.New("path not found")
)

// ConflictError stops a Restore before it overwrites or deletes a path that changed on disk after
// the undo snapshot was taken (or whose parent directory is no longer a plain directory).
type ConflictError struct {
	Path   string
	Reason string
}

func (e *ConflictError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("restore conflict at %s", e.Path)
	}
	return fmt.Sprintf("restore conflict at %s: %s", e.Path, e.Reason)
}
