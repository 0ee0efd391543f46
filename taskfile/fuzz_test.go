package taskfile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var fuzzParseSeeds = []string{
	"",
	"version: 1\ntasks: [{id: t, prompt: p, agent: a}]\nagents: {a: {command: [x, \"{{prompt}}\"]}}\n",
	"version: 1\nx-a: &a [x]\nagents: {a: {command: *a, <<: {preset: claude}}}\ntasks: [{id: t, prompt: p, agent: [a], needs: [t]}]\n",
	"version: 1\nx: &x {<<: *x}\n",
	"version: 1\na: &a [*a]\n",
	"version: 1\ntasks:\n  - id: a\n    prompt: |\n      multi\n      line\n    agent: a\n    retries: .inf\n",
	"{\"version\": 1, \"tasks\": []}",
	"version: 1\ntasks: [a, b\n",
	"? [x]\n: y\n",
	"!!map {version: !!int 1}\n",
	"version: 1\n---\n...\n",
	// Found by fuzzing: a lone \r is a YAML line break; a merge of an unknown alias.
	"\r 0\n",
	"&x {<<: *xx",
	"version: 1\r\ntasks: x\r\n",
}

// FuzzParse: the loader never panics, fails only with authoring errors whose positions
// lie inside the input and come sorted, and what it accepts is consistent.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzParseSeeds {
		f.Add([]byte(s))
	}
	if b, err := os.ReadFile("testdata/spec-example.yaml"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		file, err := Parse("f.yaml", src)
		if err != nil {
			var es AuthoringErrors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("not authoring errors: %#v", err)
			}
			lines := yamlLines(string(src))
			for i, e := range es {
				if e.File != "f.yaml" || e.Msg == "" {
					t.Fatalf("bad error %+v", e)
				}
				if e.Line < 1 || e.Line > len(lines) || e.Col < 1 || e.Col > len(lines[e.Line-1])+1 {
					t.Fatalf("position %d:%d outside the input (%d lines): %s", e.Line, e.Col, len(lines), e.Msg)
				}
				if i > 0 && (es[i-1].Line > e.Line || es[i-1].Line == e.Line && es[i-1].Col > e.Col) {
					t.Fatalf("errors not sorted: %v", err)
				}
			}
			return
		}
		if file.Version != 1 || len(file.Tasks) == 0 {
			t.Fatalf("accepted a file without version or tasks: %+v", file)
		}
		seen := map[string]bool{}
		for _, tk := range file.Tasks {
			if !idPattern.MatchString(tk.ID) || seen[tk.ID] {
				t.Fatalf("bad or duplicate id %q", tk.ID)
			}
			seen[tk.ID] = true
			if len(tk.Agents) == 0 {
				t.Fatalf("task %s has no agent", tk.ID)
			}
			for _, a := range tk.Agents {
				if file.Agents[a] == nil || len(file.Agents[a].Command) == 0 {
					t.Fatalf("task %s: agent %q undefined or without command", tk.ID, a)
				}
			}
			if tk.OnFailure == OnFailureRetry && tk.Retries < 0 {
				t.Fatalf("negative retries")
			}
			if tk.Backoff.Max <= 0 || tk.Backoff.Initial > tk.Backoff.Max {
				t.Fatalf("bad backoff %+v", tk.Backoff)
			}
		}
		for _, tk := range file.Tasks {
			for _, n := range tk.Needs {
				if !seen[n] {
					t.Fatalf("task %s needs unknown %q", tk.ID, n)
				}
			}
		}
		again, err := Parse("f.yaml", src)
		if err != nil || !reflect.DeepEqual(file, again) {
			t.Fatalf("Parse is not deterministic: %v", err)
		}
	})
}

// FuzzExpand: expansion never panics, agrees with CheckTemplate, leaves text without
// templates alone and never expands inside substituted values.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "plain", "{{prompt}}", "{{ task }}-{{attempt}}", "{{{{x}}", "{{", "{{}}", "}}{{run}}{{", "{{{{{{prompt}}}}"} {
		f.Add(s, "a {{task}} b")
	}
	f.Fuzz(func(t *testing.T, s, value string) {
		vars := Vars{Prompt: value, PromptFile: value, Run: value, Task: value, Attempt: 7, IdempotencyKey: value}
		out, err := ExpandString(s, vars)
		unknown := CheckTemplate(s)
		if (err != nil) != (len(unknown) > 0) {
			t.Fatalf("ExpandString(%q) error %v but CheckTemplate says %q", s, err, unknown)
		}
		argv, aerr := Expand([]string{"x", s}, vars)
		if (aerr != nil) != (err != nil) || (aerr == nil && (len(argv) != 2 || argv[1] != out)) {
			t.Fatalf("Expand and ExpandString disagree on %q: %v / %v", s, aerr, err)
		}
		if err != nil {
			return
		}
		if !strings.Contains(s, "{{") && out != s {
			t.Fatalf("text without templates changed: %q -> %q", s, out)
		}
		// Every {{prompt}} is replaced by the value verbatim, whatever the value holds.
		marked, err := ExpandString("<"+s+">{{prompt}}", vars)
		if err != nil || !strings.HasSuffix(marked, ">"+value) {
			t.Fatalf("value not substituted verbatim: %q", marked)
		}
	})
}

// FuzzAdHoc: any valid UTF-8 command argument and prompt survive the trip through the
// generated task file, so a stored ad-hoc run resumes with exactly its own command.
func FuzzAdHoc(f *testing.F) {
	f.Add("--flag=value", "fix it")
	f.Add("quote\" back\\slash\nnl\ttab\x00nul\x7fdel\u0085nel\u2028ls\ufeffbom😀", "it's \"broken\": {{task}}")
	f.Add("# not a comment", "- not a list")
	f.Add("{{{{.Names}}", "&anchor *alias !tag %x @x `x`")
	f.Fuzz(func(t *testing.T, arg, prompt string) {
		if !utf8.ValidString(arg) || !utf8.ValidString(prompt) {
			return
		}
		file, err := AdHoc(AdHocOptions{Command: []string{"agent", arg}, Prompt: prompt})
		if err != nil {
			if !IsAuthoring(err) {
				t.Fatalf("AdHoc(%q, %q) failed internally: %v", arg, prompt, err)
			}
			if len(CheckTemplate(arg)) == 0 && len(CheckTemplate(prompt)) == 0 && prompt != "" {
				if !slices.ContainsFunc([]string{prompt}, func(p string) bool { return strings.Contains(p, "{{") }) {
					t.Fatalf("AdHoc rejected clean input %q, %q: %v", arg, prompt, err)
				}
			}
			return
		}
		if got := file.Agents["main"].Command; len(got) != 2 || got[1] != arg {
			t.Fatalf("command arg %q came back as %q", arg, got)
		}
		if file.Tasks[0].Prompt != prompt {
			t.Fatalf("prompt %q came back as %q", prompt, file.Tasks[0].Prompt)
		}
	})
}

// taskIDSeeds are the ids SPEC §1 names, and their neighbours.
var taskIDSeeds = []string{"..", ".", ".git", "x.lock", ".hidden", "a..b", "base", "-rf", "--help",
	strings.Repeat("a", 64), strings.Repeat("a", 65), "fix-tests", "v1.2", "a.lock.b", "base2", "Base",
	"a/b", "a b", "a@b", "x.", "lock", ".lock", "a_b", "0", "", "é", "a\x00b"}

// FuzzTaskID: CheckTaskID accepts exactly SPEC §1's ids, and an accepted id is one component
// of a ref name git accepts and of a path that stays in its directory.
func FuzzTaskID(f *testing.F) {
	for _, s := range taskIDSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		problem, hint := CheckTaskID(id)
		spec := idPattern.MatchString(id) && len(id) <= MaxTaskIDLen && id != "base" &&
			id[0] != '.' && id[0] != '-' && !strings.Contains(id, "..") && !strings.HasSuffix(id, ".lock")
		if (problem == "") != spec {
			t.Fatalf("CheckTaskID(%q) = %q; SPEC §1 says valid=%v", id, problem, spec)
		}
		if problem != "" {
			if hint == "" {
				t.Fatalf("CheckTaskID(%q): no hint", id)
			}
			return
		}
		if !gitRefComponentOK(id) {
			t.Fatalf("%q accepted but git refuses it as a ref component", id)
		}
		dir := "/repo/.git/mulligan/logs/run"
		p := filepath.Join(dir, id)
		if filepath.Dir(p) != dir || filepath.Base(p) != id {
			t.Fatalf("%q accepted but %s leaves %s", id, p, dir)
		}
	})
}

// gitRefComponentOK is git's check_refname_component (refs.c) for one component of
// refs/mulligan/runs/<run>/<task>/<n>/pre: no '..', no control characters or " ~^:?*[\",
// no "@{", not starting with '.', not ending in ".lock", not empty.
func gitRefComponentOK(c string) bool {
	if c == "" || c[0] == '.' || strings.HasSuffix(c, ".lock") || strings.Contains(c, "..") || strings.Contains(c, "@{") {
		return false
	}
	for i := 0; i < len(c); i++ {
		if b := c[i]; b < 0x20 || b == 0x7f || strings.IndexByte(" ~^:?*[\\/", b) >= 0 {
			return false
		}
	}
	return true
}

// TestTaskIDAgainstGit: for every seed that CheckTaskID accepts, `git check-ref-format` accepts
// the attempt's refs; for those it refuses as ref components, git refuses them too.
func TestTaskIDAgainstGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	for _, id := range taskIDSeeds {
		if strings.ContainsAny(id, "\x00") || id == "" {
			continue
		}
		problem, _ := CheckTaskID(id)
		gitOK := exec.Command("git", "check-ref-format", "refs/mulligan/runs/r/"+id+"/1/pre").Run() == nil
		if problem == "" && !gitOK {
			t.Errorf("%q accepted, but git refuses its refs", id)
		}
		if gitOK != gitRefComponentOK(id) && !strings.Contains(id, "/") {
			t.Errorf("%q: the test's git rule says %v, git says %v", id, gitRefComponentOK(id), gitOK)
		}
	}
}
