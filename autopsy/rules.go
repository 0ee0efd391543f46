package autopsy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/taskfile"
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
	reasonApply  = "apply-conflict"
)

// Rules is the verdict table, in order. The rules read the evidence a person would: the classes,
// exit codes, durations, files changed and post trees of the attempts, the agent's and the verify
// command's output, the verify command on the base tree, and the other tasks of the run. The
// environment is looked for first (in every output, not only the agent's), then what the attempts
// have in common (the same outcome every time points at the task's definition, different ones at
// the agent), and the table says `unknown` when the evidence does not decide.
var Rules = []Rule{
	{
		Name: "no-failure", Category: Unknown, Confidence: 1,
		Match: func(f *facts) bool { return f.task == nil },
		Why: func(f *facts) string {
			if n := f.recoveredAttempts(); n > 0 {
				return fmt.Sprintf("the run has no failed task: %d attempt(s) failed and a later attempt of the same task succeeded", n)
			}
			return "no attempt of this run failed"
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "nothing to fix; check the suspicious successes, if any", Commands: []string{"mulligan show " + f.run.ID}}
		},
	},
	{
		Name: "internal-error", Category: ToolBug, Confidence: 0.9,
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
		Name: "apply-conflict", Category: Environment, Confidence: 0.95,
		Match: func(f *facts) bool { return f.task.State == "blocked" && f.task.Reason == reasonApply },
		Why: func(f *facts) string {
			return fmt.Sprintf("task %s succeeded in its own worktree (%s), but the working tree changed a path of its change meanwhile: nothing was applied, so neither side's version was lost",
				f.task.ID, f.applyAddr())
		},
		Suggest: func(f *facts) Suggestion {
			addr := f.applyAddr()
			return Suggestion{Text: "see which paths conflict; put back your version of those you want the attempt's for (or keep yours and restore the attempt's others by hand), then apply it and resume",
				Commands: []string{"mulligan apply " + addr + " --dry-run", "mulligan apply " + addr, "mulligan resume " + f.run.ID}}
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
		Name: "empty-prompt", Category: WorkflowBug, Confidence: 0.9,
		Match: func(f *facts) bool { return f.emptyPrompt() },
		Why: func(f *facts) string {
			if f.def.PromptFile != "" {
				return fmt.Sprintf("the prompt sent to attempt 1 was empty: prompt_file %s has no text, so the agent had no instructions", f.def.PromptFile)
			}
			return "the prompt sent to attempt 1 was empty, while the agent's command passes it: the agent had no instructions"
		},
		Suggest: func(f *facts) Suggestion {
			if f.def.PromptFile != "" {
				// The file is read again by each attempt: no reload needed.
				return Suggestion{Text: fmt.Sprintf("write the task's instructions into %s, then run the task again", f.def.PromptFile), Commands: []string{f.retry()}}
			}
			return Suggestion{Text: fmt.Sprintf("give task %s a prompt in %s, then run it again", f.task.ID, f.fileName()), Commands: []string{f.fixed()}}
		},
	},
	{
		Name: "auth", Category: Environment, Confidence: 0.95,
		Match: func(f *facts) bool { return f.anyClass(cAuth) || f.anyExit(taskfile.PresetGemini, 41) },
		Why: func(f *facts) string {
			a := f.authAttempt()
			return fmt.Sprintf("agent %s (%s) is not logged in or its key is invalid: %s", a.Agent, orWord(f.presetFor(a.Agent), "generic"), a.Message)
		},
		Suggest: func(f *facts) Suggestion {
			a := f.authAttempt()
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
		// The agent's command started (a launcher, a shim) but what it runs is not installed:
		// `/usr/bin/env: 'node': No such file or directory`, exit 127.
		Name: "agent-runtime-missing", Category: Environment, Confidence: 0.9,
		Match: func(f *facts) bool { _, ok := f.agentToolMissing(); return ok },
		Why: func(f *facts) string {
			a, _ := f.agentToolMissing()
			s, _ := signalOf(f.agentSignals(a), sigTool)
			return fmt.Sprintf("agent %s started, but a program it runs is not installed (%s, exit status %d): %s", a.Agent, s.what, f.exit(a), s.line)
		},
		Suggest: func(f *facts) Suggestion {
			a, _ := f.agentToolMissing()
			s, _ := signalOf(f.agentSignals(a), sigTool)
			return Suggestion{Text: fmt.Sprintf("install %s where agent %s runs (or put it on the PATH mulligan is started with), then run the task again", s.what, a.Agent),
				Commands: []string{"command -v " + shellQuote(s.what), f.retry()}}
		},
	},
	{
		// Money, not time: no reset will lift it, so nothing is to be resumed on a clock.
		Name: "credit-exhausted", Category: Environment, Confidence: 0.9,
		Match: func(f *facts) bool { _, ok := f.creditWall(); return ok },
		Why: func(f *facts) string {
			a, _ := f.creditWall()
			return fmt.Sprintf("agent %s has no credit left (a quota no reset time lifts): %s", a.Agent, firstLine(a.Message))
		},
		Suggest: func(f *facts) Suggestion {
			a, _ := f.creditWall()
			return Suggestion{Text: fmt.Sprintf("a person has to add funds or raise the spend limit: %s; then run the task again (waiting will not help)", billing(f.presetFor(a.Agent))),
				Commands: []string{f.retry()}}
		},
	},
	{
		Name: "quota", Category: Environment, Confidence: 0.85,
		Match: func(f *facts) bool { return f.lastClass() == cQuota },
		Why:   func(f *facts) string { return "the agent hit a usage or rate limit: " + f.last().Message },
		Suggest: func(f *facts) Suggestion {
			if at := f.task.ResumeAt; at != nil && at.After(f.now()) {
				cmds := []string{}
				if f.commands["supervise"] {
					cmds = append(cmds, "mulligan supervise -r "+f.run.ID)
				}
				cmds = append(cmds, "mulligan resume "+f.run.ID+" --now")
				return Suggestion{Text: fmt.Sprintf("the limit resets at %s: `mulligan supervise` resumes the run then (or `mulligan resume %s` after it); `resume --now` tries at once, after adding an agent with its own quota to the task's chain",
					at.UTC().Format(time.RFC3339), f.run.ID), Commands: cmds}
			}
			return Suggestion{Text: "wait for the limit to reset (or add an agent with its own quota to the task's chain), then continue the run", Commands: []string{"mulligan resume " + f.run.ID}}
		},
	},
	{
		Name: "untrusted-folder", Category: Environment, Confidence: 0.9,
		Match: func(f *facts) bool { _, ok := f.untrusted(); return ok },
		Why: func(f *facts) string {
			a, _ := f.untrusted()
			return fmt.Sprintf("agent %s (gemini) refuses to work in a folder it does not trust (exit status 55); retrying cannot change that: %s", a.Agent, firstLine(a.Message))
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "trust the working tree for gemini's headless runs: GEMINI_CLI_TRUST_WORKSPACE=true in the environment (or `--skip-trust` in the agent's command) trusts it for that session, " +
				"so gemini loads the folder's own .gemini settings, .env, MCP servers and commands — only for a repository you trust; then run the task again",
				Commands: []string{"GEMINI_CLI_TRUST_WORKSPACE=true " + f.retry()}}
		},
	},
	{
		Name: "agent-sandbox", Category: Environment, Confidence: 0.8,
		Match: func(f *facts) bool { return f.anyExit(taskfile.PresetGemini, 44) },
		Why: func(f *facts) string {
			a := f.exitAttempt(taskfile.PresetGemini, 44)
			return fmt.Sprintf("agent %s (gemini) could not start its sandbox (exit status 44): %s", a.Agent, firstLine(a.Message))
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "start the container runtime gemini's sandbox uses (docker or podman), or turn the sandbox off in the agent's command, then run the task again",
				Commands: []string{"docker info", f.retry()}}
		},
	},
	{
		Name: "agent-config", Category: WorkflowBug, Confidence: 0.8,
		Match: func(f *facts) bool {
			return f.anyExit(taskfile.PresetGemini, 42) || f.anyExit(taskfile.PresetGemini, 52) || f.anyExit(taskfile.PresetGemini, 53)
		},
		Why: func(f *facts) string {
			for _, c := range []struct {
				exit int
				what string
			}{{42, "its input was refused"}, {52, "its configuration is invalid"}, {53, "it reached its session turn limit"}} {
				if f.anyExit(taskfile.PresetGemini, c.exit) {
					a := f.exitAttempt(taskfile.PresetGemini, c.exit)
					return fmt.Sprintf("agent %s (gemini) stopped because %s (exit status %d, not retryable): %s", a.Agent, c.what, c.exit, firstLine(a.Message))
				}
			}
			return ""
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("fix the agent's command or its settings (.gemini/settings.json; for the turn limit raise model.maxSessionTurns or make the task smaller) in %s, then run the task again", f.fileName()),
				Commands: []string{f.fixed()}}
		},
	},
	{
		Name: "context-window", Category: WorkflowBug, Confidence: 0.8,
		Match: func(f *facts) bool {
			return f.lastMatches(contextRe) && slices.Contains([]string{cAgentExit, cPayload, cTransport}, f.lastClass())
		},
		Why: func(f *facts) string {
			return "the work did not fit the model's context window: " + f.lastMatch(contextRe)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("split task %s into smaller tasks (or shorten its prompt and the files it must read) in %s; the same task fails the same way on retry", f.task.ID, f.fileName()),
				Commands: []string{f.fixed()}}
		},
	},
	{
		Name: "disk-full", Category: Environment, Confidence: 0.9,
		Match: func(f *facts) bool { _, ok := f.anySignal(sigDisk); return ok },
		Why:   func(f *facts) string { s, _ := f.anySignal(sigDisk); return "the disk is full: " + s.line },
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "free space on the disk of the working tree (and of the build caches), then run the task again", Commands: []string{"df -h " + shellQuote(f.run.Worktree), f.retry()}}
		},
	},
	{
		// A tool the verify command runs is not installed: on the base tree too, or with exit
		// 126/127, it is the machine, not the attempts.
		Name: "verify-tool-missing", Category: Environment, Confidence: 0.85,
		Match: func(f *facts) bool { _, ok := f.verifyToolMissing(); return ok },
		Why: func(f *facts) string {
			s, _ := f.verifyToolMissing()
			return fmt.Sprintf("the verify command could not run %s, which is not installed: %s", s.what, s.line)
		},
		Suggest: func(f *facts) Suggestion {
			s, _ := f.verifyToolMissing()
			return Suggestion{Text: fmt.Sprintf("install %s (or fix `verify.command` of task %s), then run the task again", s.what, f.task.ID),
				Commands: []string{"command -v " + shellQuote(s.what), f.retry()}}
		},
	},
	{
		Name: "tls", Category: Environment, Confidence: 0.85,
		Match: func(f *facts) bool { _, ok := f.everySignal(sigTLS); return ok },
		Why: func(f *facts) string {
			s, _ := f.everySignal(sigTLS)
			return "TLS verification failed (a proxy that intercepts TLS, or a missing CA certificate): " + s.line
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "give the agent the proxy's CA certificate (NODE_EXTRA_CA_CERTS=/path/ca.pem for the node CLIs, SSL_CERT_FILE for others) or fix the proxy, then run the task again",
				Commands: []string{f.retry()}}
		},
	},
	{
		Name: "service-down", Category: Environment, Confidence: 0.8,
		Match: func(f *facts) bool { _, ok := f.serviceDown(); return ok },
		Why: func(f *facts) string {
			s, _ := f.serviceDown()
			return fmt.Sprintf("a local service the tests need is not running (port %s refused the connection, on the base tree as after the attempts): %s", orWord(s.what, "?"), s.line)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "start the service the tests connect to (a database, a server), then run the task again", Commands: []string{f.retry()}}
		},
	},
	{
		Name: "permission-denied", Category: Environment, Confidence: 0.8,
		Match: func(f *facts) bool { _, ok := f.cannotWrite(); return ok },
		Why: func(f *facts) string {
			s, _ := f.cannotWrite()
			return "the agent could not write the working tree (permission denied, nothing changed): " + s.line
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "make the working tree writable by the user mulligan runs as (ownership, mode, a read-only mount, the agent's own sandbox settings), then run the task again",
				Commands: []string{"ls -ld " + shellQuote(f.run.Worktree), f.retry()}}
		},
	},
	{
		// The network was down for the whole task: every failure is the network, in the agent's
		// output or in the verify command's (a module download), and no task recovered from it.
		Name: "network", Category: Environment, Confidence: 0.8,
		Match: func(f *facts) bool { _, ok := f.networkDown(); return ok },
		Why: func(f *facts) string {
			s, _ := f.networkDown()
			return fmt.Sprintf("the network failed in every attempt (%d): %s", len(f.failed), s.line)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "check the network (DNS, proxy, firewall, the provider's status page), then run the task again", Commands: []string{f.retry()}}
		},
	},
	{
		// The provider failed (overloaded, 5xx, a reset connection) in ways that changed from
		// attempt to attempt, or while other tasks got through: a flake, not the machine.
		Name: "provider-flake", Category: AgentFlake, Confidence: 0.7,
		Match: func(f *facts) bool { return f.allClasses(cTransport) },
		Why: func(f *facts) string {
			why := fmt.Sprintf("the provider failed %d time(s) (%s)", len(f.failed), f.last().Message)
			if t := f.siblingRecovered(); t != "" {
				why += fmt.Sprintf("; task %s failed the same way and recovered on retry, so the network works", t)
			}
			return why
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "the provider's errors are transient: run the task again (later, if its status page reports an incident)", Commands: []string{f.retry()}}
		},
	},
	{
		Name: "timeout-too-short", Category: WorkflowBug, Confidence: 0.75,
		Match: func(f *facts) bool { return f.deterministicTimeouts() },
		Why: func(f *facts) string {
			limit, _ := agentcli.AgentLimits(f.def)
			return fmt.Sprintf("all %d attempts ran into the %s timeout at the limit with the same result (%d file(s) changed each time): the outcome is the same every time, so the limit, not the agent, decides it",
				len(f.failed), limit, f.files(f.last()))
		},
		Suggest: func(f *facts) Suggestion {
			limit, _ := agentcli.AgentLimits(f.def)
			return Suggestion{Text: fmt.Sprintf("raise `timeout` of task %s in %s (now %s), or split the task, then run it again", f.task.ID, f.fileName(), limit),
				Commands: []string{f.fixed()}}
		},
	},
	{
		Name: "stuck-on-input", Category: WorkflowBug, Confidence: 0.7,
		Match: func(f *facts) bool { return f.stuckSameWay() },
		Why: func(f *facts) string {
			l := f.lastOutputLine(f.last())
			if questionRe.MatchString(l) {
				return fmt.Sprintf("the agent went silent at the same point in all %d attempts, waiting for an answer nobody gives: %s", len(f.failed), l)
			}
			return fmt.Sprintf("the agent went silent at the same point in all %d attempts: %s", len(f.failed), orWord(l, "(no output)"))
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("run the agent non-interactively (claude -p with --permission-mode acceptEdits, codex exec --full-auto, gemini --yolo) in %s, or raise `heartbeat` if it only thinks long, then run the task again", f.fileName()),
				Commands: []string{f.fixed()}}
		},
	},
	{
		Name: "timeouts", Category: AgentFlake, Confidence: 0.5,
		Match: func(f *facts) bool { return f.allClasses(cTimeout, cHeartbeat) },
		Why: func(f *facts) string {
			if len(f.failed) == 1 {
				return "the attempt ran out of time or went silent (" + f.lastClass() + "): " + f.last().Message
			}
			return fmt.Sprintf("%d attempts ran out of time or went silent (%s), at different points", len(f.failed), strings.Join(f.distinctClasses(), ", "))
		},
		Suggest: func(f *facts) Suggestion {
			knob, d := "timeout", time.Duration(0)
			if f.def != nil {
				d = f.def.Timeout
				if f.lastClass() == cHeartbeat {
					knob, d = "heartbeat", f.def.Heartbeat
				}
			}
			now := ""
			if d > 0 {
				now = " (now " + d.String() + ")"
			}
			return f.retryKeeping(fmt.Sprintf("another attempt may finish; raise `%s` of task %s in %s%s if the attempts were close", knob, f.task.ID, f.fileName(), now))
		},
	},
	{
		Name: "verify-fails-on-base", Category: WorkflowBug, Confidence: 0.8,
		Match: func(f *facts) bool { return f.verifyBrokenOnBase() },
		Why: func(f *facts) string {
			return fmt.Sprintf("verify fails the same way on the tree the task started from (exit status %d) and after every attempt, without naming a failing test: the command itself cannot pass: %s",
				f.base.ExitCode, orWord(lastNonBlank(f.base.Output), f.last().Message))
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("fix `verify.command` of task %s in %s (run it by hand on the base tree), then run the task again", f.task.ID, f.fileName()),
				Commands: []string{f.fixed()}}
		},
	},
	{
		Name: "agent-broke-build", Category: AgentFlake, Confidence: 0.7,
		Match: func(f *facts) bool { _, ok := f.brokeBuild(); return ok },
		Why: func(f *facts) string {
			a, _ := f.brokeBuild()
			return fmt.Sprintf("attempt %d left code that does not build (the base tree did): %s", a.N, f.verifyView(a).build[0])
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "the agent introduced a build or syntax error; the next attempt gets the error in its prompt: run the task again", Commands: []string{f.retry()}}
		},
	},
	{
		Name: "agent-changed-nothing", Category: WorkflowBug, Confidence: 0.65,
		Match: func(f *facts) bool { return f.allClasses(cQuality) && f.noAttemptChanged() },
		Why: func(f *facts) string {
			return fmt.Sprintf("verify failed after %d attempt(s) that changed no file: the agent did not (or could not) edit the tree", len(f.failed))
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("let the agent edit files (claude -p needs --permission-mode acceptEdits, codex exec --full-auto) and check that the prompt asks for the change, in %s, then run the task again", f.fileName()),
				Commands: []string{f.fixed()}}
		},
	},
	{
		Name: "verify-progress", Category: AgentFlake, Confidence: 0.7,
		Match: func(f *facts) bool { _, ok := f.progress(); return ok },
		Why: func(f *facts) string {
			a, _ := f.progress()
			return fmt.Sprintf("the attempts fixed part of it: %d test(s) failed on the base tree, %d after attempt %d (%s)",
				len(readVerify(f.base.Output).tests), len(f.verifyView(a).tests), a.N, strings.Join(f.verifyView(a).tests, ", "))
		},
		Suggest: func(f *facts) Suggestion {
			a, _ := f.progress()
			return Suggestion{Text: fmt.Sprintf("the attempts are getting closer: run the task again, or keep the edits of attempt %d and finish by hand", a.N),
				Commands: []string{f.retry(), f.keep(a)}}
		},
	},
	{
		Name: "verify-same-tests-as-base", Category: AgentFlake, Confidence: 0.6,
		Match: func(f *facts) bool { return f.sameTestsAsBase() },
		Why: func(f *facts) string {
			return fmt.Sprintf("the tests that fail on the base tree still fail after every attempt (%s): the agent's changes did not fix them",
				strings.Join(readVerify(f.base.Output).tests, ", "))
		},
		Suggest: func(f *facts) Suggestion {
			return f.retryKeeping("the agent has not found the fix yet; another attempt (perhaps with `mulligan prompt` pointing it at the failing tests) may")
		},
	},
	{
		Name: "verify-intermittent", Category: AgentFlake, Confidence: 0.6,
		Match: func(f *facts) bool {
			return f.anyClass(cQuality) && (f.passes > 0 || len(f.distinctClasses()) > 1 || f.verifyDiffers())
		},
		Why: func(f *facts) string {
			if f.verifyDiffers() {
				return fmt.Sprintf("verify rejected %d attempt(s), each for different tests: the agent's work varies from attempt to attempt", f.count(cQuality))
			}
			return fmt.Sprintf("verify rejected %d attempt(s) while other attempts ended differently (%s): the results vary from attempt to attempt",
				f.count(cQuality), strings.Join(f.distinctClasses(), ", "))
		},
		Suggest: func(f *facts) Suggestion { return f.retryKeeping("the verify result varies; another attempt may pass") },
	},
	{
		Name: "verify-same-failure", Category: WorkflowBug, Confidence: 0.6,
		Match: func(f *facts) bool {
			return f.allClasses(cQuality) && len(f.failed) >= 2 && !f.verifyDiffers() && f.sameMessages()
		},
		Why: func(f *facts) string {
			why := fmt.Sprintf("verify failed the same way in all %d attempts: %s", len(f.failed), f.last().Message)
			if f.base != nil && !f.base.failed() {
				why += " (it passes on the base tree: the change the task asks for breaks it every time)"
			}
			return why
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("check that the verify command of task %s can pass with the change the prompt asks for, and that the prompt asks for what it checks; fix %s, then run the task again",
				f.task.ID, f.fileName()), Commands: []string{f.fixed(), f.logs(f.last())}}
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
				f.task.ID, f.fileName()), Commands: []string{f.fixed(), f.logs(f.last())}}
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
				f.task.ID, f.fileName(), strings.Join(f.missingMentioned(), ", ")), Commands: []string{f.fixed()}}
		},
	},
	{
		Name: "payload-declared-same", Category: WorkflowBug, Confidence: 0.5,
		Match: func(f *facts) bool { return f.allClasses(cPayload) && len(f.failed) >= 2 && f.sameMessages() },
		Why: func(f *facts) string {
			return fmt.Sprintf("the agent reported failure the same way in all %d attempts: %s", len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "read why the agent gave up and fix the task's prompt or its inputs, then run the task again", Commands: []string{f.logs(f.last()), f.fixed()}}
		},
	},
	{
		Name: "payload-declared", Category: AgentFlake, Confidence: 0.5,
		Match: func(f *facts) bool { return f.lastClass() == cPayload },
		Why: func(f *facts) string {
			return "the agent exited 0 but its output declared a failure: " + f.last().Message
		},
		Suggest: func(f *facts) Suggestion {
			return f.retryKeeping("the agent gave up this time, for reasons that differ; another attempt may not")
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
				Commands: []string{f.fixed()}}
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
		// The same exit with nothing said is no evidence of anything: say so.
		Name: "silent-failures", Category: Unknown, Confidence: 0.3,
		Match: func(f *facts) bool { return len(f.failed) >= 1 && f.allSilent() },
		Why: func(f *facts) string {
			return fmt.Sprintf("%d attempt(s) exited with status %d and printed nothing: no evidence says why", len(f.failed), f.exit(f.last()))
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("run the agent's command by hand in the working tree (%s) to see why it exits; the log is empty", orWord(f.argv0(f.last().Agent), "its command")),
				Commands: []string{f.logs(f.last()), "mulligan show " + f.run.ID}}
		},
	},
	{
		Name: "same-failure-repeated", Category: WorkflowBug, Confidence: 0.45,
		Match: func(f *facts) bool { return len(f.failed) >= 2 && f.sameMessages() },
		Why: func(f *facts) string {
			return fmt.Sprintf("all %d attempts failed the same way: %s", len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("the same failure every time points at the task, not the agent: read the output, fix the prompt or the agent's command in %s, then run the task again", f.fileName()),
				Commands: []string{f.logs(f.last()), f.fixed()}}
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

var digitsRe = lazyre.New(`[0-9]+`)

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
