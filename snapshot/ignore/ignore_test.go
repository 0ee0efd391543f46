package ignore

import (
	"strings"
	"testing"
)

// setup describes every ignore source of a test repository: the contents
// of core.excludesFile, of info/exclude, and of the .gitignore file of each
// directory ("" is the root).
type setup struct {
	excludes, info string
	gitignore      map[string]string
}

// chain is a matcher together with the root sets it was built from, so
// tests can tell which source a deciding pattern came from.
type chain struct {
	m              *Matcher
	excludes, info []Pattern
}

// matcherFor builds the chain a top-down walk would hold when it reaches
// path: the root sets, then the .gitignore of every directory above path.
func (s setup) matcherFor(path string) chain {
	c := chain{excludes: Parse([]byte(s.excludes), ""), info: Parse([]byte(s.info), "")}
	c.m = NewMatcher(c.excludes, c.info).Child("", []byte(s.gitignore[""]))
	for i := 0; i < len(path); i++ {
		if path[i] == '/' {
			c.m = c.m.Child(path[:i], []byte(s.gitignore[path[:i]]))
		}
	}
	return c
}

// decide returns the pattern git's check-ignore -v would report for path:
// that of the first excluded parent directory, else the one deciding path
// itself, or nil.
func (c chain) decide(path string, isDir bool) *Pattern {
	for i := 0; i < len(path); i++ {
		if path[i] == '/' {
			if p := c.m.match(path[:i], true); p != nil && !p.Negated() {
				return p
			}
		}
	}
	return c.m.match(path, isDir)
}

// source names the file p came from the way check-ignore -v does, given
// the name of the excludes file.
func (c chain) source(p *Pattern, excludesName string) string {
	in := func(ps []Pattern) bool {
		for i := range ps {
			if &ps[i] == p {
				return true
			}
		}
		return false
	}
	switch {
	case in(c.excludes):
		return excludesName
	case in(c.info):
		return ".git/info/exclude"
	}
	for l := c.m; l != nil; l = l.parent {
		if in(l.patterns) {
			if l.dir == "" {
				return ".gitignore"
			}
			return l.dir + "/.gitignore"
		}
	}
	return "?"
}

func root(content string) setup { return setup{gitignore: map[string]string{"": content}} }

type ruleCase struct {
	name  string
	s     setup
	path  string
	isDir bool
	want  bool
}

// ruleCases are the rules of gitignore(5), one or more cases each. The
// differential test replays them against git as well, so every expectation
// here is git's, not only ours.
var ruleCases = []ruleCase{
	// blank lines and comments
	{"blank lines match nothing", root("\n\n   \n"), "x", false, false},
	{"comment", root("#x\n"), "#x", false, false},
	{"comment after spaces is a pattern", root(" #x\n"), " #x", false, true},
	{"escaped hash", root("\\#x\n"), "#x", false, true},
	{"hash inside is literal", root("a#b\n"), "a#b", false, true},
	{"crlf line", root("x.txt\r\ny\r\n"), "x.txt", false, true},
	{"crlf last line", root("x.txt\r\ny\r\n"), "y", false, true},
	{"utf8 bom", root("\xef\xbb\xbfx.txt\n"), "x.txt", false, true},
	{"no final newline", root("a\nx.txt"), "x.txt", false, true},

	// trailing spaces
	{"trailing spaces trimmed", root("x.txt   \n"), "x.txt", false, true},
	{"trailing spaces not matched", root("x.txt   \n"), "x.txt   ", false, false},
	{"escaped trailing space kept", root("x\\ \n"), "x ", false, true},
	{"escaped trailing space not x", root("x\\ \n"), "x", false, false},
	{"escaped then trimmed", root("x\\  \n"), "x ", false, true},
	{"inner space kept", root("a b\n"), "a b", false, true},
	{"tabs are not trimmed", root("x\t\n"), "x", false, false},
	{"tab kept", root("x\t\n"), "x\t", false, true},

	// negation
	{"negation re-includes", root("*.o\n!keep.o\n"), "keep.o", false, false},
	{"negation others still ignored", root("*.o\n!keep.o\n"), "a.o", false, true},
	{"last match wins", root("!keep.o\n*.o\n"), "keep.o", false, true},
	{"escaped bang", root("\\!x\n"), "!x", false, true},
	{"bang alone", root("!\n"), "!", false, false},
	{"negated dir pattern", root("d/*\n!d/keep/\n"), "d/keep/f", false, false},
	{"negated dir pattern, others", root("d/*\n!d/keep/\n"), "d/other/f", false, true},
	{"cannot re-include inside ignored dir", root("d/\n!d/f\n"), "d/f", false, true},
	{"cannot re-include deeper", root("build\n!build/keep/x\n"), "build/keep/x", false, true},
	{"re-include dir then its files", root("/d/*\n!/d/sub\n"), "d/sub/f", false, false},

	// anchoring
	{"no slash matches at any depth", root("foo\n"), "a/b/foo", false, true},
	{"no slash matches dirs too", root("foo\n"), "a/foo", true, true},
	{"leading slash anchors", root("/foo\n"), "foo", false, true},
	{"leading slash anchors, not deeper", root("/foo\n"), "a/foo", false, false},
	{"middle slash anchors", root("a/foo\n"), "a/foo", false, true},
	{"middle slash anchors, not deeper", root("a/foo\n"), "x/a/foo", false, false},
	{"nested file anchors to its dir", setup{gitignore: map[string]string{"sub": "/foo\n"}}, "sub/foo", false, true},
	{"nested file anchored, not root", setup{gitignore: map[string]string{"sub": "/foo\n"}}, "foo", false, false},
	{"nested middle slash", setup{gitignore: map[string]string{"sub": "a/foo\n"}}, "sub/a/foo", false, true},
	{"nested middle slash, not elsewhere", setup{gitignore: map[string]string{"sub": "a/foo\n"}}, "a/foo", false, false},
	{"nested basename below only", setup{gitignore: map[string]string{"sub": "sub\n"}}, "sub", true, false},
	{"nested basename deeper", setup{gitignore: map[string]string{"sub": "foo\n"}}, "sub/x/foo", false, true},
	{"nested basename not sibling", setup{gitignore: map[string]string{"sub": "foo\n"}}, "subx/foo", false, false},

	// trailing slash: directories only
	{"dir-only matches dir", root("out/\n"), "out", true, true},
	{"dir-only skips file", root("out/\n"), "out", false, false},
	{"dir-only ignores contents", root("out/\n"), "out/a/b.txt", false, true},
	{"dir-only at depth", root("out/\n"), "x/out", true, true},
	{"anchored dir-only", root("/a/out/\n"), "a/out", true, true},
	{"anchored dir-only, file", root("/a/out/\n"), "a/out", false, false},
	{"star slash", root("*/\n"), "x", true, true},
	{"star slash not file", root("*/\n"), "x", false, false},

	// wildcards
	{"star", root("*.txt\n"), "a/b.txt", false, true},
	{"star not across slash", root("a/*.txt\n"), "a/b/c.txt", false, false},
	{"star in anchored", root("a/*.txt\n"), "a/c.txt", false, true},
	{"star alone", root("*\n"), "anything", false, true},
	{"question", root("?.o\n"), "a.o", false, true},
	{"question one byte", root("?.o\n"), "ab.o", false, false},
	{"question not slash", root("a?b\n"), "a/b", false, false},
	{"class", root("[abc].o\n"), "b.o", false, true},
	{"class miss", root("[abc].o\n"), "d.o", false, false},
	{"range", root("x[0-9]\n"), "x5", false, true},
	{"negated class bang", root("x[!0-9]\n"), "x5", false, false},
	{"negated class bang hit", root("x[!0-9]\n"), "xa", false, true},
	{"negated class caret", root("x[^0-9]\n"), "xa", false, true},
	{"posix alpha", root("x[[:alpha:]]\n"), "xQ", false, true},
	{"posix alpha miss", root("x[[:alpha:]]\n"), "x1", false, false},
	{"posix digit", root("[[:digit:]]*\n"), "1abc", false, true},
	{"posix space", root("a[[:space:]]b\n"), "a b", false, true},
	{"bad class name aborts", root("a[[:spaci:]]b\n"), "a b", false, false},
	{"unclosed bracket matches nothing", root("a[b\n"), "a[b", false, false},
	{"escaped bracket", root("a\\[b\n"), "a[b", false, true},
	{"escaped star", root("a\\*\n"), "a*", false, true},
	{"escaped star not glob", root("a\\*\n"), "ab", false, false},
	{"close bracket first", root("a[]]b\n"), "a]b", false, true},
	{"trailing backslash matches nothing", root("a\\\n"), "a", false, false},

	// double asterisk
	{"leading starstar", root("**/foo\n"), "foo", false, true},
	{"leading starstar deep", root("**/foo\n"), "a/b/foo", false, true},
	{"leading starstar two parts", root("**/foo/bar\n"), "x/foo/bar", false, true},
	{"leading starstar two parts miss", root("**/foo/bar\n"), "x/foo/y/bar", false, false},
	{"trailing starstar", root("abc/**\n"), "abc/x/y", false, true},
	{"trailing starstar not the dir", root("abc/**\n"), "abc", true, false},
	{"trailing starstar anchored", root("abc/**\n"), "x/abc/y", false, false},
	{"middle starstar zero dirs", root("a/**/b\n"), "a/b", false, true},
	{"middle starstar one dir", root("a/**/b\n"), "a/x/b", false, true},
	{"middle starstar many dirs", root("a/**/b\n"), "a/x/y/b", false, true},
	{"starstar elsewhere is star", root("a**b\n"), "axxb", false, true},
	{"starstar after slash and literal", root("a/x**/b\n"), "a/xq/b", false, true},
	{"starstar elsewhere basename", root("foo**\n"), "d/foobar", false, true},
	{"triple star leading", root("***/foo\n"), "a/b/foo", false, true},

	// precedence across sources
	{"info beats excludesFile", setup{excludes: "*.md\n", info: "!README.md\n"}, "README.md", false, false},
	{"excludesFile alone", setup{excludes: "*.md\n"}, "a/b.md", false, true},
	{"gitignore beats info", setup{info: "!README.md\n", gitignore: map[string]string{"": "README.md\n"}}, "README.md", false, true},
	{"gitignore negation beats info", setup{info: "*.log\n", gitignore: map[string]string{"": "!keep.log\n"}}, "keep.log", false, false},
	{"deeper beats shallower", setup{gitignore: map[string]string{"": "*.txt\n", "sub": "!*.txt\n"}}, "sub/a.txt", false, false},
	{"deeper beats shallower, outside", setup{gitignore: map[string]string{"": "*.txt\n", "sub": "!*.txt\n"}}, "a.txt", false, true},
	{"deeper ignores what root allows", setup{gitignore: map[string]string{"": "!x\n", "sub": "x\n"}}, "sub/x", false, true},
	{"deeper cannot lift an ignored dir", setup{gitignore: map[string]string{"": "sub/\n", "sub": "!f\n"}}, "sub/f", false, true},
	{"parent dir ignored by info", setup{info: "gen/\n", gitignore: map[string]string{"gen": "!*\n"}}, "gen/a.go", false, true},
}

func TestRules(t *testing.T) {
	for _, c := range ruleCases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.s.matcherFor(c.path).m.IgnoredPath(c.path, c.isDir); got != c.want {
				t.Errorf("IgnoredPath(%q, %v) = %v, want %v (setup %+v)", c.path, c.isDir, got, c.want, c.s)
			}
		})
	}
}

func TestParse(t *testing.T) {
	ps := Parse([]byte("# c\n\n!a/b/  \n\\#x\n/\n!\n*.o\nx\\ \n"), "base")
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	want := []string{"!a/b/", "\\#x", "*.o", "x\\ "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("patterns %q, want %q", got, want)
	}
	if ps[0].Line() != 3 || ps[3].Line() != 8 {
		t.Errorf("lines %d and %d, want 3 and 8", ps[0].Line(), ps[3].Line())
	}
	if !ps[0].Negated() || ps[0].flags&flagMustBeDir == 0 || ps[0].flags&flagNoDir != 0 {
		t.Errorf("!a/b/ flags %b", ps[0].flags)
	}
	if ps[2].flags&(flagNoDir|flagEndsWith) != flagNoDir|flagEndsWith || ps[2].nowild != 0 {
		t.Errorf("*.o flags %b nowild %d", ps[2].flags, ps[2].nowild)
	}
	if ps[1].base != "base" {
		t.Errorf("base %q", ps[1].base)
	}
}

func TestParseNUL(t *testing.T) {
	// git reads each line as a C string: the NUL ends the pattern.
	m := NewMatcher(Parse([]byte("ab\x00cd\n"), ""))
	if !m.Ignored("ab", false) || m.Ignored("ab\x00cd", false) {
		t.Error("NUL did not end the pattern")
	}
}

func TestIgnoredNeedsNoParents(t *testing.T) {
	// Ignored trusts the walk: it does not look at parent directories.
	m := NewMatcher().Child("", []byte("d/\n"))
	if m.Ignored("d/f", false) {
		t.Error("Ignored looked at the parent")
	}
	if !m.IgnoredPath("d/f", false) {
		t.Error("IgnoredPath missed the ignored parent")
	}
}

func TestChildNil(t *testing.T) {
	m := NewMatcher()
	if m.Child("a", nil) != m || m.Child("a", []byte("# only a comment\n")) != m {
		t.Error("Child without patterns made a new link")
	}
	var nilM *Matcher
	if nilM.Ignored("x", false) || nilM.IgnoredPath("a/x", false) {
		t.Error("nil matcher ignored something")
	}
	if NewMatcher(Parse([]byte("*\n"), "")).Ignored("", true) {
		t.Error("the root was ignored")
	}
}

func TestChildScope(t *testing.T) {
	// A link for directory "a" must not judge "a" itself or its siblings,
	// even when the caller hands the deeper matcher around.
	m := NewMatcher().Child("a", []byte("a\n*\n"))
	for _, p := range []string{"a", "ab", "b/a"} {
		if m.Ignored(p, true) {
			t.Errorf("%q ignored by a/.gitignore", p)
		}
	}
	if !m.Ignored("a/x", false) {
		t.Error("a/x not ignored by a/.gitignore")
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	ps, err := ReadFile(dir+"/missing", "")
	if err != nil || ps != nil {
		t.Fatalf("missing file: %v, %v", ps, err)
	}
	if _, err := ReadFile(dir, ""); err == nil {
		t.Error("reading a directory gave no error")
	}
}

func TestConcurrent(t *testing.T) {
	m := NewMatcher().Child("", []byte("*.o\n!keep.o\nbuild/\n"))
	done := make(chan bool)
	for g := 0; g < 4; g++ {
		go func() {
			ok := true
			for i := 0; i < 1000; i++ {
				ok = ok && m.IgnoredPath("x/a.o", false) && !m.Ignored("keep.o", false) && m.IgnoredPath("build/x", false)
			}
			done <- ok
		}()
	}
	for g := 0; g < 4; g++ {
		if !<-done {
			t.Error("wrong answer under concurrency")
		}
	}
}

func TestNoAllocs(t *testing.T) {
	m := NewMatcher(Parse([]byte("*.swp\n"), "")).Child("", []byte(realisticGitignore)).Child("src", []byte("*.gen.go\n/tmp/\n"))
	paths := []string{"src/pkg/main.go", "src/pkg/a.gen.go", "src/tmp", "src/pkg/dist/x/y.js", "src/x.pyc"}
	allocs := testing.AllocsPerRun(100, func() {
		for _, p := range paths {
			m.IgnoredPath(p, false)
			m.Ignored(p, true)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per run, want 0", allocs)
	}
}
