package agentcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mulligan-dev/mulligan/taskfile"
)

func TestLastJSONValue(t *testing.T) {
	cases := map[string]string{
		"noise {\"a\":1} more {\"b\":[1,2]} end": `{"b":[1,2]}`,
		"[1,2]\n":                                `[1,2]`,
		"no json here":                           ``,
		"broken {\"a\": then {\"ok\":true}":      `{"ok":true}`,
		"```json\n{\"x\": \"y\"}\n```":           `{"x": "y"}`,
	}
	for in, want := range cases {
		if got := string(lastJSONValue([]byte(in))); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestReadOutputOrder(t *testing.T) {
	dir := t.TempDir()
	of := filepath.Join(dir, "out.json")
	claude := []byte(`{"type":"result","is_error":false,"result":"{\"from\":\"result\"}"}`)
	if o := ReadOutput(of, claude, PresetFor(taskfile.PresetClaude)); o.Source != "result" || string(o.Raw) != `{"from":"result"}` {
		t.Errorf("result field: %+v", o)
	}
	os.WriteFile(of, []byte(`{"from":"file"}`), 0o600)
	if o := ReadOutput(of, claude, PresetFor(taskfile.PresetClaude)); o.Source != "output_file" {
		t.Errorf("output file first: %+v", o)
	}
	if o := ReadOutput("", []byte("log\n{\"from\":\"stdout\"}\n"), PresetFor(taskfile.PresetGeneric)); o.Source != "stdout" || string(o.Raw) != `{"from":"stdout"}` {
		t.Errorf("stdout: %+v", o)
	}
}

func TestCheckPayload(t *testing.T) {
	generic, claude := PresetFor(taskfile.PresetGeneric), PresetFor(taskfile.PresetClaude)
	plain := &taskfile.Task{}
	contract := &taskfile.Task{ResultContract: &taskfile.ResultContract{FailureField: "error", MessageField: "error.message"}}
	cases := []struct {
		name string
		def  *taskfile.Task
		p    *Preset
		out  string
		code string // "" = passes
	}{
		{"generic, no output, nothing expected", plain, generic, "", ""},
		{"claude is_error", plain, claude, `{"type":"result","is_error":true,"result":"something broke"}`, CodeIsError},
		{"claude empty result", plain, claude, `{"type":"result","is_error":false,"result":""}`, CodeEmptyOutput},
		{"claude no result object", plain, claude, "", CodeEmptyOutput},
		{"claude fine", plain, claude, `{"type":"result","is_error":false,"result":"done"}`, ""},
		{"contract failure", contract, generic, `{"error": {"message": "tests still fail"}}`, CodeResultContract},
		{"contract null error", contract, generic, `{"error": null, "ok": true}`, ""},
		{"contract false error", &taskfile.Task{ResultContract: &taskfile.ResultContract{FailureField: "failed"}}, generic, `{"failed": false}`, ""},
		{"contract no JSON", contract, generic, "just text", CodeResultContract},
		{"contract empty", contract, generic, "", CodeEmptyOutput},
	}
	for _, c := range cases {
		o := ReadOutput("", []byte(c.out), c.p)
		f := CheckPayload(c.def, c.p, o)
		got := ""
		if f != nil {
			got = f.Code
			if f.Class != taskfile.ClassPayloadDeclared {
				t.Errorf("%s: class %s", c.name, f.Class)
			}
		}
		if got != c.code {
			t.Errorf("%s: got %q (%v), want %q", c.name, got, f, c.code)
		}
	}
	f := CheckPayload(contract, generic, ReadOutput("", []byte(`{"error": {"message": "tests still fail"}}`), generic))
	if !strings.Contains(f.Message, "tests still fail") {
		t.Errorf("the message field is quoted: %q", f.Message)
	}
}

// Pathological outputs (openers that never close, prefixes that are valid JSON for a long time)
// are scanned once, not once per opener.
func TestScanJSONLinear(t *testing.T) {
	if v := lastJSONValue([]byte(strings.Repeat("[", 1<<20))); v != nil {
		t.Errorf("got %q", v)
	}
	bad := strings.Repeat(`{"a": [1, `, 1<<16) + "x" + strings.Repeat(`[[`, 1<<16) + "x\n{\"ok\": true}\n"
	if v := lastJSONValue([]byte(bad)); string(v) != `{"ok": true}` {
		t.Errorf("got %q", v)
	}
	if vs := jsonValues([]byte(bad)); len(vs) != 1 {
		t.Errorf("got %d values", len(vs))
	}
}
