package attempt

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// What a failed verify's message quotes. The test runners' readers (autopsy/evidence) find the
// failing tests and the line that names the error; the record needs a few things more of a
// runner's text, each read here from the same output: tests that errored rather than failed,
// the line a heading introduces, the cause below a chained error, the error a runtime died of,
// the connection failure a client retried on.

// verifySummary says what a failed verify's output says: its failing tests (the first with its
// file, line and message) when a test runner printed them (go test, pytest, jest, vitest, cargo
// test…), a build that failed, else the line that names the error (not the help or the "Error
// 2" a tool prints after it), else its last line.
func verifySummary(out []byte) string {
	text := string(out)
	lines := evidence.Lines(text)
	r := evidence.ParseTests(text)
	quoteExceptions(lines, r.Failed)
	explainExceptions(lines, r.Failed)
	if len(r.Build) > 0 {
		r.Build[0] = goBuildCause(lines, introduced(lines, r.Build[0]))
	}
	if len(r.Checks) > 0 {
		r.Checks[0] = eslintFirst(lines, r.Checks[0])
	}
	if s := withErrors(lines, r); s != "" {
		return ": " + s
	}
	if s := r.Summary(); s != "" {
		return ": " + s
	}
	if l := codedError(lines); l != "" {
		return ": " + l
	}
	if l := evidence.DecisiveLine(unmarked(text)); l != "" {
		if d := agentcli.DiedOf(out); d != "" {
			l = d
		}
		return ": " + askedFirst(lines, errorTree(lines, retriedOn(lines, causedBy(lines, l))))
	}
	return agentcli.LastLineSuffix(out)
}

// pytest reports a test whose fixture raised as an error, not a failure ("ERROR at setup of
// test_x", "=== 3 errors in 0.12s ==="): the test never ran, so the fault is in what it needs (a
// database, a service), not in what it checks.
var (
	pyErroredRe = lazyre.New(`^ERROR (\S+::\S+)(?: - |$)|^(\S+::\S+) ERROR\b`)
	pyFailedRe  = lazyre.New(`^FAILED (\S+::\S+)(?: - |$)|^(\S+::\S+) FAILED\b`)
	pyPhaseRe   = lazyre.New(`^_{3,} ERROR at (setup|teardown) of \S+ _{3,}$`)
)

// withErrors is the summary of a pytest run some of whose tests errored, named as errors ("1
// failed: test_parse (…); 2 errors at setup: test_get, test_put (…ConnectionError: …)"); ""
// when none did.
func withErrors(lines []string, r evidence.Tests) string {
	errored, failed := map[string]bool{}, map[string]bool{}
	phase := ""
	for _, l := range lines {
		if m := pyErroredRe.FindStringSubmatch(l); m != nil {
			errored[m[1]+m[2]] = true
		}
		if m := pyFailedRe.FindStringSubmatch(l); m != nil {
			failed[m[1]+m[2]] = true
		}
		if m := pyPhaseRe.FindStringSubmatch(l); m != nil {
			if phase != "" && phase != m[1] {
				m[1] = "setup or teardown"
			}
			phase = m[1]
		}
	}
	var errs, fails []evidence.Test
	for _, t := range r.Failed {
		if t.Runner == "pytest" && errored[t.Name] && !failed[t.Name] {
			errs = append(errs, t)
		} else {
			fails = append(fails, t)
		}
	}
	if len(errs) == 0 {
		return ""
	}
	var parts []string
	if len(fails) > 0 || len(r.Suites) > 0 {
		r.Failed = fails
		parts = append(parts, r.Summary())
	}
	what := fmt.Sprintf("%d errors", len(errs))
	if len(errs) == 1 {
		what = "1 error"
	}
	if phase != "" {
		what += " at " + phase
	}
	listed := evidence.Tests{Failed: errs}.Summary() // "N failed: a, b (why)"
	parts = append(parts, what+strings.TrimPrefix(listed, fmt.Sprintf("%d failed", len(errs))))
	return strings.Join(parts, "; ")
}

// unittest prints the exception a test raised, then the diff its assertion drew ("- Hello,
// bob!", "?        ^", "+ Hello, Bob!"): the exception's line says what failed, the diff's last
// line never does.
var (
	unittestHeadRe = lazyre.New(`^(?:FAIL|ERROR): `)
	exceptionRe    = lazyre.New(`^(?:[\w]+\.)*\w*(?:Error|Exception|Failure|Exit|Interrupt)\b(?::|$)`)
)

// quoteExceptions gives each unittest failure the exception line of its last traceback.
func quoteExceptions(lines []string, tests []evidence.Test) {
	for i, t := range tests {
		if t.Runner != "unittest" {
			continue
		}
		if l := raised(lines, fmt.Sprintf("%s (%s)", t.Name, t.Package)); l != "" {
			tests[i].Message = truncateRunes(l, 200)
		}
	}
}

// raised is the exception line that follows the last traceback in the block of the test headed
// "FAIL: name (package)"; "" when there is none.
func raised(lines []string, name string) string {
	for i, l := range lines {
		if !unittestHeadRe.MatchString(l) || !strings.Contains(l, ": "+name) { // "(i=1)" may follow a subTest
			continue
		}
		exc := ""
		for _, b := range lines[i+1 : min(len(lines), i+80)] {
			switch {
			case unittestHeadRe.MatchString(b), strings.HasPrefix(b, "Ran "):
				return exc
			case strings.HasPrefix(b, "Traceback "):
				exc = ""
			case exc == "" && exceptionRe.MatchString(b):
				exc = strings.TrimSpace(b)
			}
		}
		return exc
	}
	return ""
}

// A heading that introduces the lines below it ("[ERROR] COMPILATION ERROR :" and, after a rule,
// "[ERROR] /src/Foo.java:[12,5] cannot find symbol") says less than the first of them.
var levelRe = lazyre.New(`^\[[A-Z]+\]\s*`)

// introduced is the line a heading introduces (at the heading's log level), l itself when it is
// no heading or introduces nothing.
func introduced(lines []string, l string) string {
	if !strings.HasSuffix(l, ":") {
		return l
	}
	for i, h := range lines {
		if strings.TrimSpace(h) != l {
			continue
		}
		level := levelRe.FindString(l)
		for _, b := range lines[i+1 : min(len(lines), i+4)] {
			b = strings.TrimSpace(b)
			if !says(levelRe.ReplaceAllString(b, "")) {
				continue // a rule
			}
			if levelRe.FindString(b) == level { // not Maven's "[INFO] 1 error" under an [ERROR]
				return truncateRunes(b, 200)
			}
			break
		}
		break
	}
	return l
}

// says: the text holds a letter or a digit (a rule of dashes says nothing).
func says(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) })
}

// causedBy adds to an error line the cause a chain prints below it (cargo's and anyhow's "error:
// test failed, to rerun pass `--lib`", "Caused by:", "  process didn't exit successfully: `…`
// (signal: 9, SIGKILL: kill)"; uv's "error: Request failed after 3 retries", "  Caused by:
// client error (Connect)", "  Caused by: invalid peer certificate: UnknownIssuer"): the
// innermost cause, the chain's last line, is the decisive one.
func causedBy(lines []string, l string) string {
	at := lastAt(lines, l)
	if at < 0 {
		return l
	}
	cause := ""
	for _, c := range lines[at+1:] {
		c = strings.TrimSpace(c)
		after, ok := strings.CutPrefix(c, "Caused by: ")
		if !ok {
			break
		}
		cause = after
	}
	if cause != "" {
		return l + ": " + cause
	}
	for i := at + 1; i < len(lines) && i <= at+3; i++ {
		if strings.TrimSpace(lines[i]) != "Caused by:" {
			continue
		}
		for _, c := range lines[i+1:] {
			if c == "" || (c[0] != ' ' && c[0] != '\t') {
				break
			}
			cause = strings.TrimSpace(causeNumberRe.ReplaceAllString(strings.TrimSpace(c), ""))
		}
		break
	}
	if cause == "" {
		return l
	}
	return l + ": " + cause
}

var causeNumberRe = lazyre.New(`^\d+: `)

// lastAt is the index of the last line that is l once trimmed; -1 when none is.
func lastAt(lines []string, l string) int {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) == l {
			return i
		}
	}
	return -1
}

// retryLines is how far above the error its client's retries are read: pip prints "Could not
// fetch URL …" and "Could not find a version …" between them.
const retryLines = 12

// A Python HTTP client retries a broken connection and says why each time (urllib3, under pip:
// "WARNING: Retrying (Retry(total=0, …)) after connection broken by
// 'SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify
// failed: unable to get local issuer certificate (_ssl.c:1006)'))': /simple/requests/"); what it
// prints when it gives up ("ERROR: No matching distribution found for requests") no longer does.
var (
	retryBrokenRe = lazyre.New(`Retrying \(.*\) after connection broken by '(.*)': \S*$`)
	quotedRe      = lazyre.New(`'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"`)
	objectReprRe  = lazyre.New(`^<[^>]*>: `)
)

// retriedOn adds to the error line l the cause of the connection retries just above it, when l
// does not say it already. Retries further up (a download that recovered) are not its cause.
func retriedOn(lines []string, l string) string {
	at := lastAt(lines, l)
	cause := ""
	for _, x := range lines[max(0, at-retryLines):max(0, at)] {
		if m := retryBrokenRe.FindStringSubmatch(x); m != nil {
			cause = m[1]
		}
	}
	if cause == "" {
		return l
	}
	// The innermost quoted message of the exception's repr, without the object it names.
	if ms := quotedRe.FindAllStringSubmatch(cause, -1); ms != nil {
		last := ms[len(ms)-1]
		cause = last[1] + last[2]
	}
	cause = objectReprRe.ReplaceAllString(cause, "")
	if cause == "" || strings.Contains(l, cause) {
		return l
	}
	return l + " (last retry: " + truncateRunes(cause, 160) + ")"
}
