package attr

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// eolContents are the content shapes git's end-of-line rules tell apart.
var eolContents = map[string]string{
	"lf":       "a\nb\n",
	"crlf":     "a\r\nb\r\n",
	"mixed":    "a\r\nb\n",
	"lonecr":   "a\rb\r\n",   // a lone CR makes it binary for text=auto
	"lonecrLF": "a\rb\n",     // lone CR and lone LF
	"nul":      "a\x00b\r\n", // NUL makes it binary
	"nulLF":    "a\x00b\n",
	"ctrl":     "\x01\x02\x03\x04\r\n", // too many non-printables
	"ctrlLF":   "\x01\x02\n",
	"eofz":     "a\r\nb\x1a", // a trailing ^Z does not count
	"crend":    "ab\r",
	"empty":    "",
}

// Expected blob per clean class. keep: no conversion; text: CR before LF
// removed whatever the content; auto: the same, unless git guesses binary.
var cleanExpect = map[string]map[string]string{
	"text": {
		"lf": "a\nb\n", "crlf": "a\nb\n", "mixed": "a\nb\n", "lonecr": "a\rb\n", "lonecrLF": "a\rb\n",
		"nul": "a\x00b\n", "nulLF": "a\x00b\n", "ctrl": "\x01\x02\x03\x04\n", "ctrlLF": "\x01\x02\n",
		"eofz": "a\nb\x1a", "crend": "ab\r", "empty": "",
	},
	"auto": {
		"lf": "a\nb\n", "crlf": "a\nb\n", "mixed": "a\nb\n", "lonecr": "a\rb\r\n", "lonecrLF": "a\rb\n",
		"nul": "a\x00b\r\n", "nulLF": "a\x00b\n", "ctrl": "\x01\x02\x03\x04\r\n", "ctrlLF": "\x01\x02\n",
		"eofz": "a\nb\x1a", "crend": "ab\r", "empty": "",
	},
}

// Expected worktree file per smudge class, from the same shapes taken as
// blobs. crlf: every lone LF becomes CRLF; autocrlf: only when the blob has
// no CR at all and is not binary.
var smudgeExpect = map[string]map[string]string{
	"crlf": {
		"lf": "a\r\nb\r\n", "crlf": "a\r\nb\r\n", "mixed": "a\r\nb\r\n", "lonecr": "a\rb\r\n", "lonecrLF": "a\rb\r\n",
		"nul": "a\x00b\r\n", "nulLF": "a\x00b\r\n", "ctrl": "\x01\x02\x03\x04\r\n", "ctrlLF": "\x01\x02\r\n",
		"eofz": "a\r\nb\x1a", "crend": "ab\r", "empty": "",
	},
	"autocrlf": {
		"lf": "a\r\nb\r\n", "crlf": "a\r\nb\r\n", "mixed": "a\r\nb\n", "lonecr": "a\rb\r\n", "lonecrLF": "a\rb\n",
		"nul": "a\x00b\r\n", "nulLF": "a\x00b\n", "ctrl": "\x01\x02\x03\x04\r\n", "ctrlLF": "\x01\x02\n",
		"eofz": "a\r\nb\x1a", "crend": "ab\r", "empty": "",
	},
}

// crlfActionCases walks convert.c's crlf_action table: attributes ×
// core.autocrlf × core.eol, with the classes gitattributes(5) documents.
var crlfActionCases = []struct {
	attrs         string
	autocrlf, eol string
	clean, smudge string
	action        crlfAction
}{
	{"", "false", "", "keep", "keep", crlfBinary},
	{"", "", "crlf", "keep", "keep", crlfBinary}, // core.eol alone does nothing
	{"", "true", "", "auto", "autocrlf", crlfAutoCRLF},
	{"", "input", "", "auto", "keep", crlfAutoInput},
	{"text", "false", "", "text", "keep", crlfTextInput},
	{"text", "false", "lf", "text", "keep", crlfTextInput},
	{"text", "false", "crlf", "text", "crlf", crlfTextCRLF},
	{"text", "false", "native", "text", "keep", crlfTextInput},
	{"text", "true", "", "text", "crlf", crlfTextCRLF},
	{"text", "true", "lf", "text", "crlf", crlfTextCRLF}, // autocrlf wins over core.eol
	{"text", "input", "crlf", "text", "keep", crlfTextInput},
	{"-text", "true", "crlf", "keep", "keep", crlfBinary},
	{"-text eol=crlf", "true", "", "keep", "keep", crlfBinary},
	{"binary", "true", "", "keep", "keep", crlfBinary},
	{"text=auto", "false", "", "auto", "keep", crlfAuto},
	{"text=auto", "false", "crlf", "auto", "autocrlf", crlfAuto},
	{"text=auto", "true", "", "auto", "autocrlf", crlfAuto},
	{"text=auto", "input", "crlf", "auto", "keep", crlfAuto},
	{"text=auto eol=lf", "true", "", "auto", "keep", crlfAutoInput},
	{"text=auto eol=crlf", "false", "", "auto", "autocrlf", crlfAutoCRLF},
	{"eol=lf", "true", "", "text", "keep", crlfTextInput},
	{"eol=crlf", "false", "", "text", "crlf", crlfTextCRLF},
	{"eol=crlf", "input", "", "text", "crlf", crlfTextCRLF},
	{"eol=bogus", "true", "", "auto", "autocrlf", crlfAutoCRLF},
	{"text=input", "true", "", "text", "keep", crlfTextInput},
	{"text=input eol=crlf", "false", "", "text", "crlf", crlfTextCRLF},
	{"crlf", "false", "crlf", "text", "crlf", crlfTextCRLF},
	{"-crlf", "true", "", "keep", "keep", crlfBinary},
	{"crlf=input", "true", "", "text", "keep", crlfTextInput},
	{"text crlf=input", "false", "crlf", "text", "crlf", crlfTextCRLF}, // text wins over crlf
	{"-text crlf", "true", "", "keep", "keep", crlfBinary},
	{"!text", "true", "", "auto", "autocrlf", crlfAutoCRLF},
	{"text=bogus -crlf", "true", "", "keep", "keep", crlfBinary},
	{"", "yes", "", "auto", "autocrlf", crlfAutoCRLF},
	{"", "0", "", "keep", "keep", crlfBinary},
	{"", "INPUT", "", "auto", "keep", crlfAutoInput},
}

func attrsFor(t *testing.T, line string) Attrs {
	t.Helper()
	if line == "" {
		return Attrs{}
	}
	return NewMatcher(nil, nil).Child("", []byte("f "+line+"\n")).Lookup("f")
}

var testDirs sync.Map // *testing.T → its one temporary directory

// testDir is t.TempDir, created once per test: many small files in one
// directory are much cheaper than a directory each.
func testDir(t *testing.T) string {
	if d, ok := testDirs.Load(t); ok {
		return d.(string)
	}
	d := t.TempDir()
	testDirs.Store(t, d)
	t.Cleanup(func() { testDirs.Delete(t) })
	return d
}

func tempFileWith(t *testing.T, data []byte) *os.File {
	t.Helper()
	f, err := os.CreateTemp(testDir(t), "src-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	return f
}

func clean(t *testing.T, c *Converter, path string, a Attrs, data []byte, indexHasCR func() bool) ([]byte, error) {
	t.Helper()
	rc, size, err := c.Clean(context.Background(), path, a, tempFileWith(t, data), indexHasCR)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		return nil, err
	}
	if int64(len(got)) != size {
		t.Errorf("%s: Clean announced %d bytes, delivered %d", path, size, len(got))
	}
	return got, nil
}

func smudge(t *testing.T, c *Converter, path string, a Attrs, blob []byte) ([]byte, error) {
	t.Helper()
	var out bytes.Buffer
	err := c.Smudge(context.Background(), path, a, bytes.NewReader(blob), &out)
	return out.Bytes(), err
}

func TestCRLFActionTable(t *testing.T) {
	for _, tc := range crlfActionCases {
		c := NewConverter(Config{AutoCRLF: tc.autocrlf, EOL: tc.eol}, testDir(t))
		a := attrsFor(t, tc.attrs)
		name := "[" + tc.attrs + "] autocrlf=" + tc.autocrlf + " eol=" + tc.eol
		if got := c.action(a); got != tc.action {
			t.Errorf("%s: action %d, want %d", name, got, tc.action)
		}
		if got, want := c.NeedsClean(a), tc.clean != "keep"; got != want {
			t.Errorf("%s: NeedsClean = %v", name, got)
		}
		if got, want := c.NeedsSmudge(a), tc.smudge != "keep"; got != want {
			t.Errorf("%s: NeedsSmudge = %v", name, got)
		}
		for shape, in := range eolContents {
			want := in
			if tc.clean != "keep" {
				want = cleanExpect[tc.clean][shape]
			}
			got, err := clean(t, c, "f", a, []byte(in), nil)
			if err != nil {
				t.Fatalf("%s %s: %v", name, shape, err)
			}
			if string(got) != want {
				t.Errorf("%s: Clean(%s %q) = %q, want %q", name, shape, in, got, want)
			}
			want = in
			if tc.smudge != "keep" {
				want = smudgeExpect[tc.smudge][shape]
			}
			got, err = smudge(t, c, "f", a, []byte(in))
			if err != nil {
				t.Fatalf("%s %s: %v", name, shape, err)
			}
			if string(got) != want {
				t.Errorf("%s: Smudge(%s %q) = %q, want %q", name, shape, in, got, want)
			}
		}
	}
}

func TestCleanIndexHasCRLFRule(t *testing.T) {
	c := NewConverter(Config{}, t.TempDir())
	in := []byte("a\r\nb\r\n")
	yes := func() bool { return true }
	for _, tc := range []struct {
		attrs string
		want  string
	}{
		{"text=auto", "a\r\nb\r\n"},          // the index already has CRLF: leave it
		{"text=auto eol=crlf", "a\r\nb\r\n"}, // any auto action
		{"text", "a\nb\n"},                   // only text=auto guesses
		{"eol=lf", "a\nb\n"},
	} {
		got, err := clean(t, c, "f", attrsFor(t, tc.attrs), in, yes)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("[%s] with CRLF in index: %q, want %q", tc.attrs, got, tc.want)
		}
	}
	// The callback is not needed when the content has no CRLF.
	called := false
	if _, err := clean(t, c, "f", attrsFor(t, "text=auto"), []byte("a\nb\n"), func() bool { called = true; return true }); err != nil {
		t.Fatal(err)
	}
	if called {
		t.Error("indexHasCR called for content without CRLF")
	}

	for _, tc := range []struct {
		blob string
		want bool
	}{
		{"a\r\nb\n", true}, {"a\nb\n", false}, {"a\rb\r\n", false}, {"a\x00\r\n", false}, {"", false},
	} {
		got, err := BlobHasCRLF(strings.NewReader(tc.blob))
		if err != nil || got != tc.want {
			t.Errorf("BlobHasCRLF(%q) = %v, %v; want %v", tc.blob, got, err, tc.want)
		}
	}
}

func TestStreamingAcrossChunkBoundaries(t *testing.T) {
	// A CR at the end of one read and its LF at the start of the next must
	// still count as one CRLF; build content whose CRLFs straddle 32 KiB.
	var b bytes.Buffer
	for b.Len() < 200*1024 {
		b.WriteString(strings.Repeat("x", 32*1024-1))
		b.WriteString("\r\n")
	}
	in := b.Bytes()
	c := NewConverter(Config{}, t.TempDir())
	got, err := clean(t, c, "f", Attrs{Text: Auto}, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := bytes.ReplaceAll(in, []byte("\r\n"), []byte("\n")); !bytes.Equal(got, want) {
		t.Fatalf("clean across chunks: got %d bytes, want %d", len(got), len(want))
	}
	back, err := smudge(t, c, "f", Attrs{Text: Auto, EOL: "crlf"}, got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, in) {
		t.Fatalf("smudge across chunks did not restore the original")
	}
}

func TestIdent(t *testing.T) {
	const oid = "0123456789abcdef0123456789abcdef01234567"
	cases := []struct{ in, toGit, inCore, stream string }{
		{"$Id$", "$Id$", "$Id: OID $", "$Id: OID $"},
		{"x $Id: old $ y", "x $Id$ y", "x $Id: OID $ y", "x $Id: OID $ y"},
		{"$Id: two words $", "$Id$", "$Id: two words $", "$Id: two words $"},
		{"$Id: a\nb $", "$Id: a\nb $", "$Id: a\nb $", "$Id: a\nb $"},
		{"$$Id$", "$$Id$", "$$Id: OID $", "$$Id$"},     // stream: the '$' that broke "$" is not re-examined
		{"$I$Id$", "$I$Id$", "$I$Id: OID $", "$I$Id$"}, // likewise after "$I"
		{"$Id:$", "$Id$", "$Id: OID $", "$Id: OID $"},
		{"$Id: unterminated", "$Id: unterminated", "$Id: unterminated", "$Id: unterminated"},
		{"$Idx$Id$", "$Idx$Id$", "$Idx$Id: OID $", "$Idx$Id: OID $"},
		{"$Id:x $", "$Id$", "$Id: OID $", "$Id: OID $"},
		{"$Id: x\t$", "$Id$", "$Id: OID $", "$Id: OID $"},
		{"$Id: x\ty $", "$Id$", "$Id: OID $", "$Id: x\ty $"}, // in-core looks for spaces only
		{"$Id", "$Id", "$Id", "$Id"},
	}
	for _, tc := range cases {
		in := content{strings.NewReader(tc.in), int64(len(tc.in))}
		var a, b, s bytes.Buffer
		if err := identToGit(in, &a); err != nil {
			t.Fatal(err)
		}
		if err := identToWorktree(in, oid, &b); err != nil {
			t.Fatal(err)
		}
		if err := identStream(in, oid, &s); err != nil {
			t.Fatal(err)
		}
		rep := func(x string) string { return strings.ReplaceAll(x, "OID", oid) }
		if a.String() != tc.toGit {
			t.Errorf("identToGit(%q) = %q, want %q", tc.in, a.String(), tc.toGit)
		}
		if b.String() != rep(tc.inCore) {
			t.Errorf("identToWorktree(%q) = %q, want %q", tc.in, b.String(), rep(tc.inCore))
		}
		if s.String() != rep(tc.stream) {
			t.Errorf("identStream(%q) = %q, want %q", tc.in, s.String(), rep(tc.stream))
		}
	}
}

func TestExpandFilterCommand(t *testing.T) {
	for _, tc := range []struct{ cmd, path, want string }{
		{"tr a-z A-Z", "x", "tr a-z A-Z"},
		{"lfs clean -- %f", "a b/c'd!.txt", `lfs clean -- 'a b/c'\''d'\!'.txt'`},
		{"echo %% %x %", "p", "echo % %x %"},
	} {
		if got := expandFilterCommand(tc.cmd, tc.path); got != tc.want {
			t.Errorf("expand(%q, %q) = %q, want %q", tc.cmd, tc.path, got, tc.want)
		}
	}
}

func TestFilterDrivers(t *testing.T) {
	root := t.TempDir()
	var warned []error
	c := NewConverter(Config{
		Filters: map[string]FilterDriver{
			"upper":     {Clean: "tr a-z A-Z", Smudge: "tr A-Z a-z"},
			"fail":      {Clean: "cat >/dev/null; echo oops >&2; exit 3", Smudge: "false"},
			"required":  {Clean: "false", Smudge: "false", Required: true},
			"cleanonly": {Clean: "cat", Required: true},
			"path":      {Clean: "printf '%%s:' %f; cat"},
			"cwd":       {Clean: "pwd"},
			"proc":      {Process: helperProcessCommand(t)},
			"early":     {Clean: "head -c 3"}, // exits without reading all input
		},
		Warn: func(err error) { warned = append(warned, err) },
	}, root)
	t.Cleanup(func() { c.Close() })

	check := func(name string, got []byte, err error, want string) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		if string(got) != want {
			t.Errorf("%s: got %q, want %q", name, got, want)
		}
	}
	got, err := clean(t, c, "a.txt", Attrs{Filter: "upper", Text: Set}, []byte("hi\r\nyou\r\n"), nil)
	check("clean filter then eol", got, err, "HI\nYOU\n")
	got, err = smudge(t, c, "a.txt", Attrs{Filter: "upper", EOL: "crlf"}, []byte("HI\nYOU\n"))
	check("eol then smudge filter", got, err, "hi\r\nyou\r\n")

	got, err = clean(t, c, "a.txt", Attrs{Filter: "fail", Text: Set}, []byte("x\r\n"), nil)
	check("failing non-required clean passes content through", got, err, "x\n")
	if len(warned) != 1 || !strings.Contains(warned[0].Error(), "oops") {
		t.Errorf("warnings = %v, want one naming the filter's stderr", warned)
	}
	got, err = smudge(t, c, "a.txt", Attrs{Filter: "fail"}, []byte("x\n"))
	check("failing non-required smudge passes content through", got, err, "x\n")

	if _, err := clean(t, c, "a.txt", Attrs{Filter: "required"}, []byte("x"), nil); err == nil {
		t.Error("failing required clean filter: no error")
	}
	var out bytes.Buffer
	if err := c.Smudge(context.Background(), "a.txt", Attrs{Filter: "required"}, strings.NewReader("x"), &out); err == nil || out.Len() != 0 {
		t.Errorf("failing required smudge filter: err %v, wrote %q", err, out.String())
	}
	if err := c.Smudge(context.Background(), "a.txt", Attrs{Filter: "cleanonly"}, strings.NewReader("x"), &out); err == nil {
		t.Error("required driver without a smudge command: no error")
	}

	got, err = clean(t, c, "dir x/it's.txt", Attrs{Filter: "path"}, []byte("body"), nil)
	check("%f quoting", got, err, "dir x/it's.txt:body")
	got, err = clean(t, c, "a.txt", Attrs{Filter: "cwd"}, []byte(""), nil)
	check("runs in the worktree root, even for empty content", got, err, root+"\n")
	got, err = clean(t, c, "a.txt", Attrs{Filter: "early"}, bytes.Repeat([]byte("z"), 1<<20), nil)
	check("filter that stops reading early", got, err, "zzz")
	got, err = clean(t, c, "a.txt", Attrs{Filter: "undefined", Text: Set}, []byte("x\r\n"), nil)
	check("unknown driver name is no filter", got, err, "x\n")

	// Long-running process: several files through one process.
	for i := 0; i < 3; i++ {
		got, err = clean(t, c, "p.txt", Attrs{Filter: "proc"}, []byte("abc"), nil)
		check("process clean", got, err, "ABC")
	}
	got, err = smudge(t, c, "p.txt", Attrs{Filter: "proc"}, []byte("ABC"))
	check("process smudge", got, err, "abc")
	big := bytes.Repeat([]byte("abcdefgh"), 40000) // several packets
	got, err = clean(t, c, "big.txt", Attrs{Filter: "proc"}, big, nil)
	check("process clean, multi-packet", got, err, string(bytes.ToUpper(big)))
	got, err = clean(t, c, "error.txt", Attrs{Filter: "proc"}, []byte("abc"), nil)
	check("status=error passes content through", got, err, "abc")
	got, err = clean(t, c, "abort.txt", Attrs{Filter: "proc"}, []byte("abc"), nil)
	check("status=abort passes content through", got, err, "abc")
	got, err = clean(t, c, "later.txt", Attrs{Filter: "proc"}, []byte("abc"), nil)
	check("after abort, clean is not asked again", got, err, "abc")
	got, err = smudge(t, c, "later.txt", Attrs{Filter: "proc"}, []byte("ABC"))
	check("after a clean abort, smudge still works", got, err, "abc")
	c.mu.Lock()
	n := len(c.procs)
	c.mu.Unlock()
	if n != 1 {
		t.Errorf("%d filter processes running, want 1", n)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got, err = smudge(t, c, "again.txt", Attrs{Filter: "proc"}, []byte("ABC"))
	check("a process starts again after Close", got, err, "abc")
}

func TestCleanCanceled(t *testing.T) {
	c := NewConverter(Config{Filters: map[string]FilterDriver{"slow": {Clean: "sleep 30"}}}, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := c.Clean(ctx, "f", Attrs{Filter: "slow"}, tempFileWith(t, []byte("x")), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestCleanDetectsChangedSource(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("a\r\nb\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := NewConverter(Config{}, t.TempDir())
	rc, size, err := c.Clean(context.Background(), "f", Attrs{Text: Set}, f, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if size != 4 {
		t.Fatalf("size %d", size)
	}
	if err := os.WriteFile(p, []byte("a\r\nb\r\nmore\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rc); !errors.Is(err, errChanged) {
		t.Fatalf("reading after the file grew: %v, want errChanged", err)
	}
}

func TestCleanRemovesSpoolFiles(t *testing.T) {
	c := NewConverter(Config{Filters: map[string]FilterDriver{"upper": {Clean: "tr a-z A-Z"}}}, t.TempDir())
	src := tempFileWith(t, []byte("x $Id: a $\r\n"))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	rc, _, err := c.Clean(context.Background(), "f", Attrs{Filter: "upper", Ident: true}, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) == 0 {
		t.Fatal("expected spool files while the reader is open")
	}
	got, _ := io.ReadAll(rc)
	if string(got) != "X $ID: A $\r\n" {
		t.Errorf("got %q", got)
	}
	rc.Close()
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("spool files left after Close: %v", ents)
	}
}
