package cmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mulligan-dev/mulligan/snapshot"
)

func init() {
	errorMappers = append(errorMappers, mapSnapshotError)
}

// openRepo opens the repository around the current directory (after -C). GIT_DIR,
// GIT_WORK_TREE and GIT_INDEX_FILE, when set, are made absolute for the processes mulligan
// starts (agents, verify, hooks, `mulligan effect record`), which run in the working tree root,
// where a relative value would name another place.
func openRepo() (*snapshot.Repo, error) {
	repo, err := snapshot.Open(".")
	if err != nil {
		return nil, err
	}
	for name, abs := range map[string]string{"GIT_DIR": repo.GitDir(), "GIT_WORK_TREE": repo.Root(), "GIT_INDEX_FILE": repo.IndexFile()} {
		if v := os.Getenv(name); v != "" && !filepath.IsAbs(v) {
			os.Setenv(name, abs)
		}
	}
	return repo, nil
}

func mapSnapshotError(err error) error {
	var conflict *snapshot.ConflictError
	var owner *snapshot.OwnershipError
	var notFetched *snapshot.NotFetchedError
	switch {
	case errors.As(err, &owner):
		return withHint(ExitUsage, err,
			"mulligan runs nothing from a repository another user owns (its hooks, filters and history could run their code as you), like git since CVE-2022-24765",
			"to trust it anyway, as for git: git config --global --add safe.directory "+owner.Path)
	case errors.Is(err, snapshot.ErrNotRepository):
		return withHint(ExitUsage, err, "run mulligan inside a git working tree, or pass -C DIR")
	case errors.Is(err, snapshot.ErrUnsupportedEnv):
		return withHint(ExitUsage, err, "unset it for mulligan, e.g. `env -u GIT_OBJECT_DIRECTORY mulligan …`")
	case errors.Is(err, snapshot.ErrUnsupportedFormat):
		return withHint(ExitUsage, err,
			"nothing was written to this repository; mulligan reads git's objects, refs and index itself and works only in the formats it implements",
			"what the repository asks for: git config --local --get-regexp '^(core\\.repositoryformatversion|extensions\\.)'")
	case errors.As(err, &notFetched):
		return withHint(ExitFailed, err, "fetch it from "+notFetched.Remote+" first (git fetches what a partial clone lacks when a command needs it): "+notFetched.FetchCommand())
	case errors.Is(err, snapshot.ErrBareRepository):
		return withHint(ExitUsage, err, "mulligan needs a working tree: use a non-bare clone or `git worktree add`")
	case errors.Is(err, snapshot.ErrPathNotFound):
		return withHint(ExitUsage, err, "name paths relative to the current directory; `git ls-tree -r --name-only REV` lists what a snapshot holds")
	case errors.Is(err, snapshot.ErrWorktreesInRepo):
		return withHint(ExitUsage, err, "an isolated task's worktree must lie outside the repository: unset MULLIGAN_WORKTREES (the default is $XDG_DATA_HOME/mulligan/worktrees) or point it elsewhere")
	case errors.Is(err, snapshot.ErrBadRevision):
		return withHint(ExitUsage, err, "name a commit, a tree or a ref, e.g. `mulligan restore HEAD` or a ref from `git for-each-ref refs/mulligan`")
	case errors.As(err, &conflict):
		return withHint(ExitRefused, err,
			fmt.Sprintf("%s changed on disk after the undo snapshot, so it was not overwritten; the paths before it were restored", conflict.Path),
			"run the same command again to finish the restore, or `mulligan undo` to put back the tree it replaced")
	}
	return nil
}
