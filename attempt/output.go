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

	"github.com/mulligan-dev/mulligan/agentcli"
)

// Schema is a compiled output_schema.
type Schema struct {
	path string
	s    *jsonschema.Resolved
}

// CompileSchema reads the task's output_schema (relative to the working tree root).
func CompileSchema(root, file string) (*Schema, error) {
	return compileSchema(root, file, "output_schema", os.ReadFile)
}

// compileSchema loads and resolves a schema file; a $ref to another file is read relative to
// the file that holds it. Draft 2020-12 (the default) and draft-07 are the dialects validated
// (google/jsonschema-go: unlike the validator it replaced, it builds nothing at process start).
// read reads a schema file by its absolute path.
func compileSchema(root, file, key string, read func(path string) ([]byte, error)) (*Schema, error) {
	p := file
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	fail := func(err error) (*Schema, error) { return nil, fmt.Errorf("%s %s: %w", key, file, err) }
	s, err := loadSchemaFile(p, read)
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
		return loadSchemaFile(filepath.FromSlash(u.Path), read)
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{BaseURI: base.String(), Loader: loader})
	if err != nil {
		return fail(err)
	}
	return &Schema{path: file, s: rs}, nil
}

func loadSchemaFile(path string, read func(string) ([]byte, error)) (*jsonschema.Schema, error) {
	data, err := read(path)
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
	v, ok := agentcli.DecodeJSON(raw)
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
