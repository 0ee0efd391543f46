package taskfile

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// loader walks the YAML AST. It is schema-driven rather than decoding into structs: only
// the AST knows where each key and value sits, and every error needs that position.
type loader struct {
	name    string
	src     []byte
	errs    AuthoringErrors
	anchors []anchorDef
	budget  int      // merge expansions left; bounds "billion laughs" built from << merges
	lines   []string // src split into lines, once, for clamping positions
}

type anchorDef struct {
	name   string
	offset int
	value  ast.Node
}

// yamlEntry is one key of a mapping after merges are applied.
type yamlEntry struct {
	key   string
	keyN  ast.Node
	value ast.Node // resolved (anchors, aliases and tags removed); nil for null
}

func (l *loader) sorted() AuthoringErrors {
	slices.SortStableFunc(l.errs, func(a, b *AuthoringError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	// An error inside an anchored value is found once per alias that uses it.
	errs := slices.CompactFunc(l.errs, func(a, b *AuthoringError) bool {
		return a.Line == b.Line && a.Col == b.Col && a.Msg == b.Msg
	})
	// Past a screenful, more errors hide the first ones rather than help.
	if len(errs) > maxReported {
		more := *errs[maxReported]
		more.Msg = fmt.Sprintf("and %d more problems", len(errs)-maxReported)
		more.Hint = ""
		errs = append(errs[:maxReported:maxReported], &more)
	}
	return errs
}

// maxReported bounds the authoring errors reported for one file.
const maxReported = 50

func (l *loader) errAt(p Pos, hint, format string, args ...any) {
	l.errs = append(l.errs, &AuthoringError{File: l.name, Line: p.Line, Col: p.Col, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

func (l *loader) errorf(n ast.Node, hint, format string, args ...any) {
	l.errAt(l.pos(n), hint, format, args...)
}

// pos is where a node starts, clamped into the file: a block mapping's own token is the
// first colon, so its first key stands for it.
func (l *loader) pos(n ast.Node) Pos {
	for range 64 {
		switch m := n.(type) {
		case *ast.MappingNode:
			if !m.IsFlowStyle && len(m.Values) > 0 {
				n = m.Values[0]
				continue
			}
		case *ast.MappingValueNode:
			if m.Key != nil {
				n = m.Key
				continue
			}
		}
		break
	}
	p := Pos{1, 1}
	if n != nil {
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			p = Pos{tk.Position.Line, tk.Position.Column}
		}
	}
	return l.clamp(p)
}

func (l *loader) clamp(p Pos) Pos {
	if l.lines == nil {
		l.lines = yamlLines(string(l.src))
	}
	p.Line = min(max(p.Line, 1), len(l.lines))
	p.Col = min(max(p.Col, 1), len(l.lines[p.Line-1])+1)
	return p
}

// yamlLines splits s at YAML's line breaks (\r\n, \r, \n), which is how the parser
// counts the lines it reports.
func yamlLines(s string) []string {
	var lines []string
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			return append(lines, s)
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
}

func (l *loader) file() *File {
	if !utf8.Valid(l.src) {
		l.errAt(l.offsetPos(firstInvalidUTF8(l.src)), "", "the task file is not valid UTF-8")
		return nil
	}
	// Editors on Windows start files with a byte order mark; YAML allows it, the parser
	// would take it as part of the first key.
	if bytes.HasPrefix(l.src, []byte("\ufeff")) {
		l.src = l.src[3:]
	}
	doc, ok := l.parseYAML()
	if !ok {
		return nil
	}
	if doc == nil {
		l.errAt(Pos{1, 1}, "start with `version: 1` and a `tasks:` list", "the task file is empty")
		return nil
	}
	l.collectAnchors(doc, 0)
	l.budget = 10000

	f := &File{Agents: map[string]*Agent{}}
	top, ok := l.mapping(doc, "the task file")
	if !ok {
		return nil
	}
	fields := l.fields(top, topKeys, "at the top level", true)
	topPos := l.pos(doc)

	if e, ok := fields["version"]; !ok {
		l.errAt(topPos, "", "missing `version: 1`")
	} else if n, isInt := e.value.(*ast.IntegerNode); !isInt {
		l.errorf(e.value, "write `version: 1`", "`version` must be the number 1, not %s", nodeKind(e.value))
	} else if intValue(n) != 1 {
		l.errorf(e.value, "this mulligan reads `version: 1`", "unsupported `version` %s", l.text(e.value))
	} else {
		f.Version = 1
	}

	if e, ok := fields["agents"]; ok {
		if entries, ok := l.mapping(e.value, "`agents`"); ok {
			for _, ae := range entries {
				// A broken agent is still defined: its tasks should not also
				// report "unknown agent" (the File is not returned anyway).
				a := l.agent(ae)
				f.Agents[a.Name] = a
				f.AgentOrder = append(f.AgentOrder, a.Name)
			}
		}
	}
	if e, ok := fields["hooks"]; ok {
		f.Hooks = l.hooks(e)
	}
	f.Isolation = IsolationInPlace
	f.Parallel = DefaultParallel
	if e, ok := fields["parallel"]; ok {
		f.Parallel, _ = l.integer(e, 1)
	}
	if e, ok := fields["isolation"]; ok {
		f.Isolation, _ = l.oneOf(e, []string{IsolationInPlace, IsolationWorktree})
	}
	if e, ok := fields["worktree"]; ok {
		f.Worktree = l.worktreeFiles(e)
	}
	f.BestOf = 1
	if e, ok := fields["best_of"]; ok {
		f.BestOf, _ = l.integer(e, 1)
	}

	var srcs []*taskSrc
	if e, ok := fields["tasks"]; !ok {
		l.errAt(topPos, "add a `tasks:` list with at least one task", "missing `tasks`")
	} else if items, ok := l.sequence(e, "`tasks`", "a list of tasks, each with an `id`"); ok {
		if len(items) == 0 {
			l.errorf(e.keyN, "add at least one task with an `id`", "`tasks` is empty")
		}
		for i, it := range items {
			if s := l.task(i, it); s != nil {
				srcs = append(srcs, s)
				f.Tasks = append(f.Tasks, s.t)
			}
		}
	}
	for _, t := range f.Tasks {
		if t.Isolation == "" {
			t.Isolation = f.Isolation
		}
		if t.Worktree.Copy == nil && t.Worktree.Link == nil {
			t.Worktree = f.Worktree
		}
	}
	for _, s := range srcs {
		l.bestOf(f, s)
	}
	l.crossCheck(f, srcs)
	return f
}

// worktreeFiles reads `worktree: {copy: [GLOB…], link: [GLOB…]}`.
func (l *loader) worktreeFiles(e yamlEntry) WorktreeFiles {
	var w WorktreeFiles
	entries, ok := l.mapping(e.value, "`worktree`")
	if !ok {
		return w
	}
	fs := l.fields(entries, worktreeKeys, "in `worktree`", false)
	for _, k := range []struct {
		key string
		dst *[]string
	}{{"copy", &w.Copy}, {"link", &w.Link}} {
		ke, has := fs[k.key]
		if !has {
			continue
		}
		globs, nodes, _ := l.strList(ke, true, "a list of paths or globs from the working tree root, like [node_modules, .env]")
		for j, g := range globs {
			if _, err := path.Match(g, ""); err != nil || g == "" || strings.HasPrefix(g, "/") || slices.Contains(strings.Split(g, "/"), "..") {
				l.errorf(nodes[j], "write a path or glob inside the working tree, like node_modules or .env*", "`%s`: %q is not a path or glob inside the working tree", k.key, g)
				continue
			}
			*k.dst = append(*k.dst, g)
		}
	}
	return w
}

// parseYAML returns the single document's body (nil when empty).
func (l *loader) parseYAML() (body ast.Node, ok bool) {
	astFile, err := safeParse(l.src)
	if err != nil {
		msg, p := err.Error(), Pos{1, 1}
		var ye yaml.Error
		if errors.As(err, &ye) {
			msg = ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				p = Pos{tk.Position.Line, tk.Position.Column}
			}
		}
		hint := ""
		if strings.Contains(msg, "'\t'") {
			hint = "YAML indents with spaces, not tabs"
		}
		l.errAt(l.clamp(p), hint, "invalid YAML: %s", msg)
		return nil, false
	}
	for _, d := range astFile.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if body != nil {
			l.errorf(d.Body, "put every task in one `tasks:` list", "the task file must hold a single YAML document")
			return nil, false
		}
		body = d.Body
	}
	return body, true
}

// safeParse runs the YAML parser, turning a panic inside it into an error: the loader
// reads files that agents may have written, and a crash is a worse answer than "invalid".
func safeParse(src []byte) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("the YAML parser failed: %v", r)
		}
	}()
	f, err = parser.ParseBytes(src, 0)
	if err == nil && f == nil {
		err = errors.New("the YAML parser returned nothing")
	}
	return f, err
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// offsetPos converts a byte offset into a line and a column counted in bytes.
func (l *loader) offsetPos(off int) Pos {
	before := yamlLines(string(l.src[:off]))
	return Pos{len(before), len(before[len(before)-1]) + 1}
}

// collectAnchors records every &anchor in document order, for aliases to find.
func (l *loader) collectAnchors(n ast.Node, depth int) {
	if n == nil || depth > 1000 {
		return
	}
	switch m := n.(type) {
	case *ast.AnchorNode:
		name := tokenValue(m.Name)
		off := 0
		if tk := m.GetToken(); tk != nil && tk.Position != nil {
			off = tk.Position.Offset
		}
		l.anchors = append(l.anchors, anchorDef{name: name, offset: off, value: m.Value})
		l.collectAnchors(m.Value, depth+1)
	case *ast.TagNode:
		l.collectAnchors(m.Value, depth+1)
	case *ast.MappingNode:
		for _, v := range m.Values {
			l.collectAnchors(v, depth+1)
		}
	case *ast.MappingValueNode:
		l.collectAnchors(m.Key, depth+1)
		l.collectAnchors(m.Value, depth+1)
	case *ast.MappingKeyNode:
		l.collectAnchors(m.Value, depth+1)
	case *ast.SequenceNode:
		for _, v := range m.Values {
			l.collectAnchors(v, depth+1)
		}
	}
}

// resolve strips anchors, tags and aliases. An alias takes the nearest anchor of its
// name defined before it, as YAML says; nil stands for null (or an alias in error).
func (l *loader) resolve(n ast.Node) ast.Node {
	for range 64 {
		switch m := n.(type) {
		case nil:
			return nil
		case *ast.NullNode:
			return nil
		case *ast.AnchorNode:
			n = m.Value
		case *ast.TagNode:
			n = m.Value
		case *ast.AliasNode:
			name, off := tokenValue(m.Value), 0
			if tk := m.GetToken(); tk != nil && tk.Position != nil {
				off = tk.Position.Offset
			}
			var target ast.Node
			found := false
			for _, a := range l.anchors {
				if a.name == name && a.offset < off {
					target, found = a.value, true
				}
			}
			if !found {
				l.errorf(m, "define it first with &"+name, "unknown alias *%s", name)
				return nil
			}
			n = target
		default:
			return n
		}
	}
	l.errorf(n, "", "aliases nested too deeply")
	return nil
}

func tokenValue(n ast.Node) string {
	if n == nil {
		return ""
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return ""
}

// nodeKind names a node's type for "must be …, not …" messages.
func nodeKind(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode, *ast.AliasNode, *ast.AnchorNode, *ast.TagNode:
		return "null" // the last three only stay unresolved when they stand for null
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "true/false"
	}
	return "a string"
}

// text is a scalar's text: strings unquoted, other scalars as written.
func (l *loader) text(n ast.Node) string {
	switch m := n.(type) {
	case *ast.StringNode:
		return m.Value
	case *ast.LiteralNode:
		if m.Value != nil {
			return m.Value.Value
		}
		return ""
	case nil:
		return ""
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return ""
}

func isSequence(n ast.Node) bool {
	_, ok := n.(*ast.SequenceNode)
	return ok
}

func isScalar(n ast.Node) bool {
	switch n.(type) {
	case *ast.StringNode, *ast.LiteralNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return true
	}
	return false
}
