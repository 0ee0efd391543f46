// Package evidence reads what tools print — test runners, a command's exit, an agent CLI's
// output — into facts a person would quote: the failing tests with their file, line and message,
// how a process ended, what the agent last said and which of its tool calls were refused, the
// hosts a network error names, a prompt that waits for a terminal. Each reader takes text and
// never fails: text it does not know gives nothing. It must never decide what the facts mean;
// the autopsy and the terminal's summaries do that.
package evidence

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// Test is one failing test as its runner reported it.
type Test struct {
	Runner  string `json:"runner"`            // go, pytest, jest, vitest, cargo, surefire, gradle, exunit, ctest, meson…
	Name    string `json:"name"`              // as the runner names it
	Package string `json:"package,omitempty"` // go package, java class, test file; "" when not printed
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message,omitempty"` // the first line of the failure
}

// Key names the test the same way in every run of the same runner: package and name.
func (t Test) Key() string {
	if t.Package == "" {
		return t.Name
	}
	return t.Package + " " + t.Name
}

// Where is file:line, or the file, or "".
func (t Test) Where() string {
	if t.File != "" && t.Line > 0 {
		return fmt.Sprintf("%s:%d", t.File, t.Line)
	}
	return t.File
}

// Tests is what a verify command's test runners said.
type Tests struct {
	Failed []Test
	// Suites are the test files that failed to run as a whole (jest's "Test suite failed to run":
	// the file did not compile or threw while loading): none of their tests ran, so none of them
	// passed or failed. Named by the file; the message is the error.
	Suites []Test
	// Build holds the lines saying the code did not build (compile errors, "[build failed]").
	Build []string
	// Checks holds the lines saying a linter or formatter rejected the code (files a hook
	// reformatted, lint errors): the code builds, but it is not accepted.
	Checks []string
	// TimedOut is go test's own "panic: test timed out after …" line.
	TimedOut string
	// Passed and Total are the summary's counts when a runner printed one (-1: none).
	Passed, Total int
}

// Summary is one line for a terminal: "2 failed: TestA (a_test.go:12: got 1), TestB".
func (r Tests) Summary() string {
	switch {
	case len(r.Failed) == 0 && len(r.Suites) == 0 && len(r.Build) > 0:
		return "does not build: " + r.Build[0]
	case len(r.Failed) == 0 && len(r.Suites) == 0 && len(r.Checks) > 0:
		return "checks failed: " + r.Checks[0]
	case len(r.Failed) == 0 && len(r.Suites) == 0 && r.TimedOut != "":
		return r.TimedOut
	case len(r.Failed) == 0 && len(r.Suites) == 0:
		return ""
	}
	var out []string
	if len(r.Failed) > 0 {
		out = append(out, fmt.Sprintf("%d failed: %s", len(r.Failed), listTests(r.Failed)))
	}
	var collect, load []Test
	for _, t := range r.Suites {
		if t.Runner == "pytest" {
			collect = append(collect, t)
		} else {
			load = append(load, t)
		}
	}
	if n := len(collect); n > 0 {
		what := "its tests did not run"
		if r.Passed <= 0 && len(r.Failed) == 0 {
			what = "no test ran" // pytest stops at a collection error unless told not to
		}
		out = append(out, fmt.Sprintf("%s (%s): %s", plural(n, "collection error"), what, listTests(collect)))
	}
	if n := len(load); n > 0 {
		out = append(out, fmt.Sprintf("%s failed to run: %s", plural(n, "suite"), listTests(load)))
	}
	return strings.Join(out, "; ")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// listTests names up to three tests, each with its place and message; tests that failed the
// same way (suites that import the same broken module) share one.
func listTests(ts []Test) string {
	same := len(ts) > 1 && detail(ts[0]) != ""
	for _, t := range ts[1:] {
		same = same && detail(t) == detail(ts[0])
	}
	var parts []string
	for i, t := range ts {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(ts)-3))
			break
		}
		s := t.Name
		if d := detail(t); d != "" && !same {
			s += " (" + d + ")"
		}
		parts = append(parts, s)
	}
	if same {
		return strings.Join(parts, ", ") + " (" + detail(ts[0]) + ")"
	}
	return strings.Join(parts, ", ")
}

// detail is a test's place and message: "a_test.go:12: got 1".
func detail(t Test) string {
	w := t.Where()
	if w == t.Name {
		w = ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(w+": "+t.Message, ": "), ": ")
}

// Keys are the failing tests' and suites' keys, sorted, without duplicates.
func (r Tests) Keys() []string {
	var out []string
	for _, t := range append(r.Failed[:len(r.Failed):len(r.Failed)], r.Suites...) {
		out = append(out, t.Key())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ParseTests reads the failing tests out of a verify command's output, whichever runners
// printed it (a Makefile may run go test and jest in turn).
func ParseTests(out string) Tests {
	lines := unwrap(Lines(out))
	if goJSON(lines) {
		lines = goJSONText(lines)
	}
	r := Tests{Passed: -1, Total: -1}
	for _, p := range []func([]string, *Tests){parseGo, parsePytest, parseJest, parseVitest, parseCargo, parseSurefire, parseGradle,
		parseRSpec, parseUnittest, parseMocha, parsePHPUnit, parseDotnet, parsePlaywright, parseMinitest, parseCollision,
		parseExUnit, parseElixirBuild, parseCTest, parseMeson, parseGTest, parseAutomake, parseHspec, parseDeno, parseClojure, parseZig, parseJulia, parseTAP, parseDartTest, parseScanners,
		parseXCTest} {
		p(lines, &r)
	}
	for _, l := range lines {
		if elixirRaiseRe.MatchString(l) {
			continue // parseElixirBuild's
		}
		if buildErrorRe.MatchString(l) && !moduleFetchRe.MatchString(l) && !xctFailRe.MatchString(strings.TrimSpace(l)) && len(r.Build) < 20 {
			r.Build = append(r.Build, clip(strings.TrimSpace(l)))
		} else if checkRe.MatchString(l) && len(r.Checks) < 20 {
			r.Checks = append(r.Checks, clip(strings.TrimSpace(l)))
		}
	}
	causes(lines, &r)
	return r
}

// wrapperRe: what a tool that runs another puts before each of its lines: BuildKit's step and
// seconds ("#11 9.214 "), a CI log's timestamp, docker compose's "service-1  | ". The tool's
// own words follow; the readers match them from the start of the line.
var wrapperRe = lazyre.New(`^(?:#\d+ \d+\.\d+ |\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z |[\w.-]+-\d+\s+\| )`)

// concurrentlyRe: concurrently's report that one of its named commands ended ("[TEST] wait-on …
// exited with code 1"): its lines of that command carry "[TEST] " before the command's own.
var concurrentlyRe = lazyre.New(`^\[([\w-]+)\] .* exited with code \S+$`)

// unwrap takes the wrapping tool's prefix off each line that has one.
func unwrap(lines []string) []string {
	var out []string
	names := map[string]bool{}
	for _, l := range lines {
		if m := concurrentlyRe.FindStringSubmatch(l); m != nil {
			names["["+m[1]+"]"] = true
		}
	}
	for i, l := range lines {
		if m := wrapperRe.FindStringIndex(l); m != nil {
			if out == nil {
				out = slices.Clone(lines)
			}
			out[i] = l[m[1]:]
		} else if p, rest, ok := strings.Cut(l, " "); ok && names[p] {
			if out == nil {
				out = slices.Clone(lines)
			}
			out[i] = rest
		} else if names[l] {
			if out == nil {
				out = slices.Clone(lines)
			}
			out[i] = ""
		}
	}
	if out == nil {
		return lines
	}
	return out
}

var ansiRe = lazyre.New(`\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07`)

// Lines splits text into lines without colour escapes and carriage returns.
func Lines(text string) []string {
	if strings.IndexByte(text, 0x1b) >= 0 {
		text = ansiRe.ReplaceAllString(text, "")
	}
	return strings.Split(strings.ReplaceAll(text, "\r", ""), "\n")
}

const maxLine = 200

func clip(s string) string {
	s = strings.TrimRight(s, " \t")
	if len(s) <= maxLine {
		return s
	}
	cut := maxLine
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// buildErrorRe: the code did not build or parse (not a test that failed). Go's errors at an
// import whose module could not be downloaded are the network's, not the code's: moduleFetchRe.
var buildErrorRe = lazyre.New(`(?i)\bsyntax ?error\b|IndentationError|TabError|\[build failed\]|\[setup failed\]|error TS\d+:|error\[E\d+\]|could not compile|compilation failed|COMPILATION ERROR|cannot find symbol|^\S+\.go:\d+:\d+: |undefined reference to|missing go\.sum entry|no required module provides package|ImportError while importing test module|Cannot find module '|^\S+\.(?:ts|tsx|js|kt|java|cs|swift|scala|rb|php|c|cc|cpp|cxx|h|hh|hpp|m|mm|hs|zig|dart):\d+(?::\d+)?: (?:error|fatal error)\b|^\S+\.pyi?:\d+(?::\d+)?: error: .*\[syntax\]$|^e: (?:file://)?\S+\.kts?:\d+|Compilation error|BUILD FAILED.*compil|\[ERROR\] COMPILATION ERROR|error CS\d+:|^Type error: |^Error: Compiler run failed|^error: error communicating with database: |^error: linker ` + "`[^`]+`" + ` not found|^(?:Error|DeclarationError|ParserError|TypeError) \(\d{4}\): |^DeclarationError: |^Error HH600: Compilation failed|CompilerError: Stack too deep`)

// moduleFetchRe: go's error at an import whose module could not be fetched ("x.go:8:2:
// github.com/go-chi/chi/v5@v5.1.0: Get "https://proxy.golang.org/…": dial tcp: lookup …").
var moduleFetchRe = lazyre.New(`^\S+\.go:\d+:\d+: \S+@v[\w.+-]+: (?:Get|reading|verifying|unrecognized import path|dial tcp|git ls-remote)\b`)

// checkRe: a linter, formatter or type checker rejected the code (credo's "┃ [R] ↗ …",
// rubocop's "f.rb:1:1: C: Style/…: …", mypy's "x.py:4: error: … [import-untyped]": no Python
// compiler prints an error so).
var checkRe = lazyre.New(`(?i)^\S+\.pyi?:\d+(?::\d+)?: error: |files were modified by this hook|^would reformat |^reformatted |Oh no! .* files? would be reformatted|^\S+ needs formatting|Code style issues found|✖ \d+ problems? \(\d+ errors?|^Found \d+ errors?\.|^\S+\.go:\d+:\d+: .+ \((?:errcheck|govet|staticcheck|unused|ineffassign|gosimple|revive|gofmt|goimports)\)$|^\[error\] \S+: SyntaxError|Forgot to run Prettier\?|^\S+\.(?:py|pyi):\d+:\d+: [A-Z]{1,4}\d{2,4}:? |^┃?\s*\[[CRFWD]\] [↑↗→↘↓] \S|coverage threshold for \w+ \(\d+(?:\.\d+)?%\) not met|Coverage failure: total of [\d.]+ is less than fail-under|Required test coverage of [\d.]+% not reached|^\S+\.(?:rb|rake):\d+:\d+: [CWEF]: [A-Z]\w+/\w+: |^✖\s+.+ \[[a-z]+(?:-[a-z]+)+\]$|^\s*(?:error|warning|info) (?:-|•) \S+\.dart:\d+:\d+ (?:-|•) |^\s*(?:error|warning|info) • .+ • \S+\.dart:\d+:\d+ • `)

// escapedTraceRe: an exception's line in a traceback quoted with its newlines escaped.
var escapedTraceRe = lazyre.New(`\\n([A-Za-z_][\w.]*(?:Error|Exception)\b[^\\]*)`)

// escapedCause is the exception that ends a traceback a value quotes with escaped newlines
// (Airflow's DagBag.import_errors in an assert: {'dags/x.py': "Traceback …\n…\nImportError: …\n"});
// "" when msg quotes none.
func escapedCause(msg string) string {
	if !strings.Contains(msg, `Traceback (most recent call last):\n`) {
		return ""
	}
	ms := escapedTraceRe.FindAllStringSubmatch(msg, -1)
	if len(ms) == 0 {
		return ""
	}
	return strings.TrimSpace(ms[len(ms)-1][1])
}

// --- pytest ---

var (
	pySummaryRe = lazyre.New(`^(FAILED|ERROR) (\S+::.+?|\S+?)(?: - (.*))?$`) // nbval's ids have spaces: "docs/report.ipynb::Cell 2"
	pyVerboseRe = lazyre.New(`^(\S+::\S+) (?:FAILED|ERROR)\b`)
	pySectionRe = lazyre.New(`^_{3,} (?:ERROR (?:at \w+ of |collecting ))?(\S.*?) _{3,}$`)
	pyLocRe     = lazyre.New(`^(\S+\.py):(\d+): (\w+(?:\.\w+)*)`)
	pyErrRe     = lazyre.New(`^E\s+(.*)$`)
	pyCountsRe  = lazyre.New(`^=+ (.*\b(?:failed|passed|error|errors)\b.*) in [\d.]+s`)
)

func parsePytest(lines []string, r *Tests) {
	type loc struct {
		file   string
		line   int
		msg    string
		said   []string // the section's first paragraph, for a failure no "E" line explains
		told   bool     // the paragraph ended
		raised string   // the section's last line that names an exception and its message
	}
	sections := map[string]loc{}
	section := ""
	for _, l := range lines {
		if m := pySectionRe.FindStringSubmatch(l); m != nil {
			section = m[1]
			continue
		}
		if section == "" {
			continue
		}
		s := sections[section]
		if m := pyErrRe.FindStringSubmatch(l); m != nil && s.msg == "" {
			s.msg = strings.TrimSpace(m[1])
			if c := escapedCause(s.msg); c != "" {
				s.msg = c
			}
			s.msg = clip(s.msg)
		}
		if m := pyRaisedRe.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			s.raised = clip(m[0]) // a notebook's traceback (nbmake, nbval) has no "E" lines: its last exception
		}
		if t := strings.TrimSpace(l); !s.told && !pyAsideRe.MatchString(t) {
			if t == "" || len(s.said) == 2 {
				s.told = len(s.said) > 0
			} else {
				s.said = append(s.said, t)
			}
		}
		if m := pyLocRe.FindStringSubmatch(l); m != nil {
			s.file, s.line = m[1], atoi(m[2]) // the last frame is the one that raised
		}
		sections[section] = s
	}
	seen := map[string]bool{}
	add := func(kind, id, msg string) {
		if seen[id] {
			return
		}
		seen[id] = true
		file, name, _ := strings.Cut(id, "::")
		t := Test{Runner: "pytest", Name: id, Package: file, File: file, Message: clip(msg)}
		if name == "" {
			t.Name = file
		}
		short := name[strings.LastIndex(name, "::")+1:]
		short = strings.ReplaceAll(short, "::", ".")
		for _, k := range []string{strings.ReplaceAll(name, "::", "."), short, id, file} {
			if s, ok := sections[k]; ok && k != "" {
				if s.file != "" {
					t.File, t.Line = s.file, s.line
				}
				if t.Message == "" || strings.Contains(t.Message, "Traceback (most recent call last)") && s.msg != "" {
					t.Message = s.msg // (the summary line cuts a quoted traceback short)
				}
				if t.Message == "" {
					t.Message = s.raised
				}
				if t.Message == "" && len(s.said) > 0 && !strings.HasPrefix(s.said[0], "Traceback") {
					t.Message = clip(strings.Join(s.said, ": "))
				}
				break
			}
		}
		if kind == "ERROR" && name == "" {
			// A file that errored as a whole failed to collect (an import, a syntax error):
			// none of its tests ran, and pytest stops the session ("Interrupted: 1 error
			// during collection").
			r.Suites = append(r.Suites, t)
			return
		}
		r.Failed = append(r.Failed, t)
	}
	for _, l := range lines {
		if m := pySummaryRe.FindStringSubmatch(l); m != nil && (strings.Contains(m[2], "::") || strings.HasSuffix(m[2], ".py")) {
			add(m[1], m[2], m[3])
		}
	}
	for _, l := range lines {
		if m := pyVerboseRe.FindStringSubmatch(l); m != nil {
			add("", m[1], "")
		}
	}
	for _, l := range lines {
		if m := pyCountsRe.FindStringSubmatch(l); m != nil {
			r.Passed, r.Total = counts(m[1], "passed", "failed", "error", "errors")
		}
	}
	for i, t := range r.Failed {
		if t.Runner == "pytest" && t.Message == "" {
			r.Failed[i].Message = namedIn(lines, t.Name)
		}
	}
}

// pyAsideRe: a line of a failure's section that is about the run, not the failure: xdist's
// worker and interpreter ("[gw2] linux -- Python 3.12.4 /srv/app/.venv/bin/python3.12"), a
// place in the code, a captured output's rule, the junit file written.
var pyAsideRe = lazyre.New(`^\[gw\d+\] \w+ -- Python |^\S+\.py:\d+: |^-{3,}(?: |$)|^- generated xml file`)

// pyRaisedRe: Python's last traceback line, an exception and its message ("ReadTimeout: (…)",
// "requests.exceptions.ConnectionError: …").
var pyRaisedRe = lazyre.New(`^(?:[a-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Timeout|Exit|Interrupt|Failure|Refused): \S.*$`)

// namedIn is the line that names the test id in quotes and says what became of it (xdist's
// "worker 'gw2' crashed while running 'tests/test_x.py::test_y'": the crash is the failure, no
// assertion is printed); "" when no line does.
func namedIn(lines []string, id string) string {
	for _, l := range lines {
		if strings.Contains(l, "'"+id+"'") && !pySummaryRe.MatchString(l) {
			return clip(strings.TrimSpace(l))
		}
	}
	return ""
}

// counts reads "3 failed, 2 passed" style counts: the number before pass and the sum of all.
var countRe = lazyre.New(`(\d+) (\w+)`)

func counts(s, pass string, fail ...string) (passed, total int) {
	for _, m := range countRe.FindAllStringSubmatch(s, -1) {
		n := atoi(m[1])
		switch {
		case m[2] == pass:
			passed += n
			total += n
		case slices.Contains(fail, m[2]):
			total += n
		}
	}
	return passed, total
}

// --- cargo test ---

var (
	cargoFailRe    = lazyre.New(`^test (.+?) \.\.\. FAILED$`)
	cargoPanicRe   = lazyre.New(`^thread '([^']+)' panicked at (?:(\S+?):(\d+):\d+:$|'(.*)', (\S+?):(\d+):\d+$)`)
	cargoCountsRe  = lazyre.New(`^test result: FAILED\. (\d+) passed; (\d+) failed`)
	cargoSectionRe = lazyre.New(`^---- (.+?) stdout ----$`)
)

func parseCargo(lines []string, r *Tests) {
	idx := map[string]int{}
	for _, l := range lines {
		if m := cargoFailRe.FindStringSubmatch(l); m != nil {
			if _, ok := idx[m[1]]; !ok {
				idx[m[1]] = len(r.Failed)
				r.Failed = append(r.Failed, Test{Runner: "cargo", Name: m[1]})
			}
		}
	}
	for i, l := range lines {
		m := cargoPanicRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		j, ok := idx[m[1]]
		if !ok {
			// A section without its "... FAILED" line (the tail cut it): still a failure.
			if !slices.ContainsFunc(lines[max(0, i-3):i], cargoSectionRe.MatchString) {
				continue
			}
			idx[m[1]] = len(r.Failed)
			j = len(r.Failed)
			r.Failed = append(r.Failed, Test{Runner: "cargo", Name: m[1]})
		}
		t := &r.Failed[j]
		if m[2] != "" { // Rust 1.73 and later: the message follows
			t.File, t.Line = m[2], atoi(m[3])
			if i+1 < len(lines) {
				t.Message = clip(strings.TrimSpace(lines[i+1]))
			}
		} else {
			t.File, t.Line, t.Message = m[5], atoi(m[6]), clip(m[4])
		}
	}
	for _, l := range lines {
		if m := cargoCountsRe.FindStringSubmatch(l); m != nil {
			r.Passed, r.Total = atoi(m[1]), atoi(m[1])+atoi(m[2])
		}
	}
}

// --- Maven Surefire ---

var (
	sfCaseRe3   = lazyre.New(`^\[ERROR\] ([\w.$]+)\.([\w$\[\]()-]+)(?:\(\))?\s+(?:--|-)?\s*Time elapsed: .*<<< (?:FAILURE|ERROR)!`)
	sfCaseRe2   = lazyre.New(`^\[ERROR\] ([\w$\[\]-]+)\(([\w.$]+)\)\s+Time elapsed: .*<<< (?:FAILURE|ERROR)!`)
	javaFrameRe = lazyre.New(`^\s+at ([\w.$]+)\.([\w$<>]+)\(([\w$]+\.(?:java|kt|groovy|scala)):(\d+)\)`)
	sfCountsRe  = lazyre.New(`^\[(?:ERROR|WARNING|INFO)\] Tests run: (\d+), Failures: (\d+), Errors: (\d+), Skipped: (\d+)$`)
)

func parseSurefire(lines []string, r *Tests) {
	for i, l := range lines {
		var class, method string
		if m := sfCaseRe3.FindStringSubmatch(l); m != nil {
			class, method = m[1], m[2]
		} else if m := sfCaseRe2.FindStringSubmatch(l); m != nil {
			class, method = m[2], m[1]
		} else {
			continue
		}
		t := Test{Runner: "surefire", Name: method, Package: class}
		if i+1 < len(lines) {
			t.Message = clip(strings.TrimSpace(lines[i+1]))
			if c := javaCause(lines, i+1); c != "" {
				t.Message = c
			}
		}
		javaFrame(lines[i+1:], class, &t)
		r.Failed = append(r.Failed, t)
	}
	for _, l := range lines {
		if m := sfCountsRe.FindStringSubmatch(l); m != nil {
			r.Total = atoi(m[1])
			r.Passed = r.Total - atoi(m[2]) - atoi(m[3]) - atoi(m[4])
		}
	}
}

// javaFrame finds the test class's own frame in a stack trace.
func javaFrame(lines []string, class string, t *Test) {
	for k, n := range lines {
		if k > 80 || (k > 0 && strings.HasPrefix(n, "[")) {
			return
		}
		if f := javaFrameRe.FindStringSubmatch(n); f != nil && (f[1] == class || strings.HasSuffix(f[1], "."+class) || strings.HasSuffix(class, "."+f[1]) || strings.HasSuffix(f[1], class)) {
			t.File, t.Line = f[3], atoi(f[4])
			return
		}
	}
}

// --- Gradle ---

var (
	gradleFailRe   = lazyre.New(`^([\w.$]+) > (.+?) FAILED$`)
	gradleAtRe     = lazyre.New(`^\s+(\S.*?) at ([\w$]+\.(?:java|kt|groovy|scala)):(\d+)$`)
	gradleCountsRe = lazyre.New(`^(\d+) tests? completed, (\d+) failed`)
)

func parseGradle(lines []string, r *Tests) {
	for i, l := range lines {
		m := gradleFailRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		t := Test{Runner: "gradle", Name: m[2], Package: m[1]}
		for j := i + 1; j < len(lines) && j < i+20; j++ {
			n := lines[j]
			if gradleFailRe.MatchString(n) || strings.TrimSpace(n) == "" {
				break
			}
			if a := gradleAtRe.FindStringSubmatch(n); a != nil {
				t.Message, t.File, t.Line = clip(a[1]), a[2], atoi(a[3])
				break
			}
			if t.Message == "" {
				t.Message = clip(strings.TrimSpace(n))
			}
			if f := javaFrameRe.FindStringSubmatch(n); f != nil {
				t.File, t.Line = f[3], atoi(f[4])
				break
			}
		}
		r.Failed = append(r.Failed, t)
	}
	for _, l := range lines {
		if m := gradleCountsRe.FindStringSubmatch(l); m != nil {
			r.Total = atoi(m[1])
			r.Passed = r.Total - atoi(m[2])
		}
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func lastNumber(s string) string {
	ms := countRe.FindAllStringSubmatch(s, -1)
	if len(ms) == 0 {
		return ""
	}
	return ms[len(ms)-1][1]
}
