package attempt

import (
	"context"
	"path/filepath"

	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// ReloadGraft returns the function that carries the reloaded task file f into a task's recorded
// base tree, so the reset to that base keeps the edited file instead of putting back the one the
// task started with; nil when the file lies outside the worktree (no reset touches it). The file
// is taken as the working tree holds it now (one snapshot, with git's clean conversions).
func ReloadGraft(ctx context.Context, repo *snapshot.Repo, f *taskfile.File) (func(string) (string, error), error) {
	if filepath.IsAbs(f.Path) {
		return nil, nil
	}
	cur, err := repo.WriteTree(ctx)
	if err != nil {
		return nil, err
	}
	path := filepath.ToSlash(f.Path)
	return func(base string) (string, error) {
		t, err := repo.GraftPath(snapshot.NewHash(base), cur.Tree, path)
		return t.String(), err
	}, nil
}
