package autopsy

import (
	"fmt"
	"strings"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/snapshot"
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
	if a.PreTree == "" || a.Tree == "" {
		return "", "", false
	}
	m := missingRelationRe.FindStringSubmatch(f.verifyOutput[key(a.TaskID, a.N)])
	if m == nil {
		return "", "", false
	}
	name := strings.ToLower(firstNonEmpty(m[1:]...))
	d := diffStat(f.repo, snapshot.NewHash(a.PreTree), snapshot.NewHash(a.Tree))
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
