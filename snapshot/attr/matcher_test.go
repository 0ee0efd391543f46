package attr

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestParseLines(t *testing.T) {
	rules := Parse([]byte("\xef\xbb\xbf*.c text\r\n"+
		"# comment\n"+
		"   \n"+
		"!neg text\n"+ // negative patterns are ignored
		"bad -bad- te$t\n"+ // invalid attribute name drops the line
		"\"quoted name.txt\" -text eol=crlf !diff x=\n"+
		"[attr]mac text -diff\n"+
		"nodir/ text\n"), "")
	if len(rules) != 4 {
		t.Fatalf("got %d rules, want 4: %+v", len(rules), rules)
	}
	if rules[0].pat.String() != "*.c" || rules[0].states[0] != (assignment{"text", value{kind: vTrue}}) {
		t.Errorf("BOM/CRLF line parsed as %+v", rules[0])
	}
	q := rules[1]
	if q.pat.String() != "quoted name.txt" {
		t.Errorf("quoted pattern = %q", q.pat.String())
	}
	want := []assignment{
		{"text", value{kind: vFalse}},
		{"eol", value{kind: vString, s: "crlf"}},
		{"diff", value{kind: vUnspecified}},
		{"x", value{kind: vString, s: ""}},
	}
	if fmt.Sprint(q.states) != fmt.Sprint(want) {
		t.Errorf("states = %+v, want %+v", q.states, want)
	}
	if rules[2].macro != "mac" || len(rules[2].states) != 2 {
		t.Errorf("macro = %+v", rules[2])
	}
	if rules[3].pat.String() != "nodir/" {
		t.Errorf("trailing slash not marked must-be-dir: %+v", rules[3])
	}
	if sub := Parse([]byte("[attr]mac text\n*.c mac\n"), "sub"); len(sub) != 1 || sub[0].macro != "" {
		t.Errorf("macro definition allowed below the root: %+v", sub)
	}
	long := strings.Repeat("a", maxLineLength) + " text\n"
	if r := Parse([]byte(long+"b text\n"), ""); len(r) != 1 {
		t.Errorf("overlong line kept: %d rules", len(r))
	}
}

func TestLookupPrecedenceAndMacros(t *testing.T) {
	global := Parse([]byte("*.g mymac\n*.txt eol=crlf ident\n"), "")
	info := Parse([]byte("info.txt -text\n"), "")
	m := NewMatcher(global, info).
		Child("", []byte("[attr]mymac text eol=lf\n*.txt text\n*.bin binary\n*.c text text=auto\ndoc/** filter=lfs\n")).
		Child("sub", []byte("*.txt !text\n/top.txt -text\nnested/*.txt text=auto\n*.bin text\n"))

	cases := []struct {
		path string
		want Attrs
	}{
		// Root line wins over core.attributesFile for text; eol and ident
		// come from the global file because nothing else sets them.
		{"a.txt", Attrs{Text: Set, EOL: "crlf", Ident: true}},
		{"x/y/a.txt", Attrs{Text: Set, EOL: "crlf", Ident: true}},
		// info/attributes beats everything.
		{"info.txt", Attrs{Text: Unset, EOL: "crlf", Ident: true}},
		// A macro defined in the root expands for a pattern from the
		// global file.
		{"m.g", Attrs{Text: Set, EOL: "lf"}},
		// binary = -diff -merge -text.
		{"p.bin", Attrs{Text: Unset}},
		// Deeper file wins, even with a lower-precedence macro source.
		{"sub/p.bin", Attrs{Text: Set}},
		// Later assignment on the same line wins.
		{"x.c", Attrs{Text: Auto}},
		// "!text" in the deeper file resets text to unspecified.
		{"sub/a.txt", Attrs{Text: Unspecified, EOL: "crlf", Ident: true}},
		// Anchored pattern is relative to its file's directory.
		{"sub/top.txt", Attrs{Text: Unset, EOL: "crlf", Ident: true}},
		{"sub/deeper/top.txt", Attrs{Text: Unspecified, EOL: "crlf", Ident: true}},
		{"sub/nested/n.txt", Attrs{Text: Auto, EOL: "crlf", Ident: true}},
		{"doc/a/b.md", Attrs{Filter: "lfs"}},
		// A frame for another directory does not apply.
		{"other/top.txt", Attrs{Text: Set, EOL: "crlf", Ident: true}},
	}
	for _, c := range cases {
		if got := m.Lookup(c.path); got != c.want {
			t.Errorf("Lookup(%q) = %+v, want %+v", c.path, got, c.want)
		}
	}
}

func TestLookupMacroRedefinitionAndState(t *testing.T) {
	m := NewMatcher(nil, nil).Child("", []byte("[attr]binary -text crlf=input\n*.b binary\n*.u text=foo crlf\n*.i text=input\n*.f filter\n"))
	if got := m.Lookup("x.b"); got != (Attrs{Text: Unset, Crlf: Input}) {
		t.Errorf("redefined binary: %+v", got)
	}
	// text=<unknown value> is unspecified for conversion; crlf is then used.
	if got := m.Lookup("x.u"); got != (Attrs{Crlf: Set}) {
		t.Errorf("text=foo: %+v", got)
	}
	if got := m.Lookup("x.i"); got != (Attrs{Text: Input}) {
		t.Errorf("text=input: %+v", got)
	}
	// "filter" set without a value names no driver.
	if got := m.Lookup("x.f"); got != (Attrs{}) {
		t.Errorf("filter set to true: %+v", got)
	}
}

// TestLookupMatchesGitCheckAttr compares every attribute lookupAll decides
// with `git check-attr -a` over a tree of attribute files that exercises
// pattern forms, precedence and macros.
func TestLookupMatchesGitCheckAttr(t *testing.T) {
	g := newGitEnv(t)
	repo := g.initRepo()
	files := map[string]string{
		".gitattributes": "[attr]mymac text eol=crlf -diff\n" +
			"[attr]binary -text foo=bar\n" +
			"*.txt text\n" +
			"*.TXT eol=lf\n" +
			"/rooted.md mymac\n" +
			"docs/*.md diff=markdown\n" +
			"**/gen/** linguist-generated\n" +
			"a/**/z.c deep\n" +
			"*.[ch] cpp=1 !diff\n" +
			"*.bin binary\n" +
			"\"with space.txt\" spaced\n" +
			"\\!bang.txt bang\n" +
			"dir/ neverfile\n" +
			"!neg.txt neg\n" +
			"sub/x?.txt question\n" +
			"[attr]chain mymac other\n" +
			"*.ch chain\n" +
			"*.dup a b -a\n" +
			"*.c\t\tmerge=union\n" +
			"lone-star* star\n",
		"sub/.gitattributes": "*.txt -text\n" +
			"[attr]notallowed text\n" +
			"/anch.txt anchored\n" +
			"deep/*.txt text=auto\n" +
			"*.bin text\n" +
			"*.md !diff\n",
		"sub/deep/.gitattributes": "*.txt eol=crlf\nx1.txt !text\n",
	}
	info := "info.txt -text\nsub/*.txt info\n"
	global := "*.glob mymac\n*.txt globalattr\n*.bin globalbin\n"
	for p, c := range files {
		writeFile(t, filepath.Join(repo, p), []byte(c))
	}
	writeFile(t, filepath.Join(repo, ".git/info/attributes"), []byte(info))
	globalPath := filepath.Join(t.TempDir(), "attributes")
	writeFile(t, globalPath, []byte(global))
	g.must(repo, "config", "core.attributesFile", globalPath)

	paths := []string{
		"a.txt", "A.TXT", "rooted.md", "sub/rooted.md", "docs/x.md", "docs/y/x.md",
		"gen/x", "p/gen/q/r.txt", "a/z.c", "a/b/c/z.c", "x.h", "x.c", "p.bin", "sub/p.bin",
		"with space.txt", "!bang.txt", "dir", "dir/file", "neg.txt", "sub/x1.txt", "sub/xx1.txt",
		"x.ch", "x.dup", "lone-star", "lone-star.txt", "info.txt", "sub/a.txt", "sub/anch.txt",
		"sub/q/anch.txt", "sub/deep/a.txt", "sub/deep/x1.txt", "sub/deep/y/z.txt", "sub/r.md",
		"m.glob", "sub/m.glob", "nothing",
	}
	m := NewMatcher(Parse([]byte(global), ""), Parse([]byte(info), "")).
		Child("", []byte(files[".gitattributes"]))
	sub := m.Child("sub", []byte(files["sub/.gitattributes"]))
	deep := sub.Child("sub/deep", []byte(files["sub/deep/.gitattributes"]))

	out, err := g.run(repo, []byte(strings.Join(paths, "\x00")+"\x00"), "check-attr", "-a", "-z", "--stdin")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	f := strings.Split(string(out), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		want[f[i]] = append(want[f[i]], f[i+1]+"="+f[i+2])
	}
	for _, p := range paths {
		mm := m
		switch {
		case strings.HasPrefix(p, "sub/deep/"):
			mm = deep
		case strings.HasPrefix(p, "sub/"):
			mm = sub
		}
		var got []string
		for name, v := range mm.lookupAll(p) {
			switch v.kind {
			case vTrue:
				got = append(got, name+"=set")
			case vFalse:
				got = append(got, name+"=unset")
			case vString:
				got = append(got, name+"="+v.s)
			}
		}
		sort.Strings(got)
		w := want[p]
		sort.Strings(w)
		if strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("%s:\n got  %v\n git  %v", p, got, w)
		}
	}
	if !bytes.Contains(out, []byte("mymac")) {
		t.Fatalf("check-attr output looks wrong: %q", out)
	}
}
