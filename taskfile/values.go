package taskfile

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// mapping returns a mapping's entries with << merges applied (explicit keys win, then
// earlier merge sources). what names the value in errors.
func (l *loader) mapping(n ast.Node, what string) ([]yamlEntry, bool) {
	orig := n
	n = l.resolve(n)
	var values []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		values = m.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{m}
	case nil:
		l.errorf(orig, "", "%s must be a mapping (key: value lines), not null", what)
		return nil, false
	default:
		l.errorf(n, "", "%s must be a mapping (key: value lines), not %s", what, nodeKind(n))
		return nil, false
	}
	var explicit, merged []yamlEntry
	for _, mv := range values {
		if _, isMerge := mv.Key.(*ast.MergeKeyNode); isMerge {
			merged = append(merged, l.merge(mv.Value, what)...)
			continue
		}
		k := l.resolve(mv.Key)
		if mk, ok := k.(*ast.MappingKeyNode); ok {
			l.errorf(mk, "", "complex mapping keys (?) are not supported")
			continue
		}
		if !isScalar(k) {
			l.errorf(mv, "", "a key in %s must be a plain name", what)
			continue
		}
		explicit = append(explicit, yamlEntry{key: l.text(k), keyN: mv.Key, value: l.resolve(mv.Value)})
	}
	out := explicit
	for _, e := range merged {
		if !slices.ContainsFunc(out, func(x yamlEntry) bool { return x.key == e.key }) {
			out = append(out, e)
		}
	}
	return out, true
}

func (l *loader) merge(v ast.Node, what string) []yamlEntry {
	l.budget--
	if l.budget < 0 {
		if l.budget == -1 {
			l.errorf(v, "", "too many << merges")
		}
		return nil
	}
	v = l.resolve(v)
	if seq, ok := v.(*ast.SequenceNode); ok {
		var out []yamlEntry
		for _, s := range seq.Values {
			out = append(out, l.merge(s, what)...)
		}
		return out
	}
	entries, _ := l.mapping(v, "a << merge in "+what)
	return entries
}

// fields indexes entries by key, reporting unknown keys with a suggestion. Null values
// count as absent, so `needs:` with nothing after it means no needs. allowExt lets the
// top level carry x-… keys, the usual home of anchors.
func (l *loader) fields(entries []yamlEntry, known []string, where string, allowExt bool) map[string]yamlEntry {
	out := make(map[string]yamlEntry, len(entries))
	for _, e := range entries {
		if !slices.Contains(known, e.key) {
			if allowExt && strings.HasPrefix(e.key, "x-") {
				continue
			}
			hint := ""
			if s := suggest(e.key, known); s != "" {
				hint = "did you mean `" + s + "`?"
			} else {
				hint = "known keys: " + strings.Join(known, ", ")
			}
			l.errorf(e.keyN, hint, "unknown key `%s` %s", e.key, where)
			continue
		}
		if e.value == nil {
			continue
		}
		out[e.key] = e
	}
	return out
}

// str reads a scalar as text. Numbers and booleans are accepted as written, since a
// command line or an env value is text whatever YAML thinks ("8000", "true").
func (l *loader) str(e yamlEntry) (string, bool) {
	if !isScalar(e.value) {
		l.errorf(e.value, "", "`%s` must be a string, not %s", e.key, nodeKind(e.value))
		return "", false
	}
	return l.text(e.value), true
}

func (l *loader) nonEmptyStr(e yamlEntry) (string, bool) {
	s, ok := l.str(e)
	if ok && strings.TrimSpace(s) == "" {
		l.errorf(e.value, "", "`%s` is empty", e.key)
		return "", false
	}
	return s, ok
}

// sequence returns a list's items (resolved). hint says what the list should look like.
func (l *loader) sequence(e yamlEntry, what, shape string) ([]ast.Node, bool) {
	seq, ok := e.value.(*ast.SequenceNode)
	if !ok {
		l.errorf(e.value, "write it as "+shape, "%s must be a list, not %s", what, nodeKind(e.value))
		return nil, false
	}
	items := make([]ast.Node, len(seq.Values))
	for i, v := range seq.Values {
		// A null item keeps its unresolved node, for its position.
		if items[i] = l.resolve(v); items[i] == nil {
			items[i] = v
		}
	}
	return items, true
}

// strList reads a list of scalars; single allows one bare string for a one-item list.
func (l *loader) strList(e yamlEntry, single bool, shape string) ([]string, []ast.Node, bool) {
	if single && isScalar(e.value) {
		s, ok := l.nonEmptyStr(e)
		return []string{s}, []ast.Node{e.value}, ok
	}
	if single && !isSequence(e.value) {
		l.errorf(e.value, "write it as "+shape, "`%s` must be a name or a list of names, not %s", e.key, nodeKind(e.value))
		return nil, nil, false
	}
	items, ok := l.sequence(e, "`"+e.key+"`", shape)
	if !ok {
		return nil, nil, false
	}
	out := make([]string, 0, len(items))
	nodes := make([]ast.Node, 0, len(items)) // kept parallel to out
	for _, it := range items {
		if !isScalar(it) {
			l.errorf(it, "write it as "+shape, "items of `%s` must be strings, not %s", e.key, nodeKind(it))
			ok = false
			continue
		}
		out = append(out, l.text(it))
		nodes = append(nodes, it)
	}
	return out, nodes, ok
}

// command reads an argv list and checks its templates.
func (l *loader) command(e yamlEntry, shape string) ([]string, bool) {
	return l.commandWith(e, shape, TemplateVars)
}

// commandWith reads an argv list whose templates may use the variables allowed.
func (l *loader) commandWith(e yamlEntry, shape string, allowed []string) ([]string, bool) {
	argv, nodes, ok := l.strList(e, false, shape)
	if !ok {
		return nil, false
	}
	if len(argv) == 0 {
		l.errorf(e.value, "write it as "+shape, "`%s` is empty", e.key)
		return nil, false
	}
	if argv[0] == "" {
		l.errorf(nodes[0], "", "the program name in `%s` is empty", e.key)
		ok = false
	}
	for i, a := range argv {
		ok = l.template(nodes[i], a, allowed) && ok
	}
	return argv, ok
}

func (l *loader) template(n ast.Node, s string, allowed []string) bool {
	if te := checkTemplate(s, allowed); te != nil {
		l.errorf(n, te.hint(), "%s", te.Error())
		return false
	}
	return true
}

func (l *loader) integer(e yamlEntry, minimum int) (int, bool) {
	var v int64
	switch n := e.value.(type) {
	case *ast.IntegerNode:
		v = intValue(n)
	case *ast.FloatNode:
		l.errorf(e.value, "", "`%s` must be a whole number, not %s", e.key, l.text(e.value))
		return 0, false
	case *ast.InfinityNode:
		l.errorf(e.value, "give a number", "`%s` cannot be infinite", e.key)
		return 0, false
	default:
		l.errorf(e.value, "", "`%s` must be a whole number, not %s", e.key, nodeKind(e.value))
		return 0, false
	}
	if v < int64(minimum) {
		l.errorf(e.value, "", "`%s` must be at least %d", e.key, minimum)
		return 0, false
	}
	if v > math.MaxInt32 {
		l.errorf(e.value, "", "`%s` is too large", e.key)
		return 0, false
	}
	return int(v), true
}

// intValue is an integer node's value, saturated at MaxInt64 (the parser gives uint64
// for large positive numbers).
func intValue(n *ast.IntegerNode) int64 {
	switch x := n.Value.(type) {
	case int64:
		return x
	case uint64:
		if x > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(x)
	case int:
		return int64(x)
	}
	return 0
}

func (l *loader) boolean(e yamlEntry) (bool, bool) {
	b, ok := e.value.(*ast.BoolNode)
	if !ok {
		l.errorf(e.value, "", "`%s` must be true or false, not %s", e.key, nodeKind(e.value))
		return false, false
	}
	return b.Value, true
}

func (l *loader) duration(e yamlEntry) (time.Duration, bool) {
	if !isScalar(e.value) {
		l.errorf(e.value, "", "`%s` must be a duration like 90s, 20m, 2h or 1d, not %s", e.key, nodeKind(e.value))
		return 0, false
	}
	d, err := ParseDuration(l.text(e.value))
	if err != nil {
		l.errorf(e.value, "write durations like 90s, 20m, 2h or 1d", "`%s`: %s", e.key, err)
		return 0, false
	}
	return d, true
}

// oneOf reads a string that must be one of values.
func (l *loader) oneOf(e yamlEntry, values []string) (string, bool) {
	s, ok := l.str(e)
	if !ok {
		return "", false
	}
	if !slices.Contains(values, s) {
		hint := "use one of: " + strings.Join(values, ", ")
		if g := suggest(s, values); g != "" {
			hint = "did you mean `" + g + "`?"
		}
		l.errorf(e.value, hint, "unknown `%s` value %q", e.key, s)
		return "", false
	}
	return s, true
}

func (l *loader) classList(e yamlEntry) ([]Class, []ast.Node, bool) {
	names, nodes, ok := l.strList(e, false, "a list of failure classes, like [agent_exit]")
	if !ok {
		return nil, nil, false
	}
	var out []Class
	for i, s := range names {
		c, ok := l.class(nodes[i], s)
		if ok {
			out = append(out, c)
		}
	}
	return out, nodes, true
}

func (l *loader) class(n ast.Node, s string) (Class, bool) {
	c, err := ParseClass(s)
	if err != nil {
		names := make([]string, len(Classes))
		for i, c := range Classes {
			names[i] = string(c)
		}
		hint := "classes: " + strings.Join(names, ", ")
		if g := suggest(s, names); g != "" {
			hint = "did you mean `" + g + "`?"
		}
		l.errorf(n, hint, "%s", err)
		return "", false
	}
	return c, true
}
