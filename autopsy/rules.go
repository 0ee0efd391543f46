package autopsy

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/store"
)

// Rule is one row of the verdict table. Rules are data so that each is named in the report
// (`verdict.rule`) and tested on its own.
type Rule struct {
	Name     string
	Category string
	// Confidence is the strength of the rule's evidence: the table is ranked by it, and the
	// strongest rule that matches decides.
	Confidence float64
	Match      func(f *facts) bool
	Why        func(f *facts) string
	Suggest    func(f *facts) Suggestion
	// Lines are the output lines that decided it (nil: the last failure's message).
	Lines func(f *facts) []string
}

// Failure classes, as the store records them (taskfile.Class values).
const (
	cTransport   = "transport"
	cTimeout     = "attempt_timeout"
	cHeartbeat   = "heartbeat_timeout"
	cAgentExit   = "agent_exit"
	cQuota       = "quota"
	cAuth        = "auth"
	cMissing     = "agent_missing"
	cPayload     = "payload_declared"
	cSchema      = "schema_invalid"
	cQuality     = "quality_rejection"
	cBudget      = "budget_exhausted"
	cCancel      = "cancellation"
	cRunnerDied  = "runner_died"
	cAuthoring   = "authoring"
	cInternal    = "internal"
	reasonResume = "resume-exhausted"
	reasonApply  = "apply-conflict"
)

// Rules is the verdict table, strongest evidence first. The rules read the evidence a person
// would: why the run stopped (not what it got past), the failing tests parsed from the verify
// output and compared with the base tree and with the other attempts, how the verify command
// ended, the agent's own last words and refused tool calls, network errors next to the agent's
// own successful API calls, a prompt waiting for a terminal. Where the evidence does not carry a
// verdict the table says `unknown` with the evidence summarised.
var Rules = ranked(stateRules, envRules, []Rule{machineRule, loginRule, machineSaysRule, toolchainRule, worktreeLackRule, promptConflictRule, outsideScopeRule, budgetBelowAttemptRule, hungOnNetworkRule, leftoverStateRule, unbuiltRelationRule, preexistingStepRule, screenshotsRule, snapshotCIRule, missingDBRule, overlapRule, missingRefRule, submoduleRule, agentLacksProgramRule, unseenNewFileRule, forbiddenFixRule, askRefusedRule, askedStepRule, lacksFlagRule, crlfRule}, providerRules, agentRules, workRules, weakRules)

// ranked orders the rules by confidence, keeping the written order among equals.
func ranked(groups ...[]Rule) []Rule {
	all := slices.Concat(groups...)
	slices.SortStableFunc(all, func(a, b Rule) int { return cmp.Compare(b.Confidence, a.Confidence) })
	return all
}

// decide returns the strongest rule that matches.
func decide(f *facts) Rule {
	for _, r := range Rules {
		if r.Match(f) {
			return r
		}
	}
	return Rules[len(Rules)-1]
}

// allowedFailures are the tasks of a succeeded run that failed: allow_fail let the run go on.
func (f *facts) allowedFailures() []string {
	var out []string
	if f.run.State != store.RunSucceeded {
		return nil
	}
	for _, t := range f.run.Tasks {
		if t.State == store.TaskFailed || t.State == store.TaskBlocked {
			out = append(out, t.ID)
		}
	}
	return out
}

// decidingLines are the lines a rule quotes, else the last failure's message.
func (f *facts) decidingLines(r Rule) []string {
	var out []string
	if r.Lines != nil {
		out = r.Lines(f)
	} else if a := f.last(); a.Message != "" {
		out = []string{clip(a.Message)}
	}
	var kept []string
	for _, l := range out {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(kept, l) {
			kept = append(kept, clip(l))
		}
	}
	if kept == nil {
		kept = []string{}
	}
	return kept
}

// stateRules say what the run's state says: nothing failed, a decision waits, mulligan itself
// failed, the task file is wrong.
var stateRules = []Rule{
	runAbortedLackRule,
	runAbortedRule,
	{
		Name: "waiting-approval", Category: NoFailure, Confidence: 1,
		Match: func(f *facts) bool {
			t, _ := f.approval()
			return t != nil && (f.task == nil || f.run.State == "waiting_approval")
		},
		Why: func(f *facts) string {
			t, a := f.approval()
			return fmt.Sprintf("nothing failed: task %s waits for your decision on attempt %d (needs_approval)", t.ID, a.N)
		},
		Suggest: func(f *facts) Suggestion {
			t, a := f.approval()
			addr := fmt.Sprintf("%s/%s@%d", f.run.ID, t.ID, a.N)
			return Suggestion{Text: "waiting for your decision: read the attempt's change, then approve it (it is carried into the tree and the run goes on) or reject it with a note for the next attempt",
				Commands: []string{"mulligan diff " + addr, "mulligan approve " + addr, "mulligan reject " + addr + " 'TEXT'"}}
		},
		Lines: func(f *facts) []string { return nil },
	},
	{
		Name: "paused", Category: NoFailure, Confidence: 1,
		Match: func(f *facts) bool { return f.run.State == store.RunPaused },
		Why: func(f *facts) string {
			return "nothing failed: the run is paused (a pause or Ctrl-C); the interrupted attempt's edits are reset when it resumes"
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "resume the run when you want it to go on", Commands: []string{"mulligan resume " + f.run.ID}}
		},
		Lines: func(f *facts) []string { return nil },
	},
	{
		// The run has not stopped: an autopsy asked for while it goes on judges nothing yet.
		Name: "still-running", Category: NoFailure, Confidence: 1,
		Match: func(f *facts) bool { return f.run.State == store.RunRunning },
		Why: func(f *facts) string {
			if n := len(f.failed); n > 0 && f.task != nil {
				return fmt.Sprintf("nothing has stopped: the run is still running; %d attempt(s) of task %s failed so far, the last one %s: %s", n, f.task.ID, f.lastClass(), f.summary())
			}
			return "nothing has stopped: the run is still running"
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "watch it go on (mulligan top for all runs); if its process died, mulligan supervise or resume takes it up", Commands: []string{"mulligan show " + f.run.ID, "mulligan events " + f.run.ID}}
		},
		Lines: func(f *facts) []string { return nil },
	},
	{
		// You ended it (cancel, kill): whatever the attempts did before, the run stopped because
		// you said so, and nothing waits. The failures before it stay in the evidence.
		Name: "cancelled-by-you", Category: NoFailure, Confidence: 1,
		Match: func(f *facts) bool { return f.run.State == store.RunCancelled },
		Why: func(f *facts) string {
			if n := len(f.failed); n > 0 && f.task != nil {
				return fmt.Sprintf("nothing failed on its own: the run was cancelled (mulligan cancel or kill); before that %d attempt(s) of task %s failed, the last one %s: %s",
					n, f.task.ID, f.lastClass(), f.summary())
			}
			return "nothing failed: the run was cancelled (mulligan cancel or kill), and nothing waits for you"
		},
		Suggest: func(f *facts) Suggestion {
			if f.task == nil {
				return Suggestion{Text: "nothing to fix; start the run again when you want it", Commands: []string{"mulligan show " + f.run.ID}}
			}
			return Suggestion{Text: "a cancelled run does not resume: run its task again when you want it (the failures before the cancel are in the evidence)",
				Commands: []string{f.retry(), "mulligan show " + f.run.ID}}
		},
		Lines: func(f *facts) []string { return nil },
	},
	{
		Name: "no-failure", Category: NoFailure, Confidence: 1,
		Match: func(f *facts) bool { return f.task == nil },
		Why: func(f *facts) string {
			why := "no attempt of this run failed"
			if n := f.recoveredAttempts(); n > 0 {
				why = fmt.Sprintf("the run has no failed task: %d attempt(s) failed and a later attempt of the same task succeeded", n)
			}
			if ts := f.allowedFailures(); len(ts) > 0 {
				why = "the run succeeded; task " + strings.Join(ts, ", ") + " failed, and was allowed to (allow_fail)"
			}
			if s, ok := f.doubtedPass(); ok {
				why += fmt.Sprintf("; but the pass of task %s is in doubt: attempt %d %s", s.Task, s.Attempt, s.Reason)
			}
			return why
		},
		Suggest: func(f *facts) Suggestion {
			if s, ok := f.doubtedPass(); ok {
				addr := fmt.Sprintf("%s/%s@%d", f.run.ID, s.Task, s.Attempt)
				return Suggestion{Text: "nothing failed, but read what the passing attempt changed before you keep it; if it passed by weakening the check, put back the tree it started from (revert takes an undo point first)",
					Commands: []string{"mulligan diff --stat " + addr, "mulligan diff " + addr, "mulligan revert --pre " + addr}}
			}
			return Suggestion{Text: "nothing to fix; check the suspicious successes, if any", Commands: []string{"mulligan show " + f.run.ID}}
		},
		Lines: func(f *facts) []string { return nil },
	},
	{
		Name: "internal-error", Category: ToolBug, Confidence: 0.95,
		Match: func(f *facts) bool {
			return f.anyClass(cInternal) || (len(f.failed) == 0 && f.before.Class == cInternal)
		},
		Why: func(f *facts) string {
			a := f.firstOf(cInternal)
			if a.Class == "" {
				a = f.before
			}
			return "mulligan itself failed (class internal): " + a.Message
		},
		Suggest: func(f *facts) Suggestion {
			cmds := []string{}
			if f.commands["bug"] {
				cmds = append(cmds, "mulligan bug "+f.run.ID)
			}
			cmds = append(cmds, f.retry())
			return Suggestion{Text: "this is a mulligan bug: write the bug bundle (nothing is sent) and report it, then try the task again", Commands: cmds}
		},
	},
	{
		// An isolated task succeeded in its worktree, but the working tree changed a path of its
		// change meanwhile (SPEC §4.1): nothing failed; the change waits to be applied by hand.
		Name: "apply-conflict", Category: NoFailure, Confidence: 0.95,
		Match: func(f *facts) bool { return f.task.State == "blocked" && f.task.Reason == reasonApply },
		Why: func(f *facts) string {
			return fmt.Sprintf("nothing failed: task %s succeeded in its own worktree (%s) and waits for you, because the working tree changed the same lines of its change meanwhile (or holds files where it writes): nothing was applied, so neither side's version was lost",
				f.task.ID, f.applyAddr())
		},
		Suggest: func(f *facts) Suggestion {
			// Never a command that drops the user's version: --merge keeps both, marked.
			addr := f.applyAddr()
			return Suggestion{Text: "see what conflicts; merge the change with your version (the conflicting lines written between markers for you to resolve in an editor), then resume",
				Commands: []string{"mulligan apply " + addr + " --dry-run", "mulligan apply " + addr + " --merge", "mulligan resume " + f.run.ID}}
		},
	},
	{
		Name: "authoring-error", Category: WorkflowBug, Confidence: 0.95,
		Match: func(f *facts) bool {
			return f.anyClass(cAuthoring) || (len(f.failed) == 0 && f.before.Class == cAuthoring)
		},
		Why: func(f *facts) string {
			a := f.firstOf(cAuthoring)
			if a.Class == "" {
				a = f.before
			}
			return "the task's definition cannot be used as it is: " + a.Message
		},
		Suggest: func(f *facts) Suggestion {
			a := f.firstOf(cAuthoring)
			if a.Class == "" {
				a = f.before
			}
			if a.Code == "prompt_file" && f.def != nil {
				// The file is read by each attempt: write it, no reload needed.
				return Suggestion{Text: fmt.Sprintf("write the task's instructions into %s (or fix the path in %s), then run the task again", f.def.PromptFile, f.fileName()),
					Commands: []string{f.retry()}}
			}
			return Suggestion{Text: "fix the task file at the position the message names, then run the task again", Commands: []string{f.fixed()}}
		},
	},
	{
		Name: "runner-died-repeatedly", Category: ToolBug, Confidence: 0.6,
		Match: func(f *facts) bool {
			return f.task.Reason == reasonResume || (f.lastClass() == cRunnerDied && f.count(cRunnerDied) >= 2)
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("the mulligan process died during %d attempt(s) and resuming did not get past it", f.count(cRunnerDied)+f.died)
		},
		Suggest: func(f *facts) Suggestion {
			cmds := []string{}
			if f.commands["bug"] {
				cmds = append(cmds, "mulligan bug "+f.run.ID)
			}
			cmds = append(cmds, "mulligan events "+f.run.ID)
			return Suggestion{Text: "look for what killed mulligan (out of memory, a crash) in the events and the system log, and report it with the bundle", Commands: cmds}
		},
	},
	{
		Name: "cancelled", Category: Unknown, Confidence: 0.3,
		Match: func(f *facts) bool { return f.allClasses(cCancel) },
		Why:   func(f *facts) string { return "the attempts were cancelled, so they say nothing about the task" },
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "run the task again when it can finish", Commands: []string{f.retry()}}
		},
	},
}

// weakRules decide on what the attempts have in common when no output says more, and say
// `unknown` where nothing does.
var weakRules = []Rule{
	{
		// The agent's CLI failed with words that name nothing ("Execution error"): no evidence,
		// however often it repeats.
		Name: "agent-says-nothing", Category: Unknown, Confidence: 0.52,
		Match: func(f *facts) bool {
			if !f.allClasses(cPayload, cAgentExit) || f.allSilent() {
				return false
			}
			for _, a := range f.failed {
				if namesCause(a.Message) || namesCause(f.agentOf(a).LastMessage) {
					return false
				}
			}
			return true
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("%d attempt(s) failed with words that do not say what to change (%s): no evidence says why", len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("read the whole log, and run the agent's command by hand in the working tree (%s) to see the error", orWord(f.argv0(f.last().Agent), "its command")),
				Commands: []string{f.logs(f.last()), "mulligan show " + f.run.ID}}
		},
	},
	{
		Name: "different-failures", Category: AgentFlake, Confidence: 0.45,
		Match: func(f *facts) bool {
			return len(f.failed) >= 2 && !f.sameMessages() && !f.allSilent() && f.anySays() && f.says(f.last())
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("the %d failed attempts failed in different ways (%s)", len(f.failed), strings.Join(f.distinctClasses(), ", "))
		},
		Suggest: func(f *facts) Suggestion { return f.retryKeeping("the failures differ, so another attempt may pass") },
		Lines:   func(f *facts) []string { return f.messages() },
	},
	{
		Name: "same-failure-repeated", Category: WorkflowBug, Confidence: 0.4,
		Match: func(f *facts) bool {
			return len(f.failed) >= 2 && f.sameMessages() && !f.allSilent() && namesCause(f.last().Message)
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("all %d attempts failed the same way (the same fingerprint: retrying repeats it): %s", len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("the same failure every time points at the task, not the agent: fix the prompt or the agent's command in %s for what the failure says (the log has the rest), then run the task again", f.fileName()),
				Commands: []string{f.fixed(), f.logs(f.last())}}
		},
	},
	{
		// One failure with a message and nothing to compare it with: no pattern, no verdict.
		Name: "single-failure", Category: Unknown, Confidence: 0.35,
		Match: func(f *facts) bool { return len(f.failed) == 1 && f.lastClass() == cAgentExit && !f.allSilent() },
		Why: func(f *facts) string {
			return "one attempt failed and nothing compares it with another; what it said: " + f.summary()
		},
		Suggest: func(f *facts) Suggestion {
			s := f.retryKeeping("one failure is not a pattern: read its output; if it names nothing you can fix, try again")
			s.Commands = append([]string{f.logs(f.last())}, s.Commands...)
			return s
		},
	},
	{
		// The same exit with nothing said is no evidence of anything: say so.
		Name: "silent-failures", Category: Unknown, Confidence: 0.3,
		Match: func(f *facts) bool { return len(f.failed) >= 1 && f.allSilent() },
		Why: func(f *facts) string {
			return fmt.Sprintf("%d attempt(s) ended (%s) and printed nothing: no evidence says why", len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("run the agent's command by hand in the working tree (%s) to see why it exits; the log is empty", orWord(f.argv0(f.last().Agent), "its command")),
				Commands: []string{f.logs(f.last()), "mulligan show " + f.run.ID}}
		},
	},
	{
		Name: "fallback", Category: Unknown, Confidence: 0.1,
		Match: func(f *facts) bool { return true },
		Why: func(f *facts) string {
			if len(f.failed) == 0 {
				return "no rule of the table matched; the evidence below is all there is"
			}
			return fmt.Sprintf("no evidence decides it: %d failed attempt(s), the last one %s: %s", len(f.failed), f.lastClass(), f.summary())
		},
		Suggest: func(f *facts) Suggestion { return f.inspect("read the attempt's output") },
	},
}

// summary is the evidence of the last failure in a line: its message, the agent's last words.
func (f *facts) summary() string {
	a := f.last()
	s := a.Message
	if m := f.agentOf(a).LastMessage; m != "" && !strings.Contains(s, m) {
		s += "; the agent said: " + m
	}
	return s
}

func (f *facts) messages() []string {
	var out []string
	for _, a := range f.failed {
		out = append(out, fmt.Sprintf("%s@%d %s: %s", a.TaskID, a.N, a.Class, a.Message))
	}
	return out
}

func (f *facts) last() storeAttempt {
	if len(f.failed) == 0 {
		return storeAttempt{}
	}
	return f.failed[len(f.failed)-1]
}

func (f *facts) lastClass() string { return f.last().Class }

func (f *facts) anyClass(c string) bool { return f.count(c) > 0 }

func (f *facts) count(c string) int {
	n := 0
	for _, a := range f.failed {
		if a.Class == c {
			n++
		}
	}
	return n
}

func (f *facts) firstOf(c string) storeAttempt {
	for _, a := range f.failed {
		if a.Class == c {
			return a
		}
	}
	return storeAttempt{}
}

// allClasses: there is a failure and every failure has one of the classes.
func (f *facts) allClasses(cs ...string) bool {
	if len(f.failed) == 0 {
		return false
	}
	for _, a := range f.failed {
		if !slices.Contains(cs, a.Class) {
			return false
		}
	}
	return true
}

func (f *facts) distinctClasses() []string {
	var out []string
	for _, a := range f.failed {
		if !slices.Contains(out, a.Class) {
			out = append(out, a.Class)
		}
	}
	if f.passes > 0 {
		out = append(out, "succeeded")
	}
	return out
}

// sameMessages: every failure has the same class, code and message (digits aside: attempt
// numbers and durations differ between identical failures).
func (f *facts) sameMessages() bool {
	norm := func(a storeAttempt) string {
		return a.Class + "\x00" + a.Code + "\x00" + digitsRe.ReplaceAllString(a.Message, "#")
	}
	for _, a := range f.failed[1:] {
		if norm(a) != norm(f.failed[0]) {
			return false
		}
	}
	return true
}

var digitsRe = lazyre.New(`[0-9]+`)

// says: the failure says what went wrong (the failure the run stopped on, for a verdict that
// its failures vary: if that one says nothing, the stop is unexplained).
func (f *facts) says(a storeAttempt) bool {
	if a.Class == cQuality {
		return !f.verifyView(a).saysNothing()
	}
	return namesCause(a.Message) || namesCause(f.agentOf(a).LastMessage)
}

// anySays: some failure says what went wrong: its message names a cause, or its verify output
// names failing tests, build errors or a line that says more than that it failed.
func (f *facts) anySays() bool {
	return slices.ContainsFunc(f.failed, f.says)
}

// namesCause: a failure message says what went wrong in words a person can act on: not a CLI's
// generic error or a bare status, not a JSON event with no text, not a line with no word of
// failure in it (a banner, a progress line), and not a provider's HTTP error that names no
// cause (a gateway's "400 Bad Request", "upstream error"): repeating, those say only that the
// same thing failed, not why.
func namesCause(msg string) bool {
	detail := msg
	for _, p := range []string{"agent exited with status ", "agent was killed by a signal"} {
		if strings.HasPrefix(detail, p) {
			_, detail, _ = strings.Cut(detail, ": ")
		}
	}
	detail = strings.TrimSpace(agentcli.HumanLine(strings.TrimSpace(detail)))
	switch {
	case detail == "" || emptyWordsRe.MatchString(detail) || emptyWordsRe.MatchString(msg):
		return false
	case strings.HasPrefix(detail, "{") && !jsonWordsRe.MatchString(detail):
		return false // an event line with no text
	case !saysWhy(detail):
		return false
	case strings.Contains(detail, " was running: ") || announceRe.MatchString(detail) && !causeWordsRe.MatchString(detail):
		return false // what the agent was doing or meant to do, not what failed
	case opaqueAPIRe.MatchString(detail) && !apiCauseRe.MatchString(detail):
		return false
	}
	return true
}

// saysWhy: once the words that only say something failed (error, failed, crashed) are taken
// out, a word of cause is left.
func saysWhy(s string) bool {
	bare := genericWordsRe.ReplaceAllString(s, " ")
	return specificCauseRe.MatchString(bare) || causeWordsRe.MatchString(bare)
}

var (
	jsonWordsRe  = lazyre.New(`"(?:message|text|result|error)"\s*:\s*"[^"]{3,}`)
	causeWordsRe = lazyre.New(`(?i)error|fail|did not match any|fatal|panic|exception|traceback|denied|refused|not found|no such|cannot|can't|unable|invalid|expired|unauthori[sz]ed|forbidden|limit|quota|timeout|timed out|missing|unknown|unexpected|unsupported|not allowed|not permitted|required|requires|mismatch|undefined|too[ _](?:long|large|many)|exceed|abort|crash|killed|\bnot (?:a|an|the) |does(?: not|n't) exist|not supported|\bneeds?\b|could(?: not|n't)|gave up|give up|no (?:such|file|access|permission)|no solution|unsatisfiable|conflict|incompatib`)
	opaqueAPIRe  = lazyre.New(`(?i)\b(?:status|code)\W{0,3}[45]\d\d\b|\b[45]\d\d (?:Bad Request|Internal Server Error|Bad Gateway|Service Unavailable)|upstream[_ ]error|API error`)
	apiCauseRe   = lazyre.New(`(?i)model|context|token|key|auth|credit|billing|quota|rate|permission|organi[sz]ation|region|not found|overloaded|too[ _](?:long|large)|exceeds|maximum|size|fetch|network|connect|socket|timeout|timed out`)
)

// emptyWordsRe: a failure message that names nothing: a CLI's generic error, a bare status.
var emptyWordsRe = lazyre.New(`(?i)^(?:agent exited with status -?\d+|agent was killed by a signal)?(?::\s*)?(?:\w+: )?(?:Execution error|error_during_execution|An? (?:unknown |unexpected |internal )?error(?: occurred| has occurred)?\.?|Unknown error\.?|Error\.?|Something went wrong\.?|undefined|null)?$`)

// lastText is the last failure's message and output tail, where the rules look for banners.
func (f *facts) lastText() string {
	a := f.last()
	return a.Message + "\n" + f.output[key(a.TaskID, a.N)] + "\n" + f.verifyOutput[key(a.TaskID, a.N)]
}

func (f *facts) lastMatches(re *lazyre.Regexp) bool {
	return len(f.failed) > 0 && re.MatchString(f.lastText())
}

// lastMatch is the line of the last failure that matches re, clipped.
func (f *facts) lastMatch(re *lazyre.Regexp) string {
	lines := strings.Split(f.lastText(), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if re.MatchString(lines[i]) {
			return clip(strings.TrimSpace(lines[i]))
		}
	}
	return ""
}

func orWord(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func lastNonBlank(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return clip(l)
		}
	}
	return ""
}

func (f *facts) now() time.Time {
	if f.clock != nil {
		return f.clock()
	}
	return time.Now()
}
