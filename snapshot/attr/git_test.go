package attr

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// diffDirs are the attribute lines of the differential matrix; each gets
// its own directory with a .gitattributes "*.txt <attrs>".
var diffDirs = []struct {
	dir, attrs string
	filter     bool // runs a filter command: fewer contents, to stay fast
}{
	{"none", "", false},
	{"text", "text", false},
	{"notext", "-text", false},
	{"auto", "text=auto", false},
	{"eollf", "eol=lf", false},
	{"eolcrlf", "eol=crlf", false},
	{"textcrlf", "text eol=crlf", false},
	{"autocrlf", "text=auto eol=crlf", false},
	{"autolf", "text=auto eol=lf", false},
	{"crlf", "crlf", false},
	{"nocrlf", "-crlf", false},
	{"crlfinput", "crlf=input", false},
	{"binary", "binary", false},
	{"ident", "ident", false},
	{"identcrlf", "ident text eol=crlf", false},
	{"identauto", "ident text=auto eol=crlf", false}, // checkout goes in-core
	{"identfilter", "ident filter=upper", true},      // in-core too
	{"upper", "filter=upper", true},
	{"upperauto", "filter=upper text=auto eol=crlf", true},
	{"fail", "filter=fail text", true},
	{"proc", "filter=proc", true},
	{"proccrlf", "filter=proc eol=crlf", true},
	{"path", "filter=path", true},
}

var diffExtraContents = map[string]string{
	"ident": "$Id$\r\n$Id: 0123 $\nx$$Id$\n$I$Id$ y\n$Id:$\n$Id: two words $\n$Id: a\tb $\n$Id: multi\nline$\n$Id: open",
	"upper": "Hello World\r\nsecond Line\n",
}

var filterShapes = []string{"mixed", "lonecr", "empty", "ident", "upper"}

func diffContents(filter bool) map[string]string {
	all := map[string]string{}
	for k, v := range eolContents {
		all[k] = v
	}
	for k, v := range diffExtraContents {
		all[k] = v
	}
	if !filter {
		return all
	}
	some := map[string]string{}
	for _, k := range filterShapes {
		some[k] = all[k]
	}
	return some
}

// TestDifferentialAgainstGit compares Clean with the blobs `git add` makes
// and Smudge with the files `git checkout-index` writes, for every
// attribute line × content shape × core.autocrlf × core.eol.
func TestDifferentialAgainstGit(t *testing.T) {
	g := newGitEnv(t)
	filters := map[string]FilterDriver{
		"upper": {Clean: "tr a-z A-Z", Smudge: "tr A-Z a-z"},
		"fail":  {Clean: "cat >/dev/null; exit 1", Smudge: "false"},
		"proc":  {Process: helperProcessCommand(t)},
		"path":  {Clean: "sed 's|^|%f:|'", Smudge: "sed 's|^|%f<|'"},
	}
	for _, autocrlf := range []string{"false", "true", "input"} {
		for _, eol := range []string{"", "crlf"} {
			t.Run("autocrlf="+autocrlf+",eol="+eol, func(t *testing.T) {
				repo := g.initRepo()
				g.must(repo, "config", "core.autocrlf", autocrlf)
				if eol != "" {
					g.must(repo, "config", "core.eol", eol)
				}
				for name, d := range filters {
					for key, v := range map[string]string{"clean": d.Clean, "smudge": d.Smudge, "process": d.Process} {
						if v != "" {
							g.must(repo, "config", "filter."+name+"."+key, v)
						}
					}
				}
				matchers := map[string]*Matcher{}
				files := map[string]string{} // path → worktree content
				// Filter commands cost a process per file and direction;
				// two configurations cover their interplay with eol.
				withFilters := (autocrlf == "false" && eol == "") ||
					(autocrlf == "true" && eol == "crlf" && !testing.Short())
				for _, d := range diffDirs {
					if d.filter && !withFilters {
						continue
					}
					line := "*.txt " + d.attrs + "\n"
					if d.attrs == "" {
						line = ""
					}
					writeFile(t, filepath.Join(repo, d.dir, ".gitattributes"), []byte(line))
					matchers[d.dir] = NewMatcher(nil, nil).Child(d.dir, []byte(line))
					for shape, body := range diffContents(d.filter) {
						files[d.dir+"/"+shape+".txt"] = body
					}
				}
				if withFilters {
					files["path/with space.txt"] = "one\ntwo\n"
					files["proc/error.txt"] = "status error\r\n"
				}
				for p, body := range files {
					writeFile(t, filepath.Join(repo, p), []byte(body))
				}
				g.must(repo, "add", "-A")
				entries := g.indexEntries(repo)
				var ids []string
				for _, id := range entries {
					ids = append(ids, id)
				}
				blobs := g.catBlobs(repo, ids)

				conv := NewConverter(Config{AutoCRLF: autocrlf, EOL: eol, Filters: filters}, repo)
				defer conv.Close()
				paths := make([]string, 0, len(files))
				for p := range files {
					paths = append(paths, p)
				}
				sort.Strings(paths) // git's order, which matters for a process filter
				attrs := map[string]Attrs{}
				for _, p := range paths {
					a := matchers[path.Dir(p)].Lookup(p)
					attrs[p] = a
					got, err := clean(t, conv, p, a, []byte(files[p]), nil)
					if err != nil {
						t.Errorf("Clean %s: %v", p, err)
						continue
					}
					want, ok := blobs[entries[p]]
					if !ok {
						t.Fatalf("no blob for %s", p)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("Clean %s %+v of %q:\n got %q\n git %q", p, a, files[p], got, want)
					}
					if !conv.NeedsClean(a) && !bytes.Equal(want, []byte(files[p])) {
						t.Errorf("NeedsClean(%+v) false but git changed %s", a, p)
					}
				}

				for _, p := range paths {
					if err := os.Remove(filepath.Join(repo, p)); err != nil {
						t.Fatal(err)
					}
				}
				g.must(repo, "checkout-index", "-a")
				for _, p := range paths {
					want, err := os.ReadFile(filepath.Join(repo, p))
					if err != nil {
						t.Fatal(err)
					}
					blob := blobs[entries[p]]
					got, err := smudge(t, conv, p, attrs[p], blob)
					if err != nil {
						t.Errorf("Smudge %s: %v", p, err)
						continue
					}
					if !bytes.Equal(got, want) {
						t.Errorf("Smudge %s %+v of %q:\n got %q\n git %q", p, attrs[p], blob, got, want)
					}
					if !conv.NeedsSmudge(attrs[p]) && !bytes.Equal(want, blob) {
						t.Errorf("NeedsSmudge(%+v) false but git changed %s", attrs[p], p)
					}
				}
			})
		}
	}
}

// TestDifferentialIndexHasCRLF checks the text=auto rule that a path whose
// index blob already has CRLF keeps CRLF, against `git add` over an index
// made before the attributes existed.
func TestDifferentialIndexHasCRLF(t *testing.T) {
	g := newGitEnv(t)
	repo := g.initRepo()
	before := map[string]string{
		"crlf.txt": "old\r\nlines\r\n", // text with CRLF: the rule applies
		"bin.txt":  "old\x00\r\n",      // CRLF but binary: it does not
		"lf.txt":   "old\nlines\n",     // no CR: it does not
	}
	dirs := map[string]string{"auto": "text=auto", "autocrlf": "text=auto eol=crlf", "text": "text", "autoin": "text=auto eol=lf"}
	for d := range dirs {
		for f, body := range before {
			writeFile(t, filepath.Join(repo, d, f), []byte(body))
		}
	}
	g.must(repo, "add", "-A")
	oldEntries := g.indexEntries(repo)
	var oldIDs []string
	for _, id := range oldEntries {
		oldIDs = append(oldIDs, id)
	}
	oldBlobs := g.catBlobs(repo, oldIDs)

	const now = "new\r\ncontent\r\n"
	for d, attrs := range dirs {
		writeFile(t, filepath.Join(repo, d, ".gitattributes"), []byte("*.txt "+attrs+"\n"))
		for f := range before {
			writeFile(t, filepath.Join(repo, d, f), []byte(now))
		}
	}
	g.must(repo, "add", "-A")
	entries := g.indexEntries(repo)
	var ids []string
	for _, id := range entries {
		ids = append(ids, id)
	}
	blobs := g.catBlobs(repo, ids)
	conv := NewConverter(Config{}, repo)
	sawKept := false
	for d, attrs := range dirs {
		m := NewMatcher(nil, nil).Child(d, []byte("*.txt "+attrs+"\n"))
		for f := range before {
			p := d + "/" + f
			old := oldBlobs[oldEntries[p]]
			got, err := clean(t, conv, p, m.Lookup(p), []byte(now), func() bool {
				has, err := BlobHasCRLF(bytes.NewReader(old))
				if err != nil {
					t.Fatal(err)
				}
				return has
			})
			if err != nil {
				t.Fatal(err)
			}
			want := blobs[entries[p]]
			if !bytes.Equal(got, want) {
				t.Errorf("%s [%s] over index %q: got %q, git %q", p, attrs, old, got, want)
			}
			if string(want) == now {
				sawKept = true
			}
		}
	}
	if !sawKept {
		t.Fatal("git never kept CRLF: the rule was not exercised")
	}
}

// TestDifferentialRequiredFilter: a failing required filter is an error in
// both directions, in git and here.
func TestDifferentialRequiredFilter(t *testing.T) {
	g := newGitEnv(t)
	repo := g.initRepo()
	g.must(repo, "config", "filter.req.clean", "false")
	g.must(repo, "config", "filter.req.required", "true")
	g.must(repo, "config", "filter.req2.clean", "cat")
	g.must(repo, "config", "filter.req2.smudge", "exit 7")
	g.must(repo, "config", "filter.req2.required", "true")
	writeFile(t, filepath.Join(repo, ".gitattributes"), []byte("a.r filter=req\nb.r filter=req2\n"))
	writeFile(t, filepath.Join(repo, "a.r"), []byte("x\n"))
	writeFile(t, filepath.Join(repo, "b.r"), []byte("y\n"))
	if _, err := g.run(repo, nil, "add", "a.r"); err == nil {
		t.Fatal("git add with a failing required clean filter succeeded")
	}
	conv := NewConverter(Config{Filters: map[string]FilterDriver{
		"req":  {Clean: "false", Required: true},
		"req2": {Clean: "cat", Smudge: "exit 7", Required: true},
	}}, repo)
	m := NewMatcher(nil, nil).Child("", []byte("a.r filter=req\nb.r filter=req2\n"))
	if _, err := clean(t, conv, "a.r", m.Lookup("a.r"), []byte("x\n"), nil); err == nil {
		t.Error("Clean with a failing required filter succeeded")
	}

	g.must(repo, "add", ".gitattributes", "b.r")
	if err := os.Remove(filepath.Join(repo, "b.r")); err != nil {
		t.Fatal(err)
	}
	if _, err := g.run(repo, nil, "checkout-index", "b.r"); err == nil {
		t.Fatal("git checkout-index with a failing required smudge filter succeeded")
	}
	if _, err := os.Stat(filepath.Join(repo, "b.r")); err == nil {
		t.Fatal("git wrote b.r anyway")
	}
	var out bytes.Buffer
	err := conv.Smudge(t.Context(), "b.r", m.Lookup("b.r"), strings.NewReader("y\n"), &out)
	if err == nil || out.Len() != 0 {
		t.Errorf("Smudge with a failing required filter: err %v, wrote %q", err, out.String())
	}
}
