package scrub

import (
	"bytes"
	"encoding/json"
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

// scrubUnfiltered is String without the literal pre-checks (mayHold): every pattern run on every
// text. The pre-checks only skip what could not match.
func scrubUnfiltered(s *Scrubber, text string) string {
	if text == "" {
		return text
	}
	for _, v := range s.values {
		text = strings.ReplaceAll(text, v.value, "[scrubbed:"+v.name+"]")
	}
	if strings.Contains(text, "PRIVATE KEY-----") {
		text = pemRe.ReplaceAllString(text, Redacted)
	}
	for _, t := range tokenRes {
		if t.re.NumSubexp() == 1 {
			text = t.re.ReplaceAllString(text, "${1}"+Redacted+"@")
			continue
		}
		text = t.re.ReplaceAllString(text, Redacted)
	}
	return assignRe.ReplaceAllStringFunc(text, func(m string) string {
		sub := assignRe.FindStringSubmatch(m)
		if strings.HasPrefix(sub[2], "[scrubbed") {
			return m
		}
		return sub[1] + Redacted
	})
}

// FuzzScrubPrefilter: String scrubs exactly what running every pattern on the text scrubs.
func FuzzScrubPrefilter(f *testing.F) {
	for _, seed := range []string{
		"key sk-ant-api03-AbCdEfGhIjKlMnOp here", "token ghp_0123456789abcdefghijABCDEFGHIJ",
		"aws AKIAIOSFODNN7EXAMPLE ok", "Authorization: bEaReR eyJhbGciOiJIUzI1NiJ9.e30.sig",
		"https://me:pass@host/x", "export \u212aEY=value", "PASSWD=x", "Pwd: y", "plain text, no secrets",
		"xoxp-12345678-abc", `{"Secret": "v"}`, "ſecret=1", "mulligan version 1.0 (go1.26)",
	} {
		f.Add(seed)
	}
	s := New([]string{"DB_PASSWORD=hunter2hunter2"})
	f.Fuzz(func(t *testing.T, text string) {
		if got, want := s.String(text), scrubUnfiltered(s, text); got != want {
			t.Fatalf("String(%q) = %q; every pattern run gives %q", text, got, want)
		}
	})
}
