package autopsy

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
)

// Scrubber removes secrets from text: the values of environment variables whose names contain
// KEY, TOKEN, SECRET or PASSWORD (wherever those values appear), NAME=VALUE text with such a
// name, and the shapes of well-known tokens. It errs on the side of removing too much: a
// scrubbed report that hides a harmless word is better than one that leaks a key.
type Scrubber struct {
	values []secretValue // longest first, so a value that contains another is replaced whole
}

type secretValue struct{ name, value string }

// minSecretLen keeps short values ("1", "yes") of secret-named variables from being replaced
// everywhere they occur, which would make a report unreadable without hiding anything real.
const minSecretLen = 4

// SecretName reports whether an environment variable's name says its value is a secret.
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	return strings.Contains(n, "KEY") || strings.Contains(n, "TOKEN") ||
		strings.Contains(n, "SECRET") || strings.Contains(n, "PASSWORD")
}

// NewScrubber builds a scrubber from environments in os.Environ form (NAME=VALUE): the
// process's own at autopsy time, and the agents' env from the task file.
func NewScrubber(environs ...[]string) *Scrubber {
	s := &Scrubber{}
	seen := map[string]bool{}
	for _, env := range environs {
		for _, kv := range env {
			name, value, ok := strings.Cut(kv, "=")
			if !ok || !SecretName(name) || len(value) < minSecretLen || seen[value] {
				continue
			}
			seen[value] = true
			s.values = append(s.values, secretValue{name, value})
		}
	}
	sort.Slice(s.values, func(i, j int) bool { return len(s.values[i].value) > len(s.values[j].value) })
	return s
}

var (
	// NAME=VALUE (env, shell, .env files) and NAME: VALUE / "name": "value" (YAML, JSON) with
	// a secret-looking name.
	assignRe = regexp.MustCompile(`(?i)(\b[A-Za-z0-9_.-]*(?:key|token|secret|password)[A-Za-z0-9_.-]*"?\s*(?:=|:\s)\s*"?)([^\s"',;]+)`)
	tokenRes = []*regexp.Regexp{
		regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)`),
		regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{8,}`),
		regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{12,}`),
		regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{16,}`),
		regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{16,}`),
		regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`),
		regexp.MustCompile(`\bxox[a-z]-[A-Za-z0-9-]{8,}`),
		regexp.MustCompile(`(?i)\bBearer\s+[A-Za-z0-9._~+/=-]{8,}`),
	}
)

// Redacted is what a secret is replaced with.
const Redacted = "[scrubbed]"

// String returns text with every secret it recognises replaced.
func (s *Scrubber) String(text string) string {
	if s == nil || text == "" {
		return text
	}
	for _, v := range s.values {
		if strings.Contains(text, v.value) {
			text = strings.ReplaceAll(text, v.value, "[scrubbed:"+v.name+"]")
		}
	}
	for _, re := range tokenRes {
		text = re.ReplaceAllString(text, Redacted)
	}
	return assignRe.ReplaceAllStringFunc(text, func(m string) string {
		sub := assignRe.FindStringSubmatch(m)
		if strings.HasPrefix(sub[2], "[scrubbed") {
			return m
		}
		return sub[1] + Redacted
	})
}

// Strings scrubs every element.
func (s *Scrubber) Strings(in []string) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = s.String(v)
	}
	return out
}

// JSON scrubs a JSON document value by value: strings are scrubbed, and a string under a key
// with a secret-looking name is replaced whole. Keys and non-string values are kept, so the
// shape (and the numeric fields such as tokens_in) survive. Invalid JSON is scrubbed as text.
func (s *Scrubber) JSON(doc []byte) []byte {
	if len(doc) == 0 {
		return doc
	}
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		return []byte(s.String(string(doc)))
	}
	out, err := json.Marshal(s.value("", v))
	if err != nil {
		return []byte(s.String(string(doc)))
	}
	return out
}

func (s *Scrubber) value(key string, v any) any {
	switch x := v.(type) {
	case string:
		if key != "" && SecretName(key) && len(x) >= minSecretLen {
			return Redacted
		}
		return s.String(x)
	case map[string]any:
		for k, e := range x {
			x[k] = s.value(k, e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = s.value("", e)
		}
		return x
	}
	return v
}
