package autopsy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// agentRules: how the task runs its agent — the agent's command and settings, the questions a
// run nobody attends cannot answer, what an isolated worktree lacks. Each is fixed in the task
// file (workflow-bug), the same every attempt.
var agentRules = []Rule{
	{
		// The verify command names a file of the tree without the execute bit.
		Name: "verify-not-executable", Category: WorkflowBug, Confidence: 0.885,
		Match: func(f *facts) bool {
			a := f.lastOf(cQuality)
			return a.N > 0 && strings.Contains(a.Message, "could not start") && permRe.MatchString(a.Message) && f.verifyArgv0() != ""
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("the verify command %s is not executable: %s", f.verifyArgv0(), f.lastOf(cQuality).Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("give %s the execute bit and commit it (or run it through its interpreter in `verify.command` of task %s), then run the task again", f.verifyArgv0(), f.task.ID),
				Commands: []string{"chmod +x " + shellQuote(f.verifyArgv0()), f.retry()}}
		},
		Lines: func(f *facts) []string { return []string{f.lastOf(cQuality).Message} },
	},
	{
		// The agent's command starts an interactive UI that needs a terminal: every retry of
		// the same command fails the same way.
		Name: "agent-needs-terminal", Category: WorkflowBug, Confidence: 0.89,
		Match: func(f *facts) bool { _, ok := f.needsTerminal(); return ok },
		Why: func(f *facts) string {
			l, _ := f.needsTerminal()
			return fmt.Sprintf("agent %s's command starts an interactive UI, which needs a terminal nobody gives: %s", f.last().Agent, l)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("run the agent's CLI headless in its command in %s (claude -p, gemini -p, codex exec, opencode run; the presets' commands do), then run the task again", f.fileName()),
				Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string { l, _ := f.needsTerminal(); return []string{l} },
	},
	{
		// The agent's CLI refused its own tool calls: its command lacks the permission.
		Name: "tool-calls-refused", Category: WorkflowBug, Confidence: 0.88,
		Match: func(f *facts) bool { _, ds := f.refused(); return len(ds) > 0 },
		Why: func(f *facts) string {
			a, ds := f.refused()
			return fmt.Sprintf("agent %s's CLI refused its tool calls (%s), so it could not do the work; its last words: %s", a.Agent, strings.Join(ds, "; "), orWord(f.agentOf(a).LastMessage, a.Message))
		},
		Suggest: func(f *facts) Suggestion {
			a, _ := f.refused()
			flag := map[string]string{
				taskfile.PresetClaude:   "claude: --permission-mode acceptEdits (and --allowedTools for the commands it must run)",
				taskfile.PresetCodex:    "codex: --sandbox workspace-write (or --full-auto)",
				taskfile.PresetGemini:   "gemini: --approval-mode auto_edit (or --yolo) and --allowed-tools",
				taskfile.PresetOpencode: `opencode: --auto to approve what its settings ask for, or "permission" in opencode.json`,
			}[f.presetFor(a.Agent)]
			if g := grantCommand(f.presetFor(a.Agent), f.refusedCommand()); g != "" {
				flag = f.presetFor(a.Agent) + ": " + g // the command it was refused, granted
			}
			return Suggestion{Text: fmt.Sprintf("grant the agent the permission in its command in %s (%s), then run the task again", f.fileName(), orWord(flag, "its CLI's permission flag")),
				Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string { a, ds := f.refused(); return append(ds, f.agentOf(a).LastMessage) },
	},
	{
		// A command waited for a password or a host key on a terminal nobody watches: the task
		// needs credentials set up for a run nobody attends (or not to push at all).
		Name: "waits-for-credentials", Category: WorkflowBug, Confidence: 0.88,
		Match: func(f *facts) bool {
			_, p, ok := f.waitingPrompt()
			return ok && (p.Kind == evidence.AskCredentials || p.Kind == evidence.AskPassword || p.Kind == evidence.AskHostKey)
		},
		Why: func(f *facts) string {
			a, p, _ := f.waitingPrompt()
			return fmt.Sprintf("attempt %d stopped on a prompt for credentials nobody could answer (%s): %q", a.N, a.Class, p.Line)
		},
		Suggest: func(f *facts) Suggestion {
			a, p, _ := f.waitingPrompt()
			first := "git config --global credential.helper cache"
			switch {
			case p.Kind == evidence.AskHostKey:
				first = "ssh-keyscan " + shellQuote(orWord(hostKeyHost(f.output[key(a.TaskID, a.N)]), "github.com")) + " >> ~/.ssh/known_hosts"
			case p.Kind == evidence.AskPassword:
				first = "ssh-add"
			case strings.Contains(p.Line, "github.com"):
				first = "gh auth setup-git"
			}
			return Suggestion{Text: p.Avoid() + "; then run the task again", Commands: []string{first, "GIT_TERMINAL_PROMPT=0 " + f.retry()}}
		},
		Lines: func(f *facts) []string { _, p, _ := f.waitingPrompt(); return []string{p.Line} },
	},
	{
		// A command asked a yes/no question (npm init, npx, apt) and waited: the task must say
		// how to run it without one.
		Name: "waits-for-answer", Category: WorkflowBug, Confidence: 0.87,
		Match: func(f *facts) bool {
			_, p, ok := f.waitingPrompt()
			return ok && p.Kind != evidence.AskCredentials && p.Kind != evidence.AskPassword && p.Kind != evidence.AskHostKey
		},
		Why: func(f *facts) string {
			a, p, _ := f.waitingPrompt()
			return fmt.Sprintf("attempt %d stopped on a question nobody could answer (%s): %q", a.N, a.Class, p.Line)
		},
		Suggest: func(f *facts) Suggestion {
			_, p, _ := f.waitingPrompt()
			s := Suggestion{Text: p.Avoid() + fmt.Sprintf("; say so in the prompt of task %s (or run the agent itself non-interactively) in %s, then run it again", f.task.ID, f.fileName()),
				Commands: []string{f.fixed()}}
			if f.commands["prompt"] && f.task.State == "blocked" {
				note := "Run every command non-interactively (npm init -y, npx --yes, apt-get -y, CI=true): nobody answers questions."
				s.Text += "; or tell the next attempt with `mulligan prompt`"
				s.Commands = append(s.Commands, fmt.Sprintf("mulligan prompt %s/%s %s", f.run.ID, f.task.ID, shellQuote(note)))
			}
			return s
		},
		Lines: func(f *facts) []string { _, p, _ := f.waitingPrompt(); return []string{p.Line} },
	},
	{
		// An isolated worktree has no node_modules unless the task links it (SPEC §4.1).
		Name: "worktree-lacks-dependencies", Category: WorkflowBug, Confidence: 0.89,
		Match: func(f *facts) bool {
			s, ok := f.verifyToolMissing()
			return ok && nodeBinRe.MatchString(s.what) && f.def != nil && f.def.Isolation == taskfile.IsolationWorktree
		},
		Why: func(f *facts) string {
			s, _ := f.verifyToolMissing()
			return fmt.Sprintf("the verify command could not run %s, a program of node_modules, in the task's own worktree, which has no node_modules: %s", s.what, s.line)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("add `worktree: {link: [node_modules]}` to task %s in %s (or install the dependencies in `verify.command`), then run it again", f.task.ID, f.fileName()),
				Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string { s, _ := f.verifyToolMissing(); return []string{s.line} },
	},
	{
		// An isolated worktree has only the tracked files (and what worktree.copy names): a file
		// the tests open that is missing there, on the base tree too, is one to copy in.
		Name: "worktree-lacks-file", Category: WorkflowBug, Confidence: 0.86,
		Match: func(f *facts) bool { _, ok := f.worktreeMissingFile(); return ok },
		Why: func(f *facts) string {
			p, _ := f.worktreeMissingFile()
			return fmt.Sprintf("the tests open %s, which the task's own worktree does not have (it holds the tracked files only), on the base tree as after every attempt", p)
		},
		Suggest: func(f *facts) Suggestion {
			p, _ := f.worktreeMissingFile()
			return Suggestion{Text: fmt.Sprintf("add `worktree: {copy: [%s]}` to task %s in %s (or track the file), then run it again", p, f.task.ID, f.fileName()),
				Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string { return f.testLines(f.lastOf(cQuality)) },
	},
	{
		// The agent's command names a model its provider does not have.
		Name: "model-not-found", Category: WorkflowBug, Confidence: 0.85,
		Match: func(f *facts) bool {
			return (f.lastMatches(modelNotFoundRe) || f.pinnedModelRefused() != "") && f.lastClass() != cQuality
		},
		Why: func(f *facts) string {
			if m := f.pinnedModelRefused(); m != "" {
				return fmt.Sprintf("the task file names model %s in agent %s's command, and the provider refuses it to this account: %s", m, f.last().Agent, f.lastMatch(accountRe))
			}
			return "the agent's provider has no such model: " + f.lastMatch(modelNotFoundRe)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("name a model the provider has in the agent's command (--model) in %s, then run the task again", f.fileName()), Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string {
			if f.pinnedModelRefused() != "" {
				return []string{f.lastMatch(accountRe)}
			}
			return []string{f.lastMatch(modelNotFoundRe)}
		},
	},
	{
		// A command of the task's own (not a preset's, or a preset's with a flag the task file
		// added) with a flag its program does not take.
		Name: "agent-command-bad-flag", Category: WorkflowBug, Confidence: 0.84,
		Match: func(f *facts) bool {
			return f.lastClass() == cAgentExit && f.lastMatches(badFlagRe) && (installCommand(f.presetFor(f.last().Agent)) == "" || f.badFlagIsOwn())
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("agent %s's command passes a flag its program does not take: %s", f.last().Agent, f.lastMatch(badFlagRe))
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("fix `command` of agent %s in %s, then run the task again", f.last().Agent, f.fileName()), Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string { return []string{f.lastMatch(badFlagRe)} },
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
		Lines: func(f *facts) []string { return []string{f.lastMatch(contextRe)} },
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
		// The agent ran out of turns: the task is larger than the agent's turn limit allows.
		Name: "turn-limit", Category: WorkflowBug, Confidence: 0.8,
		Match: func(f *facts) bool {
			return f.lastMatches(turnLimitRe) && slices.Contains([]string{cAgentExit, cPayload}, f.lastClass())
		},
		Why: func(f *facts) string {
			return "the agent used up its turns before finishing: " + f.lastMatch(turnLimitRe)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: fmt.Sprintf("raise the agent's turn limit (claude --max-turns, gemini model.maxSessionTurns) or split task %s into smaller tasks, in %s; then run it again", f.task.ID, f.fileName()),
				Commands: []string{f.fixed()}}
		},
		Lines: func(f *facts) []string { return []string{f.lastMatch(turnLimitRe)} },
	},
}

var hostKeyRe = lazyre.New(`authenticity of host '([^' (]+)`)

// hostKeyHost is the host ssh asked to trust.
func hostKeyHost(text string) string {
	if m := hostKeyRe.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

var modelNotFoundRe = lazyre.New(`(?i)not_found_error.{0,40}model|issue with the selected model|"?model"?:? \S+ (?:was )?not found|model_not_found|ProviderModelNotFoundError|The model .{1,60} does not exist|unknown model|invalid model|Model not found`)

// missingFileRe: a file a test opened that is not there (python, node, go), relative paths only.
var missingFileRe = lazyre.New(`No such file or directory: '([^'/][^']*)'|ENOENT: no such file or directory, (?:open|stat|scandir) '([^'/][^']*)'|open ([^\s:/][^\s:]*): no such file or directory|(?m)FileNotFoundError: ([^\s'"/\[][^\s'"]*)\s*$|FileNotFoundException: ([^\s/][^\s]*) \(No such file|(?i)\b(?:cannot|can't|could not|unable to|failed to) (?:open|read|load) (?:file )?['"]?([^\s'"/:][^\s'":]*\.[A-Za-z]\w*)\b`)

// worktreeMissingFile is a relative path the tests could not open in an isolated worktree, on
// the base tree and after the last rejected attempt.
func (f *facts) worktreeMissingFile() (string, bool) {
	// (The run stopped on the verify: an attempt that failed otherwise before was on the way.)
	if f.def == nil || f.def.Isolation != taskfile.IsolationWorktree || !f.base.failed() || f.lastClass() != cQuality {
		return "", false
	}
	find := func(text string) string {
		if m := missingFileRe.FindStringSubmatch(text); m != nil {
			return firstNonEmpty(m[1:]...)
		}
		return ""
	}
	p := find(f.base.Output)
	a := f.lastOf(cQuality)
	if p == "" {
		p = f.inYourTree(absMissingRe.FindStringSubmatch(f.base.Output))
		if p == "" || p != f.inYourTree(absMissingRe.FindStringSubmatch(f.verifyOutput[key(a.TaskID, a.N)])) {
			return "", false
		}
		return f.untrackedRoot(p, a), true
	}
	if p != find(f.verifyOutput[key(a.TaskID, a.N)]) {
		return "", false
	}
	return f.untrackedRoot(p, a), true
}

// untrackedRoot is the first directory on path p that the tree attempt a started from does not
// hold (an ignored folder, data/raw or test/test_helper/bats-support: the rest of it is needed
// too), else p itself.
func (f *facts) untrackedRoot(p string, a storeAttempt) string {
	if f.repo == nil || a.PreTree == "" {
		return p
	}
	tree := snapshot.NewHash(a.PreTree)
	parts := strings.Split(p, "/")
	for k := 1; k < len(parts); k++ {
		if d := strings.Join(parts[:k], "/"); !f.isDir(tree, d) {
			return d
		}
	}
	return p
}

// absMissingRe: a file not found by its absolute path (the tests resolve it from their own
// place: "No such file or directory: '/home/dev/model/data/raw/transactions.csv'").
var absMissingRe = lazyre.New(`Could not find '(/[^']+)'\[\.bash\]|No such file or directory: '(/[^']+)'|ENOENT: no such file or directory, (?:open|stat) '(/[^']+)'|open (/[^\s:]+): no such file or directory`)

// inYourTree is the longest end of the absolute path in m that names a file of your working
// tree (an ignored one the task's worktree does not hold), relative to it; "" when none does.
func (f *facts) inYourTree(m []string) string {
	if m == nil || f.repo == nil {
		return ""
	}
	parts := strings.Split(strings.TrimPrefix(firstNonEmpty(m[1:]...), "/"), "/")
	for k := range parts {
		rel := strings.Join(parts[k:], "/")
		for _, name := range []string{rel, rel + ".bash"} { // (bats's load adds .bash)
			if st, err := os.Stat(filepath.Join(f.repo.Root(), name)); err == nil && st.Mode().IsRegular() {
				return name
			}
		}
	}
	return ""
}

var turnLimitRe = lazyre.New(`(?i)error_max_turns|max(?:imum)?[ _-]?turns|maxSessionTurns|turn limit|Reached max session turns`)

// refused is the last attempt whose agent CLI refused its tool calls (permission_denied, or
// the denials its output lists), when nothing changed in the tree.
func (f *facts) refused() (storeAttempt, []string) {
	a := f.last()
	// An agent that changed files despite a refusal was stopped by it only when it says so,
	// or when what was refused is a command the prompt asks it to run.
	if a.N == 0 || f.files(a) > 0 && !refusalSaidRe.MatchString(lastLines(f.output[key(a.TaskID, a.N)], 3)) && !f.askedCommandRefused(a) {
		return a, nil
	}
	// It edited, and what was refused is its own run of the tests (the verify runs them
	// anyway): the verify's failure says why the attempt failed, not the refusal. (claude
	// reports one refusal twice: the call in permission_denials, the text in its tool result.)
	denials := f.agentOf(a).Denials
	onlyChecksRefused := f.files(a) > 0 && a.Class == cQuality && slices.ContainsFunc(denials, func(d evidence.Denial) bool { return d.Input != "" })
	for _, d := range denials {
		if d.Input != "" && !(commandToolRe.MatchString(d.Tool) && onlyChecks(d.Input)) {
			onlyChecksRefused = false
		}
	}
	var out []string
	for _, d := range denials {
		if d.Sandbox && len(f.agentOf(a).Network) > 0 {
			continue // the sandbox's network: agent-sandbox-network says it
		}
		if onlyChecksRefused && (commandToolRe.MatchString(d.Tool+" "+d.Line) || d.Input == "" && !writeRe.MatchString(d.Line)) {
			continue
		}
		out = append(out, denialLine(d))
	}
	if (a.Code == "permission_denied" || f.agentOf(a).ReadOnlySandbox) && len(out) == 0 {
		out = append(out, a.Message)
	}
	if f.agentOf(a).ReadOnlySandbox {
		out = append(out, "sandbox: read-only")
		return a, out
	}
	if a.Code != "permission_denied" && len(out) == 0 {
		return a, nil
	}
	if f.files(a) > 0 && !slices.ContainsFunc(out, writeRe.MatchString) {
		// It edited, only its commands were refused, and the verify says the machine lacks
		// what they would have met too (a target, a toolchain): that is why the run stopped.
		if _, ok := f.machineLacks(); ok {
			return a, nil
		}
	}
	return a, out
}

// denialLine is what the CLI said of a refusal, with the command or path it refused when its
// words do not name it (gemini's "Tool "run_shell_command" not found").
func denialLine(d evidence.Denial) string {
	if d.Input != "" && !strings.Contains(d.Line, d.Input) {
		return d.Line + " (" + d.Input + ")"
	}
	return d.Line
}

// refusedCommand is the first shell command among the refusals that decided (refused), "" when
// none names one.
func (f *facts) refusedCommand() string {
	a, lines := f.refused()
	for _, d := range f.agentOf(a).Denials {
		if d.Input != "" && commandToolRe.MatchString(d.Tool) && slices.Contains(lines, denialLine(d)) {
			return d.Input
		}
	}
	return ""
}

// grantCommand is the flag (opencode: the setting) of the preset's CLI that lets it run cmd
// headless, "" when it has none (codex's sandbox is no list of commands) or there is no cmd.
func grantCommand(preset, cmd string) string {
	switch {
	case cmd == "":
		return ""
	case preset == taskfile.PresetClaude:
		return "--allowedTools " + shellQuote("Bash("+cmd+")")
	case preset == taskfile.PresetGemini:
		return "--allowed-tools " + shellQuote("run_shell_command("+cmd+")")
	case preset == taskfile.PresetOpencode:
		return fmt.Sprintf(`--auto, or "permission": {"bash": {%q: "allow"}} in opencode.json`, cmd)
	}
	return ""
}

// onlyChecks: a shell command whose every step builds or runs the tests (what the verify does
// anyway), not one that changes anything (prisma generate, go get, db:migrate).
func onlyChecks(cmd string) bool {
	if m := shellWrapRe.FindStringSubmatch(cmd); m != nil {
		cmd = firstNonEmpty(m[1:]...) // codex's bash -lc '…'
	}
	steps := shellStepRe.Get().Split(cmd, -1)
	for _, s := range steps {
		if s = strings.TrimSpace(s); s != "" && (!checkStepRe.MatchString(s) || !checkTargets(s)) {
			return false
		}
	}
	return len(steps) > 0
}

// checkTargets: a make or ninja step names only targets that build or test (none, all, test,
// check, lint…). Their targets are the project's own names: make gen, make install or make
// migrate change the tree or the world, and the verify does not run them for the agent.
func checkTargets(step string) bool {
	ws := strings.Fields(step)
	if len(ws) == 0 || !makeToolRe.MatchString(ws[0]) {
		return true
	}
	for i := 1; i < len(ws); i++ {
		w := ws[i]
		switch {
		case makeArgFlagRe.MatchString(w):
			i++ // -C DIR, -f FILE, -j N
		case strings.HasPrefix(w, "-") || strings.Contains(w, "="):
		case !checkTargetRe.MatchString(w) || changeTargetRe.MatchString(w):
			return false
		}
	}
	return true
}

// commandToolRe: a refused shell command; writeRe: a refused write; shellStepRe splits a command
// line into its steps; checkStepRe: a step that builds or tests; makeToolRe a tool whose targets
// are the project's own names; makeArgFlagRe its flags that take the next word; checkTargetRe a
// target that builds or tests.
var (
	commandToolRe = lazyre.New(`(?i)^(?:Bash|exec|shell|run_shell_command)\b|\buse (?:Bash|the shell)\b`)
	writeRe       = lazyre.New(`(?i)\bwrite to\b|\b(?:Edit|Write|MultiEdit|apply_patch|write_file|replace)\b`)
	shellWrapRe   = lazyre.New(`^(?:/bin/)?(?:ba|z)?sh -l?c '([^']*)'$|^(?:/bin/)?(?:ba|z)?sh -l?c "([^"]*)"$`)
	shellStepRe   = lazyre.New(`&&|\|\||;|\|`)
	checkStepRe   = lazyre.New(`(?i)^(?:cd \S+|(?:\S*/)?(?:go (?:test|build|vet)|cargo (?:test|build|check|clippy)|(?:npm|pnpm|yarn|bun) (?:run )?(?:test|build|lint|typecheck)\b|npx (?:jest|vitest|tsc)|mvn|gradlew?|mix test|dotnet (?:test|build)|deno test|clojure -[XM]:test|lein test|rebar3 (?:eunit|ct)|stack test|cabal test|dune (?:test|build)|swift (?:test|build)|sbt test|pytest|python3? -m pytest|jest|vitest|rspec|bundle exec rspec|phpunit|ctest|tox|nox|tsc|cmake|make|ninja|tail|head|grep))\b`)
	makeToolRe    = lazyre.New(`^(?:\S*/)?(?:make|gmake|ninja)$`)
	makeArgFlagRe = lazyre.New(`^-[CfIoWj]$|^--(?:directory|file|makefile|include-dir)$`)
	checkTargetRe = lazyre.New(`(?i)^(?:all|default|ci|(?:\w+[-_])?(?:tests?|check|checks|lint|vet|verify|build|compile|spec|specs|typecheck)(?:[-_]\w+)?)$`)
	// changeTargetRe: a target whose name says it changes something (lint-fix, update-snapshots,
	// build-and-publish), check-like as the rest of its name may be.
	changeTargetRe = lazyre.New(`(?i)(?:^|[-_])(?:fix|fmt|format|gen|generate|install|update|upgrade|deploy|publish|release|push|migrate|clean|snapshots?)(?:$|[-_])`)
)

// needsTerminal: every failed attempt's agent said it needs a terminal (Ink's raw mode, a tty
// check); the line that says so.
func (f *facts) needsTerminal() (string, bool) {
	line := ""
	for _, a := range f.failed {
		if a.Class != cAgentExit && a.Class != cPayload {
			return "", false
		}
		text := a.Message + "\n" + f.output[key(a.TaskID, a.N)]
		m := ttyRe.FindString(text)
		if m == "" && a.Code != "needs_terminal" {
			return "", false
		}
		line = orWord(strings.TrimSpace(m), a.Message)
	}
	return clip(line), line != ""
}

var ttyRe = lazyre.New(`(?im)^.*(?:Raw mode is not supported|stdin is not a (?:tty|terminal)|the input device is not a TTY|Inappropriate ioctl for device|requires an? (?:interactive )?(?:TTY|terminal)|not a terminal|must be run in (?:an interactive|a) terminal).*$`)

// refusalSaidRe: the agent's own words that a refused tool call kept it from the work.
var refusalSaidRe = lazyre.New(`(?i)(?:permission|approval)[^.]{0,60}(?:denied|not granted|haven't granted|wasn't granted|was not granted|needed|required)|(?:not|n't) permitted|not allowed to run|haven't granted|(?:could not|couldn't|can't|cannot|unable to) (?:run|execute|install|add)[^.]{0,60}(?:permission|approval|denied|blocked|sandbox)`)

// askedCommandRefused: the prompt asks the agent to run a command ("then run `npx prisma migrate
// dev`") and the agent's shell tool was refused or missing: the step it was asked for never ran.
func (f *facts) askedCommandRefused(a storeAttempt) bool {
	if f.def == nil {
		return false
	}
	runs := promptRunsRe.MatchString(f.def.Prompt)
	return slices.ContainsFunc(f.agentOf(a).Denials, func(d evidence.Denial) bool {
		shell := commandToolRe.MatchString(d.Tool) || shellToolRe.MatchString(d.Line)
		// (The prompt that names the very command refused: "… with dayjs (npm install dayjs)".)
		named := len(strings.TrimSpace(d.Input)) >= 6 && strings.Contains(f.def.Prompt, strings.TrimSpace(d.Input))
		return shell && (runs || named)
	})
}

var (
	promptRunsRe = lazyre.New("(?i)\\brun(?:ning)?\\s+`[^`]+`|\\brun(?:ning)?\\s+(?:npx|npm|yarn|pnpm|make|go|cargo|python3?|pip|bundle|rails|rake|mix|dotnet|mvn|gradle|\\./)\\S*")
	shellToolRe  = lazyre.New(`(?i)\b(?:run_shell_command|Bash|shell|exec_command)\b`)
)

// agentConfigRe: an agent CLI refusing its own settings file.
var agentConfigRe = lazyre.New(`(?i)Error loading config(?:uration)?(?:\.toml)?:|(?:invalid|malformed) (?:config(?:uration)?|settings)(?: file)?\b.*\S|failed to (?:parse|load|read) (?:the )?(?:config(?:uration)?|settings)\b`)

// configPathRe: a settings file a line names.
var configPathRe = lazyre.New(`[~\w./-]*(?:config\.toml|settings\.json|opencode\.jsonc?|\.aider\.conf\.yml)`)

// agentConfigError is the line in which every failed attempt's agent (all ended as agent_exit)
// refused its own configuration, the last attempt's.
func (f *facts) agentConfigError() (string, bool) {
	if !f.allClasses(cAgentExit) {
		return "", false
	}
	line := ""
	for _, a := range f.failed {
		line = ""
		for _, l := range evidence.Lines(f.output[key(a.TaskID, a.N)]) {
			if agentConfigRe.MatchString(l) {
				line = clip(strings.TrimSpace(l))
				break
			}
		}
		if line == "" {
			return "", false
		}
	}
	return line, true
}

// agentConfigFile is where a preset's CLI keeps the user's settings.
func agentConfigFile(preset string) string {
	return map[string]string{taskfile.PresetCodex: "~/.codex/config.toml", taskfile.PresetClaude: "~/.claude/settings.json",
		taskfile.PresetGemini: "~/.gemini/settings.json", taskfile.PresetOpencode: "~/.config/opencode/opencode.json",
		taskfile.PresetAider: "~/.aider.conf.yml"}[preset]
}
