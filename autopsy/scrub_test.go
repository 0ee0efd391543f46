package autopsy

import (
	"strings"
	"testing"
)

func TestScrubString(t *testing.T) {
	s := NewScrubber([]string{
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
	s := NewScrubber([]string{"SERVICE_TOKEN=tok-value-123456"})
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
