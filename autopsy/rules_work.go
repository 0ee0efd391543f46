package autopsy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// workRules: the task's definition (workflow-bug: the same thing fails whatever the agent does)
// against the agent's work (agent-flake: it varies, another attempt may pass).
// noPromptRe: an agent CLI that started without its prompt.
var noPromptRe = lazyre.New(`(?i)Input must be provided either through stdin or as a prompt argument|No prompt provided|no input provided|Error: (?:a )?prompt is required|missing required argument '?prompt`)

var workRules = []Rule{
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
		// The agent's CLI says it got no prompt: the command does not pass it ({{prompt}}
		// missing, a prompt_file read wrong), whatever the task's text.
		Name: "no-prompt-received", Category: WorkflowBug, Confidence: 0.88,
		Match: func(f *facts) bool { return f.lastClass() == cAgentExit && f.lastMatches(noPromptRe) },
		Why:   func(f *facts) string { return "the agent's CLI received no prompt: " + f.lastMatch(noPromptRe) },
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("pass the prompt in agent %s's command ({{prompt}} as the prompt argument, or {{prompt_file}} on stdin) in %s, then run the task again", f.last().Agent, f.fileName()),
				Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string { return []string{f.lastMatch(noPromptRe)} },
	},
	{
		// The verify command itself never ends (watch mode) or hangs the same way every time.
		Name: "verify-never-ends", Category: WorkflowBug, Confidence: 0.82,
		Match: func(f *facts) bool {
			return f.verifyOutOfTime()
		},
		Why: func(f *facts) string {
			why := fmt.Sprintf("the verify command ran past its timeout in all %d attempts", len(f.failed))
			if l := f.lastMatch(watchRe); l != "" {
				why += ", waiting in watch mode for a key press: " + l
			}
			return why
		},
		Suggest: func(f *facts) Suggestion {
			if l := f.lastVerifyQuestion(); l != "" {
				return Suggestion{Text: fmt.Sprintf("the verify command waits for an answer (%s): make it run without one (--noinput, --yes, CI=1) in `verify.command` of task %s in %s; then run the task again",
					l, f.task.ID, f.fileName()), Commands: []string{f.fixed()}}
			}
			return Suggestion{Text: fmt.Sprintf("make `verify.command` of task %s run once and exit (jest --watchAll=false or CI=true, vitest run, no --watch), or raise its `verify.timeout` (a cold build in a fresh worktree takes longest: link or copy the build cache with worktree.link), in %s; then run the task again",
				f.task.ID, f.fileName()), Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string { return []string{f.lastMatch(watchRe), f.last().Message} },
	},
	{
		// The prompt asks for a package version its registry does not have: no attempt can.
		Name: "prompt-asks-missing-version", Category: WorkflowBug, Confidence: 0.84,
		Match: func(f *facts) bool { _, ok := f.missingVersion(); return ok },
		Why: func(f *facts) string {
			l, _ := f.missingVersion()
			return "the prompt asks for a package version the registry does not have, so no attempt can do it: " + l
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("name a version that exists in the prompt of task %s in %s (the registry lists them), then run the task again", f.task.ID, f.fileName()),
				Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string { l, _ := f.missingVersion(); return []string{l} },
	},
	{
		// A test failed in one attempt and passed in another with no change in its package.
		Name: "flaky-test", Category: AgentFlake, Confidence: 0.8,
		Match: func(f *facts) bool { _, _, ok := f.flaky(); return ok },
		Why: func(f *facts) string {
			name, a, _ := f.flaky()
			return fmt.Sprintf("test %s failed in attempt %d and passed in another attempt with no change in its package: it is flaky, not broken by the agent", name, a.N)
		},
		Suggest: func(f *facts) Suggestion {
			name, _, _ := f.flaky()
			return Suggestion{Text: fmt.Sprintf("the failure is transient: run the task again; make %s deterministic (or quarantine it) so it stops deciding runs", name), Commands: []string{f.retry()}}
		},
		Lines: func(f *facts) []string {
			name, a, _ := f.flaky()
			for _, t := range f.testsOf(a).Failed {
				if t.Name == name {
					return []string{testLine(t)}
				}
			}
			return nil
		},
	},
	{
		// Tests the task does not touch fail on the base tree: verify cannot pass.
		Name: "preexisting-failures", Category: WorkflowBug, Confidence: 0.8,
		Match: func(f *facts) bool {
			// (No attempt changed a file: the tree after them is the base, so the comparison
			// says nothing of whose the tests are.)
			ts, ok := f.preexisting()
			return ok && (!f.promptAsksToFix(ts) || f.saidPreexisting() != "") && !f.noAttemptChanged() && !f.testsAboutPrompt()
		},
		Why: func(f *facts) string {
			ts, _ := f.preexisting()
			return fmt.Sprintf("the tests that fail after the attempts fail on the tree the task started from too (%s), and the prompt does not ask for them: they are not the agent's, and verify cannot pass", strings.Join(ts, ", "))
		},
		Suggest: func(f *facts) Suggestion {
			ts, _ := f.preexisting()
			return Suggestion{Text: fmt.Sprintf("fix or skip %s first, or narrow `verify.command` of task %s to what the task changes, in %s; then run the task again", strings.Join(ts, ", "), f.task.ID, f.fileName()),
				Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string { return f.testLines(f.lastOf(cQuality)) },
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
		Name: "verify-fails-on-base", Category: WorkflowBug, Confidence: 0.75,
		Match: func(f *facts) bool { return f.verifyBrokenOnBase() },
		Why: func(f *facts) string {
			return fmt.Sprintf("verify fails the same way on the tree the task started from (exit status %d) and after the attempts it stopped on, without naming a failing test: the command itself cannot pass: %s",
				f.base.ExitCode, orWord(firstOf(decisiveLines(f.base.Output)), orWord(lastNonBlank(f.base.Output), f.last().Message)))
		},
		Suggest: func(f *facts) Suggestion {
			if strings.Contains(f.base.Output, "missing go.sum entry") || strings.Contains(f.base.Output, "updates to go.mod needed") {
				return Suggestion{Text: "the repository's go.sum lacks entries its imports need: run go mod tidy in the repository and commit it, then run the task again",
					Commands: []string{"go mod tidy", f.retry()}}
			}
			return Suggestion{Text: fmt.Sprintf("fix `verify.command` of task %s in %s (run it by hand on the base tree), then run the task again", f.task.ID, f.fileName()),
				Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string { return decisiveLines(f.base.Output) },
	},
	{
		// The verify ends in a tree check (`git diff --exit-code` after a formatter) that
		// rejects the attempt's own uncommitted edits: mulligan leaves them uncommitted for the
		// user to review, so no change can pass.
		Name: "verify-rejects-the-change", Category: WorkflowBug, Confidence: 0.8,
		Match: func(f *facts) bool { return f.rejectsOwnChange() },
		Why: func(f *facts) string {
			return "the verify fails on the attempt's own edits being uncommitted (it prints git's diff of the files the agent changed, and nothing else fails): a clean-tree check such as `git diff --exit-code` cannot pass while the change waits for review"
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("check the formatting without the clean-tree check (prettier --check ., gofmt -l ., black --check .) in `verify.command` of task %s in %s; then run the task again", f.task.ID, f.fileName()),
				Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string {
			a := f.lastOf(cQuality)
			return gitDiffRe.FindAllString(f.verifyOutput[key(a.TaskID, a.N)], 3)
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
		Lines: func(f *facts) []string { return []string{f.lastOutputLine(f.last())} },
	},
	{
		// Every attempt went silent inside a command it started: the command waits for
		// something nobody gives (a password, a permission prompt, an editor, a server that
		// never exits), the same way on every retry.
		Name: "hung-in-command", Category: WorkflowBug, Confidence: 0.71,
		Match: func(f *facts) bool { _, ok := f.hungInCommand(); return ok },
		Why: func(f *facts) string {
			c, _ := f.hungInCommand()
			return fmt.Sprintf("all %d attempts went silent while a command the agent had started was still running (the last: %s): it waits for input, a permission or a server that never exits", len(f.failed), c)
		},
		Suggest: func(f *facts) Suggestion {
			c, _ := f.hungInCommand()
			return Suggestion{Text: fmt.Sprintf("make that command run unattended (no prompt, pager, editor or signing passphrase: e.g. git -c commit.gpgsign=false, --yes/--no-input flags, CI=1), allow the agent's tool without asking, or tell the prompt not to run it, in %s; then run the task again. The command: %s", f.fileName(), c),
				Commands: []string{f.fixed(), f.logs(f.last())}}
		},
		Lines: func(f *facts) []string { c, _ := f.hungInCommand(); return []string{c} },
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
		Lines: func(f *facts) []string { a, _ := f.brokeBuild(); return f.verifyView(a).build },
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
		Lines: func(f *facts) []string { a, _ := f.progress(); return f.testLines(a) },
	},
	{
		// The agent changed nothing and said it was done ("Fixed", "all tests pass"): its claim
		// is false, not the task's definition: another attempt may do the work.
		Name: "agent-claims-done", Category: AgentFlake, Confidence: 0.66,
		Match: func(f *facts) bool {
			if !f.allClasses(cQuality) || !f.noAttemptChanged() {
				return false
			}
			w := f.agentOf(f.last())
			return w.Spoke && claimsDoneRe.MatchString(w.LastMessage) && !holdsBackRe.MatchString(w.LastMessage)
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("the agent said it was done (%q) but changed no file in %d attempt(s), and verify failed as on the untouched tree", f.agentOf(f.last()).LastMessage, len(f.failed))
		},
		Suggest: func(f *facts) Suggestion {
			return f.retryKeeping("the agent's claim was false; another attempt may do the work (if it keeps claiming, check its permission to edit)")
		},
	},
	{
		// The agent said something (a question, a refusal) and changed nothing: what it says is
		// what the task lacks. An agent that ended without a word gives no such evidence.
		Name: "agent-changed-nothing", Category: WorkflowBug, Confidence: 0.65,
		Match: func(f *facts) bool {
			return f.allClasses(cQuality) && f.noAttemptChanged() && slices.ContainsFunc(f.failed, func(a storeAttempt) bool {
				return f.agentOf(a).Spoke
			})
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("verify failed after %d attempt(s) that changed no file: the agent did not (or could not) edit the tree", len(f.failed))
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("let the agent edit files (claude -p needs --permission-mode acceptEdits, codex exec --sandbox workspace-write) and check that the prompt asks for the change, in %s, then run the task again", f.fileName()),
				Commands: []string{f.fixed()}}
		},
	},
	{
		// No attempt changed a file and the agent never said a word of its own (a CLI that
		// started and ended without an answer): nothing shows why it did nothing.
		Name: "agent-did-nothing", Category: Unknown, Confidence: 0.64,
		Match: func(f *facts) bool {
			return f.allClasses(cQuality) && f.noAttemptChanged() && !slices.ContainsFunc(f.failed, func(a storeAttempt) bool {
				return f.agentOf(a).Spoke
			})
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("the agent changed no file and gave no answer in %d attempt(s) (its CLI ended without a message of the model's), so the verify failed as on an untouched tree: nothing shows why it did nothing", len(f.failed))
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "read the attempt's log for what the CLI printed before it ended (a start-up error, a sign-in, an empty reply), and run the agent's command by hand with the prompt", Commands: []string{f.logs(f.last()), f.retry()}}
		},
	},
	{
		// One attempt, tests the base tree passes now fail: the agent's change broke them, and
		// the next attempt gets the failures in its prompt.
		Name: "agent-broke-tests", Category: AgentFlake, Confidence: 0.55,
		Match: func(f *facts) bool {
			ts := f.testsOf(f.last())
			return len(f.failed) == 1 && f.lastClass() == cQuality && f.base != nil && !f.base.failed() && len(ts.Failed)+len(ts.Suites) > 0
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("attempt %d broke tests that pass on the tree the task started from (%s)", f.last().N, strings.Join(f.testsOf(f.last()).Keys(), ", "))
		},
		Suggest: func(f *facts) Suggestion {
			return f.retryKeeping("the next attempt gets these failures in its prompt")
		},
		Lines: func(f *facts) []string { return f.testLines(f.last()) },
	},
	{
		Name: "verify-same-tests-as-base", Category: AgentFlake, Confidence: 0.6,
		Match: func(f *facts) bool { return f.sameTestsAsBase() },
		Why: func(f *facts) string {
			b := readVerify(f.base.Output)
			if len(b.tests) == 0 {
				return "the build that fails on the base tree where the prompt asks for the change still fails after every attempt (" + b.build[0] + "): the agent's changes did not fix it"
			}
			return fmt.Sprintf("the tests that fail on the base tree still fail after every attempt (%s): the agent's changes did not fix them",
				strings.Join(b.tests, ", "))
		},
		Suggest: func(f *facts) Suggestion {
			return f.retryKeeping("the agent has not found the fix yet; another attempt (perhaps with `mulligan prompt` pointing it at the failing tests) may")
		},
		Lines: func(f *facts) []string { return f.testLines(f.lastOf(cQuality)) },
	},
	{
		// (The failure the run stopped on must be one of the rejections, or say what went
		// wrong itself: an attempt that ended in silence after them is not explained by them.)
		Name: "verify-intermittent", Category: AgentFlake, Confidence: 0.6,
		Match: func(f *facts) bool {
			return f.anyClass(cQuality) && (f.passes > 0 || f.verifyDiffers()) && (f.lastClass() == cQuality || f.lastClass() == cTransport || f.says(f.last()))
		},
		Why: func(f *facts) string {
			if f.verifyDiffers() {
				return fmt.Sprintf("verify rejected %d attempt(s), each for different tests: the agent's work varies from attempt to attempt", f.count(cQuality))
			}
			return fmt.Sprintf("verify rejected %d attempt(s) while other attempts ended differently (%s): the results vary from attempt to attempt",
				f.count(cQuality), strings.Join(f.distinctClasses(), ", "))
		},
		Suggest: func(f *facts) Suggestion { return f.retryKeeping("the verify result varies; another attempt may pass") },
		Lines:   func(f *facts) []string { return f.testLines(f.lastOf(cQuality)) },
	},
	{
		// The verify command failed and said nothing but that it failed (make's "Error 2", an
		// exit status): no evidence says why, whatever the attempts have in common.
		Name: "verify-says-nothing", Category: Unknown, Confidence: 0.62,
		Match: func(f *facts) bool {
			as, vs := f.qualityViews()
			if len(as) == 0 || len(as) != len(f.failed) {
				return false
			}
			for i := range as {
				if !vs[i].saysNothing() {
					return false
				}
			}
			return true
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("verify failed in %d attempt(s) without saying why (%s): no evidence decides between the code, the command and the machine", len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			s := Suggestion{Text: "run the verify command by hand in the attempt's tree, with its verbose output, to see what fails", Commands: []string{f.logs(f.last())}}
			if a, ok := f.best(); ok {
				s.Commands = append(s.Commands, "mulligan diff "+fmt.Sprintf("%s/%s@%d", f.run.ID, a.TaskID, a.N))
			}
			return s
		},
		Lines: func(f *facts) []string { return decisiveLines(f.verifyOutput[key(f.last().TaskID, f.last().N)]) },
	},
	{
		// The untouched tree passes and every attempt's change fails it the same way: the
		// agent makes the same mistake each time (a wrong fix, a leak, a loop). Nothing in
		// the evidence says the task asks for what cannot pass; the agent's work is what
		// fails, and telling it what it misses is the way on.
		Name: "agent-same-mistake", Category: AgentFlake, Confidence: 0.61,
		Match: func(f *facts) bool {
			return f.allClasses(cQuality) && len(f.failed) >= 2 && f.base != nil && !f.base.failed() &&
				!f.verifyDiffers() && f.verifyConcrete() && !f.promptContradicts() && !needsTerminalRe.MatchString(f.verifyOutput[key(f.last().TaskID, f.last().N)])
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("the tree the task started from passes the verify, and all %d attempts' changes fail it the same way: %s — the agent repeats the same mistake",
				len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			a := f.last()
			return Suggestion{Text: fmt.Sprintf("read what the attempts changed and what fails, then tell the agent what it misses (mulligan prompt %s/%s TEXT) and run the task again, or finish it by hand",
				f.run.ID, a.TaskID), Commands: []string{fmt.Sprintf("mulligan diff %s/%s@%d", f.run.ID, a.TaskID, a.N), f.retry()}}
		},
		Lines: func(f *facts) []string { return f.testLines(f.last()) },
	},
	{
		Name: "verify-same-failure", Category: WorkflowBug, Confidence: 0.6,
		Match: func(f *facts) bool {
			return f.allClasses(cQuality) && len(f.failed) >= 2 && !f.verifyDiffers() && f.sameMessages() && f.verifyConcrete()
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
		Lines: func(f *facts) []string { return f.testLines(f.last()) },
	},
	{
		Name: "schema-never-satisfied", Category: WorkflowBug, Confidence: 0.6,
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
		// Every attempt went silent for longer than a heartbeat shorter than a model's usual
		// pause to think, at whatever point: the setting, not the agent.
		Name: "heartbeat-too-short", Category: WorkflowBug, Confidence: 0.55,
		Match: func(f *facts) bool {
			return len(f.failed) >= 2 && f.allClasses(cHeartbeat) && f.def != nil && f.def.Heartbeat > 0 && f.def.Heartbeat < minHeartbeat
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("all %d attempts were stopped for printing nothing for %s, shorter than an agent's model usually thinks before it prints: the heartbeat, not the work, ended them", len(f.failed), f.def.Heartbeat)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("raise `heartbeat` of task %s in %s (now %s; a few minutes is usual), then run the task again", f.task.ID, f.fileName(), f.def.Heartbeat),
				Change: "heartbeat: 5m", Commands: []string{f.fixed()}}
		},
	},
	{
		// The attempts took turns: each made pass what another failed, and the agent said the
		// tests ask for opposite things: the task, not the work.
		Name: "tests-pull-apart", Category: WorkflowBug, Confidence: 0.75,
		Match: func(f *facts) bool { return f.testsPullApart() },
		Why: func(f *facts) string {
			return "the attempts took turns making pass what another attempt failed, and the agent said the tests contradict each other: " + f.saidContradict()
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("decide which behaviour the tests should pin and say so in the prompt of task %s (or fix the tests) in %s, then run the task again", f.task.ID, f.fileName()),
				Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string { return f.testLines(f.lastOf(cQuality)) },
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
		Name: "payload-declared-same", Category: WorkflowBug, Confidence: 0.5,
		Match: func(f *facts) bool { return f.allClasses(cPayload) && len(f.failed) >= 2 && f.sameMessages() },
		Why: func(f *facts) string {
			return fmt.Sprintf("the agent reported failure the same way in all %d attempts: %s", len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "the agent gives up the same way every time: fix the task's prompt or its inputs for what it says (the log has the rest), then run the task again", Commands: []string{f.fixed(), f.logs(f.last())}}
		},
	},
	{
		// A prompt may name a file the task is to create, or a dotted identifier: the rule needs
		// a path the prompt does not ask to create, missing from the base tree, and named by the
		// failure too; every rule with output evidence outranks it.
		Name: "prompt-names-missing-files", Category: WorkflowBug, Confidence: 0.5,
		Match: func(f *facts) bool {
			return len(f.missingMentioned()) > 0 && slices.Contains([]string{cAgentExit, cQuality, cPayload, cSchema}, f.lastClass())
		},
		Why: func(f *facts) string {
			return "the prompt names files that are not in the tree the task started from, and the failure names them too: " + strings.Join(f.missingMentioned(), ", ")
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("fix the prompt of task %s in %s (or add %s to the tree), then run the task again",
				f.task.ID, f.fileName(), strings.Join(f.missingMentioned(), ", ")), Commands: []string{f.fixed()}}
		},
	},
	{
		Name: "payload-declared", Category: AgentFlake, Confidence: 0.45,
		Match: func(f *facts) bool { return f.lastClass() == cPayload && len(f.failed) >= 2 && f.says(f.last()) },
		Why: func(f *facts) string {
			return "the agent exited 0 but its output declared a failure, for reasons that differ: " + f.last().Message
		},
		Suggest: func(f *facts) Suggestion {
			return f.retryKeeping("the agent gave up this time, for reasons that differ; another attempt may not")
		},
	},
	{
		Name: "budget-exhausted", Category: AgentFlake, Confidence: 0.5,
		Match: func(f *facts) bool { return f.lastClass() == cBudget },
		Why: func(f *facts) string {
			return fmt.Sprintf("the task's deadline or spend limit ran out after %d failed attempt(s): %s", len(f.failed), f.last().Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("raise `deadline` or `max_cost_usd` of task %s in %s if the attempts were getting closer, then run it again", f.task.ID, f.fileName()),
				Commands: []string{f.fixed()}}
		},
	},
}

var watchRe = lazyre.New(`(?i)Watch Usage|press [a-z] to |waiting for file changes|watching for (?:file )?changes|--watch`)

// claimsDoneRe: an agent's words that the work is done; holdsBackRe: words that it is not.
var (
	claimsDoneRe = lazyre.New(`(?i)^(?:Updated|Fixed|Added|Changed|Implemented|Refactored|Replaced|Moved)\b|\b(?:all (?:the )?(?:\d+ )?tests (?:now )?pass|tests (?:now )?pass|fixed|done|implemented|completed|is in place|I(?: have|'ve)? (?:updated|fixed|changed|added|implemented))\b`)
	holdsBackRe  = lazyre.New(`(?i)\?|\b(?:can't|cannot|could not|couldn't|unable|permission|not allowed|need you|please (?:confirm|provide|tell))\b`)
)

// testLines quote an attempt's failing tests: name, file:line, message.
func (f *facts) testLines(a storeAttempt) []string {
	var out []string
	ts := f.testsOf(a)
	for i, t := range slices.Concat(ts.Failed, ts.Suites) {
		if i == maxEvidence {
			break
		}
		out = append(out, testLine(t))
	}
	if len(out) == 0 {
		out = f.testsOf(a).Build
	}
	return out
}

// testLine is "NAME WHERE: MESSAGE", without the parts a runner did not print.
func testLine(t evidence.Test) string {
	l := strings.TrimSpace(t.Name + " " + t.Where())
	if t.Message != "" {
		l += ": " + t.Message
	}
	return l
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

// lastVerifyQuestion is the question the last verify output ends on, if it waits for an answer.
func (f *facts) lastVerifyQuestion() string {
	a := f.lastOf(cQuality)
	l := lastNonBlank(f.verifyOutput[key(a.TaskID, a.N)])
	if questionRe.MatchString(l) || verifyAskRe.MatchString(l) {
		return l
	}
	return ""
}

// verifyAskRe: prompts of tools a verify command runs that end without a question mark.
var verifyAskRe = lazyre.New(`(?i)Select an option:|Type 'yes'|or 'no' to cancel:|\[Y/n\]|\[y/N\]|Enter (?:a|the|your) .*:\s*$`)

// verifyConcrete: the verify's failure points at the task's code, not just at a crash or an
// error somewhere: the base tree passes (the change breaks it), or the output names failing
// tests or build errors.
func (f *facts) verifyConcrete() bool {
	if f.base != nil && !f.base.failed() {
		return true
	}
	a := f.lastOf(cQuality)
	v := f.verifyView(a)
	if len(v.tests) > 0 || len(v.build) > 0 {
		return true
	}
	for _, l := range decisiveLines(f.verifyOutput[key(a.TaskID, a.N)] + "\n" + a.Message) {
		if specificCauseRe.MatchString(genericWordsRe.ReplaceAllString(l, " ")) {
			return true
		}
	}
	return false
}

// genericWordsRe are the words of failure that name no cause (a crash, an error, an abort);
// specificCauseRe what is left when a line names one.
var (
	genericWordsRe  = lazyre.New(`(?i)\b(?:errors?|fail(?:ed|ures?|s)?|fatal|crash(?:ed|es)?|abort(?:ed)?|exceptions?|unexpected(?:ly)?|unknown)\b`)
	specificCauseRe = lazyre.New(`(?i)denied|refused|not found|no such|cannot|can't|unable|invalid|expired|unauthori[sz]ed|forbidden|limit|quota|timeout|timed out|missing|unsupported|not supported|not allowed|not permitted|required|requires|mismatch|undefined|too[ _](?:long|large|many)|exceed|does(?: not|n't) exist|could(?: not|n't)|not set|no tty|not a tty|no default|incompatible|conflict|duplicate|already exists|not defined|no module|cannot find|did not|didn't|expected|got|corrupt|broken|overloaded|unavailable|reset|disconnect|closed|lost|no space|out of (?:memory|space|disk)|(?:disk|device|volume|partition|quota) (?:is )?full|\\bfetch\\b|network|connection|socket|\\bdns\\b|unreachable|\\bECONN[A-Z]+|ETIMEDOUT|EAI_AGAIN`)
)

// missingVersion: the last attempt's output (the agent's or the verify's) says a package version
// does not exist, and the prompt names that package.
func (f *facts) missingVersion() (string, bool) {
	if f.def == nil || len(f.failed) == 0 {
		return "", false
	}
	a := f.last()
	text := f.output[key(a.TaskID, a.N)] + "\n" + f.verifyOutput[key(a.TaskID, a.N)] + "\n" + a.Message
	for _, m := range noVersionRe.FindAllStringSubmatch(text, -1) {
		if pkg := firstNonEmpty(m[1:]...); pkg != "" && strings.Contains(strings.ToLower(f.def.Prompt), strings.ToLower(pkg)) {
			return clip(m[0]), true
		}
	}
	return "", false
}

// noVersionRe: pip's, npm's and cargo's words for a version the registry does not have.
var noVersionRe = lazyre.New("No matching distribution found for ([A-Za-z0-9_.-]+)[=<>~!]=?[0-9][\\w.]*|No matching version found for (@?[\\w./-]+)@|failed to select a version for the requirement `([\\w-]+) =")

// promptContradicts: the prompt may ask for what the failing tests forbid. It forbids touching
// the tests ("do not change the tests"); or it asks to change a behaviour ("instead of",
// "accept", "no longer") without asking the tests to stay green, and the failing tests are
// about what it names (its identifiers, its quoted values): tests that pin the old behaviour.
func (f *facts) promptContradicts() bool {
	if f.def == nil {
		return false
	}
	p := f.def.Prompt
	if forbidsTestsRe.MatchString(p) {
		return true
	}
	if !changeRe.MatchString(p) || keepGreenRe.MatchString(p) {
		return false
	}
	var about []string
	for _, t := range f.testsOf(f.last()).Failed {
		about = append(about, t.Key(), t.Message)
	}
	if len(about) == 0 { // no test runner's report: the verify's own lines
		about = decisiveLines(f.verifyOutput[key(f.last().TaskID, f.last().N)] + "\n" + f.last().Message)
	}
	text := strings.Join(about, "\n")
	for _, m := range promptNameRe.FindAllStringSubmatch(p, -1) {
		name := firstNonEmpty(m[1:]...)
		if i := strings.LastIndexByte(name, '.'); i >= 0 && i < len(name)-1 {
			name = name[i+1:]
		}
		if len(name) >= 3 && strings.Contains(text, name) {
			return true
		}
	}
	return false
}

var (
	// needsTerminalRe: a verify that stops because nobody can answer it: the command's fault.
	needsTerminalRe = lazyre.New(`(?i)environment is non-interactive|not a tty|no tty present|requires? an interactive|isatty|inappropriate ioctl for device`)
	forbidsTestsRe  = lazyre.New(`(?i)(?:don'?t|do not|never|without)\s+(?:touch|chang|modify|modifi|edit)\w*\s+(?:the |any |anything (?:under|in) |(?:any |the )?files? (?:under|in) )?(?:tests?|specs?|__tests__|test files?)\b`)
	changeRe        = lazyre.New(`(?i)\binstead of\b|\brather than\b|\bno longer\b|\banymore\b|\baccept\b|\ballow\b|\bstop \w+ing\b`)
	keepGreenRe     = lazyre.New(`(?i)(?:tests?|suite|specs?|rspec|pytest|jest|vitest|go test|cargo test|npm test|mvn|gradle)[^.]{0,40}\b(?:pass|passing|green)\b|\bkeep\b[^.]{0,40}\bgreen\b`)
	// promptNameRe: what a prompt names in code: a quoted value, a dotted or called name, a
	// camelCase or snake_case identifier, a capitalised word inside a sentence.
	promptNameRe = lazyre.New(`"([^"\n]{1,40})"|` + "`([^`\n]{1,40})`" + `|\b([A-Za-z_]\w*(?:\.\w+)+)\b|\b([A-Za-z_]\w*)\(|\b([a-z]+[A-Z]\w*|[a-z]+_[a-z_]+)\b|[a-z,;:] ([A-Z][a-z]+[A-Za-z0-9]*)\b`)
)

// firstOf is the first of ss, or "".
func firstOf(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return ss[0]
}

// minHeartbeat: a heartbeat shorter than this ends attempts while their model thinks.
const minHeartbeat = 30 * time.Second
