package autopsy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Rule is one row of the verdict table: the first rule whose Match holds decides the verdict.
// Rules are data so that each is named in the report (`verdict.rule`) and tested on its own.
type Rule struct {
	Name       string
	Category   string
	Confidence float64
	Match      func(f *facts) bool
	Why        func(f *facts) string
	Suggest    func(f *facts) Suggestion
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
)

var (
	diskFullRe = regexp.MustCompile(`(?i)(no space left on device|disk quota exceeded|ENOSPC|not enough space on the disk)`)
	networkRe  = regexp.MustCompile(`(?i)(could not resolve host|no such host|temporary failure in name resolution|name or service not known|getaddrinfo|ENOTFOUND|EAI_AGAIN|network is unreachable|connection refused|ECONNREFUSED|ECONNRESET|connection reset by peer|TLS handshake timeout|i/o timeout)`)
	toolMissRe = regexp.MustCompile(`(?i)(command not found|executable file not found|: not found\s*$|not installed|is not recognized as an internal or external command)`)
)

// Rules is the verdict table, in order.
var Rules = []Rule{
	{
		Name: "no-failure", Category: Unknown, Confidence: 1,
		Match:   func(f *facts) bool { return f.task == nil },
		Why:     func(f *facts) string { return "no attempt of this run failed" },
		Suggest: func(f *facts) Suggestion { return f.inspect("nothing failed; check the suspicious successes, if any") },
	},
	{
		Name: "internal-error", Category: ToolBug, Confidence: 0.9,
		Match: func(f *facts) bool { return f.anyClass(cInternal) },
		Why: func(f *facts) string {
			return "mulligan itself failed (class internal): " + f.firstOf(cInternal).Message
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
		Name: "authoring-error", Category: WorkflowBug, Confidence: 0.95,
		Match: func(f *facts) bool { return f.anyClass(cAuthoring) },
		Why: func(f *facts) string {
			return "the task file or a template is invalid: " + f.firstOf(cAuthoring).Message
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "fix the task file at the position the message names, then run the task again", Commands: []string{f.rerun()}}
		},
	},
	{
		Name: "auth", Category: Environment, Confidence: 0.95,
		Match: func(f *facts) bool { return f.anyClass(cAuth) },
		Why: func(f *facts) string {
			a := f.firstOf(cAuth)
			return fmt.Sprintf("agent %s is not logged in or its key is invalid: %s", a.Agent, a.Message)
		},
		Suggest: func(f *facts) Suggestion {
			a := f.firstOf(cAuth)
			login, how := f.login(a.Agent)
			cmds := []string{}
			if login != "" {
				cmds = append(cmds, login)
			}
			cmds = append(cmds, f.retry())
			return Suggestion{Text: how + ", then run the task again", Commands: cmds}
		},
	},
	{
		Name: "agent-missing", Category: Environment, Confidence: 0.95,
		Match: func(f *facts) bool { return f.anyClass(cMissing) },
		Why: func(f *facts) string {
			a := f.firstOf(cMissing)
			return fmt.Sprintf("the command of agent %s could not be started: %s", a.Agent, a.Message)
		},
		Suggest: func(f *facts) Suggestion {
			a := f.firstOf(cMissing)
			argv0 := f.argv0(a.Agent)
			cmds := []string{}
			if argv0 != "" {
				cmds = append(cmds, "command -v "+shellQuote(argv0))
			}
			cmds = append(cmds, f.retry())
			return Suggestion{Text: fmt.Sprintf("install %s (or fix `command` of agent %s in %s), check it is on PATH, then run the task again",
				orWord(argv0, "the agent CLI"), a.Agent, f.fileName()), Commands: cmds}
		},
	},
	{
		Name: "quota", Category: Environment, Confidence: 0.85,
		Match: func(f *facts) bool { return f.lastClass() == cQuota },
		Why:   func(f *facts) string { return "the agent hit a usage or rate limit: " + f.last().Message },
		Suggest: func(f *facts) Suggestion {
			if at := f.task.ResumeAt; at != nil && at.After(f.now()) {
				return Suggestion{Text: fmt.Sprintf("the limit resets at %s: then `mulligan resume %s` (or `mulligan supervise` does it); to try at once anyway, or after adding an agent with its own quota to the task's chain",
					at.UTC().Format(time.RFC3339), f.run.ID), Commands: []string{"mulligan resume " + f.run.ID + " --now"}}
			}
			return Suggestion{Text: "wait for the limit to reset (or add an agent with its own quota to the task's chain), then continue the run", Commands: []string{"mulligan resume " + f.run.ID}}
		},
	},
	{
		Name: "disk-full", Category: Environment, Confidence: 0.9,
		Match: func(f *facts) bool { return f.lastMatches(diskFullRe) },
		Why:   func(f *facts) string { return "the disk is full: " + f.lastMatch(diskFullRe) },
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "free space on the disk of the working tree, then run the task again", Commands: []string{"df -h " + shellQuote(f.run.Worktree), f.retry()}}
		},
	},
	{
		Name: "verify-tool-missing", Category: Environment, Confidence: 0.8,
		Match: func(f *facts) bool { return f.lastClass() == cQuality && f.lastMatches(toolMissRe) },
		Why: func(f *facts) string {
			return "the verify command could not run a tool it needs: " + f.lastMatch(toolMissRe)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("install the tool the verify command runs (%s), or fix `verify.command` of task %s, then run the task again",
				orWord(f.verifyArgv0(), "see the evidence"), f.task.ID), Commands: []string{f.retry()}}
		},
	},
	{
		Name: "network", Category: Environment, Confidence: 0.8,
		Match: func(f *facts) bool {
			return f.allClasses(cTransport) || (f.lastClass() != cQuality && f.lastMatches(networkRe))
		},
		Why: func(f *facts) string {
			if m := f.lastMatch(networkRe); m != "" {
				return "the network failed: " + m
			}
			return fmt.Sprintf("every failed attempt (%d) was a transport failure: %s", len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "check the network (DNS, proxy, the provider's status page), then run the task again", Commands: []string{f.retry()}}
		},
	},
	{
		Name: "verify-intermittent", Category: AgentFlake, Confidence: 0.6,
		Match: func(f *facts) bool {
			return f.anyClass(cQuality) && (f.passes > 0 || len(f.distinctClasses()) > 1)
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("verify rejected %d attempt(s) while other attempts ended differently (%s): the results vary from attempt to attempt",
				f.count(cQuality), strings.Join(f.distinctClasses(), ", "))
		},
		Suggest: func(f *facts) Suggestion { return f.retryKeeping("the verify result varies; another attempt may pass") },
	},
	{
		Name: "verify-fails-on-base", Category: WorkflowBug, Confidence: 0.9,
		Match: func(f *facts) bool { return f.allClasses(cQuality) && f.base.failed() },
		Why: func(f *facts) string {
			return fmt.Sprintf("verify fails on the tree the task started from too (exit status %d), before any agent change: %s",
				f.base.ExitCode, orWord(lastNonBlank(f.base.Output), f.last().Message))
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("fix `verify.command` of task %s in %s (or the tree it checks) so that it can pass, then run the task again",
				f.task.ID, f.fileName()), Commands: []string{f.rerun()}}
		},
	},
	{
		Name: "verify-same-failure", Category: WorkflowBug, Confidence: 0.6,
		Match: func(f *facts) bool { return f.allClasses(cQuality) && len(f.failed) >= 2 && f.sameMessages() },
		Why: func(f *facts) string {
			why := fmt.Sprintf("verify failed the same way in all %d attempts: %s", len(f.failed), f.last().Message)
			if f.base != nil {
				why += " (it passes on the base tree: the attempts' changes break it)"
			}
			return why
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("check that the verify command of task %s can pass at all (run it by hand on the base tree) and that the prompt asks for what it checks; fix %s, then run the task again",
				f.task.ID, f.fileName()), Commands: []string{f.logs(f.last()), f.rerun()}}
		},
	},
	{
		Name: "schema-never-satisfied", Category: WorkflowBug, Confidence: 0.7,
		Match: func(f *facts) bool { return f.allClasses(cSchema) },
		Why: func(f *facts) string {
			return fmt.Sprintf("the output never satisfied output_schema (%d attempt(s)): %s", len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("check that output_schema of task %s can be satisfied and that the prompt describes the output it wants; fix %s, then run the task again",
				f.task.ID, f.fileName()), Commands: []string{f.logs(f.last()), f.rerun()}}
		},
	},
	{
		Name: "prompt-names-missing-files", Category: WorkflowBug, Confidence: 0.7,
		// A prompt may name a file the task is to create: the rule needs the failure to
		// mention the missing path too.
		Match: func(f *facts) bool {
			return len(f.missingMentioned()) > 0 && slices.Contains([]string{cAgentExit, cQuality, cPayload, cSchema}, f.lastClass())
		},
		Why: func(f *facts) string {
			return "the prompt names files that are not in the tree the task started from: " + strings.Join(f.missingMentioned(), ", ")
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("fix the prompt of task %s in %s (or add %s to the tree), then run the task again",
				f.task.ID, f.fileName(), strings.Join(f.missingMentioned(), ", ")), Commands: []string{f.rerun()}}
		},
	},
	{
		Name: "payload-declared-same", Category: WorkflowBug, Confidence: 0.5,
		Match: func(f *facts) bool { return f.allClasses(cPayload) && len(f.failed) >= 2 && f.sameMessages() },
		Why: func(f *facts) string {
			return fmt.Sprintf("the agent reported failure the same way in all %d attempts: %s", len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "read why the agent gave up and fix the task's prompt or its inputs, then run the task again", Commands: []string{f.logs(f.last()), f.rerun()}}
		},
	},
	{
		Name: "payload-declared", Category: AgentFlake, Confidence: 0.5,
		Match: func(f *facts) bool { return f.lastClass() == cPayload },
		Why: func(f *facts) string {
			return "the agent exited 0 but its output declared a failure: " + f.last().Message
		},
		Suggest: func(f *facts) Suggestion {
			return f.retryKeeping("the agent gave up this time; another attempt may not")
		},
	},
	{
		Name: "timeouts", Category: AgentFlake, Confidence: 0.6,
		Match: func(f *facts) bool { return f.allClasses(cTimeout, cHeartbeat) },
		Why: func(f *facts) string {
			return fmt.Sprintf("%d attempt(s) ran out of time or went silent (%s)", len(f.failed), strings.Join(f.distinctClasses(), ", "))
		},
		Suggest: func(f *facts) Suggestion {
			knob := "timeout"
			if f.lastClass() == cHeartbeat {
				knob = "heartbeat"
			}
			now := ""
			if f.def != nil {
				d := f.def.Timeout
				if knob == "heartbeat" {
					d = f.def.Heartbeat
				}
				if d > 0 {
					now = " (now " + d.String() + ")"
				}
			}
			return Suggestion{Text: fmt.Sprintf("raise `%s` of task %s in %s%s, or make the task smaller, then run it again", knob, f.task.ID, f.fileName(), now),
				Commands: []string{f.rerun()}}
		},
	},
	{
		Name: "budget-exhausted", Category: AgentFlake, Confidence: 0.4,
		Match: func(f *facts) bool { return f.lastClass() == cBudget },
		Why: func(f *facts) string {
			return fmt.Sprintf("the task's deadline or spend limit ran out after %d failed attempt(s): %s", len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("raise `deadline` or `max_cost_usd` of task %s in %s if the attempts were getting closer, then run it again", f.task.ID, f.fileName()),
				Commands: []string{f.rerun()}}
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
	{
		Name: "different-failures", Category: AgentFlake, Confidence: 0.6,
		Match: func(f *facts) bool { return len(f.failed) >= 2 && !f.sameMessages() },
		Why: func(f *facts) string {
			return fmt.Sprintf("the %d failed attempts failed in different ways (%s)", len(f.failed), strings.Join(f.distinctClasses(), ", "))
		},
		Suggest: func(f *facts) Suggestion { return f.retryKeeping("the failures differ, so another attempt may pass") },
	},
	{
		Name: "same-failure-repeated", Category: WorkflowBug, Confidence: 0.45,
		Match: func(f *facts) bool { return len(f.failed) >= 2 && f.sameMessages() },
		Why: func(f *facts) string {
			return fmt.Sprintf("all %d attempts failed the same way: %s", len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("the same failure every time points at the task, not the agent: read the output, fix the prompt or the agent's command in %s, then run the task again", f.fileName()),
				Commands: []string{f.logs(f.last()), f.rerun()}}
		},
	},
	{
		Name: "single-failure", Category: AgentFlake, Confidence: 0.4,
		Match: func(f *facts) bool { return len(f.failed) == 1 && f.lastClass() == cAgentExit },
		Why: func(f *facts) string {
			return "one attempt failed and was not retried: " + f.last().Message
		},
		Suggest: func(f *facts) Suggestion {
			return f.retryKeeping("one failure is not a pattern; try again (with `on_failure: retry` and `retries` the runner would have)")
		},
	},
	{
		Name: "fallback", Category: Unknown, Confidence: 0.2,
		Match:   func(f *facts) bool { return true },
		Why:     func(f *facts) string { return "no rule of the table matched; the evidence below is all there is" },
		Suggest: func(f *facts) Suggestion { return f.inspect("read the attempt's output") },
	},
}

// decide returns the first rule that matches.
func decide(f *facts) Rule {
	for _, r := range Rules {
		if r.Match(f) {
			return r
		}
	}
	return Rules[len(Rules)-1]
}

func (f *facts) last() storeAttempt {
	if len(f.failed) == 0 {
		return storeAttempt{}
	}
	return f.failed[len(f.failed)-1]
}

func (f *facts) lastClass() string { return f.last().Class }

func (f *facts) anyClass(c string) bool {
	for _, a := range f.failed {
		if a.Class == c {
			return true
		}
	}
	return false
}

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

var digitsRe = regexp.MustCompile(`[0-9]+`)

// lastText is the last failure's message and output tail, where the rules look for banners.
func (f *facts) lastText() string {
	a := f.last()
	return a.Message + "\n" + f.output[key(a.TaskID, a.N)] + "\n" + f.verifyOutput[key(a.TaskID, a.N)]
}

func (f *facts) lastMatches(re *regexp.Regexp) bool {
	return len(f.failed) > 0 && re.MatchString(f.lastText())
}

// lastMatch is the line of the last failure that matches re, clipped.
func (f *facts) lastMatch(re *regexp.Regexp) string {
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

// missingMentioned are the prompt's missing paths that a failure's message or output names.
func (f *facts) missingMentioned() []string {
	var out []string
	for _, p := range f.missing {
		for _, a := range f.failed {
			k := key(a.TaskID, a.N)
			if strings.Contains(a.Message, p) || strings.Contains(f.output[k], p) || strings.Contains(f.verifyOutput[k], p) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

func (f *facts) now() time.Time {
	if f.clock != nil {
		return f.clock()
	}
	return time.Now()
}
