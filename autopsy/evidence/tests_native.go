package evidence

import (
	"path"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// --- CTest, meson test, and what a native test printed before it died ---

var (
	// CTest: "The following tests FAILED:" then "\t  3 - ringbuf_wrap (Failed)"; each test's
	// progress line (" 3/3 Test #3: ringbuf_wrap ....***Failed  0.01 sec") and, under
	// --output-on-failure, its output after it up to the next test's "Start" line.
	ctestFailedRe   = lazyre.New(`^\s*(\d+) - (.+?) \((Failed|SEGFAULT|Timeout|Subprocess aborted|Not Run|ILLEGAL|OTHER_FAULT|BUS_ERROR|NUMERICAL|INTERRUPT|Child aborted|Exception|Exit code \w+)\)(?:\s.*)?$`)
	ctestProgressRe = lazyre.New(`^\s*\d+/\d+ Test +#(\d+): `)
	ctestStartRe    = lazyre.New(`^\s+Start +\d+: `)
	ctestCountsRe   = lazyre.New(`^\d+% tests passed, (\d+) tests? failed out of (\d+)`)
	// meson test: "1/3 ringbuf_wrap  FAIL  0.02s  exit status 1" (1.x; "project:suite / name"
	// with suites; 0.56 put the reason in parentheses), the failing test's log under it, the
	// same lines again under "Summary of Failures:", then "Ok:", "Fail:", … one a line.
	mesonResultRe = lazyre.New(`^\s*\d+/\d+ (?:(\S+) / )?(.+?)\s+(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS|INTERRUPT)\s+\d+(?:\.\d+)? ?s(?:\s+\(?(.+?)\)?)?\s*$`)
	mesonAnyRe    = lazyre.New(`^\s*\d+/\d+ \S.*\s\d+(?:\.\d+)? ?s\b`)
	mesonCountRe  = lazyre.New(`(Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout):\s+(\d+)`)
)

func parseCTest(lines []string, r *Tests) {
	seen := map[string]bool{}
	listing, notRun := false, 0
	for _, l := range lines {
		if strings.TrimSpace(l) == "The following tests FAILED:" {
			listing = true
			continue
		}
		m := ctestFailedRe.FindStringSubmatch(l)
		if !listing || m == nil {
			listing = false
			continue
		}
		if seen[m[2]] {
			continue
		}
		seen[m[2]] = true
		if m[3] == "Not Run" {
			// A test CTest did not run (its executable missing, a multi-config build without
			// -C) did not fail: the line above its progress line says why the command cannot
			// run it, and DecisiveLine finds it.
			notRun++
			continue
		}
		out := ctestOutput(lines, m[1])
		if gt := gtestTests(out); len(gt) > 0 {
			continue // a googletest program: parseGTest names its tests
		}
		t := Test{Runner: "ctest", Name: m[2]}
		testOutput(out, &t)
		if t.Message == "" {
			t.Message = m[3]
		}
		r.Failed = append(r.Failed, t)
	}
	for _, l := range lines {
		if m := ctestCountsRe.FindStringSubmatch(l); m != nil {
			r.Passed = atoi(m[2]) - atoi(m[1])
			r.Total = atoi(m[2]) - notRun
		}
	}
}

// ctestOutput is what test number num printed under --output-on-failure: the lines after its
// progress line, up to the next test's.
func ctestOutput(lines []string, num string) []string {
	for i, l := range lines {
		if m := ctestProgressRe.FindStringSubmatch(l); m == nil || m[1] != num {
			continue
		}
		end := i + 1
		for end < len(lines) && end < i+400 && !ctestProgressRe.MatchString(lines[end]) && !ctestStartRe.MatchString(lines[end]) && !ctestCountsRe.MatchString(lines[end]) {
			end++
		}
		return lines[i+1 : end]
	}
	return nil
}

func parseMeson(lines []string, r *Tests) {
	seen := map[string]bool{}
	for i, l := range lines {
		if strings.TrimSpace(l) == "Summary of Failures:" {
			break // the same lines again, without the logs
		}
		m := mesonResultRe.FindStringSubmatch(l)
		if m == nil || seen[m[1]+" "+m[2]] {
			continue
		}
		seen[m[1]+" "+m[2]] = true
		t := Test{Runner: "meson", Name: m[2], Package: m[1]}
		end := i + 1
		for end < len(lines) && end < i+400 && !mesonAnyRe.MatchString(lines[end]) && strings.TrimSpace(lines[end]) != "Summary of Failures:" {
			end++
		}
		if gt := gtestTests(lines[i+1 : end]); len(gt) > 0 {
			continue // a googletest program: parseGTest names its tests
		}
		testOutput(lines[i+1:end], &t)
		if t.Message == "" {
			t.Message = strings.TrimSpace(m[3] + ": " + m[4])
		}
		r.Failed = append(r.Failed, t)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, "Ok:") {
			continue
		}
		n := map[string]int{}
		for _, s := range lines[i:min(i+6, len(lines))] {
			for _, m := range mesonCountRe.FindAllStringSubmatch(s, -1) {
				n[m[1]] = atoi(m[2])
			}
		}
		r.Passed = n["Ok"] + n["Expected Fail"]
		r.Total = r.Passed + n["Fail"] + n["Unexpected Pass"] + n["Timeout"]
	}
}

var (
	// googletest: "[ RUN      ] Suite.Test", then "[       OK ] Suite.Test (0 ms)" or the
	// failure ("file:line: Failure" and the values) and "[  FAILED  ] Suite.Test (0 ms)"; a
	// program that died in a test printed its RUN line and no result for it.
	gtestRunRe    = lazyre.New(`^\[ RUN      \] (\S+)$`)
	gtestOKRe     = lazyre.New(`^\[       OK \] `)
	gtestFailedRe = lazyre.New(`^\[  FAILED  \] (\S+?)(?:, where .*)? \(\d+ ms\)$`)
	gtestRanRe    = lazyre.New(`^\[==========\] \d+ tests? from .* ran\.`)
)

// parseGTest reads googletest programs' output, run by CTest, meson, make or themselves.
func parseGTest(lines []string, r *Tests) {
	r.Failed = append(r.Failed, gtestTests(lines)...)
}

// gtestTests are the tests that failed, and the test a program died in (a sanitizer's abort,
// a segfault), with what they printed.
func gtestTests(lines []string) []Test {
	var out []Test
	seen := map[string]bool{}
	add := func(name string, printed []string) {
		if seen[name] {
			return
		}
		seen[name] = true
		t := Test{Runner: "gtest", Name: name}
		testOutput(printed, &t)
		if t.Message == "" {
			t.Message = "the test program died in this test"
		}
		out = append(out, t)
	}
	running, from := "", 0
	for i, l := range lines {
		switch m := gtestRunRe.FindStringSubmatch(l); {
		case m != nil:
			if running != "" {
				add(running, lines[from:i]) // the program died in it; the next one started
			}
			running, from = m[1], i+1
		case gtestOKRe.MatchString(l), gtestRanRe.MatchString(l):
			running, from = "", i+1
		default:
			if f := gtestFailedRe.FindStringSubmatch(l); f != nil {
				// (Its RUN line may be cut off with the head of a long log.)
				add(f[1], lines[from:i])
				running, from = "", i+1
			}
		}
	}
	if running != "" {
		add(running, lines[from:])
	}
	return out
}

// automake's test harness (make check): "FAIL: test_ringbuf" a test, "# TOTAL: 3", "# PASS:  2",
// … the summary; test-suite.log, when the verify prints it, has each failed test's output
// under "FAIL: test_ringbuf" and a rule, up to "FAIL test_ringbuf (exit status: 1)".
var (
	amResultRe = lazyre.New(`^(FAIL|ERROR|XPASS): (\S.*?)\s*$`)
	amCountRe  = lazyre.New(`^# (TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR): +(\d+)\s*$`)
	amEndRe    = lazyre.New(`^(?:FAIL|ERROR|XPASS) \S.* \(exit status: \d+\)$`)
	ruleRe     = lazyre.New(`^=+$`)
)

func parseAutomake(lines []string, r *Tests) {
	n := map[string]int{}
	for _, l := range lines {
		if m := amCountRe.FindStringSubmatch(l); m != nil {
			n[m[1]] = atoi(m[2])
		}
	}
	if _, ok := n["TOTAL"]; !ok {
		return // not automake's harness (unittest prints "FAIL: test_x (…)" too)
	}
	r.Passed, r.Total = n["PASS"]+n["XFAIL"], n["TOTAL"]-n["SKIP"]
	logged := map[string][]string{}
	for i := 0; i+1 < len(lines); i++ {
		m := amResultRe.FindStringSubmatch(lines[i])
		if m == nil || !underlined(lines[i], lines[i+1]) {
			continue
		}
		end := i + 2
		for end < len(lines) && end < i+400 && !amEndRe.MatchString(lines[end]) {
			end++
		}
		logged[m[2]] = lines[i+2 : end]
	}
	seen := map[string]bool{}
	for i, l := range lines {
		m := amResultRe.FindStringSubmatch(l)
		if m == nil || seen[m[2]] || i+1 < len(lines) && underlined(l, lines[i+1]) {
			continue
		}
		seen[m[2]] = true
		t := Test{Runner: "automake", Name: m[2]}
		if out, ok := logged[m[2]]; ok {
			testOutput(out, &t)
		}
		if t.Message == "" && m[1] != "FAIL" {
			t.Message = m[1] // ERROR: a hard error (exit 99); XPASS: passed but expected to fail
		}
		r.Failed = append(r.Failed, t)
	}
}

// underlined: the log's section head, its rule as long as it (the summary's rules are longer).
func underlined(head, next string) bool {
	return ruleRe.MatchString(next) && len(next) == len(strings.TrimSpace(head))
}

// testOutput reads what a test program printed for the line that says why it failed: a
// sanitizer's report or a failed assert (with the place in the code), googletest's or Catch2's
// failure, else the line DecisiveLine picks.
func testOutput(lines []string, t *Test) {
	if c, ok := crashReport(lines); ok {
		t.File, t.Line, t.Message = c.File, c.Line, c.Message
		return
	}
	for i, l := range lines {
		m := xunitFailRe.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		var msg []string
		for _, n := range lines[i+1 : min(i+5, len(lines))] {
			if s := strings.TrimSpace(n); s != "" && !strings.HasPrefix(s, "[") {
				msg = append(msg, s)
			}
		}
		t.File, t.Line, t.Message = m[1], atoi(m[2]), clip(strings.Join(msg, " "))
		return
	}
	t.Message = DecisiveLine(strings.Join(lines, "\n"))
}

// xunitFailRe: googletest's "file:line: Failure" and Catch2's "file:line: FAILED:", the
// expression and its values on the lines under it.
var xunitFailRe = lazyre.New(`^(\S+?):(\d+): (?:Failure|FAILED:)$`)

var (
	// The sanitizers' reports (compiler-rt): "==1234==ERROR: AddressSanitizer: heap-buffer-
	// overflow on address 0x…", "WARNING: ThreadSanitizer: data race (pid=1234)", the frames
	// "    #0 0x4c6f1d in rb_push /src/ringbuf.c:42:5", then "SUMMARY: AddressSanitizer:
	// heap-buffer-overflow /src/ringbuf.c:42:5 in rb_push" (without the place when the frame has
	// no debug information).
	sanHeadRe    = lazyre.New(`(?:^|==\d+==)(?:ERROR|WARNING): (\w+Sanitizer): (.+?)(?: on \S*(?: address)? ?0x.*| \(pid=\d+\).*|:)?$`)
	sanFrameRe   = lazyre.New(`^\s*#\d+ 0x[0-9a-f]+ in (\S+?)(?:\(.*\))? (\S+?):(\d+)(?::\d+)?$`)
	sanSummaryRe = lazyre.New(`^SUMMARY: \w+Sanitizer: [\w-]+ (\S+?):(\d+)(?::\d+)? in (\S+)`)
	// UBSan: "src/x.c:12:5: runtime error: shift exponent 32 is too large for 32-bit type 'int'".
	ubsanRe = lazyre.New(`^(\S+?):(\d+):\d+: runtime error: (.+)$`)
	// glibc's assert: "ringbuf_test: tests/ringbuf_test.c:17: main: Assertion `n == 3' failed."
	assertRe = lazyre.New(`^\S+: (\S+?):(\d+): \S+: (Assertion .+ failed\.)$`)
)

// crashReport is the first sanitizer report or failed assert in a program's output: its place
// in the code (the first frame outside the sanitizer's runtime and the system's libraries) and
// what it says, "AddressSanitizer: heap-buffer-overflow in rb_push".
func crashReport(lines []string) (Test, bool) {
	for i, l := range lines {
		s := strings.TrimSpace(l)
		if m := ubsanRe.FindStringSubmatch(s); m != nil {
			return Test{File: m[1], Line: atoi(m[2]), Message: clip("runtime error: " + m[3])}, true
		}
		if m := assertRe.FindStringSubmatch(s); m != nil {
			return Test{File: m[1], Line: atoi(m[2]), Message: clip(m[3])}, true
		}
		m := sanHeadRe.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		t := Test{Message: m[1] + ": " + m[2]}
		fn := ""
		for _, n := range lines[i+1 : min(i+200, len(lines))] {
			n = strings.TrimSpace(n)
			if f := sanSummaryRe.FindStringSubmatch(n); f != nil && t.File == "" && !systemFrame(f[1]) {
				t.File, t.Line, fn = f[1], atoi(f[2]), f[3]
			}
			if f := sanFrameRe.FindStringSubmatch(n); f != nil && t.File == "" && !systemFrame(f[2]) {
				t.File, t.Line, fn = f[2], atoi(f[3]), f[1]
			}
			if strings.HasPrefix(n, "SUMMARY: ") {
				break
			}
		}
		if fn != "" {
			t.Message += " in " + fn
		}
		t.Message = clip(t.Message)
		return t, true
	}
	return Test{}, false
}

// systemFrame: a frame in the sanitizer's runtime, the C or C++ library or the test framework.
func systemFrame(file string) bool {
	return strings.Contains(file, "sanitizer") || strings.HasPrefix(file, "/usr/") || strings.Contains(file, "/libc") ||
		strings.HasPrefix(file, "../sysdeps/") || strings.Contains(file, "gtest") || strings.Contains(file, "catch2")
}

// zigTestRe: zig's test runner on a failing test: "error: 'tokenizer.test.split keeps commas
// inside quotes' failed: expected 2, found 4" (ziglang/zig's test_runner.zig), then the trace
// whose project frame says where.
var (
	zigTestRe  = lazyre.New(`^error: '([^']+)' failed(?:: (.+))?$`)
	zigFrameRe = lazyre.New(`^(\S+\.zig):(\d+):\d+: 0x[0-9a-f]+ in `)
)

// parseZig reads the tests zig's test runner says failed.
func parseZig(lines []string, r *Tests) {
	for i, l := range lines {
		m := zigTestRe.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		t := Test{Runner: "zig", Name: m[1], Message: clip(m[2])}
		for _, f := range lines[i+1 : min(len(lines), i+12)] {
			if fm := zigFrameRe.FindStringSubmatch(strings.TrimSpace(f)); fm != nil && !strings.Contains(fm[1], "/lib/std/") {
				t.File, t.Line = fm[1], atoi(fm[2])
				break
			}
		}
		r.Failed = append(r.Failed, t)
	}
}

// Julia's Test stdlib: "empty: Test Failed at /path/test/runtests.jl:18", its testset before
// the colon, then "  Expression: …"; a test that raised, "… Error During Test at …:31", then
// "  Test threw exception" (with its Expression) or "  Got exception outside of a @test", then
// the exception (JuliaLang/julia's Test.jl).
var (
	juliaFailRe = lazyre.New(`^(?:(.+?): )?(Test Failed|Error During Test) at (\S+\.jl):(\d+)$`)
	juliaExprRe = lazyre.New(`^\s+Expression: (.+)$`)
)

// parseJulia reads the tests Julia's Test stdlib says failed or raised, named by testset and
// place, with the expression that failed or the exception raised.
func parseJulia(lines []string, r *Tests) {
	for i, l := range lines {
		m := juliaFailRe.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		t := Test{Runner: "julia", Name: strings.TrimSpace(m[1] + " " + path.Base(m[3]) + ":" + m[4]), File: m[3], Line: atoi(m[4])}
		for _, next := range lines[i+1 : min(len(lines), i+5)] {
			e := juliaExprRe.FindStringSubmatch(next)
			if m[2] == "Test Failed" {
				if e != nil {
					t.Message = clip(e[1])
				}
				break
			}
			next = strings.TrimSpace(next)
			if e == nil && next != "" && next != "Test threw exception" && next != "Got exception outside of a @test" {
				t.Message = clip(next)
				break
			}
		}
		r.Failed = append(r.Failed, t)
	}
}

// XCTest on Linux (swift-corelibs-xctest): an assertion that failed is printed as an error at
// its place, "/path/Tests/UnitsTests/TemperatureTests.swift:27: error:
// TemperatureTests.testMinus40 : XCTAssertEqual failed: …" — a test's failure, not the
// compiler's; "Executed 12 tests, with 1 failure" counts them.
var (
	xctFailRe  = lazyre.New(`^(\S+\.swift):(\d+): error: ([\w.]+) : (.+)$`)
	xctCountRe = lazyre.New(`^\s*Executed (\d+) tests?, with (\d+) failures?`)
)

// parseXCTest reads the tests XCTest says failed, with their places and assertions.
func parseXCTest(lines []string, r *Tests) {
	for _, l := range lines {
		if m := xctFailRe.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			r.Failed = append(r.Failed, Test{Runner: "xctest", Name: m[3], File: m[1], Line: atoi(m[2]), Message: clip(m[4])})
		}
		if m := xctCountRe.FindStringSubmatch(l); m != nil {
			r.Total = atoi(m[1])
			r.Passed = r.Total - atoi(m[2])
		}
	}
}

// Perl's Test::More under prove (Test::Harness): a check that failed is told in its diagnostics,
// "#   Failed test 'adds'" then "#   at t/basic.t line 9." (or "#   Failed test at t/basic.t line
// 9." when unnamed), then "#          got: '3'" and "#     expected: '4'"; a test file that died
// before its plan ("Dubious, test returned 2", "No subtests run") failed as a whole, for the
// reason it printed after its name's dots ("t/parse.t ...... Can't locate Test/Deep.pm in @INC").
var (
	tapFailedRe   = lazyre.New(`#\s+Failed test(?: '(.*)'|\s+at (\S+) line (\d+)\.)`)
	tapAtRe       = lazyre.New(`^#\s+at (\S+) line (\d+)\.`)
	tapGotRe      = lazyre.New(`^#\s+(got|expected): (.*)$`)
	proveFileRe   = lazyre.New(`^(\S+\.t) \.{2,} ?(.*)$`)
	proveStatusRe = lazyre.New(`^(?:\d+/[\d?]+\s*)*(?:ok|skipped:.*|Dubious, test returned.*|Failed \d+/\d+ subtests.*|All \d+ subtests passed.*)?$`)
)

// parseTAP reads the checks Test::More says failed, with their places and what they got, and
// the test files prove says died before any check ran.
func parseTAP(lines []string, r *Tests) {
	died := map[string]string{} // a test file's own words after its dots
	dubious := map[string]bool{}
	failedIn := map[string]bool{}
	var order []string
	for i, l := range lines {
		if m := proveFileRe.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			if strings.HasPrefix(m[2], "Dubious, test returned") {
				dubious[m[1]] = true
			} else if !proveStatusRe.MatchString(m[2]) && !strings.HasPrefix(m[2], "#") && died[m[1]] == "" {
				died[m[1]] = clip(m[2])
				order = append(order, m[1])
			}
			continue
		}
		m := tapFailedRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		t := Test{Runner: "tap", Name: m[1], File: m[2], Line: atoi(m[3])}
		var got, want string
		for _, next := range lines[i+1 : min(len(lines), i+5)] {
			if a := tapAtRe.FindStringSubmatch(strings.TrimSpace(next)); a != nil && t.File == "" {
				t.File, t.Line = a[1], atoi(a[2])
			} else if g := tapGotRe.FindStringSubmatch(strings.TrimSpace(next)); g != nil {
				if g[1] == "got" {
					got = g[2]
				} else {
					want = g[2]
				}
			} else if tapFailedRe.MatchString(next) {
				break
			}
		}
		if t.Name == "" {
			t.Name = t.Where()
		}
		if got != "" || want != "" {
			t.Message = clip("got " + got + ", expected " + want)
		}
		failedIn[t.File] = true
		r.Failed = append(r.Failed, t)
	}
	for _, file := range order {
		if dubious[file] && !failedIn[file] {
			r.Suites = append(r.Suites, Test{Runner: "tap", Name: file, File: file, Message: died[file]})
		}
	}
	parseNotOK(lines, r)
}

// TAP's own line for a test that failed, as bats, node-tap and a test script run without prove
// print it: "not ok 9 rotate.sh keeps seven archives", bats's place below it ("# (in test file
// tests/rotate.bats, line 23)") and the check that failed ("#   `[ \"$status\" -eq 0 ]' failed").
// A test Test::More's diagnostics already named is not counted twice.
var (
	tapNotOKRe  = lazyre.New(`^not ok \d+ (?:- )?(.+?)(?:\s+# (?:TODO|SKIP)\b.*)?$`)
	tapTodoRe   = lazyre.New(`#\s+(?:TODO|SKIP)\b`)
	batsPlaceRe = lazyre.New(`^#\s+\(in test file (\S+), line (\d+)\)$`)
	batsCheckRe = lazyre.New(`^#\s+(.+) failed$`)
)

func parseNotOK(lines []string, r *Tests) {
	for i, l := range lines {
		m := tapNotOKRe.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil || tapTodoRe.MatchString(l) || slices.ContainsFunc(r.Failed, func(t Test) bool { return t.Runner == "tap" && t.Name == m[1] }) {
			continue
		}
		t := Test{Runner: "tap", Name: m[1]}
		for _, next := range lines[i+1 : min(len(lines), i+4)] {
			next = strings.TrimSpace(next)
			if p := batsPlaceRe.FindStringSubmatch(next); p != nil {
				t.File, t.Line = p[1], atoi(p[2])
			} else if c := batsCheckRe.FindStringSubmatch(next); c != nil && t.Message == "" {
				t.Message = clip(c[1] + " failed")
			} else if !strings.HasPrefix(next, "#") {
				break
			}
		}
		r.Failed = append(r.Failed, t)
	}
}

// package:test's reporter (dart test, flutter test): a test that failed is the line that ends
// "[E]" ("00:01 +1 -1: RatingBar renders a half star for 3.5 [E]"), its failure below it, its
// place in the stack ("file:///…/test/rating_bar_test.dart:31:5").
var (
	dartFailRe  = lazyre.New(`^\d+:\d+ \+\d+(?: ~\d+)? -\d+: (.+) \[E\]$`)
	dartPlaceRe = lazyre.New(`file://(\S+_test\.dart):(\d+)`)
)

func parseDartTest(lines []string, r *Tests) {
	for i, l := range lines {
		m := dartFailRe.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil || slices.ContainsFunc(r.Failed, func(t Test) bool { return t.Runner == "dart" && t.Name == m[1] }) {
			continue
		}
		t := Test{Runner: "dart", Name: m[1]}
		for _, next := range lines[i+1 : min(len(lines), i+25)] {
			if dartFailRe.MatchString(strings.TrimSpace(next)) {
				break
			}
			if t.Message == "" && strings.TrimSpace(next) != "" {
				t.Message = clip(strings.TrimSpace(next))
			}
			if p := dartPlaceRe.FindStringSubmatch(next); p != nil && t.File == "" {
				t.File, t.Line = p[1], atoi(p[2])
			}
		}
		r.Failed = append(r.Failed, t)
	}
}
