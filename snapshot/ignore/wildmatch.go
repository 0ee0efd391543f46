package ignore

import "strings"

// Results of dowild, as in git's wildmatch.c. The two abort codes let a
// failing inner match tell the outer '*' loops that advancing further
// cannot help, which keeps patterns like "*a*a*a*b" from going exponential.
const (
	wmMatch           = 0
	wmNoMatch         = 1
	wmAbortAll        = -1
	wmAbortToStarStar = -2
)

// ctype bits follow git's ctype.c (sane_ctype), not the C library's: git
// overrides isspace and friends with a locale-independent ASCII table, and
// that table is what decides [[:space:]] and the like in ignore patterns.
// Notably git's space excludes '\v' and '\f'. Bytes >= 0x80 are in no class.
const (
	ctSpace = 1 << iota
	ctDigit
	ctAlpha
	ctGlob  // * ? [ \
	ctCntrl // 0x00..0x1f, 0x7f
	ctPunct // every printable non-alnum except ' '
)

var ctype = func() (t [256]uint8) {
	for c := 0; c < 0x20; c++ {
		t[c] |= ctCntrl
	}
	t[0x7f] |= ctCntrl
	for _, c := range []byte{' ', '\t', '\n', '\r'} {
		t[c] |= ctSpace
	}
	for c := '0'; c <= '9'; c++ {
		t[c] |= ctDigit
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] |= ctAlpha
		t[c-'a'+'A'] |= ctAlpha
	}
	for c := 0x21; c <= 0x7e; c++ {
		if t[c]&(ctDigit|ctAlpha) == 0 {
			t[c] |= ctPunct
		}
	}
	for _, c := range []byte{'*', '?', '[', '\\'} {
		t[c] |= ctGlob
	}
	return t
}()

func isGlobSpecial(c byte) bool { return ctype[c]&ctGlob != 0 }

// classMatches reports whether c is in the POSIX class name (the text
// between "[:" and ":]"); ok is false for an unknown name, which makes git
// abort the whole match.
func classMatches(name string, c byte) (in, ok bool) {
	t := ctype[c]
	switch name {
	case "alnum":
		return t&(ctAlpha|ctDigit) != 0, true
	case "alpha":
		return t&ctAlpha != 0, true
	case "blank":
		// git falls back to the C library's isblank: ' ' and '\t' in the C
		// locale, and no byte >= 0x80 in glibc's UTF-8 locales either.
		return c == ' ' || c == '\t', true
	case "cntrl":
		return t&ctCntrl != 0, true
	case "digit":
		return t&ctDigit != 0, true
	case "graph":
		// Likewise the C library's isgraph: printable and not space.
		return c > 0x20 && c < 0x7f, true
	case "lower":
		return c >= 'a' && c <= 'z', true
	case "print":
		return c >= 0x20 && c <= 0x7e, true
	case "punct":
		return t&ctPunct != 0, true
	case "space":
		return t&ctSpace != 0, true
	case "upper":
		return c >= 'A' && c <= 'Z', true
	case "xdigit":
		return t&ctDigit != 0 || (c|0x20) >= 'a' && (c|0x20) <= 'f', true
	}
	return false, false
}

// Match reports whether text matches the wildmatch pattern, with git's
// wildmatch.c semantics (no case folding). With pathname set (WM_PATHNAME),
// '*', '?' and bracket expressions never match '/', and "**" spans
// directories only as a whole path component ("**/", "/**", "/**/");
// elsewhere "**" acts like "*". Without pathname, '*' matches '/' too.
//
// Git works on NUL-terminated strings, so neither argument can hold a NUL
// there; here a NUL in text or in a literal part of the pattern is an
// ordinary byte, and one inside a bracket expression ends the pattern.
func Match(pattern, text string, pathname bool) bool {
	return dowild(pattern, text, pathname) == wmMatch
}

// at returns s[i], or 0 past the end: the C code reads the terminating NUL
// in those places and this keeps the translation line for line.
func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// dowild is git's dowild() over Go strings: p and text are the rest of the
// pattern and of the text, indices replace the C pointers.
func dowild(p, text string, pathname bool) int {
	pi, ti := 0, 0
	for ; pi < len(p); pi, ti = pi+1, ti+1 {
		pch := p[pi]
		if ti >= len(text) && pch != '*' {
			return wmAbortAll
		}
		var tch byte
		if ti < len(text) {
			tch = text[ti]
		}
		switch pch {
		case '\\':
			// Literal match with the next pattern byte; a trailing
			// backslash matches nothing, since the text still has a byte.
			pi++
			if pi >= len(p) || tch != p[pi] {
				return wmNoMatch
			}
		default:
			if tch != pch {
				return wmNoMatch
			}
		case '?':
			if pathname && tch == '/' {
				return wmNoMatch
			}
		case '*':
			var matchSlash bool
			pi++
			if pi < len(p) && p[pi] == '*' {
				second := pi
				for pi++; pi < len(p) && p[pi] == '*'; pi++ {
				}
				if !pathname {
					matchSlash = true
				} else if (second < 2 || p[second-2] == '/') &&
					(pi == len(p) || p[pi] == '/' || (p[pi] == '\\' && at(p, pi+1) == '/')) {
					// "**/" may match no directory at all: try the rest of
					// the pattern right here, so "foo/**/bar" matches
					// "foo/bar" as well as "foo/a/bar".
					if pi < len(p) && p[pi] == '/' && dowild(p[pi+1:], text[ti:], pathname) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				} else {
					matchSlash = false
				}
			} else {
				matchSlash = !pathname
			}
			if pi == len(p) {
				// Trailing "**" matches everything; trailing "*" only if
				// no slash is left.
				if !matchSlash && strings.IndexByte(text[ti:], '/') >= 0 {
					return wmAbortToStarStar
				}
				return wmMatch
			} else if !matchSlash && p[pi] == '/' {
				// A single '*' followed by '/' eats the rest of one
				// component; the loop's increment then consumes both
				// slashes.
				slash := strings.IndexByte(text[ti:], '/')
				if slash < 0 {
					return wmAbortAll
				}
				ti += slash
				continue
			}
			for {
				if ti >= len(text) {
					break
				}
				// When a literal follows the star, skip straight to its
				// next occurrence: what lies before belongs to the star.
				// Without matchSlash the star cannot reach past a '/'.
				if !isGlobSpecial(p[pi]) {
					lit := p[pi]
					for ti < len(text) && (matchSlash || text[ti] != '/') {
						if text[ti] == lit {
							break
						}
						ti++
					}
					if ti >= len(text) || text[ti] != lit {
						if matchSlash {
							return wmAbortAll
						}
						return wmAbortToStarStar
					}
					tch = text[ti]
				}
				if m := dowild(p[pi:], text[ti:], pathname); m != wmNoMatch {
					if !matchSlash || m != wmAbortToStarStar {
						return m
					}
				} else if !matchSlash && tch == '/' {
					return wmAbortToStarStar
				}
				ti++
				tch = at(text, ti)
			}
			return wmAbortAll
		case '[':
			pi++
			pch = at(p, pi)
			if pch == '^' {
				pch = '!'
			}
			negated := pch == '!'
			if negated {
				pi++
				pch = at(p, pi)
			}
			var prev byte
			matched := false
			for {
				if pch == 0 {
					return wmAbortAll
				}
				if pch == '\\' {
					pi++
					pch = at(p, pi)
					if pch == 0 {
						return wmAbortAll
					}
					if tch == pch {
						matched = true
					}
				} else if pch == '-' && prev != 0 && at(p, pi+1) != 0 && at(p, pi+1) != ']' {
					pi++
					pch = p[pi]
					if pch == '\\' {
						pi++
						pch = at(p, pi)
						if pch == 0 {
							return wmAbortAll
						}
					}
					if tch <= pch && tch >= prev {
						matched = true
					}
					pch = 0 // so that prev becomes 0: no range may start here
				} else if pch == '[' && at(p, pi+1) == ':' {
					pi += 2
					s := pi
					for pch = at(p, pi); pch != 0 && pch != ']'; pch = at(p, pi) {
						pi++
					}
					if pch == 0 {
						return wmAbortAll
					}
					if n := pi - s - 1; n < 0 || p[pi-1] != ':' {
						// No ":]": the '[' was an ordinary member.
						pi = s - 2
						pch = '['
						if tch == pch {
							matched = true
						}
					} else {
						in, ok := classMatches(p[s:s+n], tch)
						if !ok {
							return wmAbortAll
						}
						if in {
							matched = true
						}
						pch = 0
					}
				} else if tch == pch {
					matched = true
				}
				prev = pch
				pi++
				pch = at(p, pi)
				if pch == ']' {
					break
				}
			}
			if matched == negated || (pathname && tch == '/') {
				return wmNoMatch
			}
		}
	}
	if ti < len(text) {
		return wmNoMatch
	}
	return wmMatch
}
