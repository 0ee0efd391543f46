package scrub

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestScrubString(t *testing.T) {
	s := New([]string{
		"HOME=/home/me",              // not a secret name
		"DB_PASSWORD=hunter2hunter2", // secret name, value anywhere
		"MY_API_KEY=abc",             // too short to replace everywhere
		"GITHUB_TOKEN=plainvalue-42",
	})
	cases := []struct{ in, gone, keep string }{
		{"login as deploy:hunter2hunter2@db", "hunter2hunter2", "login as deploy:[scrubbed:DB_PASSWORD]@db"},
		{"using plainvalue-42 now", "plainvalue-42", "[scrubbed:GITHUB_TOKEN]"},
		{"key sk-ant-api03-AbCdEfGhIjKlMnOp here", "sk-ant-api03", "key [scrubbed] here"},
		{"OPENAI sk-proj-0123456789abcdefXYZ", "sk-proj-0123456789", "OPENAI [scrubbed]"},
		{"token ghp_0123456789abcdefghijABCDEFGHIJ", "ghp_0123", "[scrubbed]"},
		{"gho_0123456789abcdefghij9", "gho_0123", "[scrubbed]"},
		{"pat github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github_pat_11", "pat [scrubbed]"},
		{"aws AKIAIOSFODNN7EXAMPLE ok", "AKIAIOSFODNN7EXAMPLE", "aws [scrubbed] ok"},
		{"slack xoxb-1234567890-abcdefghij", "xoxb-1234", "slack [scrubbed]"},
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", "eyJhbGciOi", "Authorization: [scrubbed]"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\nafter", "b3BlbnNzaC1rZXk", "[scrubbed]\nafter"},
		{"truncated -----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA", "MIIEpAIBAAKCAQEA", "truncated [scrubbed]"},
		{"export ANTHROPIC_API_KEY=whatever-it-is", "whatever-it-is", "ANTHROPIC_API_KEY=[scrubbed]"},
		{`{"api_key": "zzzz-yyyy"}`, "zzzz-yyyy", `"api_key": "[scrubbed]"`},
		{"client_secret: s3cr3tvalue", "s3cr3tvalue", "client_secret: [scrubbed]"},
		{"nothing secret in here, abc", "\x00", "nothing secret in here, abc"},
		// docker/buildx's error: a word of failure after "key:" is no secret.
		{`ERROR: failed to solve: failed to compute cache key: failed to calculate checksum of ref 7a1b::x: "/.env.production": not found`, "\x00", "cache key: failed to calculate checksum"},
	}
	for _, c := range cases {
		got := s.String(c.in)
		if strings.Contains(got, c.gone) {
			t.Errorf("String(%q) = %q: still holds %q", c.in, got, c.gone)
		}
		if !strings.Contains(got, c.keep) {
			t.Errorf("String(%q) = %q, want it to hold %q", c.in, got, c.keep)
		}
	}
}

func TestScrubJSON(t *testing.T) {
	s := New([]string{"SERVICE_TOKEN=tok-value-123456"})
	in := `{"type":"attempt.failed","message":"rejected ghp_0123456789abcdefghijABCDEFGHIJ","tokens_in":1200,` +
		`"env":{"SERVICE_TOKEN":"anything-else","MODE":"fast"},"argv":["agent","tok-value-123456"]}`
	got := string(s.JSON([]byte(in)))
	for _, gone := range []string{"ghp_0123", "anything-else", "tok-value-123456"} {
		if strings.Contains(got, gone) {
			t.Errorf("JSON kept %q: %s", gone, got)
		}
	}
	for _, keep := range []string{`"tokens_in":1200`, `"MODE":"fast"`, `"type":"attempt.failed"`} {
		if !strings.Contains(got, keep) {
			t.Errorf("JSON lost %q: %s", keep, got)
		}
	}
	if got := string(s.JSON([]byte("not json tok-value-123456"))); strings.Contains(got, "tok-value") {
		t.Errorf("invalid JSON not scrubbed as text: %s", got)
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "GH_TOKEN": true, "client_secret": true, "PGPASSWORD": true,
		"HOME": false, "PATH": false, "MULLIGAN_RUN": false,
	} {
		if SecretName(name) != want {
			t.Errorf("SecretName(%s) = %v", name, !want)
		}
	}
}

// TestJSONStaysJSON: text scrubbing inside JSON strings never eats a quote or a backslash, and
// the structural scrub keeps key order and numbers.
func TestJSONStaysJSON(t *testing.T) {
	s := New(nil)
	docs := []string{
		`{"message":"password=hunter2hunter2\nnext line","n":1}`,
		`{"message":"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA","after":"x"}`,
		`{"z":1,"a":"token: abcdefgh","m":12345678901234567890}`,
		`{"argv":["curl","-H","Authorization: Bearer","abcdefghijkl"],"cmd":["tool","--api-key","k-123456"]}`,
		`["sk-ant-api03-AbCdEfGhIjKlMnOp",{"nested":{"GH_TOKEN":"anything"}}]`,
	}
	for _, d := range docs {
		for name, out := range map[string]string{"JSON": string(s.JSON([]byte(d))), "String": s.String(d)} {
			var v any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Errorf("%s(%s) = %s: not JSON: %v", name, d, out, err)
			}
			for _, gone := range []string{"hunter2", "MIIEpAIBAAKCAQEA", "abcdefghijkl", "k-123456", "sk-ant-api03", "anything"} {
				if name == "JSON" && strings.Contains(out, gone) {
					t.Errorf("JSON(%s) kept %q: %s", d, gone, out)
				}
			}
		}
	}
	if got := string(s.JSON([]byte(docs[2]))); got != `{"z":1,"a":"token: [scrubbed]","m":12345678901234567890}` {
		t.Errorf("order or numbers changed: %s", got)
	}
	if got := string(s.JSON([]byte(`{"tokens_in":"1200","idempotency_key":"mulligan-k3f9-fix"}`))); got != `{"tokens_in":"1200","idempotency_key":"mulligan-k3f9-fix"}` {
		t.Errorf("counts and idempotency keys are not secrets: %s", got)
	}
	if got := New(nil).JSON([]byte("")); len(got) != 0 {
		t.Errorf("empty stays empty: %q", got)
	}
	var nilS *Scrubber
	if got := nilS.String("ghp_0123456789abcdefghijABCD"); got != "ghp_0123456789abcdefghijABCD" {
		t.Errorf("a nil scrubber (--no-scrub) changed the text: %s", got)
	}
}

func TestWriter(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, New(nil))
	// A token split over two writes is found: the line is held until it ends.
	w.Write([]byte("key ghp_0123456789"))
	w.Write([]byte("abcdefghijABCD done\n"))
	// A key block is held until its END line.
	w.Write([]byte("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n"))
	if strings.Contains(out.String(), "MIIE") {
		t.Fatalf("key body written before its block ended: %q", out.String())
	}
	w.Write([]byte("-----END RSA PRIVATE KEY-----\n"))
	// A status line (carriage return, no newline) goes out at once, scrubbed.
	w.Write([]byte("\r\033[Kmain@1 3s sk-ant-api03-AbCdEfGhIjKl"))
	if !strings.HasSuffix(out.String(), "main@1 3s [scrubbed]") {
		t.Errorf("status line held back or not scrubbed: %q", out.String())
	}
	w.Write([]byte("tail without newline password=abcdef"))
	w.Flush()
	want := "key [scrubbed] done\n[scrubbed]\n\r\033[Kmain@1 3s [scrubbed]tail without newline password=[scrubbed]"
	if out.String() != want {
		t.Errorf("got  %q\nwant %q", out.String(), want)
	}
	// JSON goes out scrubbed value by value, indented as asked.
	out.Reset()
	if err := w.WriteJSON([]byte(`{"a":"ghp_0123456789abcdefghijABCD","tokens_in":3}`+"\n"), "  "); err != nil {
		t.Fatal(err)
	}
	if out.String() != "{\n  \"a\": \"[scrubbed]\",\n  \"tokens_in\": 3\n}\n" {
		t.Errorf("WriteJSON: %q", out.String())
	}
	// --no-scrub: everything as it was.
	out.Reset()
	w.SetScrubber(nil)
	w.Write([]byte("ghp_0123456789abcdefghijABCD"))
	if out.String() != "ghp_0123456789abcdefghijABCD" {
		t.Errorf("nil scrubber: %q", out.String())
	}
}

// Placeholder values and counting names are mulligan's (and the agents') own words, not secrets;
// a real value beside them still goes.
func TestOwnWordsLeftAlone(t *testing.T) {
	s := New()
	for _, text := range []string{
		"mulligan.yaml:3:1: agents.x.env must be a mapping (key: value lines), not null",
		"Tokens: 12k sent, 3.4k received.", "tokens_in=3", "password: none", "MULLIGAN_IDEMPOTENCY_KEY=r1/t@1",
		"ssh asked to trust a new host key: add it", "ssh -o StrictHostKeyChecking=accept-new",
	} {
		if got := s.String(text); got != text {
			t.Errorf("String(%q) = %q, want it unchanged", text, got)
		}
	}
	for text, want := range map[string]string{
		"password: hunter2":            "password: [scrubbed]",
		"key: value1":                  "key: [scrubbed]",
		"API_TOKEN=abcd1234":           "API_TOKEN=[scrubbed]",
		"x-api-key: Value-With-Digit9": "x-api-key: [scrubbed]",
		"apiKey=abcd1234":              "apiKey=[scrubbed]",
		"KeyChecking_TOKEN=abcd1234":   "KeyChecking_TOKEN=[scrubbed]",
	} {
		if got := s.String(text); got != want {
			t.Errorf("String(%q) = %q, want %q", text, got, want)
		}
	}
}

// Every string literal of mulligan's own code (its messages, hints and help) passes the scrubber
// unchanged, but for the SQL and the patterns, which are never printed.
func TestMulligansStringsSurvive(t *testing.T) {
	s := New()
	root := ".."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "store" || (strings.HasPrefix(n, ".") && p != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && (x.Name == "lazyre" || x.Name == "regexp") {
						return false
					}
				}
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			text, err := strconv.Unquote(lit.Value)
			if err == nil && s.String(text) != text {
				t.Errorf("%s: %q is scrubbed to %q", fset.Position(lit.Pos()), text, s.String(text))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
