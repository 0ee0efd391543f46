package snapshot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
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
func BenchmarkWriteTreeChanged10_100k(b *testing.B) {
	benchWriteTree(b, 100_000, 10)
}

// genTree writes n small files, 25 to a directory, two directory levels deep, and commits them.
func genTree(tb testing.TB, n int) string {
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
	runGit(tb, dir, "add", "-A")
	runGit(tb, dir, "commit", "-qm", "generated")
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
	dir := genTree(b, n)
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
