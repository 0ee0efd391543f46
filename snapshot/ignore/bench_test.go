package ignore

import (
	"fmt"
	"testing"
)

// realisticGitignore is the kind of root .gitignore a Go and web project
// carries: mostly literal basenames and extensions, a few anchored and
// "**" patterns, and negations.
const realisticGitignore = `# Binaries
*.exe
*.exe~
*.dll
*.so
*.dylib
*.o
*.a
*.test
*.out
/bin/
/dist/

# Editors and OS
.idea/
.vscode/
*.swp
*~
.DS_Store
Thumbs.db

# Dependencies
node_modules/
vendor/
!vendor/modules.txt

# Build output
build/
coverage/
*.pyc
__pycache__/
.cache/
tmp/
*.log
!important.log
**/testdata/golden/*.actual
docs/**/*.html
.env
.env.*
!.env.example
`

// benchPaths returns n paths of a tree shaped like a monorepo.
func benchPaths(n int) []string {
	exts := []string{".go", ".ts", ".js", ".md", ".json", "_test.go", ".o", ".log", ".yaml", ".txt"}
	dirs := []string{"cmd/app", "internal/store", "internal/api/v1", "web/src/components", "web/src/pages",
		"docs/guide", "pkg/util", "testdata/golden", "scripts", "deploy/k8s"}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s/sub%d/file%d%s", dirs[i%len(dirs)], i%37, i, exts[(i/7)%len(exts)])
	}
	return out
}

// BenchmarkIgnored asks about 100k untracked paths, as a snapshot walk of a
// 100k-file tree does, against a realistic root .gitignore, info/exclude,
// an excludes file and one nested .gitignore.
func BenchmarkIgnored(b *testing.B) {
	paths := benchPaths(100_000)
	m := NewMatcher(Parse([]byte("*.swp\n.direnv/\n"), ""), Parse([]byte("/local/\n"), "")).
		Child("", []byte(realisticGitignore)).
		Child("web", []byte("/dist/\n*.map\n"))
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; i < b.N; i++ {
		for _, p := range paths {
			if m.Ignored(p, false) {
				n++
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(paths)), "ns/path")
	if n == 0 {
		b.Fatal("nothing ignored: the benchmark measures nothing")
	}
}

// BenchmarkIgnoredPath is the same with the parent-directory checks that a
// caller without a walk pays.
func BenchmarkIgnoredPath(b *testing.B) {
	paths := benchPaths(100_000)
	m := NewMatcher().Child("", []byte(realisticGitignore))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range paths {
			m.IgnoredPath(p, false)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(paths)), "ns/path")
}
