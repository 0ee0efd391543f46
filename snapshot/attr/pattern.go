package attr

import (
	"strings"

	"github.com/mulligan-dev/mulligan/snapshot/ignore"
)

// Pattern flags, as dir.c's PATTERN_FLAG_*.
const (
	patNoDir     = 1 << iota // no slash: match the basename at any depth
	patEndsWith              // "*literal": a suffix compare is enough
	patMustBeDir             // trailing slash: matches directories only
	patNegative              // leading '!': not allowed in attributes
)

type pattern struct {
	pat    string // without the '!' and the trailing '/'
	nowild int    // length of the leading part without glob characters
	flags  uint
}

// simpleLength is dir.c's simple_length: bytes before the first glob
// special character (is_glob_special: '*', '?', '[' and '\').
func simpleLength(s string) int {
	if i := strings.IndexAny(s, `*?[\`); i >= 0 {
		return i
	}
	return len(s)
}

func noWildcard(s string) bool { return simpleLength(s) == len(s) }

// parsePathPattern is dir.c's parse_path_pattern.
func parsePathPattern(p string) pattern {
	var flags uint
	if strings.HasPrefix(p, "!") {
		flags |= patNegative
		p = p[1:]
	}
	full := p
	if strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
		flags |= patMustBeDir
	}
	if !strings.Contains(p, "/") {
		flags |= patNoDir
	}
	nowild := simpleLength(full)
	if nowild > len(p) {
		nowild = len(p)
	}
	// git tests the rest of the NUL-terminated string, trailing slash
	// included.
	if strings.HasPrefix(full, "*") && noWildcard(full[1:]) {
		flags |= patEndsWith
	}
	return pattern{pat: p, nowild: nowild, flags: flags}
}

// Patterns are matched with the ignore package's port of wildmatch.c: git
// matches gitattributes and gitignore patterns with the same dir.c code, so
// one port serves both. Its NUL handling (an ordinary byte in text and in
// literals) cannot show here: Parse cuts lines at a NUL, as git's C
// strings do, and paths hold none.

// matchBasename is dir.c's match_basename (case-sensitive: core.ignoreCase
// is not supported).
func matchBasename(basename string, pt *pattern) bool {
	pat := pt.pat
	if pt.nowild == len(pat) {
		return pat == basename
	}
	if pt.flags&patEndsWith != 0 {
		return len(pat)-1 <= len(basename) && basename[len(basename)-(len(pat)-1):] == pat[1:]
	}
	return ignore.Match(pat, basename, false)
}

// matchPathname is dir.c's match_pathname: the pattern is relative to base
// (the directory of the .gitattributes file, "" for the root).
func matchPathname(pathname, base string, pt *pattern) bool {
	pat := pt.pat
	prefix := pt.nowild
	if strings.HasPrefix(pat, "/") {
		pat = pat[1:]
		prefix--
	}
	baselen := len(base)
	if len(pathname) < baselen+1 ||
		(baselen > 0 && pathname[baselen] != '/') ||
		pathname[:baselen] != base {
		return false
	}
	name := pathname
	if baselen > 0 {
		name = pathname[baselen+1:]
	}
	if prefix > 0 {
		if prefix > len(name) {
			return false
		}
		if pat[:prefix] != name[:prefix] {
			return false
		}
		pat = pat[prefix:]
		name = name[prefix:]
		if pat == "" && name == "" {
			return true
		}
	}
	return ignore.Match(pat, name, true)
}

// matches is attr.c's path_matches for a regular file (never a directory,
// so patterns with a trailing slash never match).
func (pt *pattern) matches(path, base string) bool {
	if pt.flags&patMustBeDir != 0 {
		return false
	}
	if pt.flags&patNoDir != 0 {
		basename := path
		if i := strings.LastIndexByte(path, '/'); i >= 0 {
			basename = path[i+1:]
		}
		return matchBasename(basename, pt)
	}
	return matchPathname(path, base, pt)
}
