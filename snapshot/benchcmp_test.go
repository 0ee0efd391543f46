package snapshot_test

// TestCompareWithGit is `make bench`'s comparison of mulligan with the git CLI
// on the same generated trees in the same run: snapshot (clean, 10 and 1000
// files changed, a new 64 MB file) and restore (10 and 1000 differing paths),
// medians of fresh processes and their peak RSS, each tool snapshotting content
// of its own that no tool has stored yet. It only prints; a timing
// never fails a test. It does fail when the two tools disagree on a tree id,
// because then the comparison would be meaningless.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/mulligan-dev/mulligan/snapshot"
)

// benchGenVersion names the generator; a cached tree made by another version is rebuilt.
const benchGenVersion = "mulligan-bench v1: 25 files a directory, 1-8 KB, xorshift hex lines\n"

// gitBestConfig is what git gets to be at its fastest on a big tree without a
// daemon: the untracked cache and a version-4 index (feature.manyFiles).
var gitBestConfig = []string{"-c", "core.untrackedCache=true", "-c", "index.version=4"}

func TestCompareWithGit(t *testing.T) {
	if os.Getenv("MULLIGAN_BENCH") != "1" {
		t.Skip("set MULLIGAN_BENCH=1 (make bench) to compare mulligan with git")
	}
	runs, sizes := benchScale(t)
	b := &bench{t: t, runs: runs}
	b.build() // before HOME moves: the go command finds its caches through it
	hermeticHome(t, "")
	t.Setenv("NO_COLOR", "1")
	b.probeCLI()

	var rows []benchRow
	for _, n := range sizes {
		dir := benchRepo(t, n)
		rows = append(rows, b.runSize(dir, n)...)
	}
	b.report(rows, sizes)
}

// benchScale reads MULLIGAN_BENCH_RUNS (runs per case, at least 5) and MULLIGAN_BENCH_SIZES
// (comma-separated file counts, at least 1000 each; default 10k and 100k).
func benchScale(t *testing.T) (runs int, sizes []int) {
	runs = 5
	if s := os.Getenv("MULLIGAN_BENCH_RUNS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 5 {
			t.Fatalf("MULLIGAN_BENCH_RUNS=%q: want an integer >= 5", s)
		}
		runs = v
	}
	sizes = []int{10000, 100000}
	if s := os.Getenv("MULLIGAN_BENCH_SIZES"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			v, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || v < 1000 {
				t.Fatalf("MULLIGAN_BENCH_SIZES=%q: want comma-separated integers >= 1000", s)
			}
			sizes = append(sizes, v)
		}
	}
	return runs, sizes
}

type bench struct {
	t    *testing.T
	runs int
	// The built binary, and for each command whether it works; when one does
	// not, that case times the in-process API instead, and the header says so.
	bin                    string
	snapErr, restoreErr    error
	useSnapCLI, useRestCLI bool
}

// sample is one measured run: wall time, CPU time (user + system, of the process and the
// children it waited for: the figure a loaded machine distorts least) and peak RSS in KB (0 when
// unknown).
type sample struct {
	d   time.Duration
	cpu time.Duration
	rss int64
}

type benchRow struct {
	name     string
	files    int
	mulligan []sample
	git      []sample
}

// build builds the binary from the module root, unless MULLIGAN_BENCH_BIN
// names one already built (to compare two versions, or a committed tree while
// the working tree is mid-edit).
func (b *bench) build() {
	if p := os.Getenv("MULLIGAN_BENCH_BIN"); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			b.snapErr = err
			b.restoreErr = err
		}
		b.bin = abs
		return
	}
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(gomod)) == "" {
		b.snapErr = fmt.Errorf("go env GOMOD: %v", err)
		b.restoreErr = b.snapErr
		return
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	b.bin = filepath.Join(b.t.TempDir(), "mulligan")
	build := exec.Command("go", "build", "-tags", "urfave_cli_no_docs", "-o", b.bin, ".") // make build's tags; make bench passes its static binary
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		b.snapErr = fmt.Errorf("go build: %v: %s", err, firstLine(fmt.Errorf("%s", out)))
		b.restoreErr = b.snapErr
	}
}

// probeCLI checks that `snapshot -o json` and `restore REV -o json` work in a
// scratch repository.
func (b *bench) probeCLI() {
	t := b.t
	defer func() {
		b.useSnapCLI, b.useRestCLI = b.snapErr == nil, b.restoreErr == nil
		if b.snapErr != nil {
			t.Logf("snapshot cases time the in-process API: %v", b.snapErr)
		}
		if b.restoreErr != nil {
			t.Logf("restore cases time the in-process API: %v", b.restoreErr)
		}
	}()
	if b.snapErr != nil {
		return
	}
	probe := filepath.Join(resolvedTempDir(t), "probe")
	mustMkdir(t, probe)
	runGit(t, probe, nil, "init", "-q")
	mustWrite(t, filepath.Join(probe, "a"), []byte("a\n"), 0o644)
	var snap struct{ Tree string }
	if err := runJSON(probe, b.bin, &snap, "snapshot", "-o", "json"); err != nil {
		b.snapErr = fmt.Errorf("mulligan snapshot -o json: %v", err)
	} else if want := gitWriteTree(t, probe); snap.Tree != want {
		b.snapErr = fmt.Errorf("mulligan snapshot printed tree %q, git says %s", snap.Tree, want)
	}
	want := gitWriteTree(t, probe)
	mustWrite(t, filepath.Join(probe, "a"), []byte("changed\n"), 0o644)
	var rest struct{ Tree string }
	if err := runJSON(probe, b.bin, &rest, "restore", want, "-o", "json"); err != nil {
		b.restoreErr = fmt.Errorf("mulligan restore REV -o json: %v", err)
	} else if got, _ := os.ReadFile(filepath.Join(probe, "a")); string(got) != "a\n" {
		b.restoreErr = fmt.Errorf("mulligan restore did not restore the probe file (%q)", got)
	}
}

func runJSON(dir, bin string, v any, args ...string) error {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(errb.String()))
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		return fmt.Errorf("output is not JSON: %v: %q", err, out.String())
	}
	return nil
}

// benchRepo returns a committed tree of n files, generated once and cached
// under os.TempDir() with a marker inside .git, reset to its commit.
func benchRepo(t *testing.T, n int) string {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("mulligan-bench-%d", n))
	marker := filepath.Join(dir, ".git", "mulligan-bench-ready")
	if b, err := os.ReadFile(marker); err == nil && string(b) == benchGenVersion {
		start := time.Now()
		runGit(t, dir, nil, "reset", "-q", "--hard", "HEAD")
		runGit(t, dir, nil, "clean", "-q", "-f", "-d")
		deleteRefs(t, dir, "refs/mulligan/", "refs/bench/")
		os.RemoveAll(filepath.Join(dir, ".git", "mulligan"))
		os.Remove(filepath.Join(dir, ".git", "bench-git-index"))
		t.Logf("%d files: reusing %s (reset in %v)", n, dir, time.Since(start).Round(time.Millisecond))
		return dir
	}
	start := time.Now()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	mustMkdir(t, dir)
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, benchPath(i))
		if i%25 == 0 {
			mustMkdir(t, filepath.Dir(p))
		}
		if err := os.WriteFile(p, benchContent(i, 0), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runGit(t, dir, nil, "init", "-q")
	runGit(t, dir, nil, "add", "-A")
	runGit(t, dir, nil, "commit", "-q", "-m", fmt.Sprintf("%d generated files", n))
	runGit(t, dir, nil, "repack", "-a", "-d", "-q")
	runGit(t, dir, nil, "prune-packed")
	mustWrite(t, marker, []byte(benchGenVersion), 0o644)
	t.Logf("%d files: generated and committed %s in %v", n, dir, time.Since(start).Round(time.Second))
	return dir
}

func deleteRefs(t *testing.T, dir string, prefixes ...string) {
	args := append([]string{"for-each-ref", "--format=delete %(refname)"}, prefixes...)
	out := runGit(t, dir, nil, args...)
	if out == "" {
		return
	}
	cmd := exec.Command("git", "update-ref", "--stdin")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(out + "\n")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git update-ref --stdin: %v\n%s", err, b)
	}
}

// benchPath spreads files 25 to a directory, 64 directories to a parent.
func benchPath(i int) string {
	d := i / 25
	return fmt.Sprintf("d%03d/s%02d/f%02d.txt", d/64, d%64, i%25)
}

// benchContent is 1-8 KB of hex lines, a function of (file, variant) only.
func benchContent(i, variant int) []byte {
	x := uint64(i)*0x9E3779B97F4A7C15 ^ uint64(variant+1)*0xBF58476D1CE4E5B9
	next := func() uint64 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return x
	}
	next()
	size := 1024 + int(next()%7169)
	const hexdigits = "0123456789abcdef"
	b := make([]byte, size)
	for j := range b {
		if j%64 == 63 {
			b[j] = '\n'
		} else {
			b[j] = hexdigits[next()&15]
		}
	}
	b[size-1] = '\n'
	return b
}

// benchSalt makes the content of every edit new to the object store: the cached bench repository
// keeps the objects of earlier `make bench` runs, and content one of them stored would measure
// not writing.
var benchSalt = int(time.Now().UnixNano()&(1<<40-1)) << 20

// editFiles rewrites k files chosen by run, with content of this process's own.
func editFiles(t *testing.T, dir string, n, k, run int) {
	for j := 0; j < k; j++ {
		i := (run*1000003 + j*7919) % n
		if err := os.WriteFile(filepath.Join(dir, benchPath(i)), benchContent(i, benchSalt+1+run*k+j), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// timed runs one process and measures it.
func timed(dir string, env []string, stdout io.Writer, name string, args ...string) (sample, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &errb
	start := time.Now()
	err := cmd.Run()
	s := sample{d: time.Since(start)}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			s.rss = int64(ru.Maxrss)
		}
		s.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return s, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return s, nil
}

// pipeline adds up the wall and CPU times of sequential processes; RSS is the largest.
type pipeline struct{ s sample }

func (p *pipeline) add(s sample) {
	p.s.d += s.d
	p.s.cpu += s.cpu
	p.s.rss = max(p.s.rss, s.rss)
}

// gitSnapshot is git's best snapshot pipeline with a private index kept
// between snapshots: add -A, write-tree, commit-tree, update-ref.
func (b *bench) gitSnapshot(dir, ref string) (sample, string) {
	t := b.t
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(dir, ".git", "bench-git-index")}
	var p pipeline
	var out bytes.Buffer
	step := func(args ...string) string {
		out.Reset()
		s, err := timed(dir, env, &out, "git", args...)
		if err != nil {
			t.Fatal(err)
		}
		p.add(s)
		return strings.TrimSpace(out.String())
	}
	step(append(append([]string{}, gitBestConfig...), "add", "-A")...)
	tree := step("write-tree")
	commit := step("commit-tree", tree, "-p", "HEAD", "-m", "bench snapshot")
	step("update-ref", ref, commit)
	return p.s, tree
}

// gitRestore is git's restore: the undo snapshot, then a two-tree read-tree
// -m -u from the current tree to the target on the same private index.
func (b *bench) gitRestore(dir, undoRef, target string) (sample, string) {
	s, cur := b.gitSnapshot(dir, undoRef)
	p := pipeline{s: s}
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(dir, ".git", "bench-git-index")}
	rs, err := timed(dir, env, io.Discard, "git", "read-tree", "-m", "-u", cur, target)
	if err != nil {
		b.t.Fatal(err)
	}
	p.add(rs)
	return p.s, cur
}

// mulliganSnapshot runs `mulligan snapshot -o json` (or, without the CLI, the
// API in this process).
func (b *bench) mulliganSnapshot(dir string) (sample, string) {
	t := b.t
	if !b.useSnapCLI {
		repo, err := snapshot.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer repo.Close()
		start := time.Now()
		res, err := repo.Snapshot(context.Background(), snapshot.SnapshotOptions{Ref: "refs/mulligan/manual/" + snapshot.NewID(time.Now()), Message: "bench"})
		if err != nil {
			t.Fatal(err)
		}
		return sample{d: time.Since(start)}, res.Tree.String()
	}
	var out bytes.Buffer
	s, err := timed(dir, nil, &out, b.bin, "snapshot", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct{ Tree string }
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("mulligan snapshot -o json printed %q: %v", out.String(), err)
	}
	return s, v.Tree
}

// mulliganRestore runs `mulligan restore REV -o json` and returns the number
// of changed paths it reports.
func (b *bench) mulliganRestore(dir, target string) (sample, int) {
	t := b.t
	if !b.useRestCLI {
		repo, err := snapshot.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer repo.Close()
		start := time.Now()
		res, err := repo.Restore(context.Background(), plumbing.NewHash(target), snapshot.RestoreOptions{UndoRef: "refs/mulligan/undo/" + snapshot.NewID(time.Now())})
		if err != nil {
			t.Fatal(err)
		}
		return sample{d: time.Since(start)}, len(res.Changes)
	}
	var out bytes.Buffer
	s, err := timed(dir, nil, &out, b.bin, "restore", target, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Changed []json.RawMessage
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("mulligan restore -o json printed %q: %v", out.String(), err)
	}
	return s, len(v.Changed)
}

func (b *bench) runSize(dir string, n int) []benchRow {
	t := b.t
	var rows []benchRow
	// Warm both private indexes and the page cache; not measured.
	_, mt := b.mulliganSnapshot(dir)
	_, gt := b.gitSnapshot(dir, "refs/bench/warm")
	if mt != gt {
		t.Errorf("%d files: mulligan's tree %s, git's %s", n, mt, gt)
	}

	// Each timed snapshot sees exactly the edit made for it, with content no tool has stored
	// yet: the tool that snapshots second must not find the objects the first one just wrote
	// (that measures writing against not writing). So every measurement gets its own fresh
	// edit, and afterwards the other tool snapshots the same tree untimed: that brings its
	// private index up to date (its next timed run sees only its own edit) and checks that
	// both tools give the same tree id.
	snapCase := func(name string, edit func(variant int)) {
		row := benchRow{name: name, files: n}
		for run := 0; run < b.runs; run++ {
			for slot := 0; slot < 2; slot++ {
				useMulligan := (run%2 == 0) == (slot == 0)
				edit(2*run + slot)
				ref := fmt.Sprintf("refs/bench/%s-%d-%d", strings.ReplaceAll(name, " ", "-"), run, slot)
				var mtree, gtree string
				if useMulligan {
					var s sample
					s, mtree = b.mulliganSnapshot(dir)
					row.mulligan = append(row.mulligan, s)
					_, gtree = b.gitSnapshot(dir, ref)
				} else {
					var s sample
					s, gtree = b.gitSnapshot(dir, ref)
					row.git = append(row.git, s)
					_, mtree = b.mulliganSnapshot(dir)
				}
				if mtree != gtree {
					t.Errorf("%s, %d files, run %d: mulligan's tree %s, git's %s", name, n, run, mtree, gtree)
				}
			}
		}
		rows = append(rows, row)
		t.Logf("%d files: %s done", n, name)
	}
	snapCase("snapshot clean", func(int) {})
	snapCase("snapshot 10 changed", func(v int) { editFiles(t, dir, n, 10, 100+v) })
	snapCase("snapshot 1000 changed", func(v int) { editFiles(t, dir, n, 1000, 200+v) })
	big := func(v int) string { return filepath.Join(dir, fmt.Sprintf("big-%d.bin", v)) }
	snapCase("snapshot new 64 MB file", func(v int) {
		if v > 0 {
			os.Remove(big(v - 1))
		}
		writeBigFile(t, big(v), 64<<20, uint64(benchSalt+v+11))
	})
	os.Remove(big(2*b.runs - 1))

	for _, k := range []int{10, 1000} {
		// Two trees k paths apart: the current one (base) and base with k edits.
		_, base := b.gitSnapshot(dir, fmt.Sprintf("refs/bench/restore-base-%d", k))
		editFiles(t, dir, n, k, 300+k)
		_, other := b.gitSnapshot(dir, fmt.Sprintf("refs/bench/restore-other-%d", k))
		env := []string{"GIT_INDEX_FILE=" + filepath.Join(dir, ".git", "bench-git-index")}
		runGit(t, dir, env, "read-tree", "-m", "-u", other, base)
		b.mulliganSnapshot(dir) // warm mulligan's private index at base

		row := benchRow{name: fmt.Sprintf("restore %d paths", k), files: n}
		state := base
		flip := func() string {
			if state == base {
				return other
			}
			return base
		}
		for run := 0; run < b.runs; run++ {
			for slot := 0; slot < 2; slot++ {
				useMulligan := (run%2 == 0) == (slot == 0)
				target := flip()
				if useMulligan {
					s, changed := b.mulliganRestore(dir, target)
					if changed != k {
						t.Errorf("restore %d paths, %d files: mulligan reported %d changed paths", k, n, changed)
					}
					row.mulligan = append(row.mulligan, s)
				} else {
					s, cur := b.gitRestore(dir, fmt.Sprintf("refs/bench/undo-%d-%d-%d", k, run, slot), target)
					if cur != state {
						t.Errorf("restore %d paths, %d files: the tree before git's restore was %s, want %s (did mulligan's restore write it?)", k, n, cur, state)
					}
					row.git = append(row.git, s)
				}
				state = target
			}
		}
		if _, cur := b.gitSnapshot(dir, fmt.Sprintf("refs/bench/restore-end-%d", k)); cur != state {
			t.Errorf("restore %d paths, %d files: final tree %s, want %s", k, n, cur, state)
		}
		rows = append(rows, row)
		t.Logf("%d files: restore %d paths done", n, k)
	}
	return append(rows, b.runCases(dir, n)...)
}

// furtherAttempts is how many attempts beyond the first the retrying run makes.
const furtherAttempts = 4

// runCases measures what a user pays for a run against one git snapshot of the same tree,
// interleaved in one loop (the order rotates every run): `mulligan run -- AGENT` whose agent
// edits one file and fails (base, pre, agent, post, the reset after the failure), and the same
// with --retries, whose difference over the extra attempts is the cost of each further attempt
// (reset to the base, pre, agent, post), and the one-attempt run again after git rewrote the
// user's index. Every agent writes content of its own; the trees the run recorded are checked
// against git's.
func (b *bench) runCases(dir string, n int) []benchRow {
	t := b.t
	if !b.useSnapCLI {
		t.Logf("run cases skipped: they need the CLI (%v)", b.snapErr)
		return nil
	}
	// Back to the committed tree (the snapshot and restore cases left their edits), so every
	// case starts from the same clean tree, the run's base.
	runGit(t, dir, nil, "reset", "-q", "--hard", "HEAD")
	runGit(t, dir, nil, "clean", "-q", "-f", "-d")
	victim := benchPath(n / 2)
	base := runGit(t, dir, nil, "rev-parse", "HEAD^{tree}")
	orig, err := os.ReadFile(filepath.Join(dir, victim))
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, ".git", "bench-victim-orig"), orig, 0o644)
	// The git pipeline's update-ref leaves a loose ref per snapshot, some 90 by now: refs the run
	// would read as the user's before and after every attempt (its git-state record), a load the
	// bench made for one side. A repository's own refs are mostly packed; these go.
	deleteRefs(t, dir, "refs/bench/")
	b.gitSnapshot(dir, "refs/bench/run-warm")
	b.mulliganSnapshot(dir)
	one := benchRow{name: "run: 1 attempt", files: n}
	further := benchRow{name: "run: each further attempt", files: n}
	// The same one-attempt run after git rewrote the user's index (as `git commit` or `git
	// status` do between two runs): the run reads the index afresh (snapshot and git-state
	// record) instead of trusting what the last run kept of it.
	touched := benchRow{name: "run: 1 attempt, index rewritten", files: n}
	git := benchRow{name: "git snapshot (the unit)", files: n}
	for run := 0; run < b.runs; run++ {
		var s1, r1, rk sample
		for slot := 0; slot < 5; slot++ {
			switch (run + slot) % 5 {
			case 4:
				runGit(t, dir, nil, "update-index", "--force-write-index", "--refresh") // untimed
				touched.mulligan = append(touched.mulligan,
					b.mulliganRun(dir, base, victim, fmt.Sprintf("touched-%d-%d", benchSalt, run), -1))
			case 0:
				ref := fmt.Sprintf("refs/bench/run-git-%d", run)
				s, _ := b.gitSnapshot(dir, ref)
				git.git = append(git.git, s)
				deleteRefs(t, dir, ref) // untimed: see above
			case 1:
				s1 = b.mulliganRun(dir, base, victim, fmt.Sprintf("one-%d-%d", benchSalt, run), -1)
			case 2:
				r1 = b.mulliganRun(dir, base, victim, fmt.Sprintf("retry0-%d-%d", benchSalt, run), 0)
			case 3:
				rk = b.mulliganRun(dir, base, victim, fmt.Sprintf("more-%d-%d", benchSalt, run), furtherAttempts)
			}
		}
		one.mulligan = append(one.mulligan, s1)
		further.mulligan = append(further.mulligan, sample{d: (rk.d - r1.d) / furtherAttempts, cpu: (rk.cpu - r1.cpu) / furtherAttempts, rss: rk.rss})
		// Each run's own figures: the table keeps medians and the largest RSS, this says which run
		// it was (the first after the set-up, one after a retrying run, ...).
		st, sg := touched.mulligan[len(touched.mulligan)-1], git.git[len(git.git)-1]
		t.Logf("%d files, run %d: 1 attempt %s (CPU %s, RSS %s); %d attempts %s (CPU %s, RSS %s); index rewritten, 1 attempt %s (CPU %s, RSS %s); git %s (CPU %s, RSS %s)",
			n, run, fmtDur(s1.d), fmtDur(s1.cpu), fmtKB(s1.rss), furtherAttempts+1, fmtDur(rk.d), fmtDur(rk.cpu), fmtKB(rk.rss),
			fmtDur(st.d), fmtDur(st.cpu), fmtKB(st.rss), fmtDur(sg.d), fmtDur(sg.cpu), fmtKB(sg.rss))
	}
	one.git, further.git, touched.git = git.git, git.git, git.git
	t.Logf("%d files: run cases done", n)
	return []benchRow{one, further, touched}
}

// mulliganRun runs `mulligan run` with an agent that writes its own content into victim and
// fails: ad hoc (retries < 0: the task fails and the tree goes back to base), or from a task
// file retrying `retries` times without backoff (the task ends blocked, retries exhausted, the
// tree as the last attempt left it; the same ending for any number of retries, so the
// difference of two such runs is what the further attempts cost). It checks that the run
// started from base and that the first and last attempts' post trees are git's trees of the
// same edits, and puts the victim back (untimed).
func (b *bench) mulliganRun(dir, base, victim, nonce string, retries int) sample {
	t := b.t
	agent := fmt.Sprintf(`printf '%%s attempt %%s\n' %s "$MULLIGAN_ATTEMPT" > %s; exit 1`, nonce, victim)
	args := []string{"run", "-o", "json"}
	if retries >= 0 {
		// A task file: the ad-hoc flags have no max_consecutive_failures, whose default (3)
		// would hold the task blocked before the last retry.
		spec, _ := json.Marshal(map[string]any{
			"version": 1,
			"agents":  map[string]any{"sh": map[string]any{"command": []string{"sh", "-c", agent}}},
			"tasks": []any{map[string]any{"id": "main", "prompt": "edit one file and fail", "agent": "sh",
				"on_failure": "retry", "retries": retries, "backoff": map[string]any{"kind": "fixed", "initial": "0s"},
				"max_consecutive_failures": retries + 2}},
		})
		file := filepath.Join(b.t.TempDir(), "retries.yaml")
		mustWrite(t, file, spec, 0o644) // JSON is YAML
		args = append(args, "-f", file)
	} else {
		args = append(args, "--", "sh", "-c", agent)
	}
	var out bytes.Buffer
	s, err := timed(dir, nil, &out, b.bin, args...)
	// The ad-hoc run fails (exit 1); the retrying one ends blocked, its retries exhausted (3).
	want := "exit status 1"
	if retries >= 0 {
		want = "exit status 3"
	}
	if err == nil || !strings.Contains(err.Error(), want+":") {
		t.Fatalf("%v (want %s)", err, want)
	}
	var v struct {
		BaseTree string `json:"base_tree"`
		Tasks    []struct {
			Attempts []struct {
				N    int
				Tree string
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil || len(v.Tasks) != 1 {
		t.Fatalf("mulligan run -o json printed %q: %v", out.String(), err)
	}
	if v.BaseTree != base {
		t.Errorf("run %s: base tree %s, git's tree of the clean checkout %s", nonce, v.BaseTree, base)
	}
	attempts := max(retries, 0) + 1
	if got := len(v.Tasks[0].Attempts); got != attempts {
		t.Fatalf("run %s: %d attempts, want %d", nonce, got, attempts)
	}
	if retries < 0 {
		if got := gitWriteTree(t, dir); got != base {
			t.Errorf("run %s: the tree after the failed run is %s, want the base %s", nonce, got, base)
		}
	}
	// Each attempt's post tree, against git's tree of the same edit (made again, untimed).
	victimPath := filepath.Join(dir, victim)
	orig, err := os.ReadFile(filepath.Join(dir, ".git", "bench-victim-orig"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range v.Tasks[0].Attempts {
		if a.N != 1 && a.N != attempts {
			continue
		}
		mustWrite(t, victimPath, []byte(fmt.Sprintf("%s attempt %d\n", nonce, a.N)), 0o644)
		if want := gitWriteTree(t, dir); a.Tree != want {
			t.Errorf("run %s attempt %d: post tree %s, git's %s", nonce, a.N, a.Tree, want)
		}
	}
	mustWrite(t, victimPath, orig, 0o644)
	return s
}

func median(ss []sample) time.Duration {
	return medianOf(ss, func(s sample) time.Duration { return s.d })
}

func medianCPU(ss []sample) time.Duration {
	return medianOf(ss, func(s sample) time.Duration { return s.cpu })
}

func medianOf(ss []sample, f func(sample) time.Duration) time.Duration {
	ds := make([]time.Duration, len(ss))
	for i, s := range ss {
		ds[i] = f(s)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	if len(ds) == 0 {
		return 0
	}
	if len(ds)%2 == 1 {
		return ds[len(ds)/2]
	}
	return (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
}

func maxRSS(ss []sample) int64 {
	var m int64
	for _, s := range ss {
		m = max(m, s.rss)
	}
	return m
}

func (b *bench) report(rows []benchRow, sizes []int) {
	var out bytes.Buffer
	how := func(cli bool, err error) string {
		if cli {
			return "CLI, a fresh process per run"
		}
		return fmt.Sprintf("IN-PROCESS API, no RSS (the CLI is not usable: %s)", firstLine(err))
	}
	fmt.Fprintf(&out, "mulligan vs git %s, median of %d runs; CPU = user+system of the process and its children; RSS = peak of any process in a run, max over runs\n", gitVersion(), b.runs)
	fmt.Fprintf(&out, "mulligan snapshot cases: %s\n", how(b.useSnapCLI, b.snapErr))
	fmt.Fprintf(&out, "mulligan restore cases:  %s\n", how(b.useRestCLI, b.restoreErr))
	fmt.Fprintf(&out, "git: %s add -A / write-tree / commit-tree / update-ref on a private index kept between runs; restore adds read-tree -m -u CUR TARGET\n", strings.Join(gitBestConfig, " "))
	fmt.Fprintf(&out, "run cases: mulligan run -- sh -c 'edit one file; exit 1' (1 attempt; and a task file with retries: %d, backoff fixed 0s, the difference / %d = each further attempt), against the git pipeline\n", furtherAttempts, furtherAttempts)
	fmt.Fprintf(&out, "snapshot cases: every timed run has an edit of its own, content no tool has stored; the other tool then snapshots the same tree untimed (tree ids compared)\n")
	fmt.Fprintf(&out, "machine: %d CPUs, load average %s\n\n", runtime.NumCPU(), loadAvg())
	tw := tabwriter.NewWriter(&out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tfiles\tmulligan\tgit\tratio\tmulligan CPU\tgit CPU\tCPU ratio\tmulligan RSS\tgit RSS\tRSS ratio\t")
	for _, r := range rows {
		m, g := median(r.mulligan), median(r.git)
		mc, gc := medianCPU(r.mulligan), medianCPU(r.git)
		mr, gr := maxRSS(r.mulligan), maxRSS(r.git)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.name, r.files, fmtDur(m), fmtDur(g), ratio(float64(m), float64(g)),
			fmtDur(mc), fmtDur(gc), ratio(float64(mc), float64(gc)), fmtKB(mr), fmtKB(gr), ratio(float64(mr), float64(gr)))
	}
	tw.Flush()
	// Flatness: restore of 10 paths on the largest tree vs the smallest.
	if len(sizes) > 1 {
		lo, hi := sizes[0], sizes[len(sizes)-1]
		var ml, mh, gl, gh time.Duration
		for _, r := range rows {
			if r.name != "restore 10 paths" {
				continue
			}
			switch r.files {
			case lo:
				ml, gl = median(r.mulligan), median(r.git)
			case hi:
				mh, gh = median(r.mulligan), median(r.git)
			}
		}
		fmt.Fprintf(&out, "\nrestore flatness, 10 differing paths, %d vs %d files (1.00x = flat; %.0fx = linear in files): mulligan %s, git %s\n",
			hi, lo, float64(hi)/float64(lo), ratio(float64(mh), float64(ml)), ratio(float64(gh), float64(gl)))
	}
	// The run-level figures, against their goals (SPEC's cost of an attempt).
	for _, n := range sizes {
		var one, further, touched *benchRow
		for i := range rows {
			if rows[i].files != n {
				continue
			}
			switch rows[i].name {
			case "run: 1 attempt":
				one = &rows[i]
			case "run: each further attempt":
				further = &rows[i]
			case "run: 1 attempt, index rewritten":
				touched = &rows[i]
			}
		}
		if one == nil || further == nil {
			continue
		}
		g, gc := float64(median(one.git)), float64(medianCPU(one.git))
		rss := max(maxRSS(one.mulligan), maxRSS(further.mulligan))
		fmt.Fprintf(&out, "run-level, %d files: one-attempt run %s of one git snapshot, CPU %s (goal <= 1.00x); each further attempt %s, CPU %s (goal <= 0.25x at 100k); peak RSS %s of git's (goal <= 1.50x at 100k)\n",
			n, ratio(float64(median(one.mulligan)), g), ratio(float64(medianCPU(one.mulligan)), gc),
			ratio(float64(median(further.mulligan)), g), ratio(float64(medianCPU(further.mulligan)), gc),
			ratio(float64(rss), float64(maxRSS(one.git))))
		if touched != nil {
			fmt.Fprintf(&out, "run-level, %d files, after git rewrote the index: one-attempt run %s, CPU %s, peak RSS %s\n",
				n, ratio(float64(median(touched.mulligan)), g), ratio(float64(medianCPU(touched.mulligan)), gc),
				ratio(float64(maxRSS(touched.mulligan)), float64(maxRSS(one.git))))
		}
	}
	os.Stdout.Write(out.Bytes())
	if p := os.Getenv("MULLIGAN_BENCH_OUT"); p != "" {
		if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
			b.t.Errorf("writing MULLIGAN_BENCH_OUT: %v", err)
		}
	}
}

func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func fmtDur(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
}

func fmtKB(kb int64) string {
	if kb == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f MB", float64(kb)/1024)
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

func gitVersion() string {
	out, _ := exec.Command("git", "version").Output()
	return strings.TrimPrefix(strings.TrimSpace(string(out)), "git version ")
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
