package attr

// This file is a port of git's wildmatch.c. It is kept byte-for-byte in
// behaviour (including the ABORT shortcuts, which change results, not only
// speed) because a pattern that matches differently here than in git gives a
// different blob id than `git add`.

const (
	wmMatch = iota
	wmNoMatch
	wmAbortAll
	wmAbortToStarStar
)

const (
	wmPathname = 1 << iota // '*' and '?' do not match '/'
)

// wildmatch reports whether text matches the git glob pattern.
func wildmatch(pattern, text string, flags uint) bool {
	return dowild(pattern, text, flags) == wmMatch
}

// at returns s[i], or 0 past the end, standing in for C's NUL terminator.
func at(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

func isGlobSpecial(c byte) bool {
	return c == '*' || c == '?' || c == '[' || c == '\\'
}

func dowild(pat, text string, flags uint) int {
	p, t := 0, 0
	for ; at(pat, p) != 0; t, p = t+1, p+1 {
		pch := pat[p]
		tch := at(text, t)
		if tch == 0 && pch != '*' {
			return wmAbortAll
		}
		switch pch {
		case '\\':
			// Literal match with the following character; a trailing
			// backslash compares against NUL and fails.
			p++
			pch = at(pat, p)
			if tch != pch {
				return wmNoMatch
			}
			continue
		default:
			if tch != pch {
				return wmNoMatch
			}
			continue
		case '?':
			if flags&wmPathname != 0 && tch == '/' {
				return wmNoMatch
			}
			continue
		case '*':
			var matchSlash bool
			p++
			if at(pat, p) == '*' {
				prevP := p - 2
				for {
					p++
					if at(pat, p) != '*' {
						break
					}
				}
				if flags&wmPathname == 0 {
					matchSlash = true
				} else if (prevP < 0 || pat[prevP] == '/') &&
					(at(pat, p) == 0 || at(pat, p) == '/' ||
						(at(pat, p) == '\\' && at(pat, p+1) == '/')) {
					// "**/" may match nothing: try the rest of the pattern
					// right here so foo/**/bar matches foo/bar.
					if at(pat, p) == '/' && dowild(pat[p+1:], text[t:], flags) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				} else {
					matchSlash = false
				}
			} else {
				matchSlash = flags&wmPathname == 0
			}
			if at(pat, p) == 0 {
				// Trailing "**" matches everything; trailing "*" only
				// when no slash is left.
				if !matchSlash && indexByteFrom(text, t, '/') >= 0 {
					return wmNoMatch
				}
				return wmMatch
			} else if !matchSlash && pat[p] == '/' {
				// One '*' followed by a slash matches up to the next '/'.
				s := indexByteFrom(text, t, '/')
				if s < 0 {
					return wmNoMatch
				}
				t = s
				// The slash is consumed by the loop increment.
				break
			}
			for {
				if tch == 0 {
					break
				}
				// A literal after '*' lets us skip ahead to its next
				// occurrence; without matchSlash never past a '/'.
				if !isGlobSpecial(pat[p]) {
					pch = pat[p]
					for {
						tch = at(text, t)
						if tch == 0 || (!matchSlash && tch == '/') {
							break
						}
						if tch == pch {
							break
						}
						t++
					}
					if tch != pch {
						return wmNoMatch
					}
				}
				if matched := dowild(pat[p:], text[t:], flags); matched != wmNoMatch {
					if !matchSlash || matched != wmAbortToStarStar {
						return matched
					}
				} else if !matchSlash && tch == '/' {
					return wmAbortToStarStar
				}
				t++
				tch = at(text, t)
			}
			return wmAbortAll
		case '[':
			p++
			pch = at(pat, p)
			if pch == '^' {
				pch = '!'
			}
			negated := pch == '!'
			if negated {
				p++
				pch = at(pat, p)
			}
			var prevCh byte
			matched := false
			for {
				if pch == 0 {
					return wmAbortAll
				}
				if pch == '\\' {
					p++
					pch = at(pat, p)
					if pch == 0 {
						return wmAbortAll
					}
					if tch == pch {
						matched = true
					}
				} else if pch == '-' && prevCh != 0 && at(pat, p+1) != 0 && at(pat, p+1) != ']' {
					p++
					pch = pat[p]
					if pch == '\\' {
						p++
						pch = at(pat, p)
						if pch == 0 {
							return wmAbortAll
						}
					}
					if tch <= pch && tch >= prevCh {
						matched = true
					}
					pch = 0 // so that prevCh becomes 0
				} else if pch == '[' && at(pat, p+1) == ':' {
					p += 2
					s := p
					for at(pat, p) != 0 && pat[p] != ']' {
						p++
					}
					if at(pat, p) == 0 {
						return wmAbortAll
					}
					i := p - s - 1
					if i < 0 || pat[p-1] != ':' {
						// No ":]": treat the '[' as a normal set member.
						p = s - 2
						pch = '['
						if tch == pch {
							matched = true
						}
					} else {
						ok, known := charClass(pat[s:s+i], tch)
						if !known {
							return wmAbortAll
						}
						if ok {
							matched = true
						}
						pch = 0
					}
				} else if tch == pch {
					matched = true
				}
				prevCh = pch
				p++
				pch = at(pat, p)
				if pch == ']' {
					break
				}
			}
			if matched == negated || (flags&wmPathname != 0 && tch == '/') {
				return wmNoMatch
			}
			continue
		}
	}
	if t < len(text) {
		return wmNoMatch
	}
	return wmMatch
}

func indexByteFrom(s string, from int, c byte) int {
	for i := from; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// charClass evaluates a POSIX class as git does: git overrides the libc
// ctype macros with its own ASCII tables, so bytes >= 0x80 are in no class
// and "space" is only SP, HT, LF and CR.
func charClass(name string, c byte) (matched, known bool) {
	isUpper := c >= 'A' && c <= 'Z'
	isLower := c >= 'a' && c <= 'z'
	isDigit := c >= '0' && c <= '9'
	isAlpha := isUpper || isLower
	switch name {
	case "alnum":
		return isAlpha || isDigit, true
	case "alpha":
		return isAlpha, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 0x20 || c == 0x7f, true
	case "digit":
		return isDigit, true
	case "graph":
		return c > 0x20 && c < 0x7f, true
	case "lower":
		return isLower, true
	case "print":
		return c >= 0x20 && c <= 0x7e, true
	case "punct":
		return c > 0x20 && c < 0x7f && !isAlpha && !isDigit, true
	case "space":
		return c == ' ' || c == '\t' || c == '\n' || c == '\r', true
	case "upper":
		return isUpper, true
	case "xdigit":
		return isDigit || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'), true
	}
	return false, false
}
