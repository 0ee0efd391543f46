package attempt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// What a failed verify's message quotes. The test runners' readers and the decisive line's
// choice are autopsy/evidence's, so the record and the autopsy's report quote the same line; the
// record adds what only a runner needs: pytest's tests that errored rather than failed, and the
// signal or exception a runtime died of.

// verifySummary says what a failed verify's output says: its failing tests (the first with its
// file, line and message) when a test runner printed them (go test, pytest, jest, vitest, cargo
// test…), a build that failed, else the line that names the error (not the help or the "Error
// 2" a tool prints after it), else its last line.
func verifySummary(out []byte) string {
	text := string(out)
	r := evidence.ParseTests(text)
	if s := withErrors(evidence.Lines(text), r); s != "" {
		return ": " + s
	}
	if s := r.Summary(); s != "" {
		return ": " + s
	}
	if l := evidence.DecisiveLine(text); l != "" {
		if d := agentcli.DiedOf(out); d != "" {
			l = d
		}
		return ": " + l
	}
	if s := diffSays(evidence.Lines(text)); s != "" {
		return ": " + s
	}
	return agentcli.LastLineSuffix(out)
}

// diffHeadRe: a file's head in git's diff ("diff --git a/db/schema.rb b/db/schema.rb").
var diffHeadRe = lazyre.New(`^diff --git a/(\S+) b/\S+$`)

// diffSays names the files a verify printed a diff of and nothing else said why (a
// `git diff --exit-code` after a generator or a formatter): its last line ("end", "+}") would
// say nothing. "" when it printed no diff.
func diffSays(lines []string) string {
	var files []string
	for _, l := range lines {
		if m := diffHeadRe.FindStringSubmatch(l); m != nil && !slices.Contains(files, m[1]) {
			files = append(files, m[1])
		}
	}
	switch {
	case len(files) == 0:
		return ""
	case len(files) > 3:
		return fmt.Sprintf("it printed a diff of %s and %d more files", strings.Join(files[:3], ", "), len(files)-3)
	}
	return "it printed a diff of " + strings.Join(files, ", ")
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
