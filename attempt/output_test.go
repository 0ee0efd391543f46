package attempt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
