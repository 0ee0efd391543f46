package autopsy

import (
	"path"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// The verify's outputs compared: each rejected attempt's with the others' and with the
// verify run on the task's base tree — the same failure, a different one, the task itself.

// qualityViews are the rejected attempts and what each one's verify said.
func (f *facts) qualityViews() ([]storeAttempt, []verifyView) {
	var as []storeAttempt
	var vs []verifyView
	for _, a := range f.failed {
		if a.Class == cQuality {
			as = append(as, a)
			vs = append(vs, f.verifyView(a))
		}
	}
	return as, vs
}

// verifyBrokenOnBase: verify fails on the base tree exactly as after the last attempts, and what
// it prints names no failing test, or the tests do not even load (a build or collection
// error): the command cannot pass as written.
func (f *facts) verifyBrokenOnBase() bool {
	if !f.base.failed() || !f.allClasses(cQuality) {
		return false
	}
	base := readVerify(f.base.Output)
	if len(base.tests) > 0 && len(base.build) == 0 {
		return false // tests that fail: a question of the code, not of the command
	}
	if len(base.tests) == 0 && f.promptNamesBuild(base.build) {
		return false // the build fails where the prompt asks for the change: the task itself
	}
	if _, _, here := f.buildFileFails(); here {
		return false // the build definition fails with this machine's build tool
	}
	if _, _, machine := f.machineSays(); machine {
		return false // the tool says what this machine lacks: not the command's fault
	}
	if strings.TrimSpace(f.base.Output) == "" || onlyExits(f.base.Output) || base.saysNothing() && endsOnExit(f.base.Output) {
		return false // "make: *** [Makefile:31: check] Error 1", or no word at all: nothing says it is the command
	}
	if base.saysNothing() && (reportElsewhereRe.MatchString(f.base.Output) || onlyLogs(f.base.Output)) {
		return false // "JUNIT report written to reports/visual.xml": what failed is in a file, not here
	}
	if testCrashRe.MatchString(f.base.Output) || evidence.ExitOf(f.base.ExitCode, f.base.Output).Kind == evidence.Killed {
		return false // the tests crashed (a segfault, the OOM killer): a crash, not a wrong command
	}
	// The attempts the run stopped on (the last two): one before them that failed otherwise
	// (broke the build, say) was on the way.
	_, vs := f.qualityViews()
	for _, v := range vs[max(0, len(vs)-2):] {
		if !v.sameAs(base) {
			return false
		}
	}
	return true
}

// reportElsewhereRe: a test runner saying its results went to a file (a JUnit reporter).
var reportElsewhereRe = lazyre.New(`(?i)\breport (?:written|saved|generated) (?:to|at|in)\b|\bresults? (?:written|saved) to\b`)

// onlyLogs: every line is a structured log record ({"level":30,…,"msg":…}) and none says
// anything went wrong: the program's own chatter, not why the command failed.
func onlyLogs(text string) bool {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if !strings.HasPrefix(l, "{") || causeWordsRe.MatchString(l) {
			return false
		}
		n++
	}
	return n > 0
}

// onlyExits: every line of text says only that something exited non-zero (make's "*** Error 1",
// "exit status 2"), nothing of why.
func onlyExits(text string) bool {
	said := false
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		d := digitsRe.ReplaceAllString(l, "#")
		if summaryRe.MatchString(d) || tallyLineRe.MatchString(l) {
			continue // "Tasks: 7 successful, 8 total", "Failed: @app/api#test": counts, not causes
		}
		if !makeErrorRe.MatchString(l) && !exitOnlyRe.MatchString(d) {
			return false
		}
		said = true
	}
	return said
}

// endsOnExit: the last line says only that something exited non-zero (compose's "service
// \"init\" didn't complete successfully: exit 1", turbo's "run failed: command exited (1)").
// (npm's trailer after its "Exit status 1" — where the log is, that it is not npm's fault —
// says nothing more.)
func endsOnExit(text string) bool {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		d := digitsRe.ReplaceAllString(l, "#")
		switch {
		case l == "":
		case makeErrorRe.MatchString(l) || exitOnlyRe.MatchString(d):
			return true
		case !genericFailRe.MatchString(d):
			return false
		}
	}
	return false
}

var (
	makeErrorRe = lazyre.New(`^(?:g?make)(?:\[\d+\])?: \*\*\* \[[^\]]*\] Error \d+$|^exit status \d+$|\bexited \(\d+\)$`)
	tallyLineRe = lazyre.New(`^(?:Tasks|Cached|Time|Failed|Duration|Ran):\s`)
)

// brokeBuild: an attempt's verify output shows a build or syntax error the base tree did not
// have.
func (f *facts) brokeBuild() (storeAttempt, bool) {
	if f.base.failed() && len(readVerify(f.base.Output).build) > 0 {
		return storeAttempt{}, false
	}
	as, vs := f.qualityViews()
	for i := len(as) - 1; i >= 0; i-- {
		if len(vs[i].build) > 0 {
			if vs[i].checks == len(vs[i].build) && f.untouchedByAll(vs[i].build) {
				return storeAttempt{}, false // a linter's complaints about files no attempt changed
			}
			return as[i], true
		}
	}
	return storeAttempt{}, false
}

// untouchedByAll: the lines name files ("path:12:3: …") and no attempt of the task changed
// any of them (false when a diff cannot be read or is too long to list).
func (f *facts) untouchedByAll(lines []string) bool {
	if f.repo == nil {
		return false
	}
	var files []string
	for _, l := range lines {
		if m := fileLineRe.FindStringSubmatch(l); m != nil {
			files = append(files, strings.TrimPrefix(m[1], "./"))
		} // (else a tally: "Found 3 errors.")
	}
	for _, a := range f.attempts {
		if a.TaskID != f.task.ID || a.PreTree == "" || a.Tree == "" {
			continue
		}
		d := f.diffOf(a)
		if d == nil || d.Files > len(d.Paths) {
			return false
		}
		for _, p := range d.Paths {
			if slices.Contains(files, p.Path) {
				return false
			}
		}
	}
	return len(files) > 0
}

var fileLineRe = lazyre.New(`^(\S+?):\d+(?::\d+)?:? `)

// progress: an attempt fixed some of the tests that fail on the base tree and broke none.
func (f *facts) progress() (storeAttempt, bool) {
	if !f.base.failed() {
		return storeAttempt{}, false
	}
	base := readVerify(f.base.Output).tests
	if len(base) == 0 {
		return storeAttempt{}, false
	}
	as, vs := f.qualityViews()
	best, bestN := -1, len(base)
	for i := range as {
		if len(vs[i].build) == 0 && len(vs[i].tests) > 0 && len(vs[i].tests) <= bestN && len(vs[i].tests) < len(base) && subset(vs[i].tests, base) {
			best, bestN = i, len(vs[i].tests)
		}
	}
	if best < 0 {
		return storeAttempt{}, false
	}
	return as[best], true
}

// sameTestsAsBase: the tests failing on the base tree are exactly those failing after every
// attempt.
func (f *facts) sameTestsAsBase() bool {
	if !f.base.failed() || !f.allClasses(cQuality) {
		return false
	}
	base := readVerify(f.base.Output)
	_, vs := f.qualityViews()
	if len(base.tests) == 0 {
		// A build that fails where the prompt asks for the change ("create RetryPolicy so that
		// RetryPolicyTest.java compiles"), the same after every attempt.
		if !f.promptNamesBuild(base.build) {
			return false
		}
		for _, v := range vs {
			if len(v.tests) > 0 || !slices.Equal(normalised(v.build), normalised(base.build)) {
				return false
			}
		}
		return true
	}
	for _, v := range vs {
		if !slices.Equal(v.tests, base.tests) {
			return false
		}
	}
	return true
}

// promptNamesBuild: the task's prompt names a file a build error is in (its base name).
func (f *facts) promptNamesBuild(build []string) bool {
	if f.def == nil {
		return false
	}
	for _, l := range build {
		if m := fileLineRe.FindStringSubmatch(strings.TrimPrefix(l, "does not build: ")); m != nil {
			if b := path.Base(m[1]); len(b) >= 5 && strings.Contains(f.def.Prompt, b) {
				return true
			}
		}
	}
	return false
}

// verifyDiffers: the rejected attempts failed different tests.
func (f *facts) verifyDiffers() bool {
	_, vs := f.qualityViews()
	for _, v := range vs[min(1, len(vs)):] {
		if !v.sameAs(vs[0]) {
			return true
		}
	}
	return false
}

// gitDiffRe: git's own diff header, as `git diff` prints it.
var gitDiffRe = lazyre.New(`(?m)^diff --git a/(\S+) b/`)

// rejectsOwnChange: the last rejected attempts (two, or the one) failed the verify with git's
// diff of files the attempt changed and nothing else failing.
func (f *facts) rejectsOwnChange() bool {
	as, vs := f.qualityViews()
	if len(as) == 0 || f.last().Class != cQuality || f.repo == nil {
		return false
	}
	for i := len(as) - 1; i >= max(0, len(as)-2); i-- {
		a := as[i]
		ms := gitDiffRe.FindAllStringSubmatch(f.verifyOutput[key(a.TaskID, a.N)], -1)
		if len(ms) == 0 || len(vs[i].tests) > 0 || len(vs[i].build) > 0 {
			return false
		}
		d := f.diffOf(a)
		if d == nil {
			return false
		}
		for _, m := range ms {
			if !slices.ContainsFunc(d.Paths, func(p PathStat) bool { return p.Path == m[1] }) {
				return false
			}
		}
	}
	return true
}

// contradictRe: an agent saying what it was asked for cannot all be true.
var contradictRe = lazyre.New(`(?i)\bcontradict|\bconflicting (?:tests|requirements|expectations)|mutually exclusive|cannot (?:both|satisfy both)|can't (?:both|satisfy both)|incompatible (?:tests|requirements|expectations)`)

// saidContradict is the line in which an attempt's agent said the tests contradict, or "".
func (f *facts) saidContradict() string {
	for i := len(f.failed) - 1; i >= 0; i-- {
		a := f.failed[i]
		for _, l := range evidence.Lines(f.agentOf(a).LastMessage + "\n" + f.output[key(a.TaskID, a.N)]) {
			if contradictRe.MatchString(l) {
				return clip(strings.TrimSpace(l))
			}
		}
	}
	return ""
}

// testsPullApart: two rejected attempts failed disjoint sets of tests that all fail on the base
// (each made pass what the other failed), and an attempt's agent said they contradict.
func (f *facts) testsPullApart() bool {
	if !f.base.failed() || f.saidContradict() == "" {
		return false
	}
	base := evidence.ParseTests(f.base.Output).Keys()
	as, _ := f.qualityViews()
	for i := range as {
		for j := i + 1; j < len(as); j++ {
			a, b := f.testsOf(as[i]).Keys(), f.testsOf(as[j]).Keys()
			if len(a) > 0 && len(b) > 0 && subset(a, base) && subset(b, base) && !slices.ContainsFunc(a, func(k string) bool { return slices.Contains(b, k) }) {
				return true
			}
		}
	}
	return false
}
