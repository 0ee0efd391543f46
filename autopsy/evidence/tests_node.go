package evidence

import (
	"fmt"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// --- jest ---

var (
	jestFileRe   = lazyre.New(`^\s*FAIL\s+(\S+\.[cm]?[jt]sx?)\s*(?:\(.*\))?$`)
	jestBulletRe = lazyre.New(`^\s*● (.+)$`)
	jsFrameRe    = lazyre.New(`\(?((?:[\w@./-]+/)?[\w.-]+\.(?:test|spec)\.[cm]?[jt]sx?|[\w@./-]+\.[cm]?[jt]sx?):(\d+):(\d+)\)?`)
	jestCountsRe = lazyre.New(`^Tests:\s+(.*\d+ total)`)
)

func parseJest(lines []string, r *Tests) {
	file := ""
	// With more than one suite, jest repeats every failure under "Summary of all failing tests":
	// each test is counted once.
	seen := map[string]bool{}
	for i, l := range lines {
		if m := jestFileRe.FindStringSubmatch(l); m != nil {
			file = m[1]
			continue
		}
		m := jestBulletRe.FindStringSubmatch(l)
		if m == nil || strings.HasPrefix(m[1], "Console") {
			continue
		}
		if strings.TrimSpace(m[1]) == "Test suite failed to run" {
			if s := jestSuite(lines[i+1:], file); !seen["suite "+s.Key()] {
				seen["suite "+s.Key()] = true
				r.Suites = append(r.Suites, s)
			}
			continue
		}
		t := Test{Runner: "jest", Name: strings.TrimSpace(m[1]), Package: file, File: file}
		expected, received := "", ""
		for j := i + 1; j < len(lines) && j < i+80; j++ {
			n := lines[j]
			if jestBulletRe.MatchString(n) || jestFileRe.MatchString(n) {
				break
			}
			s := strings.TrimSpace(n)
			if t.Message == "" && s != "" && !strings.HasPrefix(s, "at ") && !strings.HasPrefix(s, ">") && !strings.HasPrefix(s, "|") {
				t.Message = clip(s)
			}
			if f := jsFrameRe.FindStringSubmatch(n); f != nil && strings.HasPrefix(s, "at ") && !strings.Contains(n, "node_modules") {
				t.File, t.Line = f[1], atoi(f[2])
				break
			}
			if m := jestValueRe.FindStringSubmatch(s); m != nil && strings.HasPrefix(t.Message, "expect(") {
				if m[1] == "Expected" && expected == "" {
					expected = m[2]
				} else if m[1] == "Received" && received == "" {
					received = m[2]
				}
			}
		}
		if expected != "" && received != "" {
			// The matcher line says which matcher; the values say what went wrong.
			t.Message = clip(fmt.Sprintf("%s: expected %s, received %s", jestMatcher(t.Message), expected, received))
		}
		if !seen[t.Key()] {
			seen[t.Key()] = true
			r.Failed = append(r.Failed, t)
		}
	}
	for _, l := range lines {
		if m := jestCountsRe.FindStringSubmatch(l); m != nil {
			p, _ := counts(m[1], "passed")
			r.Passed, r.Total = p, atoi(lastNumber(m[1]))
		}
	}
}

// jestValueRe: expect's "Expected: 3" and "Received: 4" (also "Expected length: 2", "Received
// number of calls: 0").
var jestValueRe = lazyre.New(`^(Expected|Received)(?: [a-z ]+)?: +(.+)$`)

// jestMatcher is expect's matcher line without its comment: "expect(received).toBe(expected)".
func jestMatcher(s string) string {
	if i := strings.Index(s, " // "); i > 0 {
		return s[:i]
	}
	return s
}

// tsDiagRe: ts-jest's diagnostic, "src/a.ts:12:27 - error TS2345: Argument of type …".
var tsDiagRe = lazyre.New(`^(\S+?):(\d+):\d+ - error (TS\d+: .+)$`)

// jestSuite reads a suite that failed to run: its file and the error (the first line under the
// bullet, a TypeScript diagnostic at its own place).
func jestSuite(lines []string, file string) Test {
	t := Test{Runner: "jest", Name: file, File: file}
	for j, n := range lines {
		if j == 40 || jestBulletRe.MatchString(n) || jestFileRe.MatchString(n) {
			break
		}
		s := strings.TrimSpace(n)
		if s == "" {
			continue
		}
		if m := tsDiagRe.FindStringSubmatch(s); m != nil {
			t.File, t.Line, t.Message = m[1], atoi(m[2]), clip(m[3])
		} else {
			t.Message = clip(s)
		}
		break
	}
	if t.Name == "" {
		t.Name = "test suite" // the FAIL line was cut off
	}
	return t
}

// --- vitest ---

var (
	vitestFailRe   = lazyre.New(`^\s*FAIL\s{2}(\S+) > (.+?)\s*$`)
	vitestLocRe    = lazyre.New(`^\s*❯ (\S+):(\d+):\d+`)
	vitestCountsRe = lazyre.New(`^\s*Tests\s+(.*)\((\d+)\)\s*$`)
	// The default reporter's tree: a file with failures, then "× name 4ms" and "→ message".
	vitestFileRe  = lazyre.New(`^\s*❯ (\S+) \(\d+ tests? \| \d+ failed`)
	vitestCrossRe = lazyre.New(`^\s*× (.+?)(?: \d+(?:\.\d+)?m?s)?\s*$`)
)

func parseVitest(lines []string, r *Tests) {
	seen := map[string]bool{}
	for i, l := range lines {
		m := vitestFailRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		t := Test{Runner: "vitest", Name: m[2], Package: m[1], File: m[1]}
		if seen[t.Key()] {
			continue
		}
		seen[t.Key()] = true
		for j := i + 1; j < len(lines) && j < i+40; j++ {
			n := lines[j]
			if vitestFailRe.MatchString(n) {
				break
			}
			s := strings.TrimSpace(n)
			if t.Message == "" && s != "" && !strings.HasPrefix(s, "❯") && !strings.HasPrefix(s, "⎯") {
				t.Message = clip(s)
			}
			if f := vitestLocRe.FindStringSubmatch(n); f != nil {
				t.File, t.Line = f[1], atoi(f[2])
				break
			}
		}
		r.Failed = append(r.Failed, t)
	}
	// Tests the tree lists as failed that no FAIL block told about (vitest prints the blocks
	// for some of them only, and a log may be cut).
	file := ""
	for i, l := range lines {
		if m := vitestFileRe.FindStringSubmatch(l); m != nil {
			file = m[1]
			continue
		}
		m := vitestCrossRe.FindStringSubmatch(l)
		if m == nil || file == "" {
			continue
		}
		t := Test{Runner: "vitest", Name: m[1], Package: file, File: file}
		if i+1 < len(lines) {
			if msg, ok := strings.CutPrefix(strings.TrimSpace(lines[i+1]), "→ "); ok {
				t.Message = clip(msg)
			}
		}
		if seen[t.Key()] {
			for k := range r.Failed {
				if r.Failed[k].Key() == t.Key() && r.Failed[k].Message == "" {
					r.Failed[k].Message = t.Message
				}
			}
			continue
		}
		seen[t.Key()] = true
		r.Failed = append(r.Failed, t)
	}
	vitestSuites(lines, r)
	for _, l := range lines {
		if m := vitestCountsRe.FindStringSubmatch(l); m != nil && strings.Contains(m[1], "failed") {
			p, _ := counts(m[1], "passed")
			r.Passed, r.Total = p, atoi(m[2])
		}
	}
}

// vitestSuiteRe: a file vitest could not run, under "Failed Suites" (" FAIL  a.test.ts [ a.test.ts ]").
var vitestSuiteRe = lazyre.New(`^\s*FAIL\s+(\S+) \[ \S+ \]\s*$`)

// vitestSuites reads the files that failed to run: vitest lists those that failed the same way
// together, then the error and its frames once.
func vitestSuites(lines []string, r *Tests) {
	seen := map[string]bool{}
	for i := 0; i < len(lines); i++ {
		if !vitestSuiteRe.MatchString(lines[i]) {
			continue
		}
		var group []Test
		for ; i < len(lines); i++ {
			m := vitestSuiteRe.FindStringSubmatch(lines[i])
			if m == nil {
				break
			}
			group = append(group, Test{Runner: "vitest", Name: m[1], File: m[1]})
		}
		msg, file, line := "", "", 0
		for j := i; j < len(lines) && j < i+30 && !vitestSuiteRe.MatchString(lines[j]); j++ {
			s := strings.TrimSpace(lines[j])
			if msg == "" && s != "" {
				msg = clip(s)
			}
			if f := vitestLocRe.FindStringSubmatch(lines[j]); f != nil && !strings.Contains(f[1], "node_modules") {
				file, line = f[1], atoi(f[2])
				break
			}
		}
		for _, t := range group {
			if seen[t.Name] {
				continue
			}
			seen[t.Name] = true
			t.Message = msg
			if file != "" {
				t.File, t.Line = file, line
			}
			r.Suites = append(r.Suites, t)
		}
		i--
	}
}
