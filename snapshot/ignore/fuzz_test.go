package ignore

import (
	"strings"
	"testing"
)

// FuzzMatch checks wildmatch and Parse on arbitrary input: nothing panics,
// a pattern without special bytes matches only itself, and Match agrees
// with the plain backtracking reference refMatch.
func FuzzMatch(f *testing.F) {
	for _, c := range wildCases {
		if len(c.text) < 40 {
			f.Add(c.pattern, c.text)
		}
	}
	f.Add("a/**/b/", "a/x/y/b")
	f.Add("!*.o\n\\#x \n[[:alpha:]]\\ ", "x.o")
	f.Add("foo**/bar", "foo/x/bar")
	f.Add("[a-\\]]x", "]x")
	f.Fuzz(func(t *testing.T, pattern, text string) {
		for _, pathname := range []bool{true, false} {
			got := Match(pattern, text, pathname)
			if !strings.ContainsAny(pattern, "*?[\\") && got != (pattern == text) {
				t.Fatalf("Match(%q, %q, %v) = %v for a pattern without wildcards", pattern, text, pathname, got)
			}
			if len(pattern) <= 64 && len(text) <= 64 && !strings.ContainsRune(pattern+text, 0) {
				if ref := refMatch(pattern, text, pathname); got != ref {
					t.Fatalf("Match(%q, %q, %v) = %v, reference says %v", pattern, text, pathname, got, ref)
				}
			}
		}
		// Parse and the matcher must take anything, too.
		ps := Parse([]byte(pattern), "d")
		m := NewMatcher(ps).Child("d", []byte(pattern)).Child("d/e", []byte(text))
		for _, p := range []string{text, "d/" + text, "d/e/" + text} {
			m.Ignored(p, true)
			m.IgnoredPath(p, false)
		}
		for _, p := range ps {
			if p.pattern == "" || strings.ContainsRune(p.pattern, 0) {
				t.Fatalf("Parse kept pattern %q", p.pattern)
			}
			// The tail filter and the literal fast paths only skip work.
			plain := p
			plain.tail = ""
			for _, path := range []string{text, "d/" + text} {
				base := path[strings.LastIndexByte(path, '/')+1:]
				if got, want := p.matches(path, base, true), plain.matches(path, base, true); got != want {
					t.Fatalf("pattern %q on %q: %v with the tail filter, %v without", p.pattern, path, got, want)
				}
				var want bool
				if p.flags&flagNoDir != 0 {
					want = dowild(p.pattern, base, false) == wmMatch
				} else {
					want = plain.matchPathname(path)
				}
				if got := p.matches(path, base, true); got != want {
					t.Fatalf("pattern %q on %q: matches says %v, wildmatch %v", p.pattern, path, got, want)
				}
			}
		}
	})
}
