package attr

import "strings"

// State is the conversion-relevant value of the text or crlf attribute.
type State int

const (
	Unspecified State = iota // not mentioned, "!attr", or a value git ignores
	Set                      // "text"
	Unset                    // "-text" (also via the binary macro)
	Auto                     // "text=auto"
	Input                    // "text=input" / "crlf=input": as text eol=lf
)

func (s State) String() string {
	switch s {
	case Set:
		return "set"
	case Unset:
		return "unset"
	case Auto:
		return "auto"
	case Input:
		return "input"
	}
	return "unspecified"
}

// Attrs holds the attributes of one path that conversion needs.
type Attrs struct {
	Text   State  // the text attribute
	EOL    string // "", "lf" or "crlf"
	Crlf   State  // the legacy crlf attribute, consulted when Text is Unspecified
	Filter string // filter driver name; "" when unspecified, set or unset
	Ident  bool
}

type frame struct {
	dir   string // "" for the root
	rules []Rule
}

// Matcher answers attribute lookups for one directory chain. It is
// immutable: Child returns a new Matcher and leaves the receiver usable, so
// a tree walk can keep one Matcher per directory on its stack.
type Matcher struct {
	global []Rule  // core.attributesFile (callers may prepend /etc/gitattributes)
	info   []Rule  // $GIT_DIR/info/attributes
	frames []frame // .gitattributes files, shallowest first
}

var builtinRules = Parse([]byte("[attr]binary -diff -merge -text\n"), "")

// NewMatcher starts a chain with the lowest- and highest-precedence files.
// globalRules come from core.attributesFile (a system file, if wanted, goes
// first in the same slice: within one list later lines win, which is the
// same order git's separate frames give); infoRules from
// $GIT_DIR/info/attributes. Both are parsed with base "".
func NewMatcher(globalRules, infoRules []Rule) *Matcher {
	return &Matcher{global: globalRules, info: infoRules}
}

// Child returns a Matcher that also knows the .gitattributes file of dir
// ("" for the root, else a slash-separated path without trailing slash).
// Pass nil when the directory has none. Which bytes to pass is the
// caller's part of git's rules: for `git add` the worktree file, or the
// index's version when the worktree has none (sparse checkout); for
// checkout the index's version first; and never a .gitattributes that is
// a symlink, which git refuses to follow.
func (m *Matcher) Child(dir string, gitattributes []byte) *Matcher {
	dir = strings.Trim(dir, "/")
	rules := Parse(gitattributes, dir)
	if len(rules) == 0 {
		return m
	}
	c := *m
	c.frames = append(m.frames[:len(m.frames):len(m.frames)], frame{dir: dir, rules: rules})
	return &c
}

// Lookup returns the conversion attributes of the file at path.
func (m *Matcher) Lookup(path string) Attrs {
	vals := m.lookupAll(path)
	var a Attrs
	a.Text = stateOf(vals["text"])
	a.Crlf = stateOf(vals["crlf"])
	if v := vals["eol"]; v.kind == vString && (v.s == "lf" || v.s == "crlf") {
		a.EOL = v.s
	}
	if v := vals["filter"]; v.kind == vString {
		a.Filter = v.s
	}
	a.Ident = vals["ident"].kind == vTrue
	return a
}

// stateOf is convert.c's git_path_check_crlf, minus the action mapping.
func stateOf(v value) State {
	switch v.kind {
	case vTrue:
		return Set
	case vFalse:
		return Unset
	case vString:
		switch v.s {
		case "auto":
			return Auto
		case "input":
			return Input
		}
	}
	return Unspecified
}

// lookupAll is attr.c's collect_some_attrs for every attribute: it returns
// each attribute some rule decided, including "!attr" resets.
func (m *Matcher) lookupAll(path string) map[string]value {
	dir := ""
	if i := strings.LastIndexByte(strings.TrimSuffix(path, "/"), '/'); i >= 0 {
		dir = path[:i]
	}
	// The stack from the top: info, deeper .gitattributes, shallower ones,
	// core.attributesFile, built-ins. A frame applies when its directory
	// contains the path.
	stack := make([][]Rule, 0, len(m.frames)+3)
	stack = append(stack, m.info)
	for i := len(m.frames) - 1; i >= 0; i-- {
		f := m.frames[i]
		if f.dir == "" || (len(f.dir) <= len(dir) && strings.HasPrefix(dir, f.dir) &&
			(len(f.dir) == len(dir) || dir[len(f.dir)] == '/')) {
			stack = append(stack, f.rules)
		}
	}
	stack = append(stack, m.global, builtinRules)

	// determine_macros: the definition nearest the top wins.
	macros := map[string]*Rule{}
	for _, rules := range stack {
		for i := len(rules) - 1; i >= 0; i-- {
			r := &rules[i]
			if r.macro != "" {
				if _, ok := macros[r.macro]; !ok {
					macros[r.macro] = r
				}
			}
		}
	}

	vals := map[string]value{}
	var fillOne func(r *Rule)
	fillOne = func(r *Rule) {
		// Later assignments on a line win, so walk it backwards; a macro
		// set to true expands at once, before the rest of the line.
		for i := len(r.states) - 1; i >= 0; i-- {
			s := r.states[i]
			if _, done := vals[s.name]; done {
				continue
			}
			vals[s.name] = s.val
			if s.val.kind == vTrue {
				if mr := macros[s.name]; mr != nil {
					fillOne(mr)
				}
			}
		}
	}
	for _, rules := range stack {
		for i := len(rules) - 1; i >= 0; i-- {
			r := &rules[i]
			// A frame is on the stack only if its directory holds path,
			// which is all a basename pattern needs to know of its base.
			if r.macro == "" && r.pat.Matches(path, false) {
				fillOne(r)
			}
		}
	}
	return vals
}
