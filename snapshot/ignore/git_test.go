package ignore

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The tests in this file compare the package with the real git binary,
// which stays the authority on what is ignored. They skip when git is not
// installed; every git they run is hermetic (temporary HOME and global
// config, no system config, C locale).

// gitRepo is a scratch repository whose working tree the tests rewrite.
type gitRepo struct {
	t        testing.TB
	dir      string
	env      []string
	excludes string // path of the file core.excludesFile names
}

func newGitRepo(t testing.TB) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	home := t.TempDir()
	cfg := filepath.Join(home, "gitconfig")
	writeFile(t, cfg, "[user]\n\tname = Test\n\temail = test@example.com\n"+
		"[init]\n\tdefaultBranch = main\n[commit]\n\tgpgSign = false\n[maintenance]\n\tauto = false\n")
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || k == "HOME" || k == "XDG_CONFIG_HOME" || k == "LANG" || strings.HasPrefix(k, "LC_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "xdg"),
		"GIT_CONFIG_GLOBAL="+cfg, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	r := &gitRepo{t: t, dir: t.TempDir(), env: env, excludes: filepath.Join(home, "excludes")}
	r.git(nil, "init", "-q")
	r.git(nil, "config", "core.excludesFile", r.excludes)
	r.matchVersion()
	return r
}

// matchVersion sets retainPrefixByte to the match_pathname rule of the
// installed git: older releases let "foo**/bar" match "foobar".
func (r *gitRepo) matchVersion() {
	r.t.Helper()
	r.reset(root("foo**/bar\n"))
	r.create("foobar", false)
	old := retainPrefixByte
	retainPrefixByte = !r.checkIgnore([]string{"foobar"})["foobar"].ignored()
	r.t.Cleanup(func() { retainPrefixByte = old })
}

// git runs git in the repository and fails the test on an error exit,
// except exit 1, which check-ignore uses for "nothing ignored".
func (r *gitRepo) git(stdin []byte, args ...string) []byte {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1 && stderr.Len() == 0) {
		r.t.Fatalf("git %q: %v\n%s", args, err, stderr.Bytes())
	}
	return out
}

// reset empties the working tree and writes s: its .gitignore files,
// info/exclude and the excludes file.
func (r *gitRepo) reset(s setup) {
	r.t.Helper()
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(r.dir, e.Name())); err != nil {
				r.t.Fatal(err)
			}
		}
	}
	writeFile(r.t, filepath.Join(r.dir, ".git", "info", "exclude"), s.info)
	writeFile(r.t, r.excludes, s.excludes)
	for d, content := range s.gitignore {
		writeFile(r.t, filepath.Join(r.dir, d, ".gitignore"), content)
	}
}

// create makes path in the working tree, as a directory or a file.
func (r *gitRepo) create(path string, isDir bool) {
	r.t.Helper()
	full := filepath.Join(r.dir, filepath.FromSlash(path))
	if isDir {
		if err := os.MkdirAll(full, 0o755); err != nil {
			r.t.Fatal(err)
		}
		return
	}
	if _, err := os.Lstat(full); err == nil {
		return // e.g. a .gitignore that is also a test path
	}
	writeFile(r.t, full, "x\n")
}

// verdict is one answer of `git check-ignore -v -n`.
type verdict struct {
	source, line, pattern string
}

func (v verdict) ignored() bool { return v.pattern != "" && v.pattern[0] != '!' }

// checkIgnore asks git about paths, which must exist in the working tree.
func (r *gitRepo) checkIgnore(paths []string) map[string]verdict {
	r.t.Helper()
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	out := r.git(in.Bytes(), "check-ignore", "--no-index", "--stdin", "-z", "-v", "-n")
	fields := strings.Split(string(out), "\x00")
	if len(fields) > 0 && fields[len(fields)-1] == "" {
		fields = fields[:len(fields)-1]
	}
	if len(fields) != 4*len(paths) {
		r.t.Fatalf("check-ignore gave %d fields for %d paths: %q", len(fields), len(paths), out)
	}
	res := make(map[string]verdict, len(paths))
	for i := 0; i < len(fields); i += 4 {
		res[fields[i+3]] = verdict{fields[i], fields[i+1], fields[i+2]}
	}
	return res
}

func writeFile(t testing.TB, name, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ours returns our answer for path in check-ignore's terms.
func (r *gitRepo) ours(s setup, path string, isDir bool) verdict {
	c := s.matcherFor(path)
	p := c.decide(path, isDir)
	if p == nil {
		return verdict{}
	}
	return verdict{source: c.source(p, r.excludes), line: strconv.Itoa(p.Line()), pattern: p.String()}
}

// compare checks our verdict on each path against git's, naming the
// setup in the failure.
func compare(t *testing.T, r *gitRepo, s setup, paths []string, isDir map[string]bool) {
	t.Helper()
	theirs := r.checkIgnore(paths)
	for _, p := range paths {
		want := theirs[p]
		got := r.ours(s, p, isDir[p])
		if got != want {
			t.Errorf("path %q (dir %v), setup %q:\n git:  %+v\n ours: %+v", p, isDir[p], s, want, got)
		}
		if ign := s.matcherFor(p).m.IgnoredPath(p, isDir[p]); ign != want.ignored() {
			t.Errorf("path %q (dir %v), setup %q: IgnoredPath = %v, git says %v", p, isDir[p], s, ign, want.ignored())
		}
	}
}

func TestRulesAgainstGit(t *testing.T) {
	r := newGitRepo(t)
	for _, c := range ruleCases {
		r.reset(c.s)
		for d := range c.s.gitignore {
			if d != "" {
				r.create(d, true)
			}
		}
		r.create(c.path, c.isDir)
		v := r.checkIgnore([]string{c.path})[c.path]
		if v.ignored() != c.want {
			t.Errorf("%s: git says %q ignored=%v (%+v), table says %v", c.name, c.path, v.ignored(), v, c.want)
		}
		if got := r.ours(c.s, c.path, c.isDir); got != v {
			t.Errorf("%s: path %q:\n git:  %+v\n ours: %+v", c.name, c.path, v, got)
		}
		if got := c.s.matcherFor(c.path).m.IgnoredPath(c.path, c.isDir); got != v.ignored() {
			t.Errorf("%s: IgnoredPath(%q) = %v, git says %v", c.name, c.path, got, v.ignored())
		}
	}
}

// matrixFiles is the working tree of the matrix test; it is created at the
// root and again below nest/, with a symlink to a directory in each.
var matrixFiles = []string{
	"foo", "foo.o", "foo.txt", "Foo", "bar.c", ".env", "#notes", "!imp", "sp ace", "tail ",
	"a[1]", "star*", "q?", `back\s`, "x.log", "README.md", "axxb", "ab", "tab\t",
	"bar/foo", "bar/baz.o", "bar/sub/foo.txt", "bar/sub/deeper/x.o",
	"build/out.bin", "build/keep/me.txt",
	"src/build/gen.go", "src/main.go", "src/lib/util.go", "src/lib/util_test.go",
	"doc/a.md", "doc/sub/b.md", "doc/sub/deeper/c.md",
	"deep/a/b/c/foo", "deep/a/b/c/d.txt",
	"logs/app.log", "logs/debug/err.log",
	"node_modules/pkg/index.js",
	"abc/x", "abc/y/z", "x/abc/q",
	"a/b", "a/x/b", "a/x/y/b", "a/bb",
	"sub/foo/bar", "sub/foo.txt",
}

// matrixPatterns are .gitignore contents, each tried alone at the root and
// alone in nest/.gitignore.
var matrixPatterns = []string{
	"foo", "/foo", "foo/", "/foo/", "*.o", "*.txt", "!foo", "Foo", "*.O", "bar", "bar/", "/bar/",
	"bar/*", "bar/**", "bar/**/foo.txt", "**/foo", "**/foo/bar", "**/sub", "**/sub/", "sub/**/",
	"a/**/b", "a/*/b", "a/**", "**", "*", "*/", "/*", "/*/", "?", "??", "a?", "[ab]", "[!ab]*",
	"[^a]*", "[a-c]*", "a[[]1]", "a\\[1]", "star\\*", "star*", "q\\?", "q?", "back\\\\s",
	"\\#notes", "#notes", "\\!imp", "!imp", "sp ace", "sp\\ ace", "tail", "tail\\ ", "tail\\ \\ ",
	"x.log  ", "tab\t", "*.log\n!x.log", "logs/\n!logs/app.log", "logs/*\n!logs/app.log",
	"/logs/**\n!/logs/debug/", "doc/**/*.md", "doc/*/*.md", "doc/**", "doc/**/", "**/deeper",
	"**/deeper/", "deep/**/c", "deep/*/*/c/", "abc", "/abc", "abc/", "*/abc", "x/abc",
	"src/build/", "build/", "/build/", "build/*\n!build/keep/", "build/\n!build/keep/",
	"[[:upper:]]*", "[[:punct:]]*", "[[:space:]]*", "*[[:space:]]", "[[:alpha:]][[:alpha:]]",
	"[[:alnum:]_]*", "[[:bogus:]]*", "[z-a]*", "[]]", "[!]]*", "linkdir", "linkdir/", ".env", ".*",
	"*.[oc]", "*.[!o]", "a**b", "a***b", "***", "a/**/**/b", "**/**/foo", "foo**", "**foo",
	"*foo", "f*o", "node_modules", "node_modules/", "**/node_modules/**", "src/**/*_test.go",
	"*_test.go", "src/lib", "lib/", "nest", "nest/", "/nest/foo", "nest/foo",
	"README.md\n!README.md", "!README.md\nREADME.md", "\n\n", "# comment only",
	"*\n!*/\n!*.go", "/*\n!/src/", "*\n!/src/\n!/src/**", "\xef\xbb\xbffoo.txt", "foo.txt\r",
	"**/b/**", "a/**/", "/a/*", "*/*", "*/*/*", "**/*.md", "doc/**/deeper/**", "a\\", "a/x/**/b",
}

func TestMatrixAgainstGit(t *testing.T) {
	r := newGitRepo(t)
	var paths []string
	isDir := map[string]bool{}
	for _, prefix := range []string{"", "nest/"} {
		for _, f := range matrixFiles {
			p := prefix + f
			for i := 0; i < len(p); i++ {
				if p[i] == '/' && !isDir[p[:i]] {
					isDir[p[:i]] = true
					paths = append(paths, p[:i])
				}
			}
			paths = append(paths, p)
		}
		paths = append(paths, prefix+"linkdir")
	}
	r.reset(setup{})
	for _, p := range paths {
		if filepath.Base(p) != "linkdir" {
			r.create(p, isDir[p])
		}
	}
	for _, prefix := range []string{"", "nest/"} {
		if err := os.Symlink("bar", filepath.Join(r.dir, prefix+"linkdir")); err != nil {
			t.Fatal(err)
		}
	}
	for _, pat := range matrixPatterns {
		for _, where := range []string{"", "nest"} {
			s := setup{gitignore: map[string]string{where: pat + "\n"}}
			// Only the two .gitignore files change between rounds.
			for _, d := range []string{"", "nest"} {
				writeFile(t, filepath.Join(r.dir, d, ".gitignore"), s.gitignore[d])
			}
			compare(t, r, s, paths, isDir)
		}
	}
}

func TestSourcesAgainstGit(t *testing.T) {
	r := newGitRepo(t)
	setups := []setup{
		{excludes: "*.md\n*.log\n", info: "!README.md\n", gitignore: map[string]string{"": "!x.log\n", "doc": "README.md\n"}},
		{excludes: "build/\n", info: "!build/\n", gitignore: map[string]string{"sub": "build\n"}},
		{excludes: "!*.o\n", info: "*.o\n"},
		{info: "*.txt\n", gitignore: map[string]string{"": "!a.txt\n", "sub": "a.txt\n", "sub/deeper": "!*\n"}},
	}
	paths := []string{"README.md", "x.log", "y.log", "doc", "doc/README.md", "doc/x.md", "build", "build/f",
		"sub", "sub/build", "sub/build/f", "a.o", "sub/a.o", "a.txt", "b.txt", "sub/a.txt", "sub/b.txt",
		"sub/deeper", "sub/deeper/a.txt"}
	isDir := map[string]bool{"doc": true, "build": true, "sub": true, "sub/build": true, "sub/deeper": true}
	for _, s := range setups {
		r.reset(s)
		for _, p := range paths {
			r.create(p, isDir[p])
		}
		compare(t, r, s, paths, isDir)
	}
}

// realisticTree is a small project with nested .gitignore files; the walk
// test lists it the way a snapshot would and compares with git.
var realisticTree = map[string]string{
	".gitignore":                  realisticGitignore,
	"README.md":                   "",
	"main.go":                     "",
	"main.o":                      "",
	".DS_Store":                   "",
	"bin/tool":                    "",
	"cmd/app/main.go":             "",
	"cmd/app/app.test":            "",
	"web/.gitignore":              "!dist/\ndist/*\n!dist/keep.js\n/local.json\n",
	"web/dist/bundle.js":          "",
	"web/dist/keep.js":            "",
	"web/local.json":              "",
	"web/src/local.json":          "",
	"web/node_modules/x/index.js": "",
	"web/src/app.ts":              "",
	"vendor/.gitignore":           "!*\n",
	"vendor/lib/a.go":             "",
	"logs/.gitignore":             "!important.log\n",
	"logs/important.log":          "",
	"logs/other.log":              "",
	"tmp/cache/x":                 "",
	"docs/build/index.html":       "",
	"docs/guide.md":               "",
	"docs/.gitignore":             "*.html\n!/build/\n",
	"a b/c d.txt":                 "",
	"a b/c d.txt~":                "",
	"coverage/lcov.info":          "",
	"pkg/coverage.go":             "",
}

func TestWalkAgainstGitLsFiles(t *testing.T) {
	r := newGitRepo(t)
	for _, info := range []string{"", "*.go\n!main.go\n"} {
		r.reset(setup{info: info, excludes: "*~\n"})
		for name, content := range realisticTree {
			writeFile(t, filepath.Join(r.dir, filepath.FromSlash(name)), content)
		}
		want := strings.Split(strings.TrimSuffix(string(r.git(nil, "ls-files", "-o", "--exclude-standard", "-z")), "\x00"), "\x00")
		root := NewMatcher(Parse([]byte("*~\n"), ""), Parse([]byte(info), ""))
		got := walk(t, r.dir, "", root)
		sort.Strings(want)
		sort.Strings(got)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("info %q: untracked files\n ours: %q\n git:  %q", info, got, want)
		}
	}
}

// walk lists the files under dir that are not ignored, the way a snapshot
// walk uses the package: read each directory's .gitignore first, skip
// ignored entries without descending.
func walk(t *testing.T, top, dir string, m *Matcher) []string {
	full := filepath.Join(top, filepath.FromSlash(dir))
	if data, err := os.ReadFile(filepath.Join(full, ".gitignore")); err == nil {
		m = m.Child(dir, data)
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(full)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		p := e.Name()
		if dir != "" {
			p = dir + "/" + p
		}
		if p == ".git" || m.Ignored(p, e.IsDir()) {
			continue
		}
		if e.IsDir() {
			out = append(out, walk(t, top, p, m)...)
		} else {
			out = append(out, p)
		}
	}
	return out
}

// FuzzAgainstGit compares one .gitignore and one path with git
// check-ignore. Each input costs a few git processes, so the seed corpus
// stays small; run it with -fuzz to explore.
func FuzzAgainstGit(f *testing.F) {
	f.Add("*.o\n!keep.o\n", "dir/keep.o", false)
	f.Add("a/**/b/\n", "a/x/b", true)
	f.Add("[[:alpha:]-z]?\\ \n", "q- ", false)
	f.Add("/x*/\n!x1\n", "x1/y", false)
	r := newGitRepo(f)
	f.Fuzz(func(t *testing.T, content, path string, isDir bool) {
		if !validPath(path) || len(content) > 200 || strings.IndexByte(content, 0) >= 0 {
			t.Skip()
		}
		r.t = t // one repository for every input of this process
		s := root(content)
		r.reset(s)
		r.create(path, isDir)
		want := r.checkIgnore([]string{path})[path]
		if got := r.ours(s, path, isDir); got != want {
			t.Errorf(".gitignore %q, path %q (dir %v):\n git:  %+v\n ours: %+v", content, path, isDir, want, got)
		}
		if got := s.matcherFor(path).m.IgnoredPath(path, isDir); got != want.ignored() {
			t.Errorf(".gitignore %q, path %q (dir %v): IgnoredPath = %v, git says %v", content, path, isDir, got, want.ignored())
		}
	})
}

// validPath accepts what can be created in a working tree and handed to
// check-ignore unchanged: short, clean, no pathspec magic, not .git.
func validPath(p string) bool {
	if p == "" || len(p) > 60 || p[0] == ':' || strings.ContainsAny(p, "\x00") {
		return false
	}
	parts := strings.Split(p, "/")
	if len(parts) > 4 {
		return false
	}
	for _, c := range parts {
		if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") || c == ".gitignore" {
			return false
		}
	}
	return true
}

func TestValidPath(t *testing.T) {
	for p, want := range map[string]bool{"a/b": true, "a//b": false, ".git/x": false, ":x": false, "a/../b": false, "": false} {
		if validPath(p) != want {
			t.Errorf("validPath(%q) = %v", p, !want)
		}
	}
}

// TestRandomAgainstGit compares many generated .gitignore files at once:
// file k sits in n<k>/ over its own copy of a small random tree, so one
// check-ignore run judges every pattern on every path. Set
// MULLIGAN_IGNORE_RANDOM to run more than the default number of files.
func TestRandomAgainstGit(t *testing.T) {
	n := 60
	if v, err := strconv.Atoi(os.Getenv("MULLIGAN_IGNORE_RANDOM")); err == nil {
		n = v
	}
	r := newGitRepo(t)
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	names := []string{"a", "b", "ab", "ba", "aa", "a*", ".a", "a b", "[a]", "!a"}
	var tree []string
	isDir := map[string]bool{}
	seen := map[string]bool{}
	for len(tree) < 40 {
		depth := 1 + rng.IntN(3)
		var parts []string
		for i := 0; i < depth; i++ {
			parts = append(parts, names[rng.IntN(len(names))])
		}
		p := strings.Join(parts, "/")
		if seen[p] || isDir[p] {
			continue
		}
		// A file cannot also be a directory on the way to another path.
		conflict := false
		for i := range parts[:len(parts)-1] {
			if d := strings.Join(parts[:i+1], "/"); seen[d] && !isDir[d] {
				conflict = true
			}
		}
		if conflict {
			continue
		}
		for i := range parts[:len(parts)-1] {
			d := strings.Join(parts[:i+1], "/")
			if !seen[d] {
				seen[d], isDir[d] = true, true
				tree = append(tree, d)
			}
		}
		seen[p] = true
		isDir[p] = rng.IntN(4) == 0
		tree = append(tree, p)
	}
	tokens := []string{"a", "b", "ab", "*", "**", "?", "/", "/", "[ab]", "[!a]", "[^b]", "[a-b]",
		"[[:alpha:]]", "[[:punct:]]", "\\*", "\\a", "\\!", " ", "\\ ", ".", "[]", "]", "-", "[a-]", "[*]", "!", "[!]a]"}
	s := setup{gitignore: map[string]string{}}
	var paths []string
	pathDir := map[string]bool{}
	r.reset(s)
	for k := 0; k < n; k++ {
		var lines []string
		for l := 0; l < 1+rng.IntN(3); l++ {
			var b strings.Builder
			if rng.IntN(4) == 0 {
				b.WriteString("!")
			}
			for i := 0; i < 1+rng.IntN(5); i++ {
				b.WriteString(tokens[rng.IntN(len(tokens))])
			}
			if rng.IntN(5) == 0 {
				b.WriteString("/")
			}
			lines = append(lines, b.String())
		}
		dir := "n" + strconv.Itoa(k)
		s.gitignore[dir] = strings.Join(lines, "\n") + "\n"
		writeFile(t, filepath.Join(r.dir, dir, ".gitignore"), s.gitignore[dir])
		for _, p := range tree {
			full := dir + "/" + p
			r.create(full, isDir[p])
			paths = append(paths, full)
			pathDir[full] = isDir[p]
		}
	}
	compare(t, r, s, paths, pathDir)
}
