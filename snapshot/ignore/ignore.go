// Package ignore decides, exactly as git does, which untracked paths of a
// working tree are ignored by .gitignore files, $GIT_DIR/info/exclude and
// core.excludesFile. It owns the gitignore pattern syntax (git's dir.c
// parse_path_pattern, match_basename, match_pathname and wildmatch.c) and the
// precedence between pattern sources. Package attr parses and matches
// gitattributes patterns with the same code (ParsePattern), as git does.
//
// It must never read the working tree, walk directories, run the git binary
// or look at the index: callers hand it file contents and paths, and it only
// answers. Every value is immutable once built, so one Matcher may serve
// many goroutines.
package ignore

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strings"
)

// maxFileSize mirrors git's PATTERN_MAX_FILE_SIZE: git skips, with a warning,
// a pattern file of this size or more rather than parse it.
const maxFileSize = 100 << 20

// ErrTooLarge reports a pattern file that git would skip for its size.
var ErrTooLarge = errors.New("ignore: pattern file of 100 MiB or more is skipped, as git does")

const (
	flagNegative  = 1 << iota // "!pattern": a match means "not ignored"
	flagMustBeDir             // "pattern/": matches directories only
	flagNoDir                 // no '/' left: match the basename at any depth
	flagEndsWith              // "*literal": a suffix test is enough
)

// Pattern is one parsed line of an ignore file.
type Pattern struct {
	// pattern is the line without "!" and without the trailing "/", as git
	// stores it; a leading "/" is kept and only skipped when matching.
	pattern string
	// base is the directory of the file the line came from, "" for root.
	base string
	// nowild is git's nowildcardlen: the length of the literal prefix,
	// before the first of * ? [ \.
	nowild int
	flags  uint8
	// tail is the literal end of a wildcard pattern, after its last glob
	// byte or ']': any text the pattern matches ends with it, so a suffix
	// test rejects most paths before wildmatch runs. "" when unknown.
	tail string
	// line is the 1-based line number, for diagnostics and tests.
	line int
}

// String returns the pattern the way `git check-ignore -v` prints it.
func (p Pattern) String() string {
	s := p.pattern
	if p.flags&flagNegative != 0 {
		s = "!" + s
	}
	if p.flags&flagMustBeDir != 0 {
		s += "/"
	}
	return s
}

// Negated reports whether the pattern began with "!".
func (p Pattern) Negated() bool { return p.flags&flagNegative != 0 }

// Line is the 1-based line of the pattern in its file.
func (p Pattern) Line() int { return p.line }

// Parse parses the content of an ignore file whose patterns are relative to
// directory base ("" for the root; e.g. "a/b" for a/b/.gitignore). It
// follows git's add_patterns_from_buffer: a UTF-8 BOM is skipped, lines are
// split on '\n' with one trailing '\r' dropped, empty lines and lines
// starting with '#' are skipped, unescaped trailing spaces are trimmed, a
// leading '!' negates, a trailing '/' restricts to directories, and a '/'
// anywhere else anchors the pattern to base.
func Parse(content []byte, base string) []Pattern {
	if len(content) >= maxFileSize {
		return nil
	}
	base = strings.Trim(base, "/")
	content = bytes.TrimPrefix(content, []byte("\xef\xbb\xbf"))
	var out []Pattern
	for lineno := 1; len(content) > 0; lineno++ {
		line := content
		if i := bytes.IndexByte(content, '\n'); i >= 0 {
			line, content = content[:i], content[i+1:]
		} else {
			content = nil
		}
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		// git handles each line as a C string, so a NUL ends it.
		if i := bytes.IndexByte(line, 0); i >= 0 {
			line = line[:i]
		}
		if p, ok := parseLine(trimTrailingSpaces(line), base); ok {
			p.line = lineno
			out = append(out, p)
		}
	}
	return out
}

// ReadFile reads and parses the ignore file at name (info/exclude,
// core.excludesFile, or a .gitignore) with patterns relative to base. A
// missing file is not an error: it yields no patterns, as in git.
func ReadFile(name, base string) ([]Pattern, error) {
	data, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(data) >= maxFileSize {
		return nil, ErrTooLarge
	}
	return Parse(data, base), nil
}

// trimTrailingSpaces is git's trim_trailing_spaces: only ' ' is trimmed, and
// a backslash protects the byte after it.
func trimTrailingSpaces(s []byte) []byte {
	lastSpace := -1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			if i >= len(s) {
				return s
			}
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return s[:lastSpace]
	}
	return s
}

// simpleLength is git's simple_length: bytes before the first glob special.
func simpleLength(s []byte) int {
	for i, c := range s {
		if isGlobSpecial(c) {
			return i
		}
	}
	return len(s)
}

// parseLine is git's parse_path_pattern. ok is false for a line that can
// never match anything (nothing left after "!" and "/"), which git keeps
// but which cannot change any answer.
func parseLine(p []byte, base string) (Pattern, bool) {
	var flags uint8
	if len(p) > 0 && p[0] == '!' {
		flags |= flagNegative
		p = p[1:]
	}
	n := len(p)
	if n > 0 && p[n-1] == '/' {
		n--
		flags |= flagMustBeDir
	}
	if bytes.IndexByte(p[:n], '/') < 0 {
		flags |= flagNoDir
	}
	nowild := min(simpleLength(p), n)
	if len(p) > 0 && p[0] == '*' && simpleLength(p[1:]) == len(p)-1 {
		flags |= flagEndsWith
	}
	if n == 0 {
		return Pattern{}, false
	}
	// Only anchored patterns look at base; basename patterns apply to every
	// path below the file's directory, which the Matcher checks.
	pat := Pattern{pattern: string(p[:n]), base: base, nowild: nowild, flags: flags}
	if nowild < n {
		t := n
		for t > 0 && !isGlobSpecial(p[t-1]) && p[t-1] != ']' {
			t--
		}
		// "**/" may match no directory at all, slash included.
		if t >= 2 && p[t-1] == '*' && p[t-2] == '*' && t < n && p[t] == '/' {
			t++
		}
		pat.tail = pat.pattern[t:]
	}
	return pat, true
}

// ParsePattern parses one pattern relative to directory base as git's
// parse_path_pattern does, for a file with a line syntax of its own
// (gitattributes: git reads both kinds of pattern with the same dir.c
// code). ok is false for a pattern that can never match anything.
func ParsePattern(pattern, base string) (p Pattern, ok bool) {
	return parseLine([]byte(pattern), base)
}

// Matches reports whether the pattern matches path, a directory if isDir,
// ignoring negation. A pattern without a '/' matches the last component
// of any path: that path is below the pattern's base is the caller's to
// know, as for a Matcher.
func (p *Pattern) Matches(path string, isDir bool) bool {
	return p.matches(path, path[strings.LastIndexByte(path, '/')+1:], isDir)
}

// matches reports whether the pattern matches path (with basename its last
// component), ignoring negation. It is git's last_matching_pattern_from_list
// body for one pattern.
func (p *Pattern) matches(path, basename string, isDir bool) bool {
	if p.flags&flagMustBeDir != 0 && !isDir {
		return false
	}
	if !strings.HasSuffix(path, p.tail) {
		return false // basename and path end alike
	}
	if p.flags&flagNoDir != 0 {
		return p.matchBasename(basename)
	}
	return p.matchPathname(path)
}

// matchBasename is git's match_basename.
func (p *Pattern) matchBasename(basename string) bool {
	switch {
	case p.nowild == len(p.pattern):
		return basename == p.pattern
	case p.flags&flagEndsWith != 0:
		return strings.HasSuffix(basename, p.pattern[1:])
	default:
		// git matches basenames without WM_PATHNAME; the pattern has no
		// '/' and neither has the basename, so only "**" could differ,
		// and it does not.
		return dowild(p.pattern, basename, false) == wmMatch
	}
}

// matchPathname is git's match_pathname: the pattern has base implicitly
// in front of it and is matched with WM_PATHNAME against the rest of path.
func (p *Pattern) matchPathname(path string) bool {
	pattern, prefix := p.pattern, p.nowild
	if pattern[0] == '/' {
		pattern = pattern[1:]
		prefix--
	}
	name := path
	if b := p.base; b != "" {
		if len(path) <= len(b) || path[len(b)] != '/' || path[:len(b)] != b {
			return false
		}
		name = path[len(b)+1:]
	} else if path == "" {
		return false
	}
	if prefix > 0 {
		// The literal prefix must match as is; if it is the whole
		// pattern, that settles it without wildmatch.
		if prefix > len(name) || pattern[:prefix] != name[:prefix] {
			return false
		}
		if len(pattern) == prefix && len(name) == prefix {
			return true
		}
		if retainPrefixByte {
			prefix--
		}
		pattern, name = pattern[prefix:], name[prefix:]
	}
	return dowild(pattern, name, true) == wmMatch
}

// retainPrefixByte chooses between two versions of git's match_pathname.
// git as released for a decade (2.39, installed here, for one) hands
// wildmatch the pattern after its literal prefix, so in "foo**/bar" the
// "**" looks like a leading one and spans directories: it matches "foobar"
// and "foo/x/bar". A fix discussed on the git list in October 2025 keeps
// the prefix's last byte, so the "**" is seen mid-component and acts like
// "*". The installed base is overwhelmingly the former, so that is what we
// do; the tests switch to the newer rule when the git they compare with has
// it. Only patterns with a literal prefix directly followed by "**" can
// tell the two apart.
var retainPrefixByte = false

// Matcher is an immutable chain of pattern sets. Precedence as git: patterns
// of deeper .gitignore files beat shallower ones, which beat info/exclude,
// which beats core.excludesFile; within one set the last matching pattern
// wins; a negated match means "not ignored".
//
// Each link holds one set and the directory it came from; lookups run from
// the newest link to the root, which is git's order of precedence.
type Matcher struct {
	parent   *Matcher
	dir      string // "" for the root sets
	patterns []Pattern
	idx      index
}

// index lets a lookup skip most patterns of a set without testing them.
// What decides is the highest-numbered matching pattern, so the two maps
// give the highest candidate among literal basenames ("node_modules") and
// among basename suffixes that are one extension ("*.o", "*.exe~"), and
// only the patterns numbered above that are tried one by one, newest first.
type index struct {
	literal map[string]best // by the whole basename
	ext     map[string]best // by the basename from its last '.'
	rest    []int32         // every other pattern, ascending
}

// best holds the highest pattern number among the candidates for a key,
// once counting only patterns that match files, once counting all (a
// trailing-slash pattern matches directories only); -1 for none.
type best struct{ file, dir int32 }

func (b best) pick(isDir bool) int32 {
	if isDir {
		return b.dir
	}
	return b.file
}

func (b *best) add(i int32, dirOnly bool) {
	b.dir = max(b.dir, i)
	if !dirOnly {
		b.file = max(b.file, i)
	}
}

func newIndex(ps []Pattern) index {
	var x index
	put := func(m *map[string]best, key string, i int, dirOnly bool) {
		if *m == nil {
			*m = map[string]best{}
		}
		b, ok := (*m)[key]
		if !ok {
			b = best{-1, -1}
		}
		b.add(int32(i), dirOnly)
		(*m)[key] = b
	}
	for i := range ps {
		p := &ps[i]
		dirOnly := p.flags&flagMustBeDir != 0
		switch {
		case p.flags&flagNoDir != 0 && p.nowild == len(p.pattern):
			put(&x.literal, p.pattern, i, dirOnly)
		case p.flags&flagNoDir != 0 && p.flags&flagEndsWith != 0 && isExtension(p.pattern[1:]):
			put(&x.ext, p.pattern[1:], i, dirOnly)
		default:
			x.rest = append(x.rest, int32(i))
		}
	}
	return x
}

// isExtension reports whether s is '.' and a dot-free tail: then a
// basename ends with s exactly when its part from the last '.' equals s.
func isExtension(s string) bool {
	return len(s) > 0 && s[0] == '.' && strings.IndexByte(s[1:], '.') < 0
}

// find returns the deciding pattern of this link's set for path, or nil.
func (m *Matcher) find(path, basename string, isDir bool) *Pattern {
	hit := int32(-1)
	if b, ok := m.idx.literal[basename]; ok {
		hit = b.pick(isDir)
	}
	if m.idx.ext != nil {
		if dot := strings.LastIndexByte(basename, '.'); dot >= 0 {
			if b, ok := m.idx.ext[basename[dot:]]; ok {
				hit = max(hit, b.pick(isDir))
			}
		}
	}
	for j := len(m.idx.rest) - 1; j >= 0 && m.idx.rest[j] > hit; j-- {
		if i := m.idx.rest[j]; m.patterns[i].matches(path, basename, isDir) {
			hit = i
			break
		}
	}
	if hit < 0 {
		return nil
	}
	return &m.patterns[hit]
}

func newLink(parent *Matcher, dir string, ps []Pattern) *Matcher {
	return &Matcher{parent: parent, dir: dir, patterns: ps, idx: newIndex(ps)}
}

// NewMatcher builds the root of the chain from the lowest-priority sets first:
// NewMatcher(excludesFilePatterns, infoExcludePatterns). The matcher keeps
// the slices; they must not be modified afterwards.
func NewMatcher(sets ...[]Pattern) *Matcher {
	m := &Matcher{}
	for _, s := range sets {
		if len(s) > 0 {
			m = newLink(m, "", s)
		}
	}
	return m
}

// Child returns a matcher that adds the patterns of the .gitignore found in
// directory dir (content may be nil → returns m). dir is relative to the
// worktree root, "" for the root's own .gitignore, and must lie at or below
// the directories of the links already in m. Patterns without a slash then
// apply only to paths below dir, anchored ones relative to dir. git does not
// follow a .gitignore that is a symlink (it opens it O_NOFOLLOW), nor read
// one inside an ignored directory: pass nil for those.
func (m *Matcher) Child(dir string, gitignore []byte) *Matcher {
	dir = strings.Trim(dir, "/")
	ps := Parse(gitignore, dir)
	if len(ps) == 0 {
		return m
	}
	return newLink(m, dir, ps)
}

// Ignored reports whether path is ignored. isDir tells whether it is a
// directory (for `dir/` patterns); a symlink to a directory is not one, as
// in git. The caller walks top-down and does not descend into ignored
// directories, so Ignored need not check parents; IgnoredPath does the full
// check including parent directories (used by tests and by callers without
// a walk).
func (m *Matcher) Ignored(path string, isDir bool) bool {
	p := m.match(path, isDir)
	return p != nil && p.flags&flagNegative == 0
}

// IgnoredPath reports whether path is ignored, either itself or because one
// of its parent directories is: git never looks inside an excluded
// directory, so nothing below it can be re-included by a "!" pattern.
func (m *Matcher) IgnoredPath(path string, isDir bool) bool {
	for i := 0; i < len(path); i++ {
		if path[i] == '/' && m.Ignored(path[:i], true) {
			return true
		}
	}
	return m.Ignored(path, isDir)
}

// match returns the pattern that decides path, or nil if none matches.
func (m *Matcher) match(path string, isDir bool) *Pattern {
	if path == "" {
		return nil // the root itself is never ignored
	}
	basename := path
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		basename = path[i+1:]
	}
	for l := m; l != nil; l = l.parent {
		// git only loads the .gitignore files of the directories above a
		// path; a link for the path itself or elsewhere must not count,
		// above all for its basename patterns.
		if d := l.dir; d != "" && (len(path) <= len(d) || path[len(d)] != '/' || path[:len(d)] != d) {
			continue
		}
		if p := l.find(path, basename, isDir); p != nil {
			return p
		}
	}
	return nil
}
