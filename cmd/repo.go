package cmd

import (
	"errors"
	"fmt"

	"github.com/mulligan-dev/mulligan/snapshot"
)

func init() {
	errorMappers = append(errorMappers, mapSnapshotError)
}

// openRepo opens the repository around the current directory (after -C).
func openRepo() (*snapshot.Repo, error) {
	return snapshot.Open(".")
}

func mapSnapshotError(err error) error {
	var conflict *snapshot.ConflictError
	switch {
	case errors.Is(err, snapshot.ErrNotRepository):
		return withHint(ExitUsage, err, "run mulligan inside a git working tree, or pass -C DIR")
	case errors.Is(err, snapshot.ErrBareRepository):
		return withHint(ExitUsage, err, "mulligan needs a working tree: use a non-bare clone or `git worktree add`")
	case errors.Is(err, snapshot.ErrBadRevision):
		return withHint(ExitUsage, err, "name a commit, a tree or a ref, e.g. `mulligan restore HEAD` or a ref from `git for-each-ref refs/mulligan`")
	case errors.As(err, &conflict):
		return withHint(ExitRefused, err,
			fmt.Sprintf("%s changed on disk after the undo snapshot, so it was not overwritten; the paths before it were restored", conflict.Path),
			"run the same command again to finish the restore, or `mulligan undo` to put back the tree it replaced")
	}
	return nil
}
