// Package gittest runs the git binary for the engine's tests: a hermetic environment (nothing
// from the machine's configuration), repositories, and what git reads back. Tests only.
package gittest

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// Hermetic points every git setting the engine and the git binary read at fresh temporary
// places, so both see the same configuration and nothing from the machine. It returns HOME.
func Hermetic(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git binary not on PATH")
	}
	home := t.TempDir()
	cfg := filepath.Join(home, ".gitconfig")
	WriteFile(t, cfg, "[user]\n\tname = Test\n\temail = test@example.com\n[init]\n\tdefaultBranch = main\n"+
		"[commit]\n\tgpgSign = false\n[maintenance]\n\tauto = false\n[gc]\n\tauto = 0\n"+
		"[advice]\n\taddEmbeddedRepo = false\n\tdetachedHead = false\n")
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_GLOBAL", cfg)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_TERMINAL_PROMPT", "0")
	t.Setenv("LC_ALL", "C")
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "xdg"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "share")) // mulligan's worktrees
	t.Setenv("MULLIGAN_WORKTREES", "")
	for _, v := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
		"GIT_COMMON_DIR", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS", "GIT_CEILING_DIRECTORIES"} {
		if _, ok := os.LookupEnv(v); ok {
			t.Setenv(v, "")
			os.Unsetenv(v)
		}
	}
	return home
}

// WriteFile writes content at path, its directories made.
func WriteFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Run runs git in dir with env added and returns its output, trimmed; a failure fails the test.
func Run(t testing.TB, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("git %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return strings.TrimSpace(out.String())
}

// NewRepo makes an empty repository (hermetic environment included).
func NewRepo(t testing.TB) string {
	t.Helper()
	Hermetic(t)
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	Run(t, dir, nil, "init", "-q")
	return dir
}

// CatFileAll is every object's content, as git cat-file --batch gives it.
func CatFileAll(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "--batch-all-objects", "--batch")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	br := bufio.NewReader(bytes.NewReader(out))
	for {
		hdr, err := br.ReadString('\n')
		if err == io.EOF {
			return m
		}
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(hdr)
		n, _ := strconv.Atoi(f[2])
		data := make([]byte, n+1)
		if _, err := io.ReadFull(br, data); err != nil {
			t.Fatal(err)
		}
		m[f[0]] = data[:n]
	}
}

// Tried runs git in dir with env added and stdin; an error is git refusing (its stderr in it).
func Tried(dir string, stdin []byte, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, &Refused{Args: args, Err: err, Stderr: errb.String()}
	}
	return out.Bytes(), nil
}

// Refused is git failing on what it was given.
type Refused struct {
	Args   []string
	Err    error
	Stderr string
}

func (e *Refused) Error() string {
	return "git " + strings.Join(e.Args, " ") + ": " + e.Err.Error() + ": " + e.Stderr
}

// WithTrailer is data with its last 20 bytes replaced by the SHA-1 of the rest: the trailer git
// checks on an index and a pack, so that fuzzed bytes get past it to the parsers.
func WithTrailer(data []byte) []byte {
	if len(data) < 20+12 {
		return data
	}
	out := bytes.Clone(data)
	sum := sha1.Sum(out[:len(out)-20])
	copy(out[len(out)-20:], sum[:])
	return out
}

// Repo is a repository with one commit (a file, an executable, a symbolic link) for fuzz targets
// that have git read what they make.
type Repo struct {
	Dir, GitDir string
	Commit      plumbing.Hash
	Blob        plumbing.Hash // a.txt
}

// NewCommitted makes a Repo (hermetic environment included).
func NewCommitted(t testing.TB) *Repo {
	t.Helper()
	dir := NewRepo(t)
	WriteFile(t, filepath.Join(dir, "a.txt"), "one\n")
	WriteFile(t, filepath.Join(dir, "dir/b.sh"), "#!/bin/sh\n")
	os.Chmod(filepath.Join(dir, "dir/b.sh"), 0o755)
	os.Symlink("a.txt", filepath.Join(dir, "link"))
	Run(t, dir, nil, "add", "-A")
	Run(t, dir, nil, "commit", "-qm", "first")
	return &Repo{
		Dir: dir, GitDir: filepath.Join(dir, ".git"),
		Commit: plumbing.NewHash(Run(t, dir, nil, "rev-parse", "HEAD")),
		Blob:   plumbing.NewHash(Run(t, dir, nil, "rev-parse", "HEAD:a.txt")),
	}
}

// Git runs git in the repository (Tried).
func (g *Repo) Git(stdin []byte, env []string, args ...string) ([]byte, error) {
	return Tried(g.Dir, stdin, env, args...)
}
