package snapshot

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// otherUID owns the "other user's" files. No account needs to exist for a uid to own a file, so
// the test changes nothing of the machine's users.
const otherUID = 4242

// TestOwnershipLikeGit compares Open's refusal with git's own (`git status`, which refuses a
// dubious repository since 2.35.2) for every way the rule can go: who owns what, safe.directory
// in each kind of config, and sudo.
func TestOwnershipLikeGit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root can give a repository to another user (chown)")
	}
	type setup struct {
		global  string   // extra lines of the global config; REPO and PARENT are replaced
		local   string   // lines of the repository's own .git/config
		env     []string // extra environment
		chown   []string // paths (relative to PARENT) given to otherUID; default the whole repository
		gitFile bool     // the repository's .git is a gitdir file pointing to PARENT/gd
		// since246 marks a rule git 2.46 added ("DIR/*"): with an older git the case expects
		// the repository to be allowed instead of asking git.
		since246 bool
	}
	cases := map[string]setup{
		"own repository":                     {chown: []string{}},
		"other's repository":                 {},
		"other's .git only":                  {chown: []string{"repo/.git"}},
		"other's worktree only":              {chown: []string{"repo"}},
		"other's .git file":                  {gitFile: true, chown: []string{"repo/.git"}},
		"other's gitdir behind a .git file":  {gitFile: true, chown: []string{"gd"}},
		"safe.directory names it":            {global: "[safe]\n\tdirectory = REPO\n"},
		"safe.directory names another":       {global: "[safe]\n\tdirectory = PARENT/other\n"},
		"safe.directory star":                {global: "[safe]\n\tdirectory = *\n"},
		"safe.directory star then reset":     {global: "[safe]\n\tdirectory = *\n\tdirectory =\n"},
		"safe.directory reset then names it": {global: "[safe]\n\tdirectory =\n\tdirectory = REPO\n"},
		"safe.directory parent/*":            {global: "[safe]\n\tdirectory = PARENT/*\n", since246: true},
		"safe.directory relative":            {global: "[safe]\n\tdirectory = repo\n"},
		"other key holding the path":         {global: "[foo]\n\tbar = REPO\n"},
		"safe.directory in the repository":   {local: "[safe]\n\tdirectory = *\n"},
		"safe.directory on the command line": {env: []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=REPO"}},
		"sudo by the owner":                  {env: []string{"SUDO_UID=4242"}},
		"sudo by someone else":               {env: []string{"SUDO_UID=4343"}},
		"sudo uid not a number":              {env: []string{"SUDO_UID=4242x"}},
		"gitfile, safe.directory names it":   {gitFile: true, chown: []string{"repo/.git", "gd"}, global: "[safe]\n\tdirectory = REPO\n"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			hermeticGit(t)
			parent, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			repo := filepath.Join(parent, "repo")
			writeFile(t, filepath.Join(repo, "a.txt"), "a\n")
			runGit(t, repo, "init", "-q")
			if c.gitFile {
				if err := os.Rename(filepath.Join(repo, ".git"), filepath.Join(parent, "gd")); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(repo, ".git"), "gitdir: "+filepath.Join(parent, "gd")+"\n")
			}
			subst := strings.NewReplacer("REPO", repo, "PARENT", parent)
			if c.global != "" {
				f, err := os.OpenFile(os.Getenv("GIT_CONFIG_GLOBAL"), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(subst.Replace(c.global))
				f.Close()
			}
			if c.local != "" {
				gd := filepath.Join(repo, ".git")
				if c.gitFile {
					gd = filepath.Join(parent, "gd")
				}
				f, err := os.OpenFile(filepath.Join(gd, "config"), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(c.local)
				f.Close()
			}
			for _, kv := range c.env {
				k, v, _ := strings.Cut(subst.Replace(kv), "=")
				t.Setenv(k, v)
			}
			chown := c.chown
			if chown == nil {
				chown = []string{"repo"}
				if c.gitFile {
					chown = append(chown, "gd")
				}
				chownAll(t, parent, chown, true)
			} else {
				chownAll(t, parent, chown, false)
			}

			gitCmd := exec.Command("git", "status", "--porcelain")
			gitCmd.Dir = repo
			out, gitErr := gitCmd.CombinedOutput()
			gitRefuses := gitErr != nil && strings.Contains(string(out), "dubious ownership")
			if gitErr != nil && !gitRefuses {
				t.Fatalf("git status failed for another reason: %v\n%s", gitErr, out)
			}
			if c.since246 && !gitAtLeast(t, 2, 46) {
				gitRefuses, out = false, nil
			}

			r, err := Open(repo)
			if err == nil {
				r.Close()
			}
			var oe *OwnershipError
			refuses := errors.As(err, &oe)
			if err != nil && !refuses {
				t.Fatalf("Open: %v", err)
			}
			if refuses != gitRefuses {
				t.Fatalf("mulligan refuses: %v (%v); git refuses: %v (%s)", refuses, err, gitRefuses, out)
			}
			if refuses && out != nil {
				if !errors.Is(err, ErrDubiousOwnership) || oe.Path != repo {
					t.Errorf("error %v names %q, want the working tree %s", err, oe.Path, repo)
				}
				if !strings.Contains(string(out), "safe.directory "+repo) {
					t.Errorf("git's hint names another path than %s: %s", repo, out)
				}
			}
		})
	}
}

// chownAll gives the paths under parent to otherUID: recursively, or only the named entries.
func chownAll(t *testing.T, parent string, rel []string, recursive bool) {
	t.Helper()
	for _, r := range rel {
		p := filepath.Join(parent, r)
		if !recursive {
			if err := os.Lchown(p, otherUID, otherUID); err != nil {
				t.Fatal(err)
			}
			continue
		}
		err := filepath.Walk(p, func(path string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(path, otherUID, otherUID)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// gitAtLeast reports whether the git binary is version major.minor or newer.
func gitAtLeast(t *testing.T, major, minor int) bool {
	out := runGit(t, ".", "version") // "git version 2.39.5"
	var ma, mi int
	if _, err := fmt.Sscanf(strings.TrimPrefix(out, "git version "), "%d.%d", &ma, &mi); err != nil {
		t.Fatalf("git version %q: %v", out, err)
	}
	return ma > major || ma == major && mi >= minor
}

func TestSudoUID(t *testing.T) {
	for in, want := range map[string]int{"1000": 1000, "0": 0} {
		t.Setenv("SUDO_UID", in)
		if got, ok := sudoUID(); !ok || got != want {
			t.Errorf("SUDO_UID=%s: %d %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "-1", "1000x", " 1000", "99999999999999"} {
		t.Setenv("SUDO_UID", in)
		if _, ok := sudoUID(); ok {
			t.Errorf("SUDO_UID=%q accepted", in)
		}
	}
}
