package main

// TestRunOverhead is `make bench`'s measure of what a run costs beyond the agent: `mulligan run
// -- true` against `true` itself on generated 10k- and 100k-file trees (mostly the pre and post
// snapshots, so it is set beside one git snapshot pipeline on the same tree), and the latency of
// `ls` and `show` over a history of 10,000 runs and 100,000 attempts. It prints; a timing never
// fails a test.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

func TestRunOverhead(t *testing.T) {
	if os.Getenv("MULLIGAN_BENCH") != "1" {
		t.Skip("set MULLIGAN_BENCH=1 (make bench) to measure the run overhead")
	}
	// make bench passes the binary make build made (MULLIGAN_BENCH_BIN); else one is built here,
	// with make build's tags but linked dynamically.
	bin := os.Getenv("MULLIGAN_BENCH_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "mulligan")
		if out, err := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	env := benchEnv(t)
	const runs = 5
	sizes := []int{10000, 100000}
	if s := os.Getenv("MULLIGAN_BENCH_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("MULLIGAN_BENCH_SIZES=%q", s)
			}
			sizes = append(sizes, n)
		}
	}
	fmt.Printf("\nrun overhead (median of %d fresh processes)\n", runs)
	fmt.Printf("%-8s %12s %18s %12s %22s %10s\n", "files", "true", "mulligan run", "overhead", "git snapshot pipeline", "ratio")
	for _, n := range sizes {
		dir := runBenchTree(t, env, n)
		mustRun(t, dir, env, bin, "snapshot") // seeds the private index, as any earlier run would
		trueT := medianOf(t, runs, func() { mustRun(t, dir, env, "true") })
		runT := medianOf(t, runs, func() { mustRun(t, dir, env, bin, "run", "--", "true") })
		idx := filepath.Join(t.TempDir(), "index")
		gitEnv := append(append([]string{}, env...), "GIT_INDEX_FILE="+idx)
		mustRun(t, dir, gitEnv, "git", "add", "-A")
		gitT := medianOf(t, runs, func() {
			mustRun(t, dir, gitEnv, "git", "add", "-A")
			mustRun(t, dir, gitEnv, "git", "write-tree")
		})
		over := runT - trueT
		fmt.Printf("%-8d %12s %18s %12s %22s %9.2fx\n", n, trueT.Round(time.Millisecond), runT.Round(time.Millisecond),
			over.Round(time.Millisecond), gitT.Round(time.Millisecond), float64(over)/float64(gitT))
	}

	// ls and show over a large history.
	dir := filepath.Join(t.TempDir(), "history")
	os.MkdirAll(dir, 0o755)
	mustRun(t, dir, env, "git", "init", "-q")
	dbPath := filepath.Join(dir, ".git", "mulligan", "mulligan.db")
	last := fillHistory(t, dbPath, 10000, 10)
	lsT := medianOf(t, runs, func() { mustRun(t, dir, env, bin, "ls") })
	lsJ := medianOf(t, runs, func() { mustRun(t, dir, env, bin, "ls", "-o", "json") })
	showT := medianOf(t, runs, func() { mustRun(t, dir, env, bin, "show", last) })
	showJ := medianOf(t, runs, func() { mustRun(t, dir, env, bin, "show", last, "-o", "json") })
	fmt.Printf("\nhistory of 10,000 runs and 100,000 attempts (median of %d processes)\n", runs)
	fmt.Printf("  ls           %s\n  ls -o json   %s\n  show RUN     %s\n  show -o json  %s\n",
		lsT.Round(time.Millisecond), lsJ.Round(time.Millisecond), showT.Round(time.Millisecond), showJ.Round(time.Millisecond))
}

func benchEnv(t *testing.T) []string {
	home := t.TempDir()
	cfg := filepath.Join(home, ".gitconfig")
	os.WriteFile(cfg, []byte("[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n[commit]\n\tgpgSign = false\n[maintenance]\n\tauto = false\n[gc]\n\tauto = 0\n"), 0o600)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "HOME=") &&
			!strings.HasPrefix(kv, "XDG_DATA_HOME=") && !strings.HasPrefix(kv, "MULLIGAN_WORKTREES=") {
			env = append(env, kv)
		}
	}
	// mulligan's worktrees (isolated tasks, best_of) go under this HOME, never the user's.
	return append(env, "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"GIT_CONFIG_GLOBAL="+cfg, "GIT_CONFIG_NOSYSTEM=1", "NO_COLOR=1", "LC_ALL=C")
}

// runBenchTree makes (once, cached in the temp dir) a committed tree of n files, 25 a directory,
// 1–8 KB each, with deterministic content.
func runBenchTree(t *testing.T, env []string, n int) string {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("mulligan-runbench-%d", n))
	marker := filepath.Join(dir, ".git", "mulligan-runbench-ok")
	if _, err := os.Stat(marker); err == nil {
		mustRun(t, dir, env, "git", "reset", "-q", "--hard")
		mustRun(t, dir, env, "git", "clean", "-qfdx")
		return dir
	}
	os.RemoveAll(dir)
	x := uint64(88172645463325252)
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%03d/s%02d", i/2500, (i/25)%100), fmt.Sprintf("f%06d.txt", i))
		if i%25 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		size := 1024 + int(x%7168)
		var b strings.Builder
		for b.Len() < size {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			b.WriteString(strconv.FormatUint(x, 16))
			b.WriteByte('\n')
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, dir, env, "git", "init", "-q")
	mustRun(t, dir, env, "git", "add", "-A")
	mustRun(t, dir, env, "git", "commit", "-qm", "bench tree")
	os.WriteFile(marker, nil, 0o644)
	return dir
}

// fillHistory writes runs×attempts rows straight through the store and returns the newest run id.
func fillHistory(t *testing.T, path string, runs, attemptsPer int) string {
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	start := time.Now().Add(-time.Duration(runs) * time.Minute)
	var last string
	for i := 0; i < runs; i += 100 {
		err := db.Update(ctx, func(tx *store.Tx) error {
			for j := i; j < i+100 && j < runs; j++ {
				at := start.Add(time.Duration(j) * time.Minute)
				id := fmt.Sprintf("%010s", strconv.FormatInt(at.UnixMilli(), 36))
				r := &store.Run{ID: id, Worktree: "/bench", State: store.RunFailed, StartedAt: at,
					Tasks: []store.Task{{ID: "main", State: store.TaskFailed, Needs: []string{}}}}
				if err := tx.InsertRun(r); err != nil {
					return err
				}
				for n := 1; n <= attemptsPer; n++ {
					fin := at.Add(time.Second)
					a := &store.Attempt{RunID: id, TaskID: "main", N: n, Agent: "fake", State: store.AttemptFailed,
						Class: "agent_exit", Message: "agent exited with status 1", StartedAt: at, FinishedAt: &fin,
						Prompt: "Make the tests pass.", Counted: true}
					if err := tx.InsertAttempt(a); err != nil {
						return err
					}
				}
				last = id
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return last
}

func mustRun(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	c := exec.Command(name, args...)
	c.Dir, c.Env = dir, env
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

func medianOf(t *testing.T, n int, f func()) time.Duration {
	ds := make([]time.Duration, n)
	for i := range ds {
		start := time.Now()
		f()
		ds[i] = time.Since(start)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[n/2]
}
