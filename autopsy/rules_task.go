package autopsy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// verifyOutOfTime: the verify ran out of time in the attempt the run stopped on, waiting in
// watch mode, or in every attempt wherever it was (a cold build's progress differs from run to
// run): the limit or the command, not the agent's change.
func (f *facts) verifyOutOfTime() bool {
	if !f.allClasses(cQuality) || f.lastOf(cQuality).Code != "verify_timeout" && f.verifyEndOf(f.lastOf(cQuality)).Kind != evidence.TimedOut {
		return false
	}
	if f.lastMatches(watchRe) {
		return true
	}
	for _, a := range f.failed {
		if a.Code != "verify_timeout" && f.verifyEndOf(a).Kind != evidence.TimedOut {
			return false
		}
	}
	return len(f.failed) >= 2 || f.base.failed() && evidence.ExitOf(f.base.ExitCode, f.base.Output).Kind == evidence.TimedOut
}

// waitFrameRe: a stack frame of a call waiting on the network (Python's faulthandler dump, a
// Go goroutine dump).
var waitFrameRe = lazyre.New(`File "[^"]*/(?:socket|ssl|http/client)\.py", line \d+ in (?:create_connection|connect|recv|recv_into|read|readinto|do_handshake|getaddrinfo)\b|^net\.\(\*(?:netFD|sysDialer)\)\.(?:connect|dial\w*)|^net/http\.\(\*persistConn\)\.roundTrip`)

// projectFrameRe: a Python frame of the project's own code (not the standard library's or an
// installed package's).
var projectFrameRe = lazyre.New(`File "([^"]+\.py)", line (\d+) in (\w+)`)

// hungOnNetwork is the network frame the timed-out verify waited in, and the project's frame
// that made the call.
func (f *facts) hungOnNetwork() (wait, caller string, ok bool) {
	if !f.verifyOutOfTime() {
		return "", "", false
	}
	a := f.lastOf(cQuality)
	for _, l := range evidence.Lines(f.verifyOutput[key(a.TaskID, a.N)]) {
		l = strings.TrimSpace(l)
		if wait == "" && waitFrameRe.MatchString(l) {
			wait = clip(l)
		} else if m := projectFrameRe.FindStringSubmatch(l); wait != "" && caller == "" && m != nil && !strings.Contains(m[1], "site-packages") && !strings.HasPrefix(m[1], "/usr/lib") {
			caller = m[1]
		}
	}
	return wait, caller, wait != ""
}

var hungOnNetworkRule = Rule{
	Name: "verify-hangs-on-network", Category: Environment, Confidence: 0.83,
	Match: func(f *facts) bool { _, _, ok := f.hungOnNetwork(); return ok },
	Why: func(f *facts) string {
		w, c, _ := f.hungOnNetwork()
		return fmt.Sprintf("the verify ran out of time waiting on the network (%s), called from %s: a service it reaches does not answer from this machine", w, orWord(c, "the tests"))
	},
	Suggest: func(f *facts) Suggestion {
		_, c, _ := f.hungOnNetwork()
		first := "env | grep -i -E '_proxy|_url'  # the proxy and the services' addresses, to check with curl"
		if c != "" {
			first = "grep -n -E 'https?://|_URL|host' " + shellQuote(c) + "  # the host it calls, to check with curl"
		}
		return Suggestion{Text: "make the service reachable from this machine (VPN, proxy, firewall), or give the call a timeout and mock it in the tests; then run the task again",
			Commands: []string{first, f.retry()}}
	},
	Lines: func(f *facts) []string { w, _, _ := f.hungOnNetwork(); return []string{w} },
}

// budgetBelowAttemptRule: the spend limit was spent by the first attempt alone. However the
// attempt went, no second one can run under that limit: the setting, not the agent, stopped it.
var budgetBelowAttemptRule = Rule{
	Name: "budget-below-one-attempt", Category: WorkflowBug, Confidence: 0.55,
	Match: func(f *facts) bool {
		a := f.last()
		return a.Class == cBudget && (a.Code == agentcli.CodeMaxCost || a.Code == agentcli.CodeRunMaxCost) && len(f.failed) == 1 && a.N <= 1
	},
	Why: func(f *facts) string {
		return "one attempt spent the whole limit, so no retry could run: " + f.last().Message
	},
	Suggest: func(f *facts) Suggestion {
		knob := "`max_cost_usd` of task " + f.task.ID + " in " + f.fileName()
		if f.last().Code == agentcli.CodeRunMaxCost {
			knob = "the run's --max-cost"
		}
		return Suggestion{Text: fmt.Sprintf("raise %s above what one attempt costs (this one: the spend in the message) times the attempts you allow, then run the task again", knob),
			Commands: []string{f.fixed()}}
	},
}

// The verify runs against a database that outlives the attempts (the tree is reset between
// them, the database is not): a later attempt fails on what an earlier one left there — a
// migration applied with other contents, a table that already exists.

// leftoverStateRe: a migration tool or a database refusing what an earlier run left behind.
var leftoverStateRe = lazyre.New(`(?i)Migration checksum mismatch for migration|Detected applied migration not resolved locally|Validate failed: Migrations have failed validation|Can't locate revision identified by|(?:relation|table) "?[\w.]+"? already exists|Table '[\w.]+' already exists|duplicate key value violates unique constraint "schema_migrations|has already been applied with a different checksum`)

// leftoverState is the line with which a later attempt's verify refused what an earlier attempt
// left outside the tree, when the first rejected attempt's verify did not say it.
func (f *facts) leftoverState() (string, bool) {
	as, _ := f.qualityViews()
	if len(as) < 2 || f.last().Class != cQuality {
		return "", false
	}
	said := func(a storeAttempt) string {
		for _, l := range evidence.Lines(f.verifyOutput[key(a.TaskID, a.N)] + "\n" + a.Message) {
			if leftoverStateRe.MatchString(l) {
				return clip(strings.TrimSpace(l))
			}
		}
		return ""
	}
	if said(as[0]) != "" {
		return "", false // the first attempt met it too: it was there before the run
	}
	for _, a := range as[1:] {
		if said(a) == "" {
			return "", false
		}
	}
	return said(as[len(as)-1]), true
}

var leftoverStateRule = Rule{
	Name: "verify-state-outlives-attempts", Category: WorkflowBug, Confidence: 0.72,
	Match: func(f *facts) bool { _, ok := f.leftoverState(); return ok },
	Why: func(f *facts) string {
		l, _ := f.leftoverState()
		return "after the first attempt the verify failed on state an earlier attempt left in the database (the tree is reset between attempts, the database is not): " + l
	},
	Suggest: func(f *facts) Suggestion {
		return Suggestion{Text: fmt.Sprintf("make `verify.command` of task %s start from a fresh database (drop and recreate it, flyway clean, a throw-away container) in %s; then run the task again", f.task.ID, f.fileName()),
			Commands: []string{f.fixed()}, Change: "verify.command: start from a fresh database"}
	},
	Lines: func(f *facts) []string { l, _ := f.leftoverState(); return []string{l} },
}

// The verify queries a database object the attempt's own file defines (a dbt model, a
// migration's table) and the database says it does not exist: the verify does not build or
// migrate what it tests.

// missingRelationRe: a database naming an object it does not have.
var missingRelationRe = lazyre.New(`(?i)relation "(?:[\w]+\.)*(\w+)" does not exist|Table '(?:\w+\.)*(\w+)' doesn't exist|no such table: (?:\w+\.)*(\w+)|Object '(?:\w+\.)*(\w+)' does not exist|Table (?:\w+\.)*(\w+) was not found`)

// unbuiltRelation is the object the verify missed and the file of the attempt's that defines it.
func (f *facts) unbuiltRelation() (string, string, bool) {
	as, _ := f.qualityViews()
	if len(as) == 0 || f.last().Class != cQuality || f.base.failed() {
		return "", "", false
	}
	a := as[len(as)-1]
	m := missingRelationRe.FindStringSubmatch(f.verifyOutput[key(a.TaskID, a.N)])
	if m == nil {
		return "", "", false
	}
	name := strings.ToLower(firstNonEmpty(m[1:]...))
	d := f.diffOf(a)
	if d == nil {
		return "", "", false
	}
	for _, p := range d.Paths {
		base := strings.ToLower(p.Path[strings.LastIndexByte(p.Path, '/')+1:])
		if p.Action == "add" && strings.TrimSuffix(base, base[strings.LastIndexByte(base, '.')+1:]) == name+"." {
			return clip(strings.TrimSpace(m[0])), p.Path, true
		}
	}
	return "", "", false
}

var unbuiltRelationRule = Rule{
	Name: "verify-does-not-build-the-change", Category: WorkflowBug, Confidence: 0.74,
	Match: func(f *facts) bool { _, _, ok := f.unbuiltRelation(); return ok },
	Why: func(f *facts) string {
		l, p, _ := f.unbuiltRelation()
		return fmt.Sprintf("the verify queries what the attempt's new %s defines, and the database does not have it: the verify does not build or migrate what it tests (%s)", p, l)
	},
	Suggest: func(f *facts) Suggestion {
		return Suggestion{Text: fmt.Sprintf("make `verify.command` of task %s build what it tests first (dbt build instead of dbt test, migrate before the tests) in %s; then run the task again", f.task.ID, f.fileName()),
			Commands: []string{f.fixed()}, Change: "verify.command: build or migrate before the tests"}
	},
	Lines: func(f *facts) []string { l, _, _ := f.unbuiltRelation(); return []string{l} },
}

// The attempts fixed the tests that failed on the base, and what still fails is another step of
// the verify (the docs build, a linter) that failed on the base in the same words: it was broken
// before the task and the task does not ask for it.

// preexistingStep is the first line of what still fails, when every line of it that says a
// cause is a line of the base's output too and the base's failing tests pass now.
func (f *facts) preexistingStep() (string, bool) {
	if !f.base.failed() || !f.allClasses(cQuality) {
		return "", false
	}
	base := readVerify(f.base.Output)
	a := f.lastOf(cQuality)
	if len(base.tests) == 0 || len(f.verifyView(a).tests) > 0 || f.noAttemptChanged() {
		return "", false
	}
	had := map[string]bool{}
	for _, l := range evidence.Lines(f.base.Output) {
		had[volatileRe.ReplaceAllString(strings.TrimSpace(l), "#")] = true
	}
	first := ""
	for _, l := range evidence.Lines(f.verifyOutput[key(a.TaskID, a.N)]) {
		l = strings.TrimSpace(l)
		if l == "" || !decisiveRe.MatchString(l) {
			continue
		}
		if !had[volatileRe.ReplaceAllString(l, "#")] {
			return "", false
		}
		if first == "" {
			first = clip(l)
		}
	}
	return first, first != ""
}

var preexistingStepRule = Rule{
	Name: "preexisting-step-failure", Category: WorkflowBug, Confidence: 0.79,
	Match: func(f *facts) bool { _, ok := f.preexistingStep(); return ok },
	Why: func(f *facts) string {
		l, _ := f.preexistingStep()
		return "the tests that failed on the tree the task started from pass now; what still fails failed there too, in the same words, and the task does not ask for it: " + l
	},
	Suggest: func(f *facts) Suggestion {
		return Suggestion{Text: fmt.Sprintf("fix that step first, or narrow `verify.command` of task %s to what the task changes, in %s; then run the task again (the attempts' own work passes)", f.task.ID, f.fileName()),
			Commands: []string{f.fixed()}, Change: "verify.command: without the step that failed before the task"}
	},
	Lines: func(f *facts) []string { l, _ := f.preexistingStep(); return []string{l} },
}

// Screenshot comparisons that fail on the tree the task started from as after the attempts: the
// baselines were made where fonts and rendering differ from this machine's.

// screenshotRe: a visual test runner's word that an image differs from its baseline.
var screenshotRe = lazyre.New(`(?i)toHaveScreenshot|toMatchSnapshot.*\.png|pixels \(ratio [\d.]+ of all image pixels\) are different|Screenshot comparison failed|Image (?:snapshot )?(?:mismatch|comparison failed)|images? (?:do not|don't) match`)

// screenshotsDiffer are the failing visual tests, when every test that fails after the last
// attempt failed on the base too and the verify says they are image comparisons.
func (f *facts) screenshotsDiffer() ([]string, bool) {
	if !f.base.failed() || !f.allClasses(cQuality) {
		return nil, false
	}
	a := f.lastOf(cQuality)
	now := f.testsOf(a).Keys()
	base := evidence.ParseTests(f.base.Output).Keys()
	if len(now) == 0 || !subset(now, base) || !screenshotRe.MatchString(f.verifyOutput[key(a.TaskID, a.N)]) || !screenshotRe.MatchString(f.base.Output) {
		return nil, false
	}
	for _, t := range f.testsOf(a).Failed {
		if t.Message != "" && !screenshotRe.MatchString(t.Message) {
			return nil, false // a test that fails on a value, not on an image
		}
	}
	return now, true
}

var screenshotsRule = Rule{
	Name: "screenshots-differ-here", Category: Environment, Confidence: 0.81,
	Match: func(f *facts) bool { _, ok := f.screenshotsDiffer(); return ok },
	Why: func(f *facts) string {
		ts, _ := f.screenshotsDiffer()
		return fmt.Sprintf("the screenshot comparisons fail on the tree the task started from as after the attempts (%s): this machine renders differently (its fonts, its browser build) from where the baselines were made", strings.Join(ts, ", "))
	},
	Suggest: func(f *facts) Suggestion {
		return Suggestion{Text: "run the visual tests where the baselines were made (the browser's docker image, the CI runner), or give this machine the browsers' fonts and libraries; do not update the baselines from here. Then run the task again",
			Commands: []string{"npx playwright install-deps  # the fonts and libraries the browsers render with", f.retry()}}
	},
	Lines: func(f *facts) []string { return f.testLines(f.lastOf(cQuality)) },
}

// jest in CI mode does not write a snapshot a new test asks for: the verify fails until someone
// writes it without --ci, whatever the agent does.
var snapshotNotWrittenRe = lazyre.New(`New snapshot was not written\. The update flag must be explicitly passed`)

var snapshotCIRule = Rule{
	Name: "verify-will-not-write-snapshots", Category: WorkflowBug, Confidence: 0.8,
	Match: func(f *facts) bool {
		as, _ := f.qualityViews()
		if len(as) == 0 || f.last().Class != cQuality {
			return false
		}
		for _, a := range as {
			if !snapshotNotWrittenRe.MatchString(f.verifyOutput[key(a.TaskID, a.N)]) {
				return false
			}
		}
		return true
	},
	Why: func(f *facts) string {
		return "jest runs in CI mode (--ci) and does not write the new snapshots the attempts' tests ask for: \"New snapshot was not written\", after every attempt"
	},
	Suggest: func(f *facts) Suggestion {
		return Suggestion{Text: fmt.Sprintf("let the new snapshots be written once (run jest without --ci, or with -u, as the agent's step or by hand) and keep --ci in `verify.command` of task %s in %s for the check; then run the task again", f.task.ID, f.fileName()),
			Commands: []string{f.fixed()}, Change: "verify.command: write the new snapshots once (jest -u), then check with --ci"}
	},
	Lines: func(f *facts) []string { return []string{f.lastMatch(snapshotNotWrittenRe)} },
}

// The verify's own command names a database the server does not have (a typo of the one the
// project's compose file creates): no attempt can pass.

// unknownDatabaseRe: MySQL's and PostgreSQL's words for a database they do not have.
var unknownDatabaseRe = lazyre.New(`Unknown database '([\w-]+)'|database "([\w-]+)" does not exist`)

// verifyNamesMissingDB is the database and the server's line, when the verify command names it.
func (f *facts) verifyNamesMissingDB() (string, string, bool) {
	if !f.allClasses(cQuality) {
		return "", "", false
	}
	a := f.lastOf(cQuality)
	m := unknownDatabaseRe.FindStringSubmatch(f.verifyOutput[key(a.TaskID, a.N)])
	if m == nil {
		return "", "", false
	}
	db := firstNonEmpty(m[1:]...)
	if !hasWord(strings.Join(f.verifyArgv(), " "), db) {
		return "", "", false
	}
	return db, clip(m[0]), true
}

var missingDBRule = Rule{
	Name: "verify-names-missing-database", Category: WorkflowBug, Confidence: 0.82,
	Match: func(f *facts) bool { _, _, ok := f.verifyNamesMissingDB(); return ok },
	Why: func(f *facts) string {
		db, l, _ := f.verifyNamesMissingDB()
		return fmt.Sprintf("the verify command names the database %s, which the server does not have: %s", db, l)
	},
	Suggest: func(f *facts) Suggestion {
		db, _, _ := f.verifyNamesMissingDB()
		return Suggestion{Text: fmt.Sprintf("name the database the project creates (its compose file or Makefile) in `verify.command` of task %s in %s, or create %s; then run the task again", f.task.ID, f.fileName(), db),
			Commands: []string{f.fixed()}, Change: "verify.command: the database " + db + " does not exist"}
	},
}

// Two tasks of the same run, not ordered by needs:, changed the same files: the one applied
// second meets the first's change. The task file lets them race; nothing failed.

// succeededPaths are the paths a task's succeeded attempt changed.
func (f *facts) succeededPaths(t store.Task) []string {
	var out []string
	for _, a := range t.Attempts {
		if a.State != store.AttemptSucceeded {
			continue
		}
		if d := f.diffOf(a); d != nil {
			for _, p := range d.Paths {
				out = append(out, p.Path)
			}
		}
	}
	return out
}

// overlappingTask is the other task of the run whose applied change touches a path the held
// task's change touches, and that path.
func (f *facts) overlappingTask() (string, string, bool) {
	if f.task == nil || f.task.State != store.TaskBlocked || f.task.Reason != reasonApply {
		return "", "", false
	}
	mine := f.succeededPaths(*f.task)
	for _, t := range f.run.Tasks {
		if t.ID == f.task.ID || t.State != store.TaskSucceeded {
			continue
		}
		for _, p := range f.succeededPaths(t) {
			if slices.Contains(mine, p) {
				return t.ID, p, true
			}
		}
	}
	return "", "", false
}

var overlapRule = Rule{
	Name: "parallel-tasks-overlap", Category: WorkflowBug, Confidence: 0.96,
	Match: func(f *facts) bool { _, _, ok := f.overlappingTask(); return ok },
	Why: func(f *facts) string {
		other, p, _ := f.overlappingTask()
		return fmt.Sprintf("tasks %s and %s of this run both changed %s, and nothing orders them: %s was applied first, and %s's change (%s) waits, not applied, so neither was lost",
			other, f.task.ID, p, other, f.task.ID, f.applyAddr())
	},
	Suggest: func(f *facts) Suggestion {
		other, _, _ := f.overlappingTask()
		addr := f.applyAddr()
		return Suggestion{Text: fmt.Sprintf("merge this change by hand now (the first two commands), then give task %s `needs: [%s]` in %s so the next run makes one change on top of the other",
			f.task.ID, other, f.fileName()),
			Commands: []string{"mulligan apply " + addr + " --dry-run", "mulligan apply " + addr + " --merge", "mulligan resume " + f.run.ID}}
	},
}

// The verify compares with a git ref this clone does not have (origin/main in a clone without
// that remote, a tag not fetched): git refuses the same way whatever the attempt changed.
var missingRefRe = lazyre.New(`fatal: ambiguous argument '([^']+)': unknown revision or path not in the working tree|fatal: bad revision '([^']+)'|fatal: Needed a single revision`)

func (f *facts) missingRef() (string, bool) {
	as, _ := f.qualityViews()
	if len(as) == 0 || len(as) != len(f.failed) {
		return "", false
	}
	line := ""
	for _, a := range as {
		m := missingRefRe.FindString(f.verifyOutput[key(a.TaskID, a.N)])
		if m == "" {
			return "", false
		}
		line = m
	}
	return line, true
}

var missingRefRule = Rule{
	Name: "verify-needs-missing-ref", Category: WorkflowBug, Confidence: 0.8,
	Match: func(f *facts) bool { _, ok := f.missingRef(); return ok },
	Why: func(f *facts) string {
		l, _ := f.missingRef()
		return "the verify asks git for a ref this clone does not have, after every attempt: " + l
	},
	Suggest: func(f *facts) Suggestion {
		return Suggestion{Text: fmt.Sprintf("make `verify.command` of task %s compare with a ref this clone has (the base commit, a local branch), or fetch the ref before the run, in %s; then run the task again", f.task.ID, f.fileName()),
			Commands: []string{f.fixed()}, Change: "verify.command: compare with a ref this clone has"}
	},
	Lines: func(f *facts) []string { l, _ := f.missingRef(); return []string{l} },
}

// A run that failed before any task had an attempt: mulligan itself stopped it (its base
// snapshot could not be taken, its database refused). The message of the abort says why; a
// program of the machine's that mulligan needed and could not run is the machine's.

// abortMessage is the message the run's last abort recorded, or "".
func (f *facts) abortMessage() string {
	msg := ""
	for _, ev := range f.events {
		if ev.Type != store.EventRunStateChanged {
			continue
		}
		var p store.RunStateChanged
		if ev.Decode(&p) == nil && p.Message != "" {
			msg = p.Message
		}
	}
	return msg
}

// notFoundRe: a shell that could not find a program ("sh: 1: git-crypt: not found").
var notFoundRe = lazyre.New(`(?:sh: \d+: |bash: (?:line \d+: )?)([\w.+-]+): (?:command )?not found`)

// runAborted: the run failed before its tasks had an attempt, and its abort says why.
func (f *facts) runAborted() bool {
	return f.task == nil && (f.run.State == store.RunFailed || f.run.State == store.RunBlocked) && f.abortMessage() != ""
}

var runAbortedLackRule = Rule{
	Name: "run-aborted-lacks-program", Category: Environment, Confidence: 1,
	Match: func(f *facts) bool { return f.runAborted() && notFoundRe.MatchString(f.abortMessage()) },
	Why: func(f *facts) string {
		m := notFoundRe.FindStringSubmatch(f.abortMessage())
		return fmt.Sprintf("the run stopped before any attempt: mulligan needed the program %s, which this machine lacks: %s", m[1], clip(f.abortMessage()))
	},
	Suggest: func(f *facts) Suggestion {
		m := notFoundRe.FindStringSubmatch(f.abortMessage())
		return Suggestion{Text: fmt.Sprintf("install %s (the repository's git attributes run it as a filter, or a hook does), then run the task again", m[1]),
			Commands: []string{installProgram(m[1]), f.rerun()}}
	},
	Lines: func(f *facts) []string { return []string{f.abortMessage()} },
}

var runAbortedRule = Rule{
	Name: "run-aborted", Category: ToolBug, Confidence: 1,
	Match: func(f *facts) bool { return f.runAborted() },
	Why: func(f *facts) string {
		return "the run stopped before any attempt, on an error of mulligan's: " + clip(f.abortMessage())
	},
	Suggest: func(f *facts) Suggestion {
		cmds := []string{}
		if f.commands["bug"] {
			cmds = append(cmds, "mulligan bug "+f.run.ID)
		}
		return Suggestion{Text: "this is mulligan's own error: write the bug bundle (nothing is sent) and report it, then try again", Commands: append(cmds, f.rerun())}
	},
	Lines: func(f *facts) []string { return []string{f.abortMessage()} },
}

// A path the verify cannot read lies in a git submodule the checkout never initialised: the
// machine's clone lacks it, whatever the attempt changed.

// submodulePathRe: a path in .gitmodules.
var submodulePathRe = lazyre.New(`(?m)^\s*path\s*=\s*(\S+)\s*$`)

// missingWordsRe: a tool that could not read, find or load something.
var missingWordsRe = lazyre.New(`(?i)no such file|not found|failed to read|does not exist|cannot find|could not find|does not contain|unable to update|failed to load`)

// submoduleMissing is the submodule and the verify's line that could not read in it.
func (f *facts) submoduleMissing() (string, string, bool) {
	as, _ := f.qualityViews()
	if f.repo == nil || len(as) == 0 || f.last().Class != cQuality {
		return "", "", false
	}
	a := as[len(as)-1]
	if a.PreTree == "" {
		return "", "", false
	}
	mods, err := f.repo.ReadPath(snapshot.NewHash(a.PreTree), ".gitmodules", 1<<16)
	if err != nil {
		return "", "", false
	}
	for _, m := range submodulePathRe.FindAllStringSubmatch(string(mods), -1) {
		p := strings.Trim(m[1], "/")
		for _, l := range evidence.Lines(f.verifyOutput[key(a.TaskID, a.N)]) {
			if strings.Contains(l, "/"+p+"/") || strings.Contains(l, " "+p+"/") || strings.HasSuffix(strings.TrimSpace(l), "/"+p) {
				if missingWordsRe.MatchString(l) {
					return p, clip(strings.TrimSpace(l)), true
				}
			}
		}
	}
	return "", "", false
}

var submoduleRule = Rule{
	Name: "submodule-not-checked-out", Category: Environment, Confidence: 0.87,
	Match: func(f *facts) bool { _, _, ok := f.submoduleMissing(); return ok },
	Why: func(f *facts) string {
		p, l, _ := f.submoduleMissing()
		return fmt.Sprintf("the verify cannot read %s, a git submodule this checkout never initialised: %s", p, l)
	},
	Suggest: func(f *facts) Suggestion {
		return Suggestion{Text: "check the submodules out in the repository (the agent's sandbox may not reach their remotes), then run the task again",
			Commands: []string{"git submodule update --init --recursive", f.retry()}}
	},
	Lines: func(f *facts) []string { _, l, _ := f.submoduleMissing(); return []string{l} },
}

// The agent's own command needed a program this machine lacks (mockgen for go generate, a
// linter), and the agent says that is what stops it: the machine's, not the change's.

// execNotFoundRe: a program the shell or a tool could not find.
var execNotFoundRe = lazyre.New(`exec: \\?"([\w.+-]+)\\?": executable file not found in \\?\$PATH|(?:^|[\s:])([\w.+-]+): command not found|sh: \d+: ([\w.+-]+): not found`)

// namedInstallRe: an install command the agent names for it.
var namedInstallRe = lazyre.New("`((?:go install|pip3? install|python3? -m pip install|npm (?:i|install) -g|cargo install|gem install|brew install|sudo apt(?:-get)? install(?: -y)?) [^`]+)`")

// agentLacksProgram is the program and the line, and the install the agent named, if any.
func (f *facts) agentLacksProgram() (prog, line, install string, ok bool) {
	a := f.last()
	if a.Class != cQuality {
		return "", "", "", false
	}
	ag := f.agentOf(a)
	said := ag.LastMessage + "\n" + ag.Said
	for _, l := range evidence.Lines(f.output[key(a.TaskID, a.N)]) {
		m := execNotFoundRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		prog = firstNonEmpty(m[1:]...)
		if !strings.Contains(said, prog) || !lacksSaidRe.MatchString(said) {
			continue
		}
		if im := namedInstallRe.FindStringSubmatch(said); im != nil {
			install = im[1]
		}
		return prog, clip(strings.TrimSpace(m[0])), install, true
	}
	return "", "", "", false
}

// lacksSaidRe: an agent saying something is not installed or must be.
var lacksSaidRe = lazyre.New(`(?i)not installed|isn't installed|is not in|isn't in|not found|install it|needs? to be installed|missing from`)

var agentLacksProgramRule = Rule{
	Name: "agent-lacks-program", Category: Environment, Confidence: 0.79,
	Match: func(f *facts) bool { _, _, _, ok := f.agentLacksProgram(); return ok },
	Why: func(f *facts) string {
		p, l, _, _ := f.agentLacksProgram()
		return fmt.Sprintf("the agent needed %s, which this machine lacks, and says that is what stops it (%s); the verify fails for what it could not do", p, l)
	},
	Suggest: func(f *facts) Suggestion {
		p, _, install, _ := f.agentLacksProgram()
		if install == "" {
			install = installProgram(p)
		}
		return Suggestion{Text: fmt.Sprintf("install %s on this machine (the first command), then run the task again", p), Commands: []string{install, f.retry()}}
	},
	Lines: func(f *facts) []string { _, l, _, _ := f.agentLacksProgram(); return []string{l} },
}

// The verify cannot find a file the attempt itself added: it looks at a copy of the tree that
// lacks it (nix flakes see only files git tracks; a build reading an installed package).

// missingPathRe: a tool naming a file it could not find.
var missingPathRe = lazyre.New(`(?:getting status of|No such file or directory|does not exist|not found|cannot find|could not find)[^'"\x60\n]*['"\x60]([^'"\x60\n]+)['"\x60]|['"\x60]([^'"\x60\n]+)['"\x60]:? (?:No such file or directory|does not exist)`)

// unseenNewFile is the verify's line and the attempt's new file it could not find.
func (f *facts) unseenNewFile() (string, string, bool) {
	as, _ := f.qualityViews()
	if len(as) == 0 || f.last().Class != cQuality || f.base.failed() {
		return "", "", false
	}
	a := as[len(as)-1]
	d := f.diffOf(a)
	if d == nil {
		return "", "", false
	}
	for _, l := range evidence.Lines(f.verifyOutput[key(a.TaskID, a.N)]) {
		m := missingPathRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		missing := firstNonEmpty(m[1:]...)
		for _, p := range d.Paths {
			if p.Action == "add" && strings.Contains(p.Path, "/") && strings.HasSuffix(missing, "/"+p.Path) {
				return clip(strings.TrimSpace(l)), p.Path, true
			}
		}
	}
	return "", "", false
}

var unseenNewFileRule = Rule{
	Name: "verify-misses-new-file", Category: WorkflowBug, Confidence: 0.74,
	Match: func(f *facts) bool { _, _, ok := f.unseenNewFile(); return ok },
	Why: func(f *facts) string {
		l, p, _ := f.unseenNewFile()
		return fmt.Sprintf("the verify cannot find %s, which the attempt added: it reads a copy of the tree without the new file (nix flakes see only what git tracks): %s", p, l)
	},
	Suggest: func(f *facts) Suggestion {
		return Suggestion{Text: fmt.Sprintf("make `verify.command` of task %s see untracked files (`git add -A` first, or `nix flake check path:.`) in %s; then run the task again", f.task.ID, f.fileName()),
			Commands: []string{f.fixed()}, Change: "verify.command: see the attempt's new files (git add -A first, or path:.)"}
	},
	Lines: func(f *facts) []string { l, _, _ := f.unseenNewFile(); return []string{l} },
}

// The verify's script has Windows line endings: its interpreter line asks for "bash\r", which
// no machine has. The repository's file, not the machine: convert it and keep it converted.

// crlfRe: an interpreter with a carriage return in its name (env's ‘bash\r’, the kernel's
// "/bin/bash^M: bad interpreter", bash's "$'\r': command not found").
var crlfRe = lazyre.New(`(?:env|sh|bash): ['‘]?[\w./-]+(?:\\r|\r)['’]?: No such file or directory|\^M: bad interpreter|\$'\\r': command not found`)

// crlfScript is the line that shows it, and the script of the verify's command it is in (the
// first file of the repository the command names); false when no rejected attempt's verify
// shows it.
func (f *facts) crlfScript() (line, script string, ok bool) {
	as, _ := f.qualityViews()
	if f.def == nil || f.def.Verify == nil || len(as) == 0 || f.last().Class != cQuality {
		return "", "", false
	}
	a := f.last()
	for _, l := range evidence.Lines(f.verifyOutput[key(a.TaskID, a.N)] + "\n" + a.Message) {
		if crlfRe.MatchString(l) {
			line = clip(strings.TrimSpace(l))
			break
		}
	}
	if line == "" {
		return "", "", false
	}
	for _, arg := range f.def.Verify.Command {
		if p := strings.TrimPrefix(arg, "./"); strings.Contains(p, ".") || strings.Contains(p, "/") {
			if f.repo != nil && a.PreTree != "" {
				if ok, err := f.repo.HasPath(snapshot.NewHash(a.PreTree), p); err != nil || !ok {
					continue
				}
			}
			return line, p, true
		}
	}
	return line, "", true
}

var crlfRule = Rule{
	Name: "verify-script-crlf", Category: WorkflowBug, Confidence: 0.9,
	Match: func(f *facts) bool { _, _, ok := f.crlfScript(); return ok },
	Why: func(f *facts) string {
		l, s, _ := f.crlfScript()
		return fmt.Sprintf("the verify's script %s has Windows line endings (CRLF), so its interpreter line names a program with a carriage return that no machine has: %s", orWord(s, "(the one it runs)"), l)
	},
	Suggest: func(f *facts) Suggestion {
		_, s, _ := f.crlfScript()
		first := "git ls-files --eol | grep crlf"
		if s != "" {
			first = `sed -i 's/\r$//' ` + shellQuote(s)
		}
		return Suggestion{Text: "convert the script to LF line endings and commit it (a .gitattributes line `*.sh text eol=lf` keeps it so), then run the task again",
			Commands: []string{first, f.retry()}}
	},
	Lines: func(f *facts) []string { l, _, _ := f.crlfScript(); return []string{l} },
}
