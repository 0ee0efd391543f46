package evidence

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// A runner's tally or heading says that the code was rejected; the line it introduces or sums
// up says why. causes puts that line in place of the tally: the first of the build's lines, the
// first of the checks', the message of a test that is a bare exception class.
func causes(lines []string, r *Tests) {
	if len(r.Build) > 0 {
		r.Build[0] = goBuildCause(lines, introduced(lines, r.Build[0]))
	}
	if len(r.Checks) > 0 {
		r.Checks[0] = credoPlaced(lines, eslintFirst(lines, r.Checks[0]))
	}
	explainExceptions(lines, r.Failed)
}

// A heading that introduces the lines below it ("[ERROR] COMPILATION ERROR :" and, after a rule,
// "[ERROR] /src/Foo.java:[12,5] cannot find symbol") says less than the first of them.
var levelRe = lazyre.New(`^\[[A-Z]+\]\s*`)

// A compiler's error at a place in the code is no heading, though it may end on one: go's
// "x.go:6:2: missing go.sum entry for module providing package … (imported by …); to add:" and
// the command it suggests below ("\tgo get …"). The error is the line without its pointer to
// the advice.
var (
	placedRe     = lazyre.New(`^\S+:\d+(?::\d+)?: `)
	adviceTailRe = lazyre.New(`; to [\w ]+:$`)
)

// introduced is the line a heading introduces (at the heading's log level), l itself when it is
// no heading or introduces nothing.
func introduced(lines []string, l string) string {
	if placedRe.MatchString(l) {
		return adviceTailRe.ReplaceAllString(l, "")
	}
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
				return clip(b)
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
				return clip(s)
			}
		}
	}
	return c
}

// credoPlaced is Credo's issue c with its place, read from the line below it; c itself when c
// is no Credo issue.
func credoPlaced(lines []string, c string) string {
	for i, l := range lines {
		if strings.TrimSpace(l) == c {
			if s, ok := credoIssue(lines, i); ok {
				return s
			}
			break
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
				return clip(c)
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
func explainExceptions(lines []string, tests []Test) {
	for i, t := range tests {
		m := bareClassRe.FindStringSubmatch(t.Message)
		if m == nil {
			continue
		}
		thrown := regexp.MustCompile(`(?:^|[\s:])((?:[\w$]+\.)*` + regexp.QuoteMeta(m[1]) + `: \S.*)$`)
		for _, l := range lines {
			if e := thrown.FindStringSubmatch(strings.TrimSpace(l)); e != nil {
				tests[i].Message = clip(e[1])
				break
			}
		}
	}
}

// A Java exception prints the chain of its causes below its stack ("Caused by: …", each with its
// own frames): the outer exception says what could not be done ("Failed to load
// ApplicationContext for […]"), the innermost cause why ("Could not find a valid Docker
// environment").
var (
	causedByRe    = lazyre.New(`^\s*Caused by: (.*\S)`)
	stackFrameRe  = lazyre.New(`^\s+(?:at |\.\.\. \d+ (?:more|common frames omitted))`)
	identityRefRe = lazyre.New(`\b[\w$]+@[0-9a-f]{6,}\b`)
)

// innermostCause is the last cause of the exception whose message is the first of lines, read
// down its stack; "" when it prints no cause.
func innermostCause(lines []string) string {
	cause := ""
	for _, l := range lines[1:] {
		if m := causedByRe.FindStringSubmatch(l); m != nil {
			cause = clip(m[1])
		} else if !stackFrameRe.MatchString(l) {
			break
		}
	}
	return cause
}

// Spring's test context fails once and then refuses to try again ("ApplicationContext failure
// threshold (1) exceeded: skipping repeated attempt to load context for
// [WebMergedContextConfiguration@1d3c5e7f …]"): the tests after the first say only that it
// failed before. The first failure, logged for the same object (the same identity hash), holds
// the cause.

// javaCause is the innermost cause of the exception at lines[at]; when it prints none and names
// an object, that of an exception elsewhere in the output that names the same object; "" when
// neither has a cause.
func javaCause(lines []string, at int) string {
	if c := innermostCause(lines[at:]); c != "" {
		return c
	}
	ref := identityRefRe.FindString(lines[at])
	if ref == "" {
		return ""
	}
	for j, l := range lines {
		if j != at && strings.Contains(l, ref) {
			if c := innermostCause(lines[j:]); c != "" {
				return c
			}
		}
	}
	return ""
}
