package attempt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mulligan-dev/mulligan/taskfile"
)

// Output-check failure codes.
const (
	CodeIsError        = "is_error"
	CodeResultContract = "result_contract"
	CodeEmptyOutput    = "empty_output"
	CodeSchemaInvalid  = "schema_invalid"
	CodeNoJSON         = "no_json"
	CodeVerifyFailed   = "verify_failed"
	CodeVerifyTimeout  = "verify_timeout"
	CodeMaxCost        = "max_cost"
	CodeRunMaxCost     = "run_max_cost"
)

// AttemptOutput is the agent's final output as the checks read it (SPEC §4 Schema): the file it
// wrote to $MULLIGAN_OUTPUT_FILE, else the preset's result field, else the last JSON value on
// stdout.
type AttemptOutput struct {
	Raw    []byte // the bytes the checks judge (may be empty)
	Source string // "output_file", "result", "stdout", or "" when there is none
	Result *AgentResult
}

// ReadOutput picks the attempt's output.
func ReadOutput(outputFile string, stdout []byte, p *Preset) AttemptOutput {
	var o AttemptOutput
	if p != nil && p.Result != nil {
		o.Result = p.Result(stdout)
	}
	if outputFile != "" {
		if b, err := os.ReadFile(outputFile); err == nil {
			o.Raw, o.Source = b, "output_file"
			return o
		}
	}
	if o.Result != nil && o.Result.HasText {
		o.Raw, o.Source = []byte(o.Result.Text), "result"
		return o
	}
	if v := lastJSONValue(stdout); v != nil {
		o.Raw, o.Source = v, "stdout"
	} else if len(bytes.TrimSpace(stdout)) > 0 {
		o.Raw, o.Source = stdout, "stdout"
	}
	return o
}

// lastJSONValue returns the last complete top-level JSON object or array in b, or nil.
func lastJSONValue(b []byte) []byte {
	var last []byte
	scanJSON(b, "{[", func(raw []byte) { last = raw })
	return last
}

// decodeJSON reads raw as one JSON value, also when it is wrapped in text or a ``` fence (an
// agent's result field often is).
func decodeJSON(raw []byte) (any, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return nil, false
	}
	var v any
	if err := json.Unmarshal(t, &v); err == nil {
		return v, true
	}
	if inner := lastJSONValue(t); inner != nil {
		if err := json.Unmarshal(inner, &v); err == nil {
			return v, true
		}
	}
	return nil, false
}

// expectsResult reports whether an exit 0 without output is a failure: the preset prints a
// result object, or the task declares a contract or a schema.
func expectsResult(def *taskfile.Task, p *Preset) bool {
	return (p != nil && p.Result != nil && p.Name != taskfile.PresetAider) || def.ResultContract != nil || def.OutputSchema != ""
}

// CheckPayload applies the payload_declared checks to an exit-0 attempt: the preset's error flag,
// the result contract, empty output where a result is expected. nil: the payload is fine.
func CheckPayload(def *taskfile.Task, p *Preset, o AttemptOutput) *Failure {
	if o.Result != nil && o.Result.IsError {
		msg := strings.TrimSpace(o.Result.ErrorText)
		if msg == "" {
			msg = "the agent's result declares an error"
		}
		return &Failure{Class: taskfile.ClassPayloadDeclared, Code: CodeIsError, Message: p.Name + ": " + clipLine([]byte(msg))}
	}
	if len(bytes.TrimSpace(o.Raw)) == 0 {
		if expectsResult(def, p) {
			return &Failure{Class: taskfile.ClassPayloadDeclared, Code: CodeEmptyOutput,
				Message: "the agent exited 0 but its result is empty",
				Hint:    "an agent that does nothing and says nothing is not a success; check its command and prompt"}
		}
		return nil
	}
	if rc := def.ResultContract; rc != nil {
		v, ok := decodeJSON(o.Raw)
		if !ok {
			return &Failure{Class: taskfile.ClassPayloadDeclared, Code: CodeResultContract,
				Message: "the result_contract needs a JSON result, and the output holds none"}
		}
		if fv, has := dotted(v, rc.FailureField); has && truthy(fv) {
			msg := "the result declares failure (" + rc.FailureField + ")"
			if rc.MessageField != "" {
				if mv, ok := dotted(v, rc.MessageField); ok {
					msg += ": " + clipLine([]byte(fmt.Sprint(mv)))
				}
			} else if s, ok := fv.(string); ok {
				msg += ": " + clipLine([]byte(s))
			}
			return &Failure{Class: taskfile.ClassPayloadDeclared, Code: CodeResultContract, Message: msg}
		}
	}
	return nil
}

func dotted(v any, p string) (any, bool) {
	if p == "" {
		return nil, false
	}
	for _, k := range strings.Split(p, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		return x != ""
	case json.Number:
		return x.String() != "0"
	case float64:
		return x != 0
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// Schema is a compiled output_schema.
type Schema struct {
	path string
	s    *jsonschema.Resolved
}

// CompileSchema reads the task's output_schema (relative to the working tree root).
func CompileSchema(root, file string) (*Schema, error) {
	return compileSchema(root, file, "output_schema")
}

// CompileApprovalSchema reads the task's approval_schema (relative to the working tree root).
func CompileApprovalSchema(root, file string) (*Schema, error) {
	return compileSchema(root, file, "approval_schema")
}

// compileSchema loads and resolves a schema file; a $ref to another file is read relative to
// the file that holds it. Draft 2020-12 (the default) and draft-07 are the dialects validated
// (google/jsonschema-go: unlike the validator it replaced, it builds nothing at process start).
func compileSchema(root, file, key string) (*Schema, error) {
	p := file
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	fail := func(err error) (*Schema, error) { return nil, fmt.Errorf("%s %s: %w", key, file, err) }
	s, err := loadSchemaFile(p)
	if err != nil {
		return fail(err)
	}
	dialect, ok := schemaDialect(s.Schema)
	if !ok {
		return fail(fmt.Errorf("$schema %q is not supported: use draft 2020-12 or draft-07", s.Schema))
	}
	s.Schema = dialect
	base := url.URL{Scheme: "file", Path: filepath.ToSlash(p)}
	loader := func(u *url.URL) (*jsonschema.Schema, error) {
		if u.Scheme != "file" {
			return nil, fmt.Errorf("$ref %s: only files are read, not the network", u)
		}
		return loadSchemaFile(filepath.FromSlash(u.Path))
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{BaseURI: base.String(), Loader: loader})
	if err != nil {
		return fail(err)
	}
	return &Schema{path: file, s: rs}, nil
}

func loadSchemaFile(path string) (*jsonschema.Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s is not a JSON Schema: %w", filepath.Base(path), err)
	}
	return &s, nil
}

// schemaDialect is the validator's spelling of a supported $schema ("" is draft 2020-12).
func schemaDialect(schema string) (string, bool) {
	switch strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(schema, "http://"), "https://"), "#") {
	case "":
		return "", true
	case "json-schema.org/draft-07/schema":
		return "http://json-schema.org/draft-07/schema#", true
	case "json-schema.org/draft/2020-12/schema":
		return "https://json-schema.org/draft/2020-12/schema", true
	}
	return "", false
}

// Check validates raw against the schema; "" means valid, otherwise the validation errors as
// text, bounded, to be sent back to the agent.
func (s *Schema) Check(raw []byte) string {
	v, ok := decodeJSON(raw)
	if !ok {
		if len(bytes.TrimSpace(raw)) == 0 {
			return "the output is empty: a JSON value is required"
		}
		return "the output is not JSON"
	}
	if err := s.s.Validate(v); err != nil {
		msg := err.Error()
		if len(msg) > 2000 {
			msg = truncateRunes(msg, 2000)
		}
		return msg
	}
	return ""
}

// CorrectionPrompt is the prompt of a schema correction call: the original task, the output that
// failed and why, and what to send instead.
func CorrectionPrompt(task string, schemaFile string, raw []byte, errs string) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(task, "\n"))
	b.WriteString("\n\n## Your output did not match the required JSON Schema\n\n")
	fmt.Fprintf(&b, "The schema is %s. The validator said:\n\n%s\n", schemaFile, indent(strings.TrimRight(errs, "\n")+"\n"))
	if out := LastLines(raw); out != "" {
		b.WriteString("\nYour output was:\n\n")
		b.WriteString(indent(out))
	}
	b.WriteString("\nReply again with only the corrected JSON value (or write it to $MULLIGAN_OUTPUT_FILE).\n")
	return b.String()
}
