package attempt

import (
	"regexp"
	"strings"

	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// More of the tools' own shapes a failed verify's message reads (verifySummary): the line each
// tool puts its cause on, where the generic reading (evidence.DecisiveLine, the runners' tallies)
// picks the tool's summary, a marker or its last line instead.

// npm marks each line of its error ("npm error Missing script: …", "npm error", "npm error To
// see a list of scripts, run:"): a line that is the mark alone says nothing, and must never be
// taken for the error.
var bareMarkRe = lazyre.New(`(?m)^[ \t]*(?:npm (?:ERR!|error)|ERR!)[ \t]*$`)

// unmarked is the output without its bare marks.
func unmarked(text string) string {
	return bareMarkRe.ReplaceAllString(text, "")
}

// A tool's coded error says the cause on its own line: pnpm's " ERR_PNPM_UNSUPPORTED_ENGINE
// Unsupported environment (…)", NuGet's "…/NuGet.targets(156,5): error NU1301: Unable to load
// the service index for source …" and the reason it indents below it ("error NU1301:   Response
// status code does not indicate success: 401 (Unauthorized)."), the SDK's "error NETSDK1045: …".
// pnpm's code for a script that failed (ERR_PNPM_RECURSIVE_RUN_FIRST_FAIL) is no cause: the
// script's output above says it.
var (
	pnpmCodeRe     = lazyre.New(`^\s*(ERR_PNPM_\w+)\s+(.*\S)\s*$`)
	pnpmWrapperRe  = lazyre.New(`^ERR_PNPM_RECURSIVE_\w*FAIL$`)
	pnpmVersionRe  = lazyre.New(`^\s*Your (\S+) version is incompatible`)
	pnpmExpectedRe = lazyre.New(`^\s*Expected version: (.+\S)`)
	pnpmGotRe      = lazyre.New(`^\s*Got: (.+\S)`)
	nugetCodeRe    = lazyre.New(`(?:^|[\s:])error ((?:NU|NETSDK)\d+): ( *)(.*?)(?: \[[^\]]*\])?\s*$`)
)

// codedError is the cause a tool's coded error line gives, with the details below it; "" when
// the output holds none.
func codedError(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		m := pnpmCodeRe.FindStringSubmatch(lines[i])
		if m == nil || pnpmWrapperRe.MatchString(m[1]) {
			continue
		}
		l := m[1] + " " + m[2]
		what, expected, got := "", "", ""
		for _, b := range lines[i+1 : min(len(lines), i+12)] {
			if v := pnpmVersionRe.FindStringSubmatch(b); v != nil {
				what = v[1] + " "
			} else if v := pnpmExpectedRe.FindStringSubmatch(b); v != nil {
				expected = v[1]
			} else if v := pnpmGotRe.FindStringSubmatch(b); v != nil {
				got = v[1]
			}
		}
		if expected != "" && got != "" {
			l += ": " + what + "expected " + expected + ", got " + got
		}
		return l
	}
	for i, x := range lines {
		m := nugetCodeRe.FindStringSubmatch(x)
		if m == nil || m[2] != "" {
			continue
		}
		head, reason := "error "+m[1]+": "+m[3], ""
		for _, b := range lines[i+1 : min(len(lines), i+4)] {
			if c := nugetCodeRe.FindStringSubmatch(b); c != nil && c[1] == m[1] && c[2] != "" {
				reason = c[3]
				break
			}
		}
		if reason == "" {
			return truncateRunes(head, 200)
		}
		// The reason (a status, a refused certificate) must survive the clip; the source's
		// address may not.
		return truncateRunes(head, max(200-len(reason)-1, 40)) + " " + reason
	}
	return ""
}

// ESLint's stylish output names each problem under its file ("/app/src/index.js", "  12:7
// error  'x' is assigned a value but never used  no-unused-vars") and ends on a tally ("✖ 1
// problem (1 error, 0 warnings)"): the tally says how many, the first error what and where.
var (
	eslintTallyRe = lazyre.New(`✖ \d+ problems? \(\d+ errors?`)
	eslintErrorRe = lazyre.New(`^\s+(\d+:\d+)\s+error\s+(.+?)(?:\s{2,}(\S+))?\s*$`)
)

// eslintFirst is ESLint's first error with its file, line and rule in place of its tally c; c
// itself when c is no tally or no error is listed above it.
func eslintFirst(lines []string, c string) string {
	if !eslintTallyRe.MatchString(c) {
		return c
	}
	file := ""
	for _, l := range lines {
		switch {
		case strings.TrimSpace(l) == "":
		case l[0] != ' ' && l[0] != '\t':
			file = strings.TrimSpace(l)
		case file != "":
			if m := eslintErrorRe.FindStringSubmatch(l); m != nil {
				s := file + ":" + m[1] + ": " + m[2]
				if m[3] != "" {
					s += " (" + m[3] + ")"
				}
				return truncateRunes(s, 200)
			}
		}
	}
	return c
}

// go test says a package did not build ("FAIL\texample.com/x [build failed]") below the
// compiler's words, which it heads with the package they are about ("# runtime/cgo", "cgo: C
// compiler "gcc" not found: …"); the compiler's line says why.
var (
	goBuildFailedRe = lazyre.New(`^FAIL\s+\S+ \[(?:build|setup) failed\]$`)
	goPkgHeadRe     = lazyre.New(`^# \S+(?: \[\S+\])?$`)
)

// goBuildCause is the first line under a "# package" heading in place of go test's "[build
// failed]" line b; b itself when b is not that line or no heading is above it.
func goBuildCause(lines []string, b string) string {
	if !goBuildFailedRe.MatchString(b) {
		return b
	}
	for i, l := range lines {
		if strings.TrimSpace(l) == b {
			break
		}
		if !goPkgHeadRe.MatchString(l) {
			continue
		}
		for _, c := range lines[i+1 : min(len(lines), i+4)] {
			if c = strings.TrimSpace(c); c != "" && !goPkgHeadRe.MatchString(c) {
				return truncateRunes(c, 200)
			}
		}
	}
	return b
}

// A JUnit runner reports a test class that could not start (Gradle's "OrderRepositoryTest >
// initializationError FAILED", "    java.lang.IllegalStateException at
// DockerClientProviderStrategy.java:277") by the exception's class and a frame: its message,
// printed with the stack above the report ("java.lang.IllegalStateException: Could not find a
// valid Docker environment. Please see logs and check configuration"), is what says why.
var bareClassRe = lazyre.New(`^(?:[\w$]+\.)*([\w$]*(?:Exception|Error))$`)

// explainExceptions gives each failed test whose message is a bare exception class the line
// that throws it with its message, when the output holds one.
func explainExceptions(lines []string, tests []evidence.Test) {
	for i, t := range tests {
		m := bareClassRe.FindStringSubmatch(t.Message)
		if m == nil {
			continue
		}
		thrown := regexp.MustCompile(`(?:^|[\s:])((?:[\w$]+\.)*` + regexp.QuoteMeta(m[1]) + `: \S.*)$`)
		for _, l := range lines {
			if e := thrown.FindStringSubmatch(strings.TrimSpace(l)); e != nil {
				tests[i].Message = truncateRunes(e[1], 200)
				break
			}
		}
	}
}

// Python's input() at the end of its input raises "EOFError: EOF when reading a line" after the
// prompt it printed (Django's test runner: "Type 'yes' if you would like to try deleting the
// test database 'test_x', or 'no' to cancel: " and the traceback on the same line): the
// question, and the error it asks about above it, say why; the EOFError only that no one
// answered.
var (
	eofErrorRe   = lazyre.New(`^EOFError\b`)
	tracebackTag = "Traceback (most recent call last):"
	questionRe   = lazyre.New(`[:?\])>]\s*$`)
	aboutRe      = lazyre.New(`(?i)\berror\b|\bfail|\balready exists\b|\bcannot\b|\bnot found\b`)
)

// askedFirst is the EOFError l with the question it met (and the error the question is about);
// l itself when l is no EOFError or no question is above its traceback.
func askedFirst(lines []string, l string) string {
	at := lastAt(lines, l)
	if !eofErrorRe.MatchString(l) || at < 0 {
		return l
	}
	for i := at - 1; i >= 0 && i >= at-60; i-- {
		tb := strings.Index(lines[i], tracebackTag)
		if tb < 0 {
			continue
		}
		q, j := strings.TrimSpace(lines[i][:tb]), i
		if q == "" {
			if j = lastSaidAt(lines, i-1); j < 0 {
				return l
			}
			q = strings.TrimSpace(lines[j])
		}
		if !questionRe.MatchString(q) {
			return l
		}
		s := q + " " + l
		if k := lastSaidAt(lines, j-1); k >= 0 && aboutRe.MatchString(lines[k]) {
			s = strings.TrimSpace(lines[k]) + "; " + s
		}
		return s
	}
	return l
}

// lastSaidAt is the index of the last line at or before i that is not blank once trimmed; -1
// when none is.
func lastSaidAt(lines []string, i int) int {
	for i >= 0 && strings.TrimSpace(lines[i]) == "" {
		i--
	}
	return i
}

// Rust programs that report with miette (uv) draw an error's chain as a tree: "  × Failed to
// download `requests==2.32.3`", "  ├─▶ …", "  ╰─▶ invalid peer certificate: UnknownIssuer",
// then "  help: Consider enabling use of system TLS certificates with the `--native-tls`
// command-line flag". The head says what failed, the last branch why, and a help that names a
// flag what to change; the glyphs say nothing.
var (
	treeHeadRe   = lazyre.New(`(?:^|\s)× (.*\S)`)
	treeBranchRe = lazyre.New(`^\s*(?:├─▶|╰─▶|│)\s*(.*)$`)
	treeHelpRe   = lazyre.New(`^\s*help: (.*--[\w-].*\S)`)
)

// errorTree is the tree l is a line of, read as "head: last cause (help: …)"; l itself when it
// is in none.
func errorTree(lines []string, l string) string {
	at := lastAt(lines, l)
	if at < 0 || (treeBranchRe.FindStringSubmatch(lines[at]) == nil && treeHeadRe.FindStringSubmatch(lines[at]) == nil) {
		return l
	}
	head := at
	for head >= 0 && treeHeadRe.FindStringSubmatch(lines[head]) == nil {
		if treeBranchRe.FindStringSubmatch(lines[head]) == nil {
			return l
		}
		head--
	}
	if head < 0 {
		return l
	}
	s := treeHeadRe.FindStringSubmatch(lines[head])[1]
	cause, end := "", head+1
	for ; end < len(lines); end++ {
		m := treeBranchRe.FindStringSubmatch(lines[end])
		if m == nil {
			break
		}
		if m[1] != "" {
			cause = m[1]
		}
	}
	if cause != "" {
		s += ": " + cause
	}
	if end < len(lines) {
		if m := treeHelpRe.FindStringSubmatch(lines[end]); m != nil {
			s += " (help: " + m[1] + ")"
		}
	}
	return s
}
