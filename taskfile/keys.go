package taskfile

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

func (l *loader) backoff(e yamlEntry) (Backoff, bool) {
	b := DefaultBackoff()
	entries, ok := l.mapping(e.value, "`backoff`")
	if !ok {
		return b, false
	}
	fs := l.fields(entries, backoffKeys, "in `backoff`", false)
	if k, has := fs["kind"]; has {
		v, good := l.oneOf(k, []string{BackoffFixed, BackoffLinear, BackoffExponential})
		ok = ok && good
		b.Kind = v
		if v == BackoffFixed {
			b.Jitter = JitterNone // a fixed delay is fixed unless a jitter is given
		}
	}
	if j, has := fs["jitter"]; has {
		v, good := l.oneOf(j, []string{JitterFull, JitterEqual, JitterNone})
		ok = ok && good
		b.Jitter = v
	}
	if i, has := fs["initial"]; has {
		d, good := l.duration(i)
		ok = ok && good
		b.Initial = d
	}
	m, maxSet := fs["max"]
	if maxSet {
		d, good := l.duration(m)
		ok = ok && good
		b.Max = d
	}
	if !ok {
		return b, false
	}
	if err := finishBackoff(&b, maxSet); err != nil {
		l.errorf(m.value, "", "%s", err)
		return b, false
	}
	return b, true
}

func (l *loader) verify(e yamlEntry) *Verify {
	entries, ok := l.mapping(e.value, "`verify`")
	if !ok {
		return nil
	}
	v := &Verify{}
	fs := l.fields(entries, verifyKeys, "in `verify`", false)
	if c, has := fs["command"]; has {
		v.Command, _ = l.command(c, "[go, test, ./...]")
	} else {
		l.errorf(e.keyN, "add command: [go, test, ./...]", "`verify` has no `command`")
	}
	if t, has := fs["timeout"]; has {
		v.Timeout, _ = l.duration(t)
	}
	return v
}

func (l *loader) resultContract(e yamlEntry) *ResultContract {
	entries, ok := l.mapping(e.value, "`result_contract`")
	if !ok {
		return nil
	}
	rc := &ResultContract{}
	fs := l.fields(entries, resultContractKeys, "in `result_contract`", false)
	if f, has := fs["failure_field"]; has {
		rc.FailureField, _ = l.nonEmptyStr(f)
	} else {
		l.errorf(e.keyN, "add failure_field: FIELD (a dotted path like error or result.failed)", "`result_contract` has no `failure_field`")
	}
	if m, has := fs["message_field"]; has {
		rc.MessageField, _ = l.nonEmptyStr(m)
	}
	return rc
}

func (l *loader) classify(e yamlEntry) []ClassifyRule {
	items, ok := l.sequence(e, "`classify`", `a list like [{pattern: "ECONNRESET", class: transport}]`)
	if !ok {
		return nil
	}
	var rules []ClassifyRule
	for i, it := range items {
		entries, ok := l.mapping(it, fmt.Sprintf("classify rule %d", i+1))
		if !ok {
			continue
		}
		fs := l.fields(entries, classifyKeys, fmt.Sprintf("in classify rule %d", i+1), false)
		var r ClassifyRule
		good := true
		if p, has := fs["pattern"]; has {
			if s, ok := l.nonEmptyStr(p); ok {
				re, err := regexp.Compile(s)
				if err != nil {
					l.errorf(p.value, "patterns use Go's RE2 syntax; quote special characters with \\", "invalid classify pattern: %s", err)
					good = false
				}
				r.Pattern, r.Re = s, re
			} else {
				good = false
			}
		} else {
			l.errAt(l.pos(it), "add pattern: REGEXP", "classify rule %d has no `pattern`", i+1)
			good = false
		}
		if c, has := fs["class"]; has {
			if s, ok := l.str(c); ok {
				if cl, ok := l.class(c.value, s); ok {
					if !slices.Contains(userClassifiable, cl) {
						names := make([]string, len(userClassifiable))
						for i, c := range userClassifiable {
							names[i] = string(c)
						}
						l.errorf(c.value, "a rule can assign: "+strings.Join(names, ", "), "class `%s` cannot be assigned by a classify rule", cl)
						good = false
					}
					r.Class = cl
				} else {
					good = false
				}
			} else {
				good = false
			}
		} else {
			l.errAt(l.pos(it), "add class: CLASS, like class: transport", "classify rule %d has no `class`", i+1)
			good = false
		}
		if ra, has := fs["retry_after"]; has {
			d, ok := l.duration(ra)
			good = good && ok
			r.RetryAfter = d
		}
		if good {
			rules = append(rules, r)
		}
	}
	return rules
}

func (l *loader) cost(e yamlEntry) (float64, bool) {
	var v float64
	switch n := e.value.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		f, err := strconv.ParseFloat(strings.ReplaceAll(l.text(n), "_", ""), 64)
		if err != nil {
			if fn, ok := n.(*ast.FloatNode); ok {
				f = fn.Value
			} else if in, ok := n.(*ast.IntegerNode); ok {
				switch x := in.Value.(type) {
				case int64:
					f = float64(x)
				case uint64:
					f = float64(x)
				}
			}
		}
		v = f
	default:
		l.errorf(e.value, "", "`%s` must be a number of US dollars, like 5.00, not %s", e.key, nodeKind(e.value))
		return 0, false
	}
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		l.errorf(e.value, "", "`%s` must be 0 or more", e.key)
		return 0, false
	}
	return v, true
}

func (l *loader) effects(e yamlEntry) []EffectDecl {
	items, ok := l.sequence(e, "`effects`", "a list like [{name: push-branch, compensate: [git, push, origin, --delete, BRANCH]}]")
	if !ok {
		return nil
	}
	var out []EffectDecl
	seen := map[string]bool{}
	for i, it := range items {
		entries, ok := l.mapping(it, fmt.Sprintf("effect %d", i+1))
		if !ok {
			continue
		}
		fs := l.fields(entries, effectKeys, fmt.Sprintf("in effect %d", i+1), false)
		var d EffectDecl
		good := true
		if n, has := fs["name"]; has {
			name, ok := l.nonEmptyStr(n)
			switch {
			case !ok:
				good = false
			case !idPattern.MatchString(name):
				l.errorf(n.value, "use letters, digits, '.', '_' and '-'", "invalid effect name %q", name)
				good = false
			case seen[name]:
				l.errorf(n.value, "", "effect `%s` is declared twice", name)
				good = false
			}
			seen[name] = true
			d.Name = name
		} else {
			l.errAt(l.pos(it), "add name: NAME", "effect %d has no `name`", i+1)
			good = false
		}
		if c, has := fs["compensate"]; has {
			argv, ok := l.command(c, "[PROGRAM, ARGS…]")
			good = good && ok
			d.Compensate = argv
		}
		if good {
			out = append(out, d)
		}
	}
	return out
}

func (l *loader) hooks(e yamlEntry) Hooks {
	entries, ok := l.mapping(e.value, "`hooks`")
	if !ok {
		return nil
	}
	fs := l.fields(entries, HookNames, "in `hooks`", false)
	h := Hooks{}
	shape := "a list of commands, like [[notify-send, \"{{task}} failed\"]]"
	for _, name := range HookNames {
		he, has := fs[name]
		if !has {
			continue
		}
		items, ok := l.sequence(he, "`"+name+"`", shape)
		if !ok {
			continue
		}
		for _, it := range items {
			if isScalar(it) {
				l.errorf(it, "write it as "+shape, "`%s` must be a list of commands, each a list", name)
				break
			}
			argv, ok := l.commandWith(yamlEntry{key: name, keyN: he.keyN, value: it}, "[PROGRAM, ARGS…]", HookVars)
			if ok {
				h[name] = append(h[name], argv)
			}
		}
	}
	return h
}

// crossCheck validates what spans tasks and agents: unique ids, known agents, known needs,
// no cycles.
func (l *loader) crossCheck(f *File, srcs []*taskSrc) {
	byID := map[string]int{}
	for i, s := range srcs {
		id := s.t.ID
		if id == "" {
			continue
		}
		if j, dup := byID[id]; dup {
			first := srcs[j].idPos
			l.errAt(s.idPos, "", "duplicate task id `%s` (first at %d:%d)", id, first.Line, first.Col)
			continue
		}
		byID[id] = i
	}
	agentNames := f.AgentOrder
	for _, s := range srcs {
		for j, a := range s.t.Agents {
			if _, ok := f.Agents[a]; ok {
				continue
			}
			hint := "define it under `agents:`"
			if len(agentNames) > 0 {
				hint = "defined agents: " + strings.Join(agentNames, ", ")
				if g := suggest(a, agentNames); g != "" {
					hint = "did you mean `" + g + "`? " + hint
				}
			}
			l.errAt(s.agentPos[j], hint, "unknown agent `%s`", a)
		}
		for j, n := range s.t.Needs {
			if _, ok := byID[n]; ok {
				continue
			}
			ids := slices.Collect(func(yield func(string) bool) {
				for _, s := range srcs {
					if s.t.ID != "" && !yield(s.t.ID) {
						return
					}
				}
			})
			hint := ""
			if g := suggest(n, ids); g != "" {
				hint = "did you mean `" + g + "`?"
			}
			l.errAt(s.needsPos[j], hint, "`needs` names unknown task `%s`", n)
		}
	}
	l.cycles(srcs, byID)
}

// cycles reports each cycle in `needs` once, at the edge that closes it, with its path.
func (l *loader) cycles(srcs []*taskSrc, byID map[string]int) {
	const (
		unseen = iota
		active
		done
	)
	state := make([]int, len(srcs))
	var stack []int
	var visit func(i int)
	visit = func(i int) {
		state[i] = active
		stack = append(stack, i)
		for j, n := range srcs[i].t.Needs {
			k, ok := byID[n]
			if !ok {
				continue
			}
			switch state[k] {
			case unseen:
				visit(k)
			case active:
				from := slices.Index(stack, k)
				var path []string
				for _, x := range stack[from:] {
					path = append(path, srcs[x].t.ID)
				}
				path = append(path, srcs[k].t.ID)
				l.errAt(srcs[i].needsPos[j], "", "`needs` forms a cycle: %s", strings.Join(path, " -> "))
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
	}
	for i, s := range srcs {
		if state[i] == unseen && s.t.ID != "" {
			if byID[s.t.ID] == i {
				visit(i)
			}
		}
	}
}

// suggest returns the candidate closest to s: within two edits, or sharing a prefix of
// three characters or more. Empty when nothing is close enough to be a likely typo.
func suggest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := levenshtein(s, c)
		if d < bestD && d < max(len(c), len(s)) {
			best, bestD = c, d
		}
	}
	if best != "" {
		return best
	}
	for _, c := range candidates {
		short, long := s, c
		if len(short) > len(long) {
			short, long = long, short
		}
		if len(short) >= 3 && strings.HasPrefix(long, short) {
			return c
		}
	}
	return ""
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
