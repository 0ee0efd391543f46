// Package scrub removes secrets from what mulligan prints and writes (SPEC §7): the values of
// environment variables whose names say they are secrets, NAME=VALUE text with such a name, and
// the shapes of well-known tokens. Every printer goes through it — the streams of the command
// line (Writer), JSON documents value by value (JSON), the autopsy and the bug bundle — and only
// the raw attempt log is written without it. It must never change what is stored: the history
// and the logs keep what happened, the scrubbing happens when something is shown.
package scrub

import (
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// Scrubber removes secrets from text. It errs on the side of removing too much: a scrubbed
// report that hides a harmless word is better than one that leaks a key. A nil *Scrubber leaves
// everything as it is (--no-scrub).
type Scrubber struct {
	values []secretValue // longest first, so a value that contains another is replaced whole
}

type secretValue struct{ name, value string }

// minSecretLen keeps short values ("1", "yes") of secret-named variables from being replaced
// everywhere they occur, which would make a report unreadable without hiding anything real.
const minSecretLen = 4

// SecretName reports whether an environment variable's (or a JSON key's) name says its value is
// a secret: it contains KEY, TOKEN, SECRET or PASSWORD. Names that only count or derive
// (MAX_OUTPUT_TOKENS, tokens_in, MULLIGAN_IDEMPOTENCY_KEY) are not secrets.
func SecretName(name string) bool {
	n := strings.ToUpper(name)
	if countingName(n) {
		return false
	}
	return strings.Contains(n, "KEY") || strings.Contains(n, "TOKEN") ||
		strings.Contains(n, "SECRET") || strings.Contains(n, "PASSWORD")
}

// countingName reports whether an upper-cased name only counts or derives (tokens_in, "Tokens:
// 12k sent", MULLIGAN_IDEMPOTENCY_KEY) though it holds a secret word.
func countingName(upper string) bool {
	return strings.Contains(upper, "TOKENS") || strings.Contains(upper, "IDEMPOTENCY_KEY")
}

// secretWords are the words assignRe looks for in a name.
var secretWords = []string{"key", "token", "secret", "password", "passwd", "pwd"}

// secretWordIn reports whether name holds a secret word that is not the start of a longer
// camel-case word: StrictHostKeyChecking and TokenCount name no secret, apiKey and API_KEY do.
func secretWordIn(name string) bool {
	lower := strings.ToLower(name)
	for _, w := range secretWords {
		for i := 0; ; {
			j := strings.Index(lower[i:], w)
			if j < 0 {
				break
			}
			end := i + j + len(w)
			if end+1 >= len(name) || !isUpper(name[end]) || !isLower(name[end+1]) {
				return true
			}
			i = end
		}
	}
	return false
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }

// placeholders are values that name a kind of value rather than hold one ("key: value lines" in
// mulligan's own messages, "password: none"), or the word of an error that follows a name
// ("cache key: failed to calculate checksum", BuildKit's): never a secret, left as they are.
var placeholders = map[string]bool{
	"value": true, "values": true, "string": true, "null": true, "none": true, "true": true,
	"false": true, "empty": true, "unset": true,
	"failed": true, "error": true, "missing": true, "invalid": true, "required": true, "expired": true,
	"denied": true, "unknown": true, "undefined": true, "mismatch": true, "incorrect": true, "rejected": true,
}

// New builds a scrubber from environments in os.Environ form (NAME=VALUE): the process's own,
// and the agents' env from a task file.
func New(environs ...[]string) *Scrubber {
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
	// NAME=VALUE (env, shell, .env files, URLs' ?password=) and NAME: VALUE / "name": "value"
	// (YAML, JSON) with a secret-looking name. The value stops at a quote or a backslash, so a
	// JSON string stays a JSON string.
	assignRe = lazyre.New(`(?i)(\b[A-Za-z0-9_.-]*(?:key|token|secret|password|passwd|pwd)[A-Za-z0-9_.-]*"?\s*(?:=|:\s)\s*"?)([^\s"'\\,;&]+)`)
	// A private key block; without its END line it ends at a quote (the end of a JSON string)
	// or at the end of the text.
	pemRe    = lazyre.New(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:[^"]*?-----END [A-Z0-9 ]*PRIVATE KEY-----|[^"]*)`)
	tokenRes = []*lazyre.Regexp{
		lazyre.New(`\bsk-ant-[A-Za-z0-9_-]{8,}`),
		lazyre.New(`\bsk-proj-[A-Za-z0-9_-]{8,}`),
		lazyre.New(`\bsk-[A-Za-z0-9_-]{12,}`),
		lazyre.New(`\bgithub_pat_[A-Za-z0-9_]{16,}`),
		lazyre.New(`\bgh[pousr]_[A-Za-z0-9]{16,}`),
		lazyre.New(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`),
		lazyre.New(`\bxox[a-z]-[A-Za-z0-9-]{8,}`),
		lazyre.New(`(?i)\bBearer\s+[A-Za-z0-9._~+/=-]{8,}`),
		// user:password@ in a URL
		lazyre.New(`\b([a-z][a-z0-9+.-]*://[^\s:/@"'\\]+:)[^\s@/"'\\]+@`),
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
	text = pemRe.ReplaceAllString(text, Redacted)
	for _, re := range tokenRes {
		if re.NumSubexp() == 1 {
			text = re.ReplaceAllString(text, "${1}"+Redacted+"@")
			continue
		}
		text = re.ReplaceAllString(text, Redacted)
	}
	return assignRe.ReplaceAllStringFunc(text, func(m string) string {
		sub := assignRe.FindStringSubmatch(m)
		if strings.HasPrefix(sub[2], "[scrubbed") || len(sub[2]) < minSecretLen || placeholders[strings.ToLower(sub[2])] ||
			countingName(strings.ToUpper(sub[1])) || !secretWordIn(sub[1]) {
			return m
		}
		return sub[1] + Redacted
	})
}

// Strings scrubs every element.
func (s *Scrubber) Strings(in []string) []string {
	if s == nil {
		return in
	}
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = s.String(v)
	}
	return out
}

// JSON scrubs a JSON document value by value: strings are scrubbed, and a string under a key
// with a secret-looking name is replaced whole. Keys, their order, numbers and the other values
// are kept, so the shape (and fields such as tokens_in) survive; the result is compact. Invalid
// JSON is scrubbed as text.
func (s *Scrubber) JSON(doc []byte) []byte {
	if s == nil || len(bytes.TrimSpace(doc)) == 0 {
		return doc
	}
	var out bytes.Buffer
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := s.copyValue(dec, &out, ""); err != nil {
		return []byte(s.String(string(doc)))
	}
	if _, err := dec.Token(); err != io.EOF {
		return []byte(s.String(string(doc)))
	}
	if bytes.HasSuffix(doc, []byte("\n")) {
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// copyValue copies one JSON value from dec to out, scrubbing its strings; key is the name of the
// member it is the value of ("" in an array or at the top).
func (s *Scrubber) copyValue(dec *json.Decoder, out *bytes.Buffer, key string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			out.WriteByte('{')
			for first := true; dec.More(); first = false {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				name, _ := k.(string)
				if !first {
					out.WriteByte(',')
				}
				writeString(out, name)
				out.WriteByte(':')
				if err := s.copyValue(dec, out, name); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			out.WriteByte('}')
		case '[':
			// In an argv (["curl", "-H", "Authorization: Bearer", "T"], ["tool", "--token",
			// "T"]) the secret is the element after the one that names it.
			out.WriteByte('[')
			prev := ""
			for first := true; dec.More(); first = false {
				if !first {
					out.WriteByte(',')
				}
				name := ""
				if namesNext(prev) {
					name = "token" // scrubbed whole, as a member named so would be
				}
				start := out.Len()
				if err := s.copyValue(dec, out, name); err != nil {
					return err
				}
				prev = ""
				var str string
				if json.Unmarshal(out.Bytes()[start:], &str) == nil {
					prev = str
				}
			}
			if _, err := dec.Token(); err != nil {
				return err
			}
			out.WriteByte(']')
		}
	case string:
		if key != "" && SecretName(key) && len(t) >= minSecretLen {
			writeString(out, Redacted)
		} else {
			writeString(out, s.String(t))
		}
	case json.Number:
		out.WriteString(t.String())
	case bool:
		if t {
			out.WriteString("true")
		} else {
			out.WriteString("false")
		}
	case nil:
		out.WriteString("null")
	}
	return nil
}

// namesNext reports whether an argv element says the next one is a secret: "Bearer" (alone or
// ending "Authorization: Bearer"), or a flag with a secret name (--token, --api-key, -password).
func namesNext(arg string) bool {
	if arg == "" {
		return false
	}
	if f := strings.Fields(arg); len(f) > 0 && strings.EqualFold(f[len(f)-1], "bearer") {
		return true
	}
	return strings.HasPrefix(arg, "-") && !strings.ContainsAny(arg, "= ") && SecretName(arg)
}

func writeString(out *bytes.Buffer, v string) {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	out.Truncate(out.Len() - 1) // Encode's newline
}
