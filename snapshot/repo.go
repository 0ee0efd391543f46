package snapshot

import (
	"fmt"
	"github.com/mulligan-dev/mulligan/snapshot/internal/odb"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// Repo is an opened working tree and its git directories. Its methods are safe for concurrent
// use; WriteTree and Restore on one Repo run one at a time.
type Repo struct {
	root      string
	gitDir    string
	commonDir string
	indexFile string // the user's index: <git-dir>/index, or GIT_INDEX_FILE
	cfg       *gitConfig
	set       settings
	objs      *odb.Store

	mu sync.Mutex // serialises WriteTree and Restore (they share the private index)
	// Set while watched (live.go): the tree's watcher and the last walk's state.
	watch    *watcher
	live     *liveState
	lastWalk WatchStats
	// indexUpdated is how SetWorktree last wrote this worktree's index: "entries" (only those
	// that differ) or "whole"; for tests and benchmarks.
	indexUpdated string
	// What the last walk saw of the ignored files, when it read every directory (ignored.go).
	ignSeen *ignoredSeen

	idxMu    sync.Mutex // ReadGitState's last index: its stamp and state
	idxStamp userIndexStamp
	idxState IndexState

	refMu   sync.Mutex
	refSeen map[string]seenRef // ReadGitState's loose refs, by path
}

// Open finds the repository containing dir, walking up as git does. `.git` may be a directory or a
// `gitdir:` file (linked worktree, submodule). The environment is read as git reads it: GIT_DIR
// names the git directory (no discovery; the working tree is GIT_WORK_TREE, else core.worktree,
// else dir), GIT_WORK_TREE alone moves the working tree of the discovered one, and a bare
// repository with an explicit working tree (the dotfiles layout) is a repository with a working
// tree. Relative values are taken from dir. GIT_INDEX_FILE names the index whose entries are
// the tracked paths. A discovered repository that another user owns is refused as git refuses it
// (checkOwnership); one named by GIT_DIR is not checked, as git does not check it either: the
// user named it. The variables that move objects or the common directory elsewhere are
// refused: snapshots written where git would not look for them would be lost to it.
func Open(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	} else {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	for _, name := range []string{"GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR", "GIT_ALTERNATE_OBJECT_DIRECTORIES"} {
		if os.Getenv(name) != "" {
			return nil, fmt.Errorf("%w: %s is set; mulligan reads objects and refs only where the git directory keeps them", ErrUnsupportedEnv, name)
		}
	}
	if env := os.Getenv("GIT_DIR"); env != "" {
		gd := fromDir(abs, env)
		resolved, ok, err := resolveDotGit(gd)
		if err != nil {
			return nil, err
		}
		if !ok {
			if !isGitDir(gd) {
				return nil, fmt.Errorf("%w: GIT_DIR=%s is not a git directory", ErrNotRepository, env)
			}
			resolved = gd
		}
		return openAt(abs, abs, resolved, true)
	}
	for d := abs; ; {
		dotgit := filepath.Join(d, ".git")
		if gd, ok, err := resolveDotGit(dotgit); err != nil {
			return nil, err
		} else if ok {
			gitFile := ""
			if fi, err := os.Lstat(dotgit); err == nil && !fi.IsDir() {
				gitFile = dotgit
			}
			if err := checkOwnership(gitFile, d, gd); err != nil {
				return nil, err
			}
			return openAt(abs, d, gd, false)
		}
		if isGitDir(d) {
			if os.Getenv("GIT_WORK_TREE") != "" {
				if err := checkOwnership("", "", d); err != nil {
					return nil, err
				}
				return openAt(abs, d, d, false)
			}
			return nil, fmt.Errorf("%w: %s", ErrBareRepository, d)
		}
		parent := filepath.Dir(d)
		if parent == d {
			return nil, fmt.Errorf("%w (or any parent up to /): %s", ErrNotRepository, abs)
		}
		d = parent
	}
}

// fromDir is p made absolute against dir, as git takes a relative GIT_DIR or GIT_WORK_TREE.
func fromDir(dir, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return filepath.Clean(p)
}

// resolveDotGit returns the git directory a `.git` entry names: the directory itself or the
// target of a `gitdir: <path>` file.
func resolveDotGit(dotgit string) (string, bool, error) {
	fi, err := os.Stat(dotgit)
	if err != nil {
		return "", false, nil
	}
	if fi.IsDir() {
		if isGitDir(dotgit) {
			return dotgit, true, nil
		}
		return "", false, nil
	}
	if !fi.Mode().IsRegular() {
		return "", false, nil
	}
	gd, err := readGitFile(dotgit)
	if err != nil {
		return "", false, err
	}
	if !isGitDir(gd) {
		return "", false, fmt.Errorf("%s points to %s, which is not a git directory", dotgit, gd)
	}
	return gd, true, nil
}

func readGitFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	line := strings.TrimRight(string(data), "\r\n")
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = strings.TrimRight(line[:i], "\r")
	}
	if !strings.HasPrefix(line, "gitdir: ") {
		return "", fmt.Errorf("%s is not a gitdir file", path)
	}
	gd := strings.TrimPrefix(line, "gitdir: ")
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(path), gd)
	}
	return filepath.Clean(gd), nil
}

// isGitDir mirrors git's is_git_directory: a HEAD file plus objects/ and refs/ (found through
// commondir for a linked worktree).
func isGitDir(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return false
	}
	common := commonDirOf(dir)
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(common, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

func commonDirOf(gitDir string) string {
	data, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return gitDir
	}
	c := strings.TrimRight(string(data), "\r\n")
	if c == "" {
		return gitDir
	}
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitDir, c)
	}
	return filepath.Clean(c)
}

// openAt opens the repository of gitDir with the working tree root: the directory discovery
// found it in, or (gitDirFromEnv) cwd, the directory mulligan runs in, which core.worktree may
// move. GIT_WORK_TREE (relative to cwd) moves it in both cases.
func openAt(cwd, root, gitDir string, gitDirFromEnv bool) (*Repo, error) {
	if real, err := filepath.EvalSymlinks(gitDir); err == nil {
		gitDir = real
	}
	r := &Repo{root: root, gitDir: gitDir, commonDir: commonDirOf(gitDir), indexFile: filepath.Join(gitDir, "index")}
	if f := os.Getenv("GIT_INDEX_FILE"); f != "" {
		r.indexFile = fromDir(cwd, f)
	}
	branch := ""
	if target, ok := readSymbolicHead(gitDir); ok && strings.HasPrefix(target, "refs/heads/") {
		branch = strings.TrimPrefix(target, "refs/heads/")
	}
	format, err := readRepoFormat(r.commonDir)
	if err != nil {
		return nil, err
	}
	cfg, err := loadConfig(r.gitDir, r.commonDir, branch, format.worktreeConfig)
	if err != nil {
		return nil, err
	}
	explicit := false
	if wt := os.Getenv("GIT_WORK_TREE"); wt != "" {
		r.root, explicit = fromDir(cwd, wt), true
	} else if wt := cfg.str("core.worktree"); gitDirFromEnv && wt != "" {
		r.root, explicit = fromDir(gitDir, wt), true
	}
	if explicit {
		real, err := filepath.EvalSymlinks(r.root)
		if err != nil {
			return nil, fmt.Errorf("%w: the working tree %s: %w", ErrNotRepository, r.root, err)
		}
		r.root = real
	} else if cfg.boolean("core.bare", false) {
		return nil, fmt.Errorf("%w: %s", ErrBareRepository, r.commonDir)
	}
	r.cfg = cfg
	r.set = cfg.settings(r.root)
	r.objs = odb.Open(filepath.Join(r.commonDir, "objects"), promisorRemote(format, cfg))
	sweepRestoreTemps(r.root, r.gitDir)
	return r, nil
}

func readSymbolicHead(gitDir string) (string, bool) {
	data, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", false
	}
	s := strings.TrimSpace(string(data))
	if !strings.HasPrefix(s, "ref:") {
		return "", false
	}
	return strings.TrimSpace(strings.TrimPrefix(s, "ref:")), true
}

// Close releases the object store's open files and maps.
func (r *Repo) Close() error {
	r.mu.Lock()
	err := r.unwatchLocked()
	r.mu.Unlock()
	if r.objs != nil {
		if cerr := r.objs.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// Root is the absolute working tree root.
func (r *Repo) Root() string { return r.root }

// GitDir is the per-worktree git directory (".git" or ".git/worktrees/X").
func (r *Repo) GitDir() string { return r.gitDir }

// IndexFile is the user's index mulligan reads the tracked paths from (never writes).
func (r *Repo) IndexFile() string { return r.indexFile }

// CommonDir is the shared git directory holding objects, refs and config.
func (r *Repo) CommonDir() string { return r.commonDir }

// encodedObject reads object h of type t (odb.Store.Object): ErrObjectNotFound when it is
// another type.
func (r *Repo) encodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	obj, err := r.objs.Object(h)
	if err != nil {
		return nil, err
	}
	if t != plumbing.AnyObject && obj.Type() != t {
		return nil, plumbing.ErrObjectNotFound
	}
	return obj, nil
}
