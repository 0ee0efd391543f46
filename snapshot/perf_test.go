package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// The in-package benchmarks: WriteTree on generated, committed trees, with nothing changed
// (what every attempt's pre/post snapshot usually costs) and with ten files changed. `make
// bench` also runs the comparison against the git CLI (benchcmp_test.go).
//
//	go test -run '^$' -bench WriteTree -benchmem ./snapshot/
//	MULLIGAN_BENCH_LARGE=1 go test -run '^$' -bench WriteTree -benchmem ./snapshot/

func BenchmarkWriteTreeClean_10k(b *testing.B)     { benchWriteTree(b, 10_000, 0) }
func BenchmarkWriteTreeChanged10_10k(b *testing.B) { benchWriteTree(b, 10_000, 10) }
func BenchmarkWriteTreeClean_100k(b *testing.B)    { benchWriteTree(b, 100_000, 0) }

// BenchmarkWriteTreeCleanUntracked_10k: none of the files is in the user's index, so every one is
// content mulligan hashed itself, checked to still exist in the object store on each snapshot.
func BenchmarkWriteTreeCleanUntracked_10k(b *testing.B) { benchWriteTreeIn(b, genFiles(b, 10_000), 0) }
func BenchmarkWriteTreeChanged10_100k(b *testing.B) {
	benchWriteTree(b, 100_000, 10)
}

// genTree writes n small files, 25 to a directory, two directory levels deep, and commits them.
func genTree(tb testing.TB, n int) string {
	tb.Helper()
	dir := genFiles(tb, n)
	runGit(tb, dir, "add", "-A")
	runGit(tb, dir, "commit", "-qm", "generated")
	return dir
}

// genFiles writes genTree's files into a new repository without adding them.
func genFiles(tb testing.TB, n int) string {
	tb.Helper()
	dir := newGitRepo(tb)
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, benchFile(i))
		if i%25 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(p, benchBody(i, 0), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

func benchFile(i int) string {
	return fmt.Sprintf("d%03d/s%02d/f%06d.txt", i/1000, i/25%40, i)
}

func benchBody(i, variant int) []byte {
	return []byte(fmt.Sprintf("file %d variant %d\n%0*d\n", i, variant, 64+i%200, i))
}

func benchWriteTree(b *testing.B, n, changed int) {
	if n > 10_000 && os.Getenv("MULLIGAN_BENCH_LARGE") != "1" {
		b.Skip("set MULLIGAN_BENCH_LARGE=1 for the 100k-file benchmarks")
	}
	benchWriteTreeIn(b, genTree(b, n), changed)
}

func benchWriteTreeIn(b *testing.B, dir string, changed int) {
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && !strings.Contains(p, "/.git/") {
			n++
		}
		return nil
	})
	r := openRepo(b, dir)
	ctx := context.Background()
	// Warm up: the first snapshot seeds the private index from the user's index.
	for i := 0; i < 2; i++ {
		if _, err := r.WriteTree(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		if changed > 0 {
			b.StopTimer()
			for k := 0; k < changed; k++ {
				i := (it*changed + k) * 7919 % n
				if err := os.WriteFile(filepath.Join(dir, benchFile(i)), benchBody(i, it+1), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
		}
		res, err := r.WriteTree(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if res.Files != n {
			b.Fatalf("Files = %d, want %d", res.Files, n)
		}
	}
}

// TestEngineVersusGit times WriteTree in a fresh process against git on the same tree in the
// same run (`cp index T; GIT_INDEX_FILE=T git add -A; git write-tree`), clean and with ten files
// changed, and prints medians and peak RSS. It only prints: timings never fail a test.
//
//	MULLIGAN_BENCH_LARGE=1 go test -run TestEngineVersusGit -v ./snapshot/
//	MULLIGAN_BENCH_FILES=10000 MULLIGAN_BENCH_LARGE=1 go test -run TestEngineVersusGit -v ./snapshot/
func TestEngineVersusGit(t *testing.T) {
	if os.Getenv("MULLIGAN_BENCH_LARGE") != "1" {
		t.Skip("set MULLIGAN_BENCH_LARGE=1 to compare WriteTree with git on a 100k-file tree")
	}
	n := 100_000
	if s := os.Getenv("MULLIGAN_BENCH_FILES"); s != "" {
		fmt.Sscan(s, &n)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := genTree(t, n)
	runs := 7
	type sample struct {
		wall time.Duration
		rss  int64 // KiB
	}
	// Peak RSS comes from GNU time: a child forked from this (large) test process would report
	// the parent's RSS at fork time as its own high-water mark.
	timeBin, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		t.Skip("needs GNU time (/usr/bin/time) to measure peak RSS")
	}
	rssFile := filepath.Join(t.TempDir(), "rss")
	run := func(name string, args []string, env []string, wantTree string) (sample, string) {
		args = append([]string{"-f", "%M", "-o", rssFile, name}, args...)
		name = timeBin
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		var out bytes.Buffer
		cmd.Stdout = &out
		cmd.Stderr = os.Stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s := sample{wall: time.Since(start)}
		data, _ := os.ReadFile(rssFile)
		fmt.Sscan(strings.TrimSpace(string(data)), &s.rss)
		tree, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n") // the test binary adds PASS
		if wantTree != "" && tree != wantTree {
			t.Fatalf("%s gave tree %q, want %q", name, tree, wantTree)
		}
		return s, tree
	}
	gitRef := func() (sample, string) {
		return run("sh", []string{"-c", `cp .git/index "$T" && GIT_INDEX_FILE="$T" git add -A && GIT_INDEX_FILE="$T" git write-tree`},
			[]string{"T=" + filepath.Join(t.TempDir(), "index")}, "")
	}
	engine := func(want string) sample {
		s, _ := run(exe, []string{"-test.run=^TestEngineChild$"}, []string{"MULLIGAN_ENGINE_CHILD=" + dir}, want)
		return s
	}
	median := func(ss []sample) (time.Duration, int64) {
		sort.Slice(ss, func(i, j int) bool { return ss[i].wall < ss[j].wall })
		var rss int64
		for _, s := range ss {
			rss = max(rss, s.rss)
		}
		return ss[len(ss)/2].wall, rss
	}
	_, tree := gitRef()
	engine(tree) // seeds the private index
	engine(tree)
	for _, changed := range []int{0, 10} {
		var gs, es []sample
		for it := 0; it < runs; it++ {
			if changed > 0 {
				for k := 0; k < changed; k++ {
					i := (it*changed + k) * 7919 % n
					os.WriteFile(filepath.Join(dir, benchFile(i)), benchBody(i, 100+it), 0o644)
				}
			}
			// Alternate who goes first so neither always meets a warmer cache.
			if it%2 == 0 {
				g, tr := gitRef()
				gs, es = append(gs, g), append(es, engine(tr))
			} else {
				e := engine("")
				g, _ := gitRef()
				gs, es = append(gs, g), append(es, e)
			}
		}
		gw, grss := median(gs)
		ew, erss := median(es)
		t.Logf("%d files, %d changed: git %v (peak RSS %d KiB), engine %v (peak RSS %d KiB): engine/git = %.2f",
			n, changed, gw.Round(time.Millisecond), grss, ew.Round(time.Millisecond), erss, float64(ew)/float64(gw))
	}
}

// TestEngineChild is TestEngineVersusGit's child process: one WriteTree, the tree id on stdout.
func TestEngineChild(t *testing.T) {
	dir := os.Getenv("MULLIGAN_ENGINE_CHILD")
	if dir == "" {
		t.Skip("child process of TestEngineVersusGit")
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.WriteTree(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	fmt.Println(res.Tree)
}
