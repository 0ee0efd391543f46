package ignore

import (
	"strings"
	"testing"
)

// wildCases are wildmatch cases in the manner of git's t3070-wildmatch:
// pattern, text, and the expected result with and without WM_PATHNAME.
var wildCases = []struct {
	pattern, text  string
	pathname, glob bool
}{
	{"foo", "foo", true, true},
	{"bar", "foo", false, false},
	{"", "", true, true},
	{"???", "foo", true, true},
	{"??", "foo", false, false},
	{"*", "foo", true, true},
	{"f*", "foo", true, true},
	{"*f", "foo", false, false},
	{"*foo*", "foo", true, true},
	{"*ob*a*r*", "foobar", true, true},
	{"*ab", "aaaaaaabababab", true, true},
	{"foo\\*", "foo*", true, true},
	{"foo\\*bar", "foobar", false, false},
	{"f\\\\oo", "f\\oo", true, true},
	{"*[al]?", "ball", true, true},
	{"[ten]", "ten", false, false},
	{"**[!te]", "ten", true, true},
	{"**[!ten]", "ten", false, false},
	{"t[a-g]n", "ten", true, true},
	{"t[!a-g]n", "ten", false, false},
	{"t[!a-g]n", "ton", true, true},
	{"t[^a-g]n", "ton", true, true},
	{"a[]]b", "a]b", true, true},
	{"a[]-]b", "a-b", true, true},
	{"a[]-]b", "a]b", true, true},
	{"a[]-]b", "aab", false, false},
	{"a[]a-]b", "aab", true, true},
	{"]", "]", true, true},
	{"foo*bar", "foo/baz/bar", false, true},
	{"foo**bar", "foo/baz/bar", false, true},
	{"foo**bar", "foobazbar", true, true},
	{"foo/**/bar", "foo/baz/bar", true, true},
	{"foo/**/**/bar", "foo/baz/bar", true, false},
	{"foo/**/bar", "foo/b/a/z/bar", true, true},
	{"foo/**/bar", "foo/bar", true, false},
	{"foo/**/**/bar", "foo/bar", true, false},
	{"foo?bar", "foo/bar", false, true},
	{"foo[/]bar", "foo/bar", false, true},
	{"foo[^a-z]bar", "foo/bar", false, true},
	{"f[^eiu][^eiu][^eiu][^eiu][^eiu]r", "foo-bar", true, true},
	{"**/foo", "foo", true, false},
	{"**/foo", "XXX/foo", true, true},
	{"**/foo", "bar/baz/foo", true, true},
	{"*/foo", "bar/baz/foo", false, true},
	{"**/bar*", "foo/bar/baz", false, true},
	{"**/bar/*", "deep/foo/bar/baz", true, true},
	{"**/bar/*", "deep/foo/bar/baz/", false, true},
	{"**/bar/**", "deep/foo/bar/baz/", true, true},
	{"**/bar/*", "deep/foo/bar", false, false},
	{"**/bar/**", "deep/foo/bar/", true, true},
	{"**/bar**", "foo/bar/baz", false, true},
	{"*/bar/**", "foo/bar/baz/x", true, true},
	{"*/bar/**", "deep/foo/bar/baz/x", false, true},
	{"**/bar/*/*", "deep/foo/bar/baz/x", true, true},
	{"a[c-c]st", "acrt", false, false},
	{"a[c-c]rt", "acrt", true, true},
	{"[!]-]", "]", false, false},
	{"[!]-]", "a", true, true},
	{"\\", "", false, false},
	{"\\", "\\", false, false},
	{"*/\\", "XXX/\\", false, false},
	{"*/\\\\", "XXX/\\", true, true},
	{"foo", "foo", true, true},
	{"@foo", "@foo", true, true},
	{"@foo", "foo", false, false},
	{"\\[ab]", "[ab]", true, true},
	{"[[]ab]", "[ab]", true, true},
	{"[[:]ab]", "[ab]", true, true},
	{"[[::]ab]", "[ab]", false, false},
	{"[[:digit]ab]", "[ab]", true, true},
	{"[\\[:]ab]", "[ab]", true, true},
	{"\\??\\?b", "?a?b", true, true},
	{"\\a\\b\\c", "abc", true, true},
	{"", "foo", false, false},
	{"**/t[o]", "foo/bar/baz/to", true, true},
	{"[[:alpha:]][[:digit:]][[:upper:]]", "a1B", true, true},
	{"[[:digit:][:upper:][:space:]]", "a", false, false},
	{"[[:digit:][:upper:][:space:]]", "A", true, true},
	{"[[:digit:][:upper:][:space:]]", "1", true, true},
	{"[[:digit:][:upper:][:spaci:]]", "1", false, false},
	{"[[:digit:][:upper:][:space:]]", " ", true, true},
	{"[[:digit:][:upper:][:space:]]", ".", false, false},
	{"[[:digit:][:punct:][:space:]]", ".", true, true},
	{"[[:xdigit:]]", "5", true, true},
	{"[[:xdigit:]]", "f", true, true},
	{"[[:xdigit:]]", "D", true, true},
	{"[[:alnum:][:alpha:][:blank:][:cntrl:][:digit:][:graph:][:lower:][:print:][:punct:][:space:][:upper:][:xdigit:]]", "_", true, true},
	{"[^[:alnum:][:alpha:][:blank:][:cntrl:][:digit:][:lower:][:space:][:upper:][:xdigit:]]", ".", true, true},
	{"[a-c[:digit:]x-z]", "5", true, true},
	{"[a-c[:digit:]x-z]", "b", true, true},
	{"[a-c[:digit:]x-z]", "y", true, true},
	{"[a-c[:digit:]x-z]", "q", false, false},
	{"[[:space:]]", "\v", false, false}, // git's own ctype: no \v
	{"[[:space:]]", "\r", true, true},
	{"[\\\\-^]", "]", true, true},
	{"[\\\\-^]", "[", false, false},
	{"[\\-_]", "-", true, true},
	{"[\\]]", "]", true, true},
	{"[\\]]", "\\]", false, false},
	{"[\\]]", "\\", false, false},
	{"a[]b", "ab", false, false},
	{"a[]b", "a[]b", false, false},
	{"ab[", "ab[", false, false},
	{"[!", "ab", false, false},
	{"[-", "ab", false, false},
	{"[-]", "-", true, true},
	{"[a-", "-", false, false},
	{"[!a-", "-", false, false},
	{"[--A]", "-", true, true},
	{"[--A]", "5", true, true},
	{"[ --]", " ", true, true},
	{"[ --]", "$", true, true},
	{"[ --]", "-", true, true},
	{"[ --]", "0", false, false},
	{"[---]", "-", true, true},
	{"[------]", "-", true, true},
	{"[a-e-n]", "j", false, false},
	{"[a-e-n]", "-", true, true},
	{"[!------]", "a", true, true},
	{"[]-a]", "[", false, false},
	{"[]-a]", "^", true, true},
	{"[!]-a]", "^", false, false},
	{"[!]-a]", "[", true, true},
	{"[a^bc]", "^", true, true},
	{"[a-]b]", "-b]", true, true},
	{"[\\]", "\\", false, false},
	{"[\\\\]", "\\", true, true},
	{"[!\\\\]", "\\", false, false},
	{"[A-\\\\]", "G", true, true},
	{"b*a", "aaabbb", false, false},
	{"*ba*", "aabcaa", false, false},
	{"[,]", ",", true, true},
	{"[\\\\,]", ",", true, true},
	{"[\\\\,]", "\\", true, true},
	{"[,-.]", "-", true, true},
	{"[,-.]", "+", false, false},
	{"[,-.]", "-.]", false, false},
	{"[\\1-\\3]", "2", true, true},
	{"[\\1-\\3]", "3", true, true},
	{"[\\1-\\3]", "4", false, false},
	{"[[-\\]]", "\\", true, true},
	{"[[-\\]]", "[", true, true},
	{"[[-\\]]", "]", true, true},
	{"[[-\\]]", "-", false, false},
	{"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "-adobe-courier-bold-o-normal--12-120-75-75-m-70-iso8859-1", true, true},
	{"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "-adobe-courier-bold-o-normal--12-120-75-75-X-70-iso8859-1", false, false},
	{"-*-*-*-*-*-*-12-*-*-*-m-*-*-*", "-adobe-courier-bold-o-normal--12-120-75-75-/-70-iso8859-1", false, false},
	{"XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*", "XXX/adobe/courier/bold/o/normal//12/120/75/75/m/70/iso8859/1", true, true},
	{"XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*", "XXX/adobe/courier/bold/o/normal//12/120/75/75/X/70/iso8859/1", false, false},
	{"**/*a*b*g*n*t", "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt", true, true},
	{"**/*a*b*g*n*t", "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txtz", false, false},
	{"*/*/*", "foo", false, false},
	{"*/*/*", "foo/bar", false, false},
	{"*/*/*", "foo/bba/arr", true, true},
	{"*/*/*", "foo/bb/aa/rr", false, true},
	{"**/**/**", "foo/bb/aa/rr", true, true},
	{"*X*i", "abcXdefXghi", true, true},
	{"*X*i", "ab/cXd/efXg/hi", false, true},
	{"*/*X*/*/*i", "ab/cXd/efXg/hi", true, true},
	{"**/*X*/**/*i", "ab/cXd/efXg/hi", true, true},
	{"fo", "foo", false, false},
	{"foo/bar", "foo/bar", true, true},
	{"foo/*", "foo/bar", true, true},
	{"foo/bba/arr", "foo/bba/arr", true, true},
	{"foo/**", "foo/bba/arr", true, true},
	{"foo*", "foo/bba/arr", false, true},
	{"foo**", "foo/bba/arr", false, true},
	{"foo/*arr", "foo/bba/arr", false, true},
	{"foo/**arr", "foo/bba/arr", false, true},
	{"foo/*z", "foo/bba/arr", false, false},
	{"foo/**z", "foo/bba/arr", false, false},
	{"foo?bar", "foo/bar", false, true},
	{"**/foo", "foo", true, false},
	// From attr's copy of the t3070 suite, when attr had its own port.
	{"foo/**/**/bar", "foo/b/a/z/bar", true, true},
	{"f[^eiu][^eiu][^eiu][^eiu][^eiu]r", "foo/bar", false, true},
	{"foo/*", "foo/bba/arr", false, true},
	{"*Xg*i", "ab/cXd/efXg/hi", false, true},
	{"[A-Z]", "a", false, false},
	{"[A-Z]", "A", true, true},
	{"[a-z]", "A", false, false},
	{"[a-z]", "a", true, true},
	{"[[:upper:]]", "a", false, false},
	{"[[:upper:]]", "A", true, true},
	{"[[:lower:]]", "A", false, false},
	{"[[:lower:]]", "a", true, true},
	{"[B-Za]", "A", false, false},
	{"[B-Za]", "a", true, true},
	{"[B-a]", "A", false, false},
	{"[B-a]", "a", true, true},
	{"[Z-y]", "z", false, false},
	{"[Z-y]", "Z", true, true},
	{"*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", strings.Repeat("a", 60), false, false},
}

func TestWildmatch(t *testing.T) {
	for _, c := range wildCases {
		if got := Match(c.pattern, c.text, true); got != c.pathname {
			t.Errorf("Match(%q, %q, pathname) = %v, want %v", c.pattern, c.text, got, c.pathname)
		}
		if got := Match(c.pattern, c.text, false); got != c.glob {
			t.Errorf("Match(%q, %q, no pathname) = %v, want %v", c.pattern, c.text, got, c.glob)
		}
		for _, pn := range []bool{true, false} {
			if got, ref := Match(c.pattern, c.text, pn), refMatch(c.pattern, c.text, pn); got != ref {
				t.Errorf("Match(%q, %q, %v) = %v, reference says %v", c.pattern, c.text, pn, got, ref)
			}
		}
	}
}

// refMatch is an independent, plainly backtracking reading of wildmatch's
// rules (memoized so it stays polynomial), used as an oracle for the
// translation of git's early-abort loop. It assumes no NUL bytes.
func refMatch(p, t string, pathname bool) bool {
	memo := map[[2]int]bool{}
	var m func(pi, ti int) bool
	m = func(pi, ti int) bool {
		key := [2]int{pi, ti}
		if v, ok := memo[key]; ok {
			return v
		}
		v := refStep(p, t, pi, ti, pathname, m)
		memo[key] = v
		return v
	}
	return m(0, 0)
}

func refStep(p, t string, pi, ti int, pathname bool, m func(int, int) bool) bool {
	if pi == len(p) {
		return ti == len(t)
	}
	switch p[pi] {
	case '\\':
		return pi+1 < len(p) && ti < len(t) && t[ti] == p[pi+1] && m(pi+2, ti+1)
	case '?':
		return ti < len(t) && !(pathname && t[ti] == '/') && m(pi+1, ti+1)
	case '[':
		in, next, ok := refClass(p, pi)
		return ok && ti < len(t) && in(t[ti]) && !(pathname && t[ti] == '/') && m(next, ti+1)
	case '*':
		j := pi
		for j < len(p) && p[j] == '*' {
			j++
		}
		slash := !pathname
		if pathname && j-pi >= 2 && (pi == 0 || p[pi-1] == '/') &&
			(j == len(p) || p[j] == '/' || (p[j] == '\\' && j+1 < len(p) && p[j+1] == '/')) {
			slash = true
			if j < len(p) && p[j] == '/' && m(j+1, ti) {
				return true // "**/" matching no directory
			}
		}
		for k := ti; k <= len(t); k++ {
			if m(j, k) {
				return true
			}
			if k < len(t) && t[k] == '/' && !slash {
				return false
			}
		}
		return false
	default:
		return ti < len(t) && t[ti] == p[pi] && m(pi+1, ti+1)
	}
}

// refClass parses the bracket expression at p[i] == '[' and returns its
// membership test and the index after its ']'; ok is false when it is
// malformed (unterminated, or an unknown [:name:]), which fails the match.
func refClass(p string, i int) (in func(byte) bool, next int, ok bool) {
	type item struct {
		lo, hi byte
		class  string
	}
	var items []item
	i++
	negated := i < len(p) && (p[i] == '!' || p[i] == '^')
	if negated {
		i++
	}
	first := true
	for ; first || i < len(p) && p[i] != ']'; first = false {
		if i >= len(p) {
			return nil, 0, false
		}
		c := p[i]
		switch {
		case c == '\\':
			if i+1 >= len(p) {
				return nil, 0, false
			}
			items = append(items, item{lo: p[i+1], hi: p[i+1]})
			i += 2
		case c == '[' && i+1 < len(p) && p[i+1] == ':':
			end := strings.IndexByte(p[i+2:], ']')
			if end < 0 {
				return nil, 0, false
			}
			name := p[i+2 : i+2+end]
			if !strings.HasSuffix(name, ":") {
				items = append(items, item{lo: '[', hi: '['})
				i++
				break
			}
			name = name[:len(name)-1]
			if _, known := classMatches(name, 'a'); !known {
				return nil, 0, false
			}
			items = append(items, item{class: name})
			i += 2 + end + 1
			continue
		default:
			items = append(items, item{lo: c, hi: c})
			i++
		}
		// A '-' after a plain member, not followed by ']' or the end,
		// adds the range from that member to the next (which may be
		// escaped); the member itself still counts on its own.
		last := items[len(items)-1]
		if last.class == "" && i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			hi := p[i+1]
			i += 2
			if hi == '\\' {
				if i >= len(p) {
					return nil, 0, false
				}
				hi = p[i]
				i++
			}
			items = append(items, item{lo: last.lo, hi: hi})
		}
	}
	if i >= len(p) {
		return nil, 0, false
	}
	return func(c byte) bool {
		hit := false
		for _, it := range items {
			if it.class != "" {
				if yes, _ := classMatches(it.class, c); yes {
					hit = true
				}
			} else if c >= it.lo && c <= it.hi {
				hit = true
			}
		}
		return hit != negated
	}, i + 1, true
}
