package attr

import (
	"bytes"
	"strings"

	"github.com/mulligan-dev/mulligan/snapshot/ignore"
)

// Limits from attr.h: git ignores longer lines and larger files.
const (
	maxLineLength = 2048
	maxFileSize   = 100 * 1024 * 1024
)

const macroPrefix = "[attr]"

type valueKind uint8

const (
	vUnspecified valueKind = iota // "!attr": reset, and stops lower rules
	vTrue                         // "attr"
	vFalse                        // "-attr"
	vString                       // "attr=value"
)

type value struct {
	kind valueKind
	s    string
}

type assignment struct {
	name string
	val  value
}

// Rule is one parsed line of a gitattributes file: a pattern with its
// attribute assignments, or a macro definition.
type Rule struct {
	macro  string // name of the defined macro; "" for a pattern line
	pat    ignore.Pattern
	states []assignment
}

// Parse reads the lines of one gitattributes file whose directory is base
// ("" for the root .gitattributes, and for info/attributes and
// core.attributesFile, whose patterns are relative to the root). Like git,
// it silently drops lines git would reject: invalid attribute names,
// negative patterns, overlong lines, and macro definitions outside the
// files where git allows them (base != "").
func Parse(content []byte, base string) []Rule {
	if len(content) >= maxFileSize {
		return nil
	}
	content = bytes.TrimPrefix(content, []byte("\xef\xbb\xbf"))
	macroOK := base == ""
	var rules []Rule
	for len(content) > 0 {
		var line []byte
		if i := bytes.IndexByte(content, '\n'); i >= 0 {
			line, content = content[:i], content[i+1:]
		} else {
			line, content = content, nil
		}
		// strbuf_getline drops a CR before the LF.
		line = bytes.TrimSuffix(line, []byte("\r"))
		// git handles the line as a C string.
		if i := bytes.IndexByte(line, 0); i >= 0 {
			line = line[:i]
		}
		if r, ok := parseLine(string(line), base, macroOK); ok {
			rules = append(rules, r)
		}
	}
	return rules
}

const blank = " \t\r\n"

func isBlank(c byte) bool { return strings.IndexByte(blank, c) >= 0 }

func skipBlank(s string) string {
	i := 0
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return s[i:]
}

func tokenLen(s string) int {
	i := 0
	for i < len(s) && !isBlank(s[i]) {
		i++
	}
	return i
}

// parseLine is attr.c's parse_attr_line; base is the directory of the file.
func parseLine(line, base string, macroOK bool) (Rule, bool) {
	cp := skipBlank(line)
	if cp == "" || cp[0] == '#' {
		return Rule{}, false
	}
	if len(line) >= maxLineLength {
		return Rule{}, false
	}
	var name, states string
	if unq, rest, ok := unquoteC(cp); ok {
		name, states = unq, rest
	} else {
		n := tokenLen(cp)
		name, states = cp[:n], cp[n:]
	}
	var r Rule
	if len(name) > len(macroPrefix) && strings.HasPrefix(name, macroPrefix) {
		if !macroOK {
			return Rule{}, false
		}
		m := skipBlank(name[len(macroPrefix):])
		m = m[:tokenLen(m)]
		if !validAttrName(m) {
			return Rule{}, false
		}
		r.macro = m
	}
	states = skipBlank(states)
	for states != "" {
		a, rest, ok := parseAssignment(states)
		if !ok {
			return Rule{}, false
		}
		r.states = append(r.states, a)
		states = rest
	}
	if r.macro == "" {
		// The pattern is a C string in git: an embedded NUL ends it.
		if i := strings.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		// git parses and matches the pattern with the same dir.c code as
		// a .gitignore line's, so the ignore package does both. A negative
		// pattern is dropped, as git does (with a warning); so is one that
		// can match nothing, which could not change any answer.
		pat, ok := ignore.ParsePattern(name, base)
		if !ok || pat.Negated() {
			return Rule{}, false
		}
		r.pat = pat
	}
	return r, true
}

// parseAssignment is attr.c's parse_attr: "attr", "-attr", "!attr" or
// "attr=value", up to the next blank.
func parseAssignment(s string) (assignment, string, bool) {
	n := tokenLen(s)
	tok, rest := s[:n], skipBlank(s[n:])
	var a assignment
	switch {
	case strings.HasPrefix(tok, "-"):
		a.val = value{kind: vFalse}
		tok = tok[1:]
		// "-attr=value" is plain unset; the value is dropped.
		if i := strings.IndexByte(tok, '='); i >= 0 {
			tok = tok[:i]
		}
	case strings.HasPrefix(tok, "!"):
		a.val = value{kind: vUnspecified}
		tok = tok[1:]
		if i := strings.IndexByte(tok, '='); i >= 0 {
			tok = tok[:i]
		}
	default:
		if i := strings.IndexByte(tok, '='); i >= 0 {
			a.val = value{kind: vString, s: tok[i+1:]}
			tok = tok[:i]
		} else {
			a.val = value{kind: vTrue}
		}
	}
	if !validAttrName(tok) {
		return assignment{}, "", false
	}
	a.name = tok
	return a, rest, true
}

// validAttrName is attr.c's attr_name_valid.
func validAttrName(s string) bool {
	if s == "" || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '-' || c == '.' || c == '_' ||
			(c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
			return false
		}
	}
	return true
}

// unquoteC is quote.c's unquote_c_style: s starts with '"'; it returns the
// unquoted text and what follows the closing quote.
func unquoteC(s string) (string, string, bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", false
	}
	s = s[1:]
	var b strings.Builder
	for {
		i := strings.IndexAny(s, `"\`)
		if i < 0 {
			return "", "", false
		}
		b.WriteString(s[:i])
		c := s[i]
		s = s[i+1:]
		if c == '"' {
			return b.String(), s, true
		}
		if s == "" {
			return "", "", false
		}
		ch := s[0]
		s = s[1:]
		switch ch {
		case 'a':
			ch = '\a'
		case 'b':
			ch = '\b'
		case 'f':
			ch = '\f'
		case 'n':
			ch = '\n'
		case 'r':
			ch = '\r'
		case 't':
			ch = '\t'
		case 'v':
			ch = '\v'
		case '\\', '"':
		case '0', '1', '2', '3':
			if len(s) < 2 || s[0] < '0' || s[0] > '7' || s[1] < '0' || s[1] > '7' {
				return "", "", false
			}
			ch = (ch-'0')<<6 | (s[0]-'0')<<3 | (s[1] - '0')
			s = s[2:]
		default:
			return "", "", false
		}
		b.WriteByte(ch)
	}
}
