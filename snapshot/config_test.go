package snapshot

import (
	"os"
	"path/filepath"
	"testing"
)

func TestConfigLoader(t *testing.T) {
	dir := newGitRepo(t)
	home, _ := os.UserHomeDir()
	writeFile(t, filepath.Join(home, "inc.cfg"), "[core]\n\texcludesFile = ~/from-include\n\tautocrlf = input\n")
	writeFile(t, os.Getenv("GIT_CONFIG_GLOBAL"), "[include]\n\tpath = inc.cfg\n[core]\n\tsymlinks\n[filter \"lfs\"]\n\tclean = git-lfs clean -- %f\n\trequired\n")
	writeFile(t, filepath.Join(dir, ".git", "config.worktree"), "[core]\n\tfileMode = no\n")
	runGit(t, dir, "config", "extensions.worktreeConfig", "true")
	runGit(t, dir, "config", "core.attributesFile", "rel/attrs")
	writeFile(t, filepath.Join(home, "cond.cfg"), "[core]\n\teol = crlf\n")
	runGit(t, dir, "config", "includeIf.gitdir:"+filepath.Join(dir, ".git")+".path", filepath.Join(home, "cond.cfg"))
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "core.trustCtime")
	t.Setenv("GIT_CONFIG_VALUE_0", "off")

	r := openRepo(t, dir)
	s := r.set
	if s.excludesFile != filepath.Join(home, "from-include") {
		t.Errorf("excludesFile = %q (include.path with ~/)", s.excludesFile)
	}
	if s.attributesFile != filepath.Join(dir, "rel/attrs") {
		t.Errorf("attributesFile = %q (relative to the worktree)", s.attributesFile)
	}
	if s.conv.AutoCRLF != "input" || s.conv.EOL != "crlf" {
		t.Errorf("autocrlf %q eol %q", s.conv.AutoCRLF, s.conv.EOL)
	}
	if s.fileMode {
		t.Error("fileMode from config.worktree (extensions.worktreeConfig) was not applied")
	}
	if !s.symlinks {
		t.Error("a key without '=' is boolean true")
	}
	if s.trustCtime {
		t.Error("GIT_CONFIG_COUNT/KEY/VALUE were not applied")
	}
	if f := s.conv.Filters["lfs"]; f.Clean != "git-lfs clean -- %f" || !f.Required {
		t.Errorf("filter.lfs = %+v", f)
	}
	// git agrees on every value read.
	for key, want := range map[string]string{"core.excludesfile": "~/from-include", "core.autocrlf": "input",
		"core.filemode": "no", "core.eol": "crlf"} {
		if got := runGit(t, dir, "config", key); got != want {
			t.Errorf("git config %s = %q, the test expected %q", key, got, want)
		}
	}

	// Defaults: XDG paths when core.excludesFile/attributesFile are unset.
	dir2 := newGitRepo(t)
	t.Setenv("XDG_CONFIG_HOME", "")
	home2, _ := os.UserHomeDir()
	r2 := openRepo(t, dir2)
	if r2.set.excludesFile != filepath.Join(home2, ".config/git/ignore") || r2.set.attributesFile != filepath.Join(home2, ".config/git/attributes") {
		t.Errorf("defaults without XDG_CONFIG_HOME: %q %q", r2.set.excludesFile, r2.set.attributesFile)
	}
	t.Setenv("XDG_CONFIG_HOME", "/xdg")
	if got := openRepo(t, dir2).set.excludesFile; got != "/xdg/git/ignore" {
		t.Errorf("default with XDG_CONFIG_HOME: %q", got)
	}
	if !openRepo(t, dir2).set.fileMode {
		t.Error("fileMode defaults to true")
	}
}

func TestOpenErrors(t *testing.T) {
	hermeticGit(t)
	outside := t.TempDir()
	if _, err := Open(outside); !errorsIs(err, ErrNotRepository) {
		t.Errorf("Open outside a repository: %v", err)
	}
	bare := filepath.Join(t.TempDir(), "bare.git")
	runGit(t, filepath.Dir(bare), "init", "-q", "--bare", bare)
	if _, err := Open(bare); !errorsIs(err, ErrBareRepository) {
		t.Errorf("Open in a bare repository: %v", err)
	}
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "sub/x"), "x\n")
	r := openRepo(t, filepath.Join(dir, "sub"))
	if real, _ := filepath.EvalSymlinks(dir); r.Root() != real || r.GitDir() != filepath.Join(real, ".git") || r.CommonDir() != r.GitDir() {
		t.Errorf("Root %q GitDir %q CommonDir %q", r.Root(), r.GitDir(), r.CommonDir())
	}
}
