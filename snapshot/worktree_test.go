package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// A worktree of mulligan's own is an ordinary linked worktree to git: listed on a detached HEAD,
// clean in `git status` (its index matches the files), reused by writing only what differs, and
// gone for `git worktree list` / `prune` once removed.
func TestWorktreeIsGitsOwn(t *testing.T) {
	ctx := context.Background()
	dir := newGitRepo(t)
	write := func(root, name, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(dir, "a.txt", "a\n", 0o644)
	write(dir, "sub/b.txt", "b\n", 0o644)
	write(dir, "run.sh", "#!/bin/sh\n", 0o755)
	write(dir, ".gitignore", "*.log\n", 0o644)
	if err := os.Symlink("a.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "init")
	write(dir, "untracked.txt", "u\n", 0o644) // a snapshot holds untracked files too
	write(dir, "debug.log", "ignored\n", 0o644)

	r := openRepo(t, dir)
	base, err := r.Snapshot(ctx, SnapshotOptions{Ref: "refs/mulligan/test/base", Message: "base"})
	if err != nil {
		t.Fatal(err)
	}
	w, err := r.WorktreeFor("r1-fix")
	if err != nil {
		t.Fatal(err)
	}
	wr, err := r.SetWorktree(ctx, w, base.Commit)
	if err != nil {
		t.Fatal(err)
	}
	defer wr.Close()

	list := runGit(t, dir, "worktree", "list", "--porcelain")
	if !strings.Contains(list, "worktree "+w.Dir+"\nHEAD "+base.Commit.String()+"\ndetached") {
		t.Fatalf("git worktree list does not show %s detached at %s:\n%s", w.Dir, base.Commit, list)
	}
	if st := runGit(t, w.Dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status in the new worktree is not clean:\n%s", st)
	}
	if got := runGit(t, w.Dir, "rev-parse", "HEAD^{tree}"); got != base.Tree.String() {
		t.Fatalf("HEAD's tree %s, want the base %s", got, base.Tree)
	}
	if _, err := os.Stat(filepath.Join(w.Dir, "untracked.txt")); err != nil {
		t.Fatalf("the base's untracked file is not in the worktree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w.Dir, "debug.log")); err == nil {
		t.Fatal("an ignored file came into the worktree without being asked for")
	}
	if fi, err := os.Stat(filepath.Join(w.Dir, "run.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Fatalf("run.sh lost its executable bit: %v", fi)
	}
	// The worktree's own snapshot is the base tree; the user's tree is untouched.
	if got := writeTree(t, wr).Tree; got != base.Tree {
		t.Fatalf("the worktree snapshots as %s, want %s", got, base.Tree)
	}

	// An agent works there: git sees its edits; then the worktree is reused for another tree.
	write(w.Dir, "a.txt", "agent\n", 0o644)
	write(w.Dir, "new.txt", "n\n", 0o644)
	if st := runGit(t, w.Dir, "status", "--porcelain"); !strings.Contains(st, "M a.txt") || !strings.Contains(st, "?? new.txt") {
		t.Fatalf("git status after the agent's edits:\n%s", st)
	}
	write(dir, "a.txt", "user a\n", 0o644)
	next, err := r.Snapshot(ctx, SnapshotOptions{Ref: "refs/mulligan/test/next", Message: "next"})
	if err != nil {
		t.Fatal(err)
	}
	wr2, err := r.SetWorktree(ctx, w, next.Commit)
	if err != nil {
		t.Fatal(err)
	}
	defer wr2.Close()
	if st := runGit(t, w.Dir, "status", "--porcelain"); st != "" {
		t.Fatalf("git status in the reused worktree is not clean:\n%s", st)
	}
	if b, _ := os.ReadFile(filepath.Join(w.Dir, "a.txt")); string(b) != "user a\n" {
		t.Fatalf("reused worktree a.txt = %q", b)
	}
	if _, err := os.Stat(filepath.Join(w.Dir, "new.txt")); err == nil {
		t.Fatal("the reused worktree kept a file the new tree does not have")
	}
	if ws, err := r.Worktrees(); err != nil || len(ws) != 1 || ws[0].Name != "r1-fix" {
		t.Fatalf("Worktrees() = %v, %v", ws, err)
	}

	if err := r.RemoveWorktree(w); err != nil {
		t.Fatal(err)
	}
	if out := runGit(t, dir, "worktree", "prune", "-n", "-v"); out != "" {
		t.Fatalf("git worktree prune has something to do after RemoveWorktree:\n%s", out)
	}
	if list := runGit(t, dir, "worktree", "list", "--porcelain"); strings.Contains(list, w.Dir) {
		t.Fatalf("git worktree list still shows %s:\n%s", w.Dir, list)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "user a\n" {
		t.Fatal("the user's tree changed")
	}
}

// mulligan's worktrees lie outside the git directory and the working tree (SPEC §4.1: agents
// refuse to edit under .git/), under $XDG_DATA_HOME/mulligan/worktrees/ (~/.local/share/… without
// it) or MULLIGAN_WORKTREES, one directory per repository: the same for every open of one
// repository, another for a second clone of the same name. A worktrees directory inside the
// repository is refused; one made by an old version inside .git/ is made afresh outside it and
// removed.
func TestWorktreeOutsideTheGitDirectory(t *testing.T) {
	ctx := context.Background()
	home, data := hermeticGit(t), t.TempDir()
	parent := t.TempDir()
	mk := func(sub string) (*Repo, string) {
		dir := filepath.Join(parent, sub, "proj")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		runGit(t, dir, "init", "-q")
		if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		runGit(t, dir, "add", "-A")
		runGit(t, dir, "commit", "-qm", "init")
		return openRepo(t, dir), dir
	}
	r, dir := mk("one")
	r2, _ := mk("two")
	outside := func(r *Repo, w *Worktree) {
		t.Helper()
		for _, inside := range []string{r.CommonDir(), r.Root()} {
			if rel, err := filepath.Rel(inside, w.Dir); err == nil && !strings.HasPrefix(rel, "..") {
				t.Fatalf("worktree %s lies under %s", w.Dir, inside)
			}
		}
	}
	for _, tc := range []struct{ xdg, mw, root string }{
		{"", "", filepath.Join(home, ".local", "share", "mulligan", "worktrees")},
		{data, "", filepath.Join(data, "mulligan", "worktrees")},
		{"relative/is/ignored", "", filepath.Join(home, ".local", "share", "mulligan", "worktrees")},
		{data, filepath.Join(parent, "mine"), filepath.Join(parent, "mine")},
	} {
		t.Setenv("XDG_DATA_HOME", tc.xdg)
		t.Setenv("MULLIGAN_WORKTREES", tc.mw)
		w, err := r.WorktreeFor("r1-fix")
		if err != nil {
			t.Fatal(err)
		}
		outside(r, w)
		if filepath.Dir(filepath.Dir(w.Dir)) != tc.root || !strings.HasPrefix(filepath.Base(filepath.Dir(w.Dir)), "proj-") {
			t.Errorf("XDG_DATA_HOME=%q MULLIGAN_WORKTREES=%q: worktree %s, want %s/proj-HASH/r1-fix", tc.xdg, tc.mw, w.Dir, tc.root)
		}
		again, _ := openRepo(t, dir).WorktreeFor("r1-fix")
		other, _ := r2.WorktreeFor("r1-fix")
		if again.Dir != w.Dir || other.Dir == w.Dir {
			t.Errorf("one repository's worktree: %s and %s; another's: %s", w.Dir, again.Dir, other.Dir)
		}
	}

	// Made, it is found where it was made whatever the environment says now, and removed whole.
	t.Setenv("MULLIGAN_WORKTREES", "")
	base, err := r.Snapshot(ctx, SnapshotOptions{Ref: "refs/mulligan/test/base", Message: "base"})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := r.WorktreeFor("r1-fix")
	wr, err := r.SetWorktree(ctx, w, base.Commit)
	if err != nil {
		t.Fatal(err)
	}
	wr.Close()
	outside(r, w)
	if got := runGit(t, w.Dir, "rev-parse", "--show-toplevel"); got != w.Dir {
		t.Fatalf("git in the worktree: toplevel %s, want %s", got, w.Dir)
	}
	t.Setenv("MULLIGAN_WORKTREES", filepath.Join(parent, "elsewhere"))
	if again, _ := r.WorktreeFor("r1-fix"); again.Dir != w.Dir {
		t.Fatalf("the worktree made in %s is looked for in %s", w.Dir, again.Dir)
	}
	if ws, err := r.Worktrees(); err != nil || len(ws) != 1 || ws[0].Dir != w.Dir {
		t.Fatalf("Worktrees() = %v, %v", ws, err)
	}
	if err := r.RemoveWorktree(w); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(w.Dir)); !os.IsNotExist(err) {
		t.Fatalf("the repository's empty worktrees directory stays: %v", err)
	}

	// Inside the repository: refused.
	for _, in := range []string{filepath.Join(r.CommonDir(), "wt"), filepath.Join(dir, "wt"), dir} {
		t.Setenv("MULLIGAN_WORKTREES", in)
		if w, err := r.WorktreeFor("r1-fix"); !errors.Is(err, ErrWorktreesInRepo) {
			t.Errorf("MULLIGAN_WORKTREES=%s: %v, %v; want refused", in, w, err)
		}
	}

	// An old version's worktree under .git/mulligan/worktrees is set up afresh outside, and the
	// old directory goes.
	t.Setenv("MULLIGAN_WORKTREES", filepath.Join(parent, "new"))
	legacy := &Worktree{Name: "r1-old", Dir: filepath.Join(r.CommonDir(), "mulligan", "worktrees", "r1-old"),
		Admin: filepath.Join(r.CommonDir(), "worktrees", "mulligan-r1-old")}
	if wr, err := r.SetWorktree(ctx, legacy, base.Commit); err != nil {
		t.Fatal(err)
	} else {
		wr.Close()
	}
	w, err = r.WorktreeFor("r1-old")
	if err != nil {
		t.Fatal(err)
	}
	outside(r, w)
	if wr, err := r.SetWorktree(ctx, w, base.Commit); err != nil {
		t.Fatal(err)
	} else {
		wr.Close()
	}
	if _, err := os.Stat(legacy.Dir); !os.IsNotExist(err) {
		t.Fatalf("the old worktree inside .git stays: %v", err)
	}
	if err := r.RemoveWorktree(w); err != nil {
		t.Fatal(err)
	}
	if out := runGit(t, dir, "worktree", "prune", "-n", "-v"); out != "" {
		t.Fatalf("git worktree prune has something to do:\n%s", out)
	}
}

func TestWorktreeNames(t *testing.T) {
	r := openRepo(t, newGitRepo(t))
	for _, bad := range []string{"", ".", "..", "a/b", ".hidden", "a\x00b"} {
		if _, err := r.WorktreeFor(bad); err == nil {
			t.Errorf("WorktreeFor(%q) accepted", bad)
		}
	}
}

// A reused worktree whose index is the one mulligan wrote gets only the entries that differ —
// those the new tree changes and those the restore rewrote after an agent's edits (including a
// file the agent already wrote the new tree's way) — and git still finds it clean; an index
// someone else wrote (an agent's `git add`) is written whole.
func TestWorktreeIndexUpdatedByEntry(t *testing.T) {
	ctx := context.Background()
	dir := newGitRepo(t)
	write := func(root, name, content string) {
		t.Helper()
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"a.txt", "b.txt", "sub/c.txt", "sub/d.txt", "keep.txt"} {
		write(dir, f, f+"\n")
	}
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "init")
	r := openRepo(t, dir)
	snap := func(ref string) Result {
		t.Helper()
		res, err := r.Snapshot(ctx, SnapshotOptions{Ref: ref, Message: ref})
		if err != nil {
			t.Fatal(err)
		}
		return *res
	}
	base := snap("refs/mulligan/test/base")
	w, err := r.WorktreeFor("r1-idx")
	if err != nil {
		t.Fatal(err)
	}
	set := func(commit plumbing.Hash, want string) {
		t.Helper()
		wr, err := r.SetWorktree(ctx, w, commit)
		if err != nil {
			t.Fatal(err)
		}
		defer wr.Close()
		if wr.indexUpdated != want {
			t.Errorf("index written %q, want %q", wr.indexUpdated, want)
		}
		// git looks at a copy of the index: a refresh it writes back must not change the one the
		// next set-up checks against its stamp.
		data, err := os.ReadFile(wr.indexFile)
		if err != nil {
			t.Fatal(err)
		}
		cp := filepath.Join(t.TempDir(), "index")
		os.WriteFile(cp, data, 0o644)
		env := []string{"GIT_INDEX_FILE=" + cp}
		if st := runGitEnv(t, w.Dir, env, "status", "--porcelain", "--untracked-files=all"); st != "" {
			t.Fatalf("git status in the worktree is not clean:\n%s", st)
		}
		if d := runGitEnv(t, w.Dir, env, "diff", "--cached", "--name-status", "HEAD"); d != "" {
			t.Fatalf("the index differs from HEAD:\n%s", d)
		}
	}
	set(base.Commit, "whole")

	// The user's tree moves on: a.txt changed, b.txt gone, sub/e.txt new.
	write(dir, "a.txt", "user a\n")
	os.Remove(filepath.Join(dir, "b.txt"))
	write(dir, "sub/e.txt", "e\n")
	next := snap("refs/mulligan/test/next")
	// An agent worked in the worktree meanwhile (without git): an edit, a new file, a deletion,
	// and a.txt already written as the next tree has it.
	write(w.Dir, "sub/c.txt", "agent\n")
	write(w.Dir, "agent.txt", "x\n")
	os.Remove(filepath.Join(w.Dir, "sub/d.txt"))
	write(w.Dir, "a.txt", "user a\n")
	set(next.Commit, "entries")

	// An agent's `git add` rewrote the index: the next set-up does not trust it.
	write(w.Dir, "keep.txt", "staged\n")
	runGit(t, w.Dir, "add", "keep.txt")
	set(base.Commit, "whole")
}
