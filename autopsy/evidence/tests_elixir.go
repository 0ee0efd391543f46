package evidence

import (
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// --- ExUnit (mix test) and the Elixir compiler ---

var (
	// ExUnit.Formatter's failure head: "  1) test name (Module)", the test's place under it;
	// a module whose setup_all failed: "  1) Module: failure on setup_all callback, …".
	exunitHeadRe  = lazyre.New(`^\s*\d+\) ((?:test|doctest|property|feature) .+) \(([\w.]+)\)$`)
	exunitAllRe   = lazyre.New(`^\s*\d+\) ([\w.]+): failure on setup_all callback`)
	exunitLocRe   = lazyre.New(`^\s+(\S+\.exs?):(\d+)$`)
	exunitFrameRe = lazyre.New(`^\s+(\S+\.exs?):(\d+): \(test\)$`)
	exunitSideRe  = lazyre.New(`^\s+(left|right):\s+(\S.*)$`)
	// A process the test started that died, as Logger reports it ("09:42:13.518 [error] Task
	// #PID<0.641.0> started from #PID<0.639.0> terminating", then "** (DBConnection.OwnershipError)
	// cannot find ownership process for #PID<0.641.0>."): the test that fails after it fails on
	// what the process never did ("No message matching … after 100ms"); the crash says why.
	exunitDownRe = lazyre.New(`\[error\] .*\bterminating$`)
	// The summary: "1 doctest, 212 tests, 1 failure, 1 excluded" (the counts by kind include
	// the excluded tests, which did not run).
	exunitCountsRe = lazyre.New(`^(?:\d+ (?:doctests?|tests?|propert(?:y|ies)|features?), )+\d+ failures?(?:, .*)?$`)
)

func parseExUnit(lines []string, r *Tests) {
	crash := ""
	for i, l := range lines {
		if exunitDownRe.MatchString(l) && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "** (") {
			crash = clip(strings.TrimSpace(lines[i+1]))
			continue
		}
		if m := exunitAllRe.FindStringSubmatch(l); m != nil {
			// None of the module's tests ran: a suite that failed to run, as jest's.
			t := Test{Runner: "exunit", Name: m[1], Package: m[1]}
			exunitFailure(lines[i+1:], &t)
			r.Suites = append(r.Suites, t)
			continue
		}
		m := exunitHeadRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		t := Test{Runner: "exunit", Name: m[1], Package: m[2]}
		exunitFailure(lines[i+1:], &t)
		if crash != "" && !strings.HasPrefix(t.Message, "** (") {
			t.Message, crash = crash, ""
		}
		r.Failed = append(r.Failed, t)
	}
	for _, l := range lines {
		if exunitCountsRe.MatchString(strings.TrimSpace(l)) {
			total, failed, idle := 0, 0, 0
			for _, m := range countRe.FindAllStringSubmatch(l, -1) {
				switch n := atoi(m[1]); m[2] {
				case "failure", "failures":
					failed = n
				case "excluded":
					total -= n
				case "skipped", "invalid":
					idle += n
				default:
					total += n
				}
			}
			r.Total, r.Passed = total, total-failed-idle
		}
	}
}

// exunitFailure reads a failure's block: the test's place, the first line that says what went
// wrong (an exception's "** (Error) …", an assertion's note with its left and right), and the
// test's own frame in the stacktrace, which is the line that failed.
func exunitFailure(lines []string, t *Test) {
	left, right := "", ""
	for j, n := range lines {
		if j == 60 || exunitHeadRe.MatchString(n) || exunitAllRe.MatchString(n) {
			break
		}
		s := strings.TrimSpace(n)
		if m := exunitLocRe.FindStringSubmatch(n); m != nil && j == 0 {
			t.File, t.Line = m[1], atoi(m[2])
			continue
		}
		if m := exunitFrameRe.FindStringSubmatch(n); m != nil {
			if t.File == "" || strings.HasSuffix(t.File, m[1]) {
				t.Line = atoi(m[2])
				if t.File == "" {
					t.File = m[1]
				}
			}
			break
		}
		switch {
		case s == "" || strings.HasPrefix(s, "Failure #") || s == "stacktrace:":
		case t.Message == "" && !strings.HasPrefix(s, "code:"):
			t.Message = s
		case exunitSideRe.MatchString(n):
			m := exunitSideRe.FindStringSubmatch(n)
			if m[1] == "left" && left == "" {
				left = m[2]
			} else if m[1] == "right" && right == "" {
				right = m[2]
			}
		}
	}
	if left != "" && right != "" && !strings.HasPrefix(t.Message, "** (") {
		t.Message += " (left: " + left + ", right: " + right + ")"
	}
	t.Message = clip(t.Message)
}

var (
	// Elixir 1.15 and later log each compile error, its place under it ("  lib/foo.ex:9: M.f/0";
	// from 1.16 in a box, "└─ lib/foo.ex:3:5: M.f/0"), then raise "cannot compile module …
	// (errors have been logged)". Before 1.15 the error is the raise: "** (CompileError)
	// lib/foo.ex:3: undefined function bar/0".
	elixirErrRe   = lazyre.New(`^\s*error: (.+)$`)
	elixirPlaceRe = lazyre.New(`^\s*(?:└─ )?(\S+\.exs?:\d+(?::\d+)?)(?:: .*)?$`)
	elixirRaiseRe = lazyre.New(`^\*\* \((?:CompileError|SyntaxError|TokenMissingError|MismatchedDelimiterError)\) (.+)$`)
)

// parseElixirBuild reads the Elixir compiler's errors into build lines, each "file:line: error:
// message" as other compilers print theirs.
func parseElixirBuild(lines []string, r *Tests) {
	for i, l := range lines {
		if len(r.Build) == 20 {
			return
		}
		if m := elixirErrRe.FindStringSubmatch(l); m != nil {
			for j := i + 1; j < len(lines) && j < i+12 && strings.TrimSpace(lines[j]) != ""; j++ {
				if p := elixirPlaceRe.FindStringSubmatch(lines[j]); p != nil {
					r.Build = append(r.Build, clip(p[1]+": error: "+m[1]))
					break
				}
			}
			continue
		}
		if m := elixirRaiseRe.FindStringSubmatch(l); m != nil && !strings.HasSuffix(l, "(errors have been logged)") {
			r.Build = append(r.Build, clip(strings.TrimSpace(l)))
		}
	}
}
