package evidence

import (
	"fmt"
	"path"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// Some tools put their cause on a line of their own shape, where the generic reading
// (DecisiveLine's tiers) picks a marker, a summary or a glyph instead: each reading here finds
// the line the tool means.

// npm marks each line of its error ("npm error Missing script: …", "npm error", "npm error To
// see a list of scripts, run:"): a line that is the mark alone says nothing.
var bareMarkRe = lazyre.New(`^(?:npm (?:ERR!|error)|ERR!)$`)

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
		return clip(l)
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
			return clip(head)
		}
		return withCause(head, " ", reason)
	}
	return ""
}

// withCause is head followed by its cause (a status, a signal, a refused certificate), each
// clipped on its own: a line cut to make room would lose the cause or the head's words.
func withCause(head, sep, cause string) string {
	return clip(head) + sep + clipTo(cause, maxLine-40)
}

// clipTo is s cut to n bytes at a character's start, "…" marking the cut.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
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

// askedFirst is the EOFError l (line at) with the question it met and the error the question is
// about; l itself when l is no EOFError or no question is above its traceback.
func askedFirst(lines []string, at int, l string) string {
	if !eofErrorRe.MatchString(l) {
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

// errorTree is the tree the line at is in, read as "head: last cause (help: …)"; "" when it is
// in none.
func errorTree(lines []string, at int) string {
	head := at
	for head >= 0 && !treeHeadRe.MatchString(lines[head]) {
		if !treeBranchRe.MatchString(lines[head]) {
			return ""
		}
		head--
	}
	if head < 0 {
		return ""
	}
	s := treeHeadRe.FindStringSubmatch(lines[head])[1]
	cause, end, branchAt := "", head+1, 0
	for ; end < len(lines); end++ {
		m := treeBranchRe.FindStringSubmatch(lines[end])
		if m == nil {
			// A branch's text wrapped to the width: the lines below it, indented past its
			// glyph ("  ╰─▶ Because pandas==2.2.2 depends on numpy>=1.26.0 and your project",
			// "      depends on numpy>=1.23,<1.25, we can conclude that …").
			if cause != "" && len(leading(lines[end])) > branchAt && !treeHelpRe.MatchString(lines[end]) {
				cause += " " + strings.TrimSpace(lines[end])
				continue
			}
			break
		}
		if m[1] != "" {
			cause, branchAt = m[1], len(leading(lines[end]))
		}
	}
	if cause != "" {
		s = strings.TrimSuffix(s, ":") + ": " + cause
	}
	if end < len(lines) {
		if m := treeHelpRe.FindStringSubmatch(lines[end]); m != nil {
			s += " (help: " + m[1] + ")"
		}
	}
	return s
}

// causedBy adds to the error line l (line at) the cause a chain prints below it (cargo's and
// anyhow's "error: test failed, to rerun pass `--lib`", "Caused by:", "  process didn't exit
// successfully: `…` (signal: 9, SIGKILL: kill)"; uv's "error: Request failed after 3 retries",
// "  Caused by: client error (Connect)", "  Caused by: invalid peer certificate: UnknownIssuer"):
// the innermost cause, the chain's last line, is the decisive one.
func causedBy(lines []string, at int, l string) string {
	cause := ""
	for _, c := range lines[at+1:] {
		after, ok := strings.CutPrefix(strings.TrimSpace(c), "Caused by: ")
		if !ok {
			break
		}
		cause = after
	}
	for i := at + 1; cause == "" && i < len(lines) && i <= at+3; i++ {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		if strings.TrimSpace(lines[i]) != "Caused by:" {
			break // another error's chain (cargo's "error: test failed" under a runner's own)
		}
		for j, c := range lines[i+1:] {
			if c == "" || (c[0] != ' ' && c[0] != '\t') {
				break
			}
			if t := strings.TrimSpace(c); t == "--- stdout" || t == "--- stderr" {
				if s := buildScriptSaid(lines[i+1+j:]); s != "" {
					cause = s
				}
				break
			}
			cause = strings.TrimSpace(causeNumberRe.ReplaceAllString(strings.TrimSpace(c), ""))
		}
		break
	}
	if cause == "" {
		return l
	}
	return withCause(l, ": ", cause)
}

var causeNumberRe = lazyre.New(`^\d+: `)

// cargo prints a build script's output under the process that failed ("  --- stdout", its
// "cargo:rerun-if-env-changed=…" directives and "cargo:warning=…", then "  --- stderr", its
// message): the directives are cargo's instructions, the script's own words say why it failed
// (openssl-sys: "Could not find directory of OpenSSL installation, …").
var cargoDirectiveRe = lazyre.New(`^cargo::?[\w-]+=`)

// buildScriptSaid is why a build script failed, read from its output (lines, from its first
// "--- stdout" or "--- stderr" on, indented under cargo's "Caused by:"): its stderr's decisive
// line, else its last cargo:warning; "" when it says neither.
func buildScriptSaid(lines []string) string {
	var stdout, stderr []string
	to := &stdout
	for _, l := range lines {
		if l != "" && !indented(l) {
			break
		}
		switch t := strings.TrimSpace(l); t {
		case "--- stdout":
			to = &stdout
		case "--- stderr":
			to = &stderr
		default:
			*to = append(*to, strings.TrimPrefix(strings.TrimPrefix(l, "  "), "\t"))
		}
	}
	if s := DecisiveLine(strings.Join(stderr, "\n")); s != "" {
		return s
	}
	warning := ""
	var said []string
	for _, l := range stdout {
		if w, ok := strings.CutPrefix(strings.TrimSpace(l), "cargo:warning="); ok {
			warning = w
		} else if !cargoDirectiveRe.MatchString(strings.TrimSpace(l)) {
			said = append(said, l)
		}
	}
	if warning != "" {
		return clip(warning)
	}
	return DecisiveLine(strings.Join(said, "\n"))
}

// Some tools print their errors in a shape of their own, the cause on a line no error word
// marks, or among lines of advice that do:
//   - Terraform draws each diagnostic in a box ("╷", "│ Error: Error acquiring the state
//     lock", "│ ", "│ Error message: ConditionalCheckFailedException: …", "╵"): its first line
//     is the summary, the rest detail and advice;
//   - Composer lists the problems that stop an install ("  Problem 1", "    - Root
//     composer.json requires PHP extension ext-intl * but it is missing from your system. …"),
//     then how to enable an extension or ignore the requirement;
//   - Credo lists each issue with its place under it ("┃ [R] ↗ Modules should have a
//     @moduledoc tag.", "┃       lib/hooky/backoff.ex:1:11 #(Hooky.Backoff)") above a footer
//     that is the same on every run ("Showing priority issues: ↑ ↗ → …").
var (
	tfBoxOpenRe    = lazyre.New(`^\s*╷\s*$`)
	tfBoxErrorRe   = lazyre.New(`^\s*│ (Error: .*\S)`)
	composerProbRe = lazyre.New(`^\s*Problem \d+$`)
	composerItemRe = lazyre.New(`^\s*- (.*\S)`)
	credoIssueRe   = lazyre.New(`^┃ \[[A-Z]\] \S+ (.*\S)`)
	credoIssueAtRe = lazyre.New(`^┃\s+(\S+?:\d+(?::\d+)?)\b`)
)

// ownShape is the cause one of those tools gives: Terraform's last error summary, Composer's
// first problem, Credo's first issue with its place, CMake's first error; "" when the output
// holds none.
func ownShape(lines []string) string {
	for i := len(lines) - 1; i > 0; i-- {
		if m := tfBoxErrorRe.FindStringSubmatch(lines[i]); m != nil && tfBoxOpenRe.MatchString(lines[i-1]) {
			return clip(m[1])
		}
	}
	for i := 0; i+1 < len(lines); i++ {
		if l, ok := cmakeError(lines, i); ok {
			return l
		}
		if l, ok := npmAudit(lines, i); ok {
			return l
		}
		if composerProbRe.MatchString(lines[i]) {
			if m := composerItemRe.FindStringSubmatch(lines[i+1]); m != nil {
				return clip(m[1])
			}
		}
		if l, ok := credoIssue(lines, i); ok {
			return l
		}
	}
	return ""
}

// credoIssue is Credo's issue at lines[i] with its place ("lib/hooky/backoff.ex:1:11: Modules
// should have a @moduledoc tag."); false when lines[i] is none.
func credoIssue(lines []string, i int) (string, bool) {
	m := credoIssueRe.FindStringSubmatch(lines[i])
	if m == nil {
		return "", false
	}
	if i+1 < len(lines) {
		if at := credoIssueAtRe.FindStringSubmatch(lines[i+1]); at != nil {
			return clip(at[1] + ": " + m[1]), true
		}
	}
	return clip(m[1]), true
}

// npm audit's report: "# npm audit report", then per advisory the package and range, its
// severity, its title with a link, whether a fix is available; then the tally ("4 moderate
// severity vulnerabilities").
var (
	npmAuditTallyRe = lazyre.New(`^\d+ (?:low|moderate|high|critical) severity vulnerabilit(?:y|ies)$|^\d+ vulnerabilit(?:y|ies) \(.*\)$`)
	npmAuditLinkRe  = lazyre.New(`\s+-\s+https?://\S+$`)
)

// npmAudit is the tally and the first advisory of npm audit's report at lines[i]; false when
// lines[i] opens none.
func npmAudit(lines []string, i int) (string, bool) {
	if strings.TrimSpace(lines[i]) != "# npm audit report" {
		return "", false
	}
	var head []string // package and range, severity, title, fix
	tally := ""
	for _, l := range lines[i+1:] {
		t := strings.TrimSpace(l)
		if npmAuditTallyRe.MatchString(t) {
			tally = t
			break
		}
		if t == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(t, "node_modules/") || len(head) == 4 {
			continue
		}
		head = append(head, npmAuditLinkRe.ReplaceAllString(t, ""))
	}
	if tally == "" {
		return "", false
	}
	return clip(strings.TrimSpace(tally + ": " + strings.Join(head, "; "))), true
}

// CMake's error: "CMake Error at CMakeLists.txt:14 (project):", its message indented below over
// lines and blank lines ("  The CMAKE_C_COMPILER:", "    arm-none-eabi-gcc", "  is not a full
// path and was not found in the PATH."), then advice in the same indent.
var cmakeErrorRe = lazyre.New(`^CMake Error at (\S+?):(\d+) \([\w-]+\):$`)

// cmakeError is CMake's error at lines[i] with its place and its message's first sentence;
// false when lines[i] is none.
func cmakeError(lines []string, i int) (string, bool) {
	m := cmakeErrorRe.FindStringSubmatch(strings.TrimSpace(lines[i]))
	if m == nil {
		return "", false
	}
	var msg []string
	for _, l := range lines[i+1:] {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if l[0] != ' ' && l[0] != '\t' {
			break
		}
		t := strings.TrimSpace(l)
		msg = append(msg, t)
		joined := strings.Join(msg, " ")
		if strings.HasSuffix(t, ".") || strings.HasSuffix(t, ":") && len(joined) >= 40 {
			break
		}
	}
	if len(msg) == 0 {
		return "", false
	}
	return clip(fmt.Sprintf("CMake Error at %s:%s: %s", path.Base(m[1]), m[2], strings.Join(msg, " "))), true
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

// retriedOn adds to the error line l (line at) the cause of the connection retries just above
// it, when l does not say it already. Retries further up (a download that recovered) are not
// its cause.
func retriedOn(lines []string, at int, l string) string {
	cause := ""
	for _, x := range lines[max(0, at-retryLines):at] {
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
	return withCause(l, " (last retry: ", clipTo(cause, 130)+")")
}
