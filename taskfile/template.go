package taskfile

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Template variable names, as written between {{ and }}.
const (
	VarPrompt         = "prompt"
	VarPromptFile     = "prompt_file"
	VarRun            = "run"
	VarTask           = "task"
	VarAttempt        = "attempt"
	VarIdempotencyKey = "idempotency_key"
)

// TemplateVars lists every variable a template may use, in the order the docs give them.
var TemplateVars = []string{VarPrompt, VarPromptFile, VarRun, VarTask, VarAttempt, VarIdempotencyKey}

// HookVars are the template variables a hook's command may use: a hook is about a state
// change, not about an agent call, so there is no prompt to give it.
var HookVars = []string{VarRun, VarTask, VarAttempt, VarIdempotencyKey}

// Vars are the values substituted into one attempt's commands.
type Vars struct {
	Prompt, PromptFile, Run, Task string
	Attempt                       int
	IdempotencyKey                string
}

// Lookup returns the value of a template variable and whether the name is known.
func (v Vars) Lookup(name string) (string, bool) {
	switch name {
	case VarPrompt:
		return v.Prompt, true
	case VarPromptFile:
		return v.PromptFile, true
	case VarRun:
		return v.Run, true
	case VarTask:
		return v.Task, true
	case VarAttempt:
		return strconv.Itoa(v.Attempt), true
	case VarIdempotencyKey:
		return v.IdempotencyKey, true
	}
	return "", false
}

func isTemplateVar(name string) bool {
	_, ok := Vars{}.Lookup(name)
	return ok
}

// Expand substitutes the variables inside each argv element. Each element stays one
// argument whatever the values hold: there is no shell, so a prompt full of quotes and
// semicolons reaches the agent byte for byte. Unknown or unterminated references are errors.
func Expand(argv []string, vars Vars) ([]string, error) {
	if argv == nil {
		return nil, nil
	}
	out := make([]string, len(argv))
	for i, a := range argv {
		s, err := ExpandString(a, vars)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		out[i] = s
	}
	return out, nil
}

// ExpandString substitutes the variables in one string (a prompt, one argument).
func ExpandString(s string, vars Vars) (string, error) {
	parts, err := scanTemplate(s)
	if err != nil {
		return "", err
	}
	if len(parts) == 1 && !parts[0].isVar {
		return parts[0].text, nil
	}
	var b strings.Builder
	for _, p := range parts {
		if !p.isVar {
			b.WriteString(p.text)
			continue
		}
		v, ok := vars.Lookup(p.text)
		if !ok {
			return "", &templateError{Offset: p.offset, Name: p.text}
		}
		b.WriteString(v)
	}
	return b.String(), nil
}

// CheckTemplate returns the unknown variable names s refers to, each once, in order of
// first use. An unterminated {{ is reported as the name "{{" so that the caller cannot
// mistake a broken template for a clean one.
func CheckTemplate(s string) []string {
	parts, err := scanTemplate(s)
	if err != nil {
		return []string{"{{"}
	}
	var unknown []string
	for _, p := range parts {
		if p.isVar && !isTemplateVar(p.text) && !slices.Contains(unknown, p.text) {
			unknown = append(unknown, p.text)
		}
	}
	return unknown
}

// templateError is an unknown (or here disallowed) variable, or an unterminated {{.
type templateError struct {
	Offset       int // byte offset of the {{ in the string
	Name         string
	Unterminated bool
}

func (e *templateError) Error() string {
	if e.Unterminated {
		return "unterminated {{ (close it with }}, or write {{{{ for a literal {{)"
	}
	if isTemplateVar(e.Name) {
		return fmt.Sprintf("template variable {{%s}} cannot be used here", e.Name)
	}
	return fmt.Sprintf("unknown template variable {{%s}}", e.Name)
}

// hint names the known variables and, when one is close, the likely intended one.
func (e *templateError) hint() string {
	if e.Unterminated || isTemplateVar(e.Name) {
		return ""
	}
	known := make([]string, len(TemplateVars))
	for i, v := range TemplateVars {
		known[i] = "{{" + v + "}}"
	}
	h := "known variables: " + strings.Join(known, ", ") + "; write {{{{ for a literal {{"
	if s := suggest(e.Name, TemplateVars); s != "" {
		h = "did you mean {{" + s + "}}? " + h
	}
	return h
}

type tmplPart struct {
	text   string // literal text, or the variable name
	isVar  bool
	offset int // where the part starts in the source
}

// scanTemplate splits s into literal text and variable references. A reference is {{NAME}}
// with optional blanks around NAME; {{{{ is a literal {{, the one escape, for commands that
// carry their own braces (docker --format '{{{{.Names}}'). Whatever sits between {{ and }}
// that is not a known name is returned as a variable and rejected by the caller: guessing
// that "{{.Names}}" was meant literally would hide typos like "{{promt}}".
func scanTemplate(s string) ([]tmplPart, error) {
	var parts []tmplPart
	var lit strings.Builder
	litStart := 0
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, tmplPart{text: lit.String(), offset: litStart})
			lit.Reset()
		}
	}
	i := 0
	for i < len(s) {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			if lit.Len() == 0 {
				litStart = i
			}
			lit.WriteString(s[i:])
			break
		}
		if lit.Len() == 0 {
			litStart = i
		}
		lit.WriteString(s[i : i+j])
		at := i + j
		if strings.HasPrefix(s[at:], "{{{{") {
			lit.WriteString("{{")
			i = at + 4
			continue
		}
		end := strings.Index(s[at+2:], "}}")
		if end < 0 {
			return nil, &templateError{Offset: at, Unterminated: true}
		}
		flush()
		name := strings.Trim(s[at+2:at+2+end], " \t")
		parts = append(parts, tmplPart{text: name, isVar: true, offset: at})
		i = at + 2 + end + 2
	}
	flush()
	if len(parts) == 0 {
		parts = append(parts, tmplPart{})
	}
	return parts, nil
}

// checkTemplate reports the first problem of s, allowing only the names in allowed.
func checkTemplate(s string, allowed []string) *templateError {
	parts, err := scanTemplate(s)
	if err != nil {
		return err.(*templateError)
	}
	for _, p := range parts {
		if p.isVar && !slices.Contains(allowed, p.text) {
			return &templateError{Offset: p.offset, Name: p.text}
		}
	}
	return nil
}

// usesVar reports whether s refers to one of names (ignoring broken templates).
func usesVar(s string, names ...string) bool {
	parts, err := scanTemplate(s)
	if err != nil {
		return false
	}
	for _, p := range parts {
		if p.isVar && slices.Contains(names, p.text) {
			return true
		}
	}
	return false
}
