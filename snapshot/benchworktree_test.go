package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/snapshot"
)

// TestWorktreeSetupCost (make bench) measures what an isolated task pays for its worktree (SPEC
// §4.1), against git doing the same work on the same trees in the same loop:
//   - first set-up: SetWorktree of the repository's HEAD into a new directory (admin files,
//     every file written, the index) against `git worktree add --detach DIR HEAD`;
//   - reused: SetWorktree of a tree differing in 10 files onto that worktree against
//     `git -C DIR checkout --detach COMMIT`, both writing only what differs and the index.
//
// mulligan runs in this process (its CPU time is this process's rusage delta), git as a child
// (its CPU time is the child's). Each run makes fresh directories for both tools; the order
// rotates. Every worktree is checked: git status clean, HEAD's tree the one asked for.
func TestWorktreeSetupCost(t *testing.T) {
	if os.Getenv("MULLIGAN_BENCH") != "1" {
		t.Skip("set MULLIGAN_BENCH=1 (make bench) to measure worktree set-up against git")
	}
	runs, sizes := benchScale(t)
	hermeticHome(t, "")
	var lines []string
	for _, n := range sizes {
		lines = append(lines, worktreeCost(t, n, runs)...)
	}
	t.Logf("worktree set-up, medians of %d runs each (load %s, %s):\n%s", runs, loadAvg(), gitVersion(), strings.Join(lines, "\n"))
}

func worktreeCost(t *testing.T, n, runs int) []string {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "repo")
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, benchPath(i))
		if i%25 == 0 {
			mustMkdir(t, filepath.Dir(p))
		}
		mustWrite(t, p, benchContent(i, 0), 0o644)
	}
	runGit(t, dir, nil, "init", "-q")
	runGit(t, dir, nil, "add", "-A")
	runGit(t, dir, nil, "commit", "-q", "-m", "generated")
	runGit(t, dir, nil, "repack", "-a", "-d", "-q")
	runGit(t, dir, nil, "prune-packed")
	head := runGit(t, dir, nil, "rev-parse", "HEAD")
	for i := 0; i < 10; i++ {
		mustWrite(t, filepath.Join(dir, benchPath(i*(n/10))), benchContent(i, 1), 0o644)
	}
	runGit(t, dir, nil, "commit", "-q", "-am", "ten changed")
	next := runGit(t, dir, nil, "rev-parse", "HEAD")
	nextTree := runGit(t, dir, nil, "rev-parse", "HEAD^{tree}")
	headTree := runGit(t, dir, nil, "rev-parse", head+"^{tree}")

	repo, err := snapshot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	check := func(wt, tree string) {
		t.Helper()
		if st := runGit(t, wt, nil, "status", "--porcelain"); st != "" {
			t.Fatalf("%s: git status not clean:\n%.500s", wt, st)
		}
		if got := runGit(t, wt, nil, "rev-parse", "HEAD^{tree}"); got != tree {
			t.Fatalf("%s: HEAD's tree %s, want %s", wt, got, tree)
		}
	}
	var mFirst, mReuse, gFirst, gReuse []sample
	for run := 0; run < runs; run++ {
		mulligan := func() {
			w, err := repo.WorktreeFor(fmt.Sprintf("bench%d", run))
			if err != nil {
				t.Fatal(err)
			}
			s, wr := inProcess(t, func() (*snapshot.Repo, error) { return repo.SetWorktree(ctx, w, snapshot.NewHash(head)) })
			wr.Close()
			mFirst = append(mFirst, s)
			check(w.Dir, headTree)
			s, wr = inProcess(t, func() (*snapshot.Repo, error) { return repo.SetWorktree(ctx, w, snapshot.NewHash(next)) })
			wr.Close()
			mReuse = append(mReuse, s)
			check(w.Dir, nextTree)
			if err := repo.RemoveWorktree(w); err != nil {
				t.Fatal(err)
			}
		}
		git := func() {
			wt := filepath.Join(t.TempDir(), "gitwt")
			s, err := timed(dir, nil, nil, "git", "worktree", "add", "-q", "--detach", wt, head)
			if err != nil {
				t.Fatal(err)
			}
			gFirst = append(gFirst, s)
			check(wt, headTree)
			if s, err = timed(wt, nil, nil, "git", "checkout", "-q", "--detach", next); err != nil {
				t.Fatal(err)
			}
			gReuse = append(gReuse, s)
			check(wt, nextTree)
			runGit(t, dir, nil, "worktree", "remove", "--force", wt)
		}
		if run%2 == 0 {
			mulligan()
			git()
		} else {
			git()
			mulligan()
		}
	}
	row := func(name string, m, g []sample) string {
		return fmt.Sprintf("  %6d files  %-28s mulligan %9s (cpu %9s)  git %9s (cpu %9s)  ratio %s (cpu %s)", n, name,
			fmtDur(median(m)), fmtDur(medianCPU(m)), fmtDur(median(g)), fmtDur(medianCPU(g)),
			ratio(float64(median(m)), float64(median(g))), ratio(float64(medianCPU(m)), float64(medianCPU(g))))
	}
	return []string{row("first set-up", mFirst, gFirst), row("reused, 10 files differ", mReuse, gReuse)}
}

// inProcess times fn in this process: wall time, and CPU time from this process's rusage.
func inProcess(t *testing.T, fn func() (*snapshot.Repo, error)) (sample, *snapshot.Repo) {
	t.Helper()
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	r, err := fn()
	d := time.Since(start)
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if err != nil {
		t.Fatal(err)
	}
	cpu := time.Duration(after.Utime.Nano()-before.Utime.Nano()) + time.Duration(after.Stime.Nano()-before.Stime.Nano())
	return sample{d: d, cpu: cpu}, r
}
