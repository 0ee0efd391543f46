package attempt

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

func TestSchemaCheck(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"type":"object","required":["status"],"properties":{"status":{"enum":["ok","failed"]}}}`), 0o600)
	s, err := CompileSchema(dir, "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if e := s.Check([]byte(`{"status":"ok"}`)); e != "" {
		t.Errorf("valid: %s", e)
	}
	if e := s.Check([]byte("Here it is:\n```json\n{\"status\":\"ok\"}\n```")); e != "" {
		t.Errorf("fenced valid: %s", e)
	}
	if e := s.Check([]byte(`{"status":"maybe"}`)); !strings.Contains(e, "status") {
		t.Errorf("invalid enum: %q", e)
	}
	if e := s.Check([]byte(`{}`)); !strings.Contains(e, "missing") {
		t.Errorf("missing property: %q", e)
	}
	if e := s.Check(nil); e == "" {
		t.Error("empty output passes")
	}
	if _, err := CompileSchema(dir, "nope.json"); err == nil {
		t.Error("a missing schema compiles")
	}
	p := CorrectionPrompt("Do it.", "s.json", []byte(`{}`), "missing property 'status'")
	if !strings.Contains(p, "Do it.") || !strings.Contains(p, "missing property 'status'") || !strings.Contains(p, "s.json") {
		t.Errorf("correction prompt: %s", p)
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

// A $ref to another file is read beside the schema; draft-07 and 2020-12 are validated, an
// older dialect is refused when the schema is read, not when the first output is checked.
func TestSchemaDialectsAndRefs(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "schemas"), 0o755)
	os.WriteFile(filepath.Join(dir, "schemas", "status.json"), []byte(`{"enum":["ok","failed"]}`), 0o600)
	os.WriteFile(filepath.Join(dir, "schemas", "main.json"), []byte(`{"type":"object","required":["status"],"properties":{"status":{"$ref":"status.json"},"n":{"type":"integer"}}}`), 0o600)
	os.WriteFile(filepath.Join(dir, "schemas", "d7.json"), []byte(`{"$schema":"http://json-schema.org/draft-07/schema","definitions":{"s":{"type":"string"}},"type":"object","properties":{"name":{"$ref":"#/definitions/s"}}}`), 0o600)
	os.WriteFile(filepath.Join(dir, "schemas", "d4.json"), []byte(`{"$schema":"http://json-schema.org/draft-04/schema#","type":"object"}`), 0o600)

	s, err := CompileSchema(dir, "schemas/main.json")
	if err != nil {
		t.Fatal(err)
	}
	for raw, valid := range map[string]bool{`{"status":"ok","n":3}`: true, `{"status":"maybe"}`: false, `{"status":"ok","n":1.5}`: false} {
		if e := s.Check([]byte(raw)); (e == "") != valid {
			t.Errorf("%s: valid %v, got %q", raw, valid, e)
		}
	}
	d7, err := CompileSchema(dir, "schemas/d7.json")
	if err != nil {
		t.Fatal(err)
	}
	if e := d7.Check([]byte(`{"name":"x"}`)); e != "" {
		t.Errorf("draft-07 valid: %s", e)
	}
	if e := d7.Check([]byte(`{"name":7}`)); e == "" {
		t.Error("draft-07: a number passes as the string of a definition")
	}
	if _, err := CompileSchema(dir, "schemas/d4.json"); err == nil || !strings.Contains(err.Error(), "draft-04") {
		t.Errorf("draft-04: %v", err)
	}
}
