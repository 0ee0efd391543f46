package agentcli

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// No progress (SPEC §4 Policy): each failure in which the agent did its work and failed gets a
// fingerprint — class, code, the normalised decisive lines of its output, the post tree — and
// max_identical_failures identical fingerprints in a row hold the task blocked (reason
// no-progress) instead of paying for the same failure again.

// fingerprinted are the classes the rule applies to. Transient classes (transport, timeouts,
// quota, runner_died) are governed by retries and the breaker instead.
var fingerprinted = map[taskfile.Class]bool{
	taskfile.ClassAgentExit: true, taskfile.ClassPayloadDeclared: true, taskfile.ClassSchemaInvalid: true, taskfile.ClassQualityRejection: true,
}

// Fingerprinted reports whether failures of class c get a fingerprint.
func Fingerprinted(c taskfile.Class) bool { return fingerprinted[c] }

// Fingerprint identifies a failure: the same class and code, the same decisive lines once the
// parts that change from run to run are masked, and the same post tree. output is the output the
// failure was read from (the verify output for quality_rejection). "" for a class the rule does
// not apply to.
func Fingerprint(f *Failure, output []byte, postTree string) string {
	if f == nil || !fingerprinted[f.Class] {
		return ""
	}
	h := sha256.New()
	for _, part := range []string{string(f.Class), f.Code, strings.Join(DecisiveLines(output), "\n"), postTree} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// decisiveWord marks the lines that say why something failed.
var decisiveWord = lazyre.New(`(?i)\b(error|err|fail(ed|ure|ing)?|panic|fatal|exception|traceback|assert(ion)?|expected|undefined|cannot|denied|not found|invalid)\b`)

// DecisiveLines returns the normalised lines of output that decide a failure: the lines that
// name an error (the last 8 of them), else the last 5 non-empty lines.
func DecisiveLines(output []byte) []string {
	var all, decisive []string
	for _, line := range strings.Split(string(output), "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" {
			continue
		}
		all = append(all, line)
		if decisiveWord.MatchString(line) {
			decisive = append(decisive, line)
		}
	}
	pick := decisive
	if len(pick) == 0 {
		pick = all
		if len(pick) > 5 {
			pick = pick[len(pick)-5:]
		}
	} else if len(pick) > 8 {
		pick = pick[len(pick)-8:]
	}
	out := make([]string, len(pick))
	for i, l := range pick {
		out[i] = NormaliseLine(l)
	}
	return out
}

// The masks, applied in this order: each replaces what changes between two runs of the same
// failure with a placeholder, so the lines compare equal.
var masks = []struct {
	re   *lazyre.Regexp
	with string
	keep func(string) bool // a match left as it is
}{
	// temporary directories: /tmp/go-build123/…, /var/folders/xy/…/T/…, /dev/shm/…, %TEMP%
	{re: lazyre.New(`(/private)?/var/folders/[^\s:'"]+|(/private)?/tmp/[^\s:'"]+|/dev/shm/[^\s:'"]+|[A-Za-z]:\\[^\s'"]*\\Temp\\[^\s:'"]+`), with: "<tmp>"},
	// timestamps: 2026-01-02T03:04:05.678Z, 2026-01-02 03:04:05, 03:04:05.123
	{re: lazyre.New(`\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?|\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b`), with: "<time>"},
	// uuids, then hex ids: 0x…, or 7+ hex digits with a digit among them (commit and object
	// ids, addresses; not a word like "defaced")
	{re: lazyre.New(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`), with: "<id>"},
	{re: lazyre.New(`\b0x[0-9a-fA-F]+\b|\b[0-9a-fA-F]{7,}\b`), with: "<hex>",
		keep: func(s string) bool { return !strings.HasPrefix(s, "0x") && !strings.ContainsAny(s, "0123456789") }},
	// numbers: durations, counts, pids, ports, line numbers
	{re: lazyre.New(`\d+(\.\d+)?`), with: "<n>"},
}

// NormaliseLine masks a line's temporary paths, timestamps, hex ids and numbers.
func NormaliseLine(line string) string {
	for _, m := range masks {
		line = m.re.ReplaceAllStringFunc(line, func(s string) string {
			if m.keep != nil && m.keep(s) {
				return s
			}
			return m.with
		})
	}
	return line
}
