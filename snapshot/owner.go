package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrDubiousOwnership means the repository belongs to another user and git's safe.directory does
// not name it (CVE-2022-24765): its config, hooks and filters could run that user's code as us.
var ErrDubiousOwnership = errors.New("detected dubious ownership in repository")

// OwnershipError is ErrDubiousOwnership for one repository.
type OwnershipError struct {
	Path  string // the directory git would name: the working tree, or the git directory of a bare one
	Owned string // the path whose owner is not the current user
	Owner int    // its uid
	User  int    // the current user's uid (SUDO_UID when running as root under sudo)
}

func (e *OwnershipError) Error() string {
	return fmt.Sprintf("%s at '%s' (%s is owned by uid %d, not by uid %d)", ErrDubiousOwnership, e.Path, e.Owned, e.Owner, e.User)
}

func (e *OwnershipError) Unwrap() error { return ErrDubiousOwnership }

// checkOwnership is git's ensure_valid_ownership (setup.c): the `.git` file (when the git
// directory is reached through one), the working tree and the git directory must all belong to
// the current user — a root process also accepts root's files, and under sudo the SUDO_UID
// user's — unless safe.directory in the protected configuration (system, global, command line;
// never the repository's own) names the repository, a parent with "/*", or "*". An empty value
// resets the list. Like git, it runs before any file of the repository is read.
func checkOwnership(gitFile, worktree, gitDir string) error {
	for _, p := range []string{gitFile, worktree, gitDir} {
		if p == "" {
			continue
		}
		if owner, user, ok := ownedByCurrentUser(p); !ok {
			path := worktree
			if path == "" {
				path = gitDir
			}
			safe, err := safeDirectory(path)
			if err != nil {
				return err
			}
			if safe {
				return nil
			}
			return &OwnershipError{Path: path, Owned: p, Owner: owner, User: user}
		}
	}
	return nil
}

// safeDirectory reports whether safe.directory allows path, as git 2.46 reads it: values are
// "~/"-expanded and normalised (symlinks resolved) before they are compared, relative values
// other than "." are ignored, and "DIR/*" allows everything below DIR.
func safeDirectory(path string) (bool, error) {
	cfg, err := protectedConfig()
	if err != nil {
		return false, err
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	} else {
		return false, nil // git: a path that cannot be normalised is never safe
	}
	safe := false
	for _, v := range cfg.vals["safe.directory"] {
		val := v.v
		switch {
		case v.blank || val == "":
			safe = false
			continue
		case val == "*":
			safe = true
			continue
		}
		allowed := expandHome(val)
		prefix := strings.HasSuffix(allowed, "/*")
		if prefix {
			allowed = strings.TrimSuffix(allowed, "*")
		}
		if !filepath.IsAbs(allowed) && allowed != "." {
			continue
		}
		abs, err := filepath.Abs(allowed)
		if err != nil {
			continue
		}
		norm, err := filepath.EvalSymlinks(abs)
		if err != nil {
			continue
		}
		if prefix {
			if strings.HasPrefix(path, strings.TrimSuffix(norm, "/")+"/") {
				safe = true
			}
		} else if norm == path {
			safe = true
		}
	}
	return safe, nil
}

// ownedByCurrentUser is git's is_path_owned_by_current_uid: lstat, and for a root process a
// root-owned path or, when SUDO_UID is set, a path owned by the user who ran sudo.
func ownedByCurrentUser(path string) (owner, user int, ok bool) {
	owner, err := pathOwner(path)
	if err != nil {
		return -1, os.Geteuid(), false
	}
	user = os.Geteuid()
	if user == 0 {
		if owner == 0 {
			return owner, user, true
		}
		if id, ok := sudoUID(); ok {
			user = id
		}
	}
	return owner, user, owner == user
}

// sudoUID parses SUDO_UID as git's extract_id_from_env does: a decimal number, nothing else.
func sudoUID() (int, bool) {
	s := os.Getenv("SUDO_UID")
	if s == "" {
		return 0, false
	}
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' || n > (1<<31-1)/10 {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
