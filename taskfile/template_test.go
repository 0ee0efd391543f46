package taskfile

import (
	"reflect"
	"testing"
)

var tmplVars = Vars{Prompt: "fix it; rm -rf / `x` $(y) \"q\"", PromptFile: "/tmp/p.md", Run: "k3f9", Task: "fix-tests", Attempt: 2, IdempotencyKey: "k3f9-fix-tests"}

func TestExpand(t *testing.T) {
	in := []string{"claude", "-p", "{{prompt}}", "--file={{ prompt_file }}", "{{run}}/{{task}}@{{attempt}}", "{{idempotency_key}}", "{{\ttask\t}}", "docker", "{{{{.Names}}", "}}", "plain"}
	got, err := Expand(in, tmplVars)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"claude", "-p", tmplVars.Prompt, "--file=/tmp/p.md", "k3f9/fix-tests@2", "k3f9-fix-tests", "fix-tests", "docker", "{{.Names}}", "}}", "plain"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Expand:\n got %q\nwant %q", got, want)
	}
	if in[2] != "{{prompt}}" {
		t.Error("Expand changed its input")
	}
	// A value that looks like a template is not expanded again.
	got, _ = Expand([]string{"{{prompt}}"}, Vars{Prompt: "{{task}}", Task: "t"})
	if got[0] != "{{task}}" {
		t.Errorf("expanded twice: %q", got[0])
	}
	if got, err := Expand(nil, tmplVars); got != nil || err != nil {
		t.Errorf("Expand(nil) = %v, %v", got, err)
	}
}

func TestExpandErrors(t *testing.T) {
	for in, want := range map[string]string{
		"{{promt}}":      "argument 2: unknown template variable {{promt}}",
		"a {{prompt":     "argument 2: unterminated {{ (close it with }}, or write {{{{ for a literal {{)",
		"{{}}":           "argument 2: unknown template variable {{}}",
		"{{ prompt x }}": "argument 2: unknown template variable {{prompt x}}",
		"{{.Names}}":     "argument 2: unknown template variable {{.Names}}",
	} {
		_, err := Expand([]string{"x", in}, tmplVars)
		if err == nil || err.Error() != want {
			t.Errorf("Expand(%q) error = %v, want %q", in, err, want)
		}
	}
}

func TestExpandString(t *testing.T) {
	got, err := ExpandString("task {{task}} attempt {{attempt}}", tmplVars)
	if err != nil || got != "task fix-tests attempt 2" {
		t.Errorf("ExpandString = %q, %v", got, err)
	}
	if got, _ := ExpandString("", tmplVars); got != "" {
		t.Errorf("empty = %q", got)
	}
}

func TestCheckTemplate(t *testing.T) {
	tests := map[string][]string{
		"{{prompt}} {{task}}":       nil,
		"{{promt}} {{x}} {{promt}}": {"promt", "x"},
		"{{ foo }}":                 {"foo"},
		"{{{{literal}} ok":          nil,
		"unterminated {{prompt":     {"{{"},
		"no templates at all }} {":  nil,
		"{{prompt}}{{prompt_file}}{{run}}{{task}}{{attempt}}{{idempotency_key}}": nil,
	}
	for in, want := range tests {
		if got := CheckTemplate(in); !reflect.DeepEqual(got, want) {
			t.Errorf("CheckTemplate(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVarsLookup(t *testing.T) {
	for _, name := range TemplateVars {
		if _, ok := tmplVars.Lookup(name); !ok {
			t.Errorf("%s not known", name)
		}
	}
	if _, ok := tmplVars.Lookup("nope"); ok {
		t.Error("nope is known")
	}
}
