package autopsy

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// envRules: the machine, the accounts and the network, not the task or the agent's work. A
// retry is suggested first only where the cause passes by itself.
// gpuMemoryRe: a GPU out of memory (PyTorch, TensorFlow, CUDA itself).
var gpuMemoryRe = lazyre.New(`CUDA out of memory|CUDA_ERROR_OUT_OF_MEMORY|cudaErrorMemoryAllocation|OOM when allocating tensor .* on /job:.*GPU`)

var envRules = []Rule{
	{
		Name: "auth", Category: Environment, Confidence: 0.95,
		Match: func(f *facts) bool {
			return f.lastClass() == cAuth || (f.exit(f.last()) == 41 && f.presetFor(f.last().Agent) == taskfile.PresetGemini) || f.lapsedLogin()
		},
		Why: func(f *facts) string {
			a := f.last()
			return fmt.Sprintf("agent %s (%s) is not logged in or its key is invalid: %s", a.Agent, orWord(f.presetFor(a.Agent), "generic"), a.Message)
		},
		Suggest: func(f *facts) Suggestion { return f.loginSuggestion(f.last()) },
	},
	{
		// The chain's later rung — the agent the task fails over to — could not run for its
		// login, and the attempts after it went back to an earlier rung that kept failing: the
		// run stopped without the agent it escalates to.
		Name: "failover-target-logged-out", Category: Environment, Confidence: 0.9,
		Match: func(f *facts) bool { _, ok := f.blockedRung(); return ok },
		Why: func(f *facts) string {
			a, _ := f.blockedRung()
			return fmt.Sprintf("the chain could not fail over to agent %s, which is not logged in (%s); agent %s, before it in the chain, kept failing: %s",
				a.Agent, a.Message, f.last().Agent, f.last().Message)
		},
		Suggest: func(f *facts) Suggestion { a, _ := f.blockedRung(); return f.loginSuggestion(a) },
		Lines:   func(f *facts) []string { a, _ := f.blockedRung(); return []string{a.Message} },
	},
	{
		// The agent's CLI waits for an interactive sign-in nobody gives: it is not logged in.
		Name: "waits-for-login", Category: Environment, Confidence: 0.9,
		Match: func(f *facts) bool { _, p, ok := f.waitingPrompt(); return ok && p.Kind == evidence.AskLogin },
		Why: func(f *facts) string {
			a, p, _ := f.waitingPrompt()
			return fmt.Sprintf("agent %s's CLI waited for an interactive sign-in nobody gives: %s", a.Agent, p.Line)
		},
		Suggest: func(f *facts) Suggestion {
			a, _, _ := f.waitingPrompt()
			cmd, text := f.login(a.Agent)
			s := Suggestion{Text: text + ", as the user mulligan runs as; then run the task again", Commands: []string{f.retry()}}
			if cmd != "" {
				s.Commands = append([]string{cmd}, s.Commands...)
			}
			return s
		},
		Lines: func(f *facts) []string { _, p, _ := f.waitingPrompt(); return []string{p.Line} },
	},
	{
		Name: "agent-missing", Category: Environment, Confidence: 0.95,
		Match: func(f *facts) bool { return f.lastClass() == cMissing },
		Why: func(f *facts) string {
			a := f.last()
			return fmt.Sprintf("the command of agent %s could not be started: %s", a.Agent, a.Message)
		},
		Suggest: func(f *facts) Suggestion {
			a := f.last()
			argv0 := f.argv0(a.Agent)
			cmds := []string{}
			if permRe.MatchString(a.Message) && argv0 != "" {
				// It is there but may not be run: the execute bit.
				return Suggestion{Text: fmt.Sprintf("%s is not executable: give it the execute bit (or fix `command` of agent %s in %s), then run the task again", argv0, a.Agent, f.fileName()),
					Commands: []string{"chmod +x " + shellQuote(argv0), f.retry()}}
			}
			if in := installCommand(f.presetFor(a.Agent)); in != "" {
				cmds = append(cmds, in)
			}
			if argv0 != "" {
				cmds = append(cmds, "command -v "+shellQuote(argv0))
			}
			cmds = append(cmds, f.retry())
			return Suggestion{Text: fmt.Sprintf("install %s (or fix `command` of agent %s in %s), check it is on PATH, then run the task again",
				orWord(argv0, "the agent CLI"), a.Agent, f.fileName()), Commands: cmds}
		},
	},
	{
		// Money, not time: no reset will lift it, so nothing is to be resumed on a clock.
		Name: "credit-exhausted", Category: Environment, Confidence: 0.95,
		Match: func(f *facts) bool { _, ok := f.creditWall(); return ok },
		Why: func(f *facts) string {
			a, _ := f.creditWall()
			return fmt.Sprintf("agent %s has no credit left (billing: a quota no reset time lifts, so waiting will not help): %s", a.Agent, firstLine(a.Message))
		},
		Suggest: func(f *facts) Suggestion {
			a, _ := f.creditWall()
			cmds := []string{f.retry()}
			if u := billingURL(a.Message+"\n"+lastLines(f.output[key(a.TaskID, a.N)], 30), f.presetFor(a.Agent)); u != "" {
				cmds = append([]string{"xdg-open " + u}, cmds...)
			}
			return Suggestion{Text: fmt.Sprintf("a person has to add funds or raise the spend limit: %s; or put an agent with credit in the task's chain; then run the task again (supervise and resume would wait for ever)", billing(f.presetFor(a.Agent))),
				Commands: cmds}
		},
	},
	{
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
		Lines: func(f *facts) []string {
			a, _ := f.agentToolMissing()
			s, _ := signalOf(f.agentSignals(a), sigTool)
			return []string{s.line}
		},
	},
	{
		// The agent's command as the task file gives it: gemini needs to be told to trust the
		// tree it runs in: the task file's fix, not the machine's (as round e16's writer judged).
		Name: "untrusted-folder", Category: WorkflowBug, Confidence: 0.9,
		Match: func(f *facts) bool { _, ok := f.untrusted(); return ok },
		Why: func(f *facts) string {
			a, _ := f.untrusted()
			return fmt.Sprintf("agent %s (gemini) refuses to work in a folder it does not trust (exit status 55); retrying cannot change that: %s", a.Agent, firstLine(a.Message))
		},
		Suggest: func(f *facts) Suggestion {
			a, _ := f.untrusted()
			return Suggestion{Text: "trust the working tree for gemini's headless runs: GEMINI_CLI_TRUST_WORKSPACE=true in the agent's env (or `--skip-trust` in its command) in the task file trusts it for that session, " +
				"so gemini loads the folder's own .gemini settings, .env, MCP servers and commands — only for a repository you trust; then run the task again",
				Change:   "agents: " + a.Agent + ": env: {GEMINI_CLI_TRUST_WORKSPACE: \"true\"}",
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
		Lines: func(f *facts) []string { s, _ := f.anySignal(sigDisk); return []string{s.line} },
	},
	{
		// A native crash (SIGSEGV) of the test process in every attempt: the code under test, a
		// library's binary wheel or the runtime — the log does not say which.
		Name: "verify-segfault", Category: Unknown, Confidence: 0.88,
		Match: func(f *facts) bool {
			if _, lacks := f.machineLacks(); !f.allClasses(cQuality) || lacks {
				return false // (the output names what crashed it: an extension built for NumPy 1.x)
			}
			for _, a := range f.failed {
				if !segfaultRe.MatchString(f.verifyOutput[key(a.TaskID, a.N)] + "\n" + a.Message) {
					return false
				}
			}
			return true
		},
		Why: func(f *facts) string {
			a := f.last()
			return "the test process crashed in every attempt (a segmentation fault, a JVM fork or a pytest-xdist worker gone without a word), and nothing in the run says whose code crashed (the change, a native library, the runtime) or why: " + f.lastMatch(segfaultRe) + " (attempt " + fmt.Sprint(a.N) + ")"
		},
		Suggest: func(f *facts) Suggestion {
			s := f.inspect("run the failing test by hand with a native stack (python -X faulthandler, node --report-on-fatalerror, ulimit -c unlimited and gdb) to see which code crashes")
			return s
		},
		Lines: func(f *facts) []string { return []string{f.lastMatch(segfaultRe)} },
	},
	{
		// SIGTERM from outside, with nothing that says who sent it (no memory text, no time
		// limit of the task's): a supervisor, a CI runner, a person. The run says no more.
		Name: "verify-terminated", Category: Unknown, Confidence: 0.89,
		Match: func(f *facts) bool {
			_, e := f.verifyEnd()
			return e.Kind == evidence.Terminated && !e.Memory
		},
		Why: func(f *facts) string {
			a, e := f.verifyEnd()
			return fmt.Sprintf("the verify command of attempt %d was terminated from outside (SIGTERM: a supervisor, a CI runner, a container stopping, a person), and nothing in the run says by whom: %s", a.N, e.Line)
		},
		Suggest: func(f *facts) Suggestion {
			a, _ := f.verifyEnd()
			return Suggestion{Text: "find what sent the signal (the machine's or the container's logs around the attempt's end); run the task again once nothing stops it", Commands: []string{f.logs(a), f.retry()}}
		},
		Lines: func(f *facts) []string { _, e := f.verifyEnd(); return []string{e.Line} },
	},
	{
		// The kernel killed the tests (137, "signal: killed", an out-of-memory text): the machine
		// ran out of memory, not the code out of logic.
		Name: "verify-killed", Category: Environment, Confidence: 0.9,
		Match: func(f *facts) bool {
			_, e := f.verifyEnd()
			// (When the untouched tree's run passed on this machine, the change is what used
			// the memory up, or looped until something killed it.)
			return (e.Kind == evidence.Killed || e.Memory) && (f.base == nil || f.base.failed())
		},
		Why: func(f *facts) string {
			a, e := f.verifyEnd()
			what := "was killed (SIGKILL: as a rule the kernel's out-of-memory killer)"
			switch {
			case e.Memory:
				what = "ran out of memory"
			case e.Kind == evidence.Terminated:
				what = "was terminated from outside (SIGTERM: a supervisor, a CI runner or a container stopping)"
			}
			return fmt.Sprintf("the verify command of attempt %d %s; the tests did not fail on their own: %s", a.N, what, e.Line)
		},
		Suggest: func(f *facts) Suggestion {
			a, e := f.verifyEnd()
			if gpuMemoryRe.MatchString(e.Line + "\n" + f.verifyOutput[key(a.TaskID, a.N)]) {
				// The GPU's memory, not the machine's: another process may hold it.
				return Suggestion{Text: "the GPU ran out of memory: see which processes hold it (the first command) and free it, or run the tests on another GPU (CUDA_VISIBLE_DEVICES) or with smaller batches; then run the task again",
					Commands: []string{"nvidia-smi", f.retry()}}
			}
			return Suggestion{Text: fmt.Sprintf("give the tests more memory (a larger machine or container limit), or run fewer at once in `verify.command` of task %s (go test -p 1, pytest without -n, cargo test -j 1 -- --test-threads=1, jest --runInBand, gradle org.gradle.jvmargs=-Xmx2g), then run the task again",
				f.task.ID), Commands: []string{f.fixed(), "free -h"},
				Change: "verify.command: fewer tests at once for less memory (" + fewerAtOnce(f.verifyOutput[key(a.TaskID, a.N)]+"\n"+strings.Join(f.verifyArgv(), " ")) + ")"}
		},
		Lines: func(f *facts) []string { _, e := f.verifyEnd(); return []string{e.Line} },
	},
	{
		// Killed with no word of memory: the kernel's log says whether it was the OOM killer.
		Name: "agent-killed", Category: Unknown, Confidence: 0.89,
		Match: func(f *facts) bool { _, ok := f.agentSigkilled(); return ok },
		Why: func(f *facts) string {
			a, _ := f.agentSigkilled()
			return fmt.Sprintf("agent %s was killed (SIGKILL, status 137) and nothing it printed says why: the kernel's out-of-memory killer as a rule, but a supervisor or a person can do the same: %s", a.Agent, a.Message)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "look in the kernel's log for an out-of-memory kill at that time (then give the agent more memory, or split the task); if there is none, something else on the machine killed it; then run the task again",
				Commands: []string{"journalctl -k --since -1d | grep -iE 'out of memory|killed process'", f.retry()}}
		},
		Lines: func(f *facts) []string { a, _ := f.agentSigkilled(); return []string{a.Message} },
	},
	{
		Name: "agent-out-of-memory", Category: Environment, Confidence: 0.9,
		Match: func(f *facts) bool { _, _, ok := f.agentKilled(); return ok },
		Why: func(f *facts) string {
			a, e, _ := f.agentKilled()
			return fmt.Sprintf("agent %s ran out of memory: %s", a.Agent, e.Line)
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "give the agent more memory (for the node CLIs NODE_OPTIONS=--max-old-space-size=8192 in its env), or split the task, then run it again", Commands: []string{"NODE_OPTIONS=--max-old-space-size=8192 " + f.retry()}}
		},
		Lines: func(f *facts) []string { _, e, _ := f.agentKilled(); return []string{e.Line} },
	},
	{
		Name: "agent-sandbox", Category: Environment, Confidence: 0.85,
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
		// codex's Linux sandbox (bubblewrap) cannot make its namespaces on this host — Ubuntu
		// 24.04's AppArmor forbids unprivileged user namespaces — so every command and patch
		// fails before it runs, and the attempt changes nothing.
		Name: "agent-sandbox-cannot-start", Category: Environment, Confidence: 0.86,
		Match: func(f *facts) bool { _, ok := f.sandboxCannotStart(); return ok },
		Why: func(f *facts) string {
			l, _ := f.sandboxCannotStart()
			return "the agent's sandbox cannot start on this machine, so none of its commands or edits ran: " + l
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "let the sandbox make its namespaces on this machine (Ubuntu 24.04: allow unprivileged user namespaces, or give bwrap an AppArmor profile), or run the agent with its sandbox off in an isolated environment; then run the task again",
				Commands: []string{"sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0  # bwrap's user namespaces", f.retry()}}
		},
		Lines: func(f *facts) []string { l, _ := f.sandboxCannotStart(); return []string{l} },
	},
	{
		// A tool the verify command runs is not installed: on the base tree too, or with exit
		// 126/127, it is the machine, not the attempts.
		Name: "verify-tool-missing", Category: Environment, Confidence: 0.88,
		Match: func(f *facts) bool { _, ok := f.verifyToolMissing(); return ok },
		Why: func(f *facts) string {
			s, _ := f.verifyToolMissing()
			return fmt.Sprintf("the verify command could not run %s, which is not installed: %s", s.what, s.line)
		},
		Suggest: func(f *facts) Suggestion {
			s, _ := f.verifyToolMissing()
			if nodeBinRe.MatchString(s.what) {
				// A program of node_modules/.bin: the dependencies are not installed where verify runs.
				return Suggestion{Text: fmt.Sprintf("%s comes from node_modules: install the dependencies where verify runs, then run the task again", s.what),
					Commands: []string{"npm ci", f.retry()}}
			}
			return Suggestion{Text: fmt.Sprintf("install %s (the first command is Debian's package for it; use your system's package manager), or fix `verify.command` of task %s; then run the task again", s.what, f.task.ID),
				Commands: []string{installProgram(s.what), f.retry()}}
		},
		Lines: func(f *facts) []string { s, _ := f.verifyToolMissing(); return []string{s.line} },
	},
	{
		Name: "tls", Category: Environment, Confidence: 0.87,
		Match: func(f *facts) bool {
			s, ok := f.stopSignal(sigTLS)
			// A test's own report (file:line: …) of a handshake it made: the code or its test
			// certificates, not the machine's trust store.
			return ok && !testReportLineRe.MatchString(s.line)
		},
		Why: func(f *facts) string {
			s, _ := f.stopSignal(sigTLS)
			return "TLS verification failed (a proxy that intercepts TLS, or a missing CA certificate): " + s.line
		},
		Suggest: func(f *facts) Suggestion {
			s, _ := f.stopSignal(sigTLS)
			// The node CLIs (claude, codex, gemini) and python's requests ignore the system's
			// store, where a corporate proxy's CA is usually installed: point them at it.
			const store = "/etc/ssl/certs/ca-certificates.crt"
			cmds := []string{"NODE_EXTRA_CA_CERTS=" + store + " SSL_CERT_FILE=" + store + " REQUESTS_CA_BUNDLE=" + store + " " + f.retry()}
			if h := firstHost(s.line); h != "" {
				// Who signed the certificate the tools were shown: a proxy's CA, not the site's.
				cmds = append(cmds, "openssl s_client -connect "+h+":443 -servername "+h+" </dev/null 2>/dev/null | grep -E '^(subject|issuer)'")
			}
			return Suggestion{Text: "a proxy intercepts TLS (or a CA is missing): the first command points the node and python tools at the system's CA store, where a corporate CA is usually installed; if the proxy's CA is not there, install it (update-ca-certificates) or fix the proxy",
				Commands: cmds}
		},
		Lines: func(f *facts) []string { s, _ := f.stopSignal(sigTLS); return []string{s.line} },
	},
	{
		Name: "service-down", Category: Environment, Confidence: 0.86,
		Match: func(f *facts) bool { _, ok := f.serviceDown(); return ok },
		Why: func(f *facts) string {
			s, _ := f.serviceDown()
			return fmt.Sprintf("a local service the tests need is not running (%s refused the connection, on the base tree as after the attempts): %s", serviceName(s.what), s.line)
		},
		Suggest: func(f *facts) Suggestion {
			s, _ := f.serviceDown()
			return Suggestion{Text: fmt.Sprintf("start %s where the tests run, then run the task again", serviceName(s.what)),
				Commands: []string{serviceStart(s.what), f.retry()}}
		},
		Lines: func(f *facts) []string { s, _ := f.serviceDown(); return []string{s.line} },
	},
	{
		// The verify could not take a lock another process holds (Terraform's state lock, apt's
		// dpkg lock, another Gradle or git process): someone else's work is in the way, on the
		// machine or a shared backend, and no change of the agent's frees it.
		Name: "lock-held", Category: Environment, Confidence: 0.86,
		Match: func(f *facts) bool { _, ok := f.heldLock(); return ok },
		Why: func(f *facts) string {
			l, _ := f.heldLock()
			return "the verify could not take a lock another process holds, in every attempt that reached it: " + l.line
		},
		Suggest: func(f *facts) Suggestion {
			l, _ := f.heldLock()
			return Suggestion{Text: "wait for the process that holds the lock to finish (the output names it), or release the lock if that process is gone; then run the task again",
				Commands: []string{l.fix, f.retry()}}
		},
		Lines: func(f *facts) []string { l, _ := f.heldLock(); return []string{l.line} },
	},
	{
		Name: "permission-denied", Category: Environment, Confidence: 0.85,
		Match: func(f *facts) bool { _, ok := f.cannotWrite(); return ok },
		Why: func(f *facts) string {
			s, _ := f.cannotWrite()
			return "the agent could not write the working tree (permission denied, nothing changed): " + s.line
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "make the working tree writable by the user mulligan runs as (ownership, mode, a read-only mount, the agent's own sandbox settings), then run the task again",
				Commands: []string{"ls -ld " + shellQuote(f.run.Worktree), f.retry()}}
		},
		Lines: func(f *facts) []string { s, _ := f.cannotWrite(); return []string{s.line} },
	},
	{
		// The agent's commands could not reach the network while the agent reached its API,
		// and the agent is codex, whose sandbox has no network unless its command (the task
		// file's, or the preset's) allows it: the task's agent setting, not the machine.
		Name: "agent-sandbox-network", Category: WorkflowBug, Confidence: 0.86,
		Match: func(f *facts) bool {
			a, _, ok := f.sandboxNetwork()
			return ok && f.presetFor(a.Agent) == taskfile.PresetCodex
		},
		Why: func(f *facts) string { return sandboxWhy(f) },
		Suggest: func(f *facts) Suggestion {
			a, _, _ := f.sandboxNetwork()
			return Suggestion{Text: fmt.Sprintf("codex runs commands in a sandbox without network: allow it with `-c sandbox_workspace_write.network_access=true` in agent %s's command in %s (or the same in ~/.codex/config.toml), or install the dependencies before the run; then run the task again",
				a.Agent, f.fileName()), Commands: []string{f.fixed()},
				Change: fmt.Sprintf("agent %s's command: add -c sandbox_workspace_write.network_access=true", a.Agent)}
		},
		Lines: sandboxLines,
	},
	{
		// The same for another agent: its shell cannot reach the host (a proxy its commands do
		// not get, a firewall for them).
		Name: "agent-commands-offline", Category: Environment, Confidence: 0.86,
		Match: func(f *facts) bool { _, _, ok := f.sandboxNetwork(); return ok },
		Why:   func(f *facts) string { return sandboxWhy(f) },
		Suggest: func(f *facts) Suggestion {
			_, ne, _ := f.sandboxNetwork()
			host := orWord(ne.Host, "example.com")
			return Suggestion{Text: fmt.Sprintf("the agent's commands cannot reach %s while the agent reaches its API: give its shell the proxy (HTTPS_PROXY) or let its sandbox use the network, or install the dependencies before the run; then run the task again", host),
				Commands: []string{"curl -sSI https://" + host, f.fixed()}}
		},
		Lines: sandboxLines,
	},
	{
		// The network was down for the whole task: every failure is the network, in the agent's
		// output or in the verify command's (a module download), and no task recovered from it.
		Name: "network", Category: Environment, Confidence: 0.84,
		Match: func(f *facts) bool { _, ok := f.networkDown(); return ok },
		Why: func(f *facts) string {
			s, _ := f.networkDown()
			if _, every := f.everySignal(sigNetwork); !every {
				_, n := f.networkStreak()
				return fmt.Sprintf("the network failed in the last %d attempts, where the run stopped (an attempt before them got through): %s", n, s.line)
			}
			return fmt.Sprintf("the network failed in every attempt (%d): %s", len(f.failed), s.line)
		},
		Suggest: func(f *facts) Suggestion {
			probe := "curl -sSI https://" + f.networkHost()
			if s, _ := f.networkDown(); proxyRe.MatchString(s.line) {
				probe = "env | grep -i _proxy  # the proxy this machine's tools go through, which refused them"
			}
			if len(f.failed) >= 2 || f.base.failed() {
				// Failed again and again (or on the untouched tree too): not a blip. Check
				// the host first; DNS, the proxy or the firewall of this machine.
				return Suggestion{Text: "the network failed every time: check that this machine reaches the host (the first command), then DNS, the proxy (HTTPS_PROXY) and the firewall; run the task again once it does",
					Commands: []string{probe, f.retry()}}
			}
			return Suggestion{Text: "an outage passes: run the task again once the network is back (the second command checks it); if it fails the same way, check DNS, the proxy and the firewall on this machine",
				Commands: []string{f.retry(), probe}}
		},
		Lines: func(f *facts) []string { s, _ := f.networkDown(); return []string{s.line} },
	},
	{
		// The provider refuses the account, not the request: verification, a disabled
		// organization, a model the plan does not include.
		Name: "account-refused", Category: Environment, Confidence: 0.86,
		Match: func(f *facts) bool {
			return f.lastMatches(accountRe) && f.lastClass() != cQuality && f.pinnedModelRefused() == ""
		},
		Why: func(f *facts) string { return "the provider refuses the agent's account: " + f.lastMatch(accountRe) },
		Suggest: func(f *facts) Suggestion {
			s := Suggestion{Text: "a person has to settle it with the provider (the message says where: verify the organization, enable the account, a plan with the model) or give the agent another account; then run the task again",
				Commands: []string{f.retry()}}
			if modelWordRe.MatchString(f.lastMatch(accountRe)) {
				// The account lacks this model: the agent's command names another one.
				s.Text = "the account cannot use the model the agent's command asks for: name a model it has in the agent's command (or its CLI's config), or settle it with the provider; then run the task again"
				s.Commands = []string{f.fixed()}
			}
			return s
		},
		Lines: func(f *facts) []string { return []string{f.lastMatch(accountRe)} },
	},
	{
		// The agent's CLI refused its own settings (a user's ~/.codex/config.toml naming a value
		// the installed version does not know), the same way in every attempt.
		Name: "agent-config-invalid", Category: Environment, Confidence: 0.86,
		Match: func(f *facts) bool { _, ok := f.agentConfigError(); return ok },
		Why: func(f *facts) string {
			l, _ := f.agentConfigError()
			return fmt.Sprintf("agent %s's CLI refused its own configuration in every attempt, before it did any work: %s", f.last().Agent, l)
		},
		Suggest: func(f *facts) Suggestion {
			l, _ := f.agentConfigError()
			file := configPathRe.FindString(l)
			if file == "" || !strings.Contains(file, "/") {
				file = orWord(agentConfigFile(f.presetFor(f.last().Agent)), file)
			}
			return Suggestion{Text: fmt.Sprintf("fix the setting the CLI names in its configuration (%s), or remove it, then run the task again", orWord(file, "its settings file")),
				Commands: []string{"${EDITOR:-vi} " + orWord(file, "~/.config"), f.retry()}}
		},
		Lines: func(f *facts) []string { l, _ := f.agentConfigError(); return []string{l} },
	},
	{
		// The agent's CLI crashed in its own code (a stack trace whose frames are the CLI's
		// package), the same way every time: a bug of the installed version, not the task's.
		Name: "agent-cli-crashed", Category: Environment, Confidence: 0.8,
		Match: func(f *facts) bool {
			// Every failure of the agent's is a crash in the CLI's own code, and the run stopped
			// on one; one crash alone counts when it says two installed parts disagree.
			if len(f.failed) == 0 || f.last().Class != cAgentExit {
				return false
			}
			crashes, mismatch := 0, false
			for _, a := range f.failed {
				if a.Class != cAgentExit {
					continue
				}
				out := f.output[key(a.TaskID, a.N)]
				// A frame of the CLI under an API's error is its error report (gemini prints
				// one for a 400), not a crash: the crash is an exception of the language.
				if !cliFrameRe.MatchString(out) || !crashRe.MatchString(out) || apiErrorTextRe.MatchString(out) {
					return false
				}
				crashes++
				mismatch = mismatch || partsDisagreeRe.MatchString(out)
			}
			return crashes >= 2 || mismatch || f.allClasses(cAgentExit)
		},
		Why: func(f *facts) string {
			a := f.last()
			return fmt.Sprintf("agent %s's CLI crashed in its own code (%s), in every attempt it ran: a bug of the installed version: %s", a.Agent, cliFrameRe.FindString(f.output[key(a.TaskID, a.N)]), a.Message)
		},
		Suggest: func(f *facts) Suggestion {
			a := f.last()
			cmds := []string{f.retry()}
			if c := upgradeCommand(f.presetFor(a.Agent)); c != "" {
				cmds = append([]string{c}, cmds...)
			}
			return Suggestion{Text: "update the agent's CLI (or go back to a version that worked) and report the crash to its maintainers, then run the task again", Commands: cmds}
		},
		Lines: func(f *facts) []string {
			return []string{cliFrameRe.FindString(f.output[key(f.last().TaskID, f.last().N)])}
		},
	},
	{
		// A preset's command line is checked against the pinned CLI versions: a flag the
		// installed CLI does not know means the CLI is older than the preset.
		Name: "agent-cli-outdated", Category: Environment, Confidence: 0.86,
		Match: func(f *facts) bool {
			a := f.last()
			p := f.presetFor(a.Agent)
			return a.Class == cAgentExit && installCommand(p) != "" && f.lastMatches(badFlagRe) && !f.badFlagIsOwn()
		},
		Why: func(f *facts) string {
			return fmt.Sprintf("agent %s's CLI does not know a flag of its preset's command (it is older than the version the preset is checked against): %s", f.last().Agent, f.lastMatch(badFlagRe))
		},
		Suggest: func(f *facts) Suggestion {
			return Suggestion{Text: "update the agent's CLI, then run the task again", Commands: []string{installCommand(f.presetFor(f.last().Agent)), f.retry()}}
		},
		Lines: func(f *facts) []string { return []string{f.lastMatch(badFlagRe)} },
	},
	{
		Name: "quota", Category: Environment, Confidence: 0.85,
		Match: func(f *facts) bool { return f.lastClass() == cQuota },
		Why:   func(f *facts) string { return "the agent hit a usage or rate limit: " + f.last().Message },
		Suggest: func(f *facts) Suggestion {
			if at := f.task.ResumeAt; at != nil && at.After(f.now()) {
				cmds := []string{}
				if f.commands["supervise"] {
					// (Said on the line: a reader takes a bare supervise for a watchdog, not for
					// the wait the limit needs.)
					cmds = append(cmds, fmt.Sprintf("mulligan supervise -r %s  # waits for the quota's reset (%s), then resumes the run", f.run.ID, at.UTC().Format("2006-01-02 15:04 UTC")))
				}
				cmds = append(cmds, "mulligan resume "+f.run.ID+" --now")
				return Suggestion{Text: fmt.Sprintf("the limit resets at %s: `mulligan supervise` resumes the run then (or `mulligan resume %s` after it); `resume --now` tries at once, after adding an agent with its own quota to the task's chain",
					at.UTC().Format(time.RFC3339), f.run.ID), Commands: cmds}
			}
			return Suggestion{Text: "wait for the limit to reset (or add an agent with its own quota to the task's chain), then continue the run", Commands: []string{"mulligan resume " + f.run.ID}}
		},
	},
}

// nodeBinRe: programs a project installs into node_modules/.bin rather than the machine.
var nodeBinRe = lazyre.New(`^(?:jest|vitest|vite|tsc|ts-node|tsx|eslint|prettier|mocha|next|nuxt|webpack|rollup|esbuild|react-scripts|playwright|cypress|nx|turbo|lerna|ava|karma|jasmine|nodemon|astro|svelte-kit|ng)$`)

// cliFrameRe: a stack frame inside an agent CLI's own installed package.
var cliFrameRe = lazyre.New(`(?m)^\s+at .*node_modules/(?:@google/gemini-cli|@anthropic-ai/claude-code|@openai/codex|opencode-ai)[^\s)]*|^\s+File "[^"]*site-packages/aider/[^"]*"`)

// proxyRe: a network failure at the proxy, not the host behind it.
var proxyRe = lazyre.New(`(?i)ProxyError|Cannot connect to proxy|Could not resolve proxy|proxy (?:refused|authentication required)|407 Proxy Authentication`)

var (
	crashRe = lazyre.New(`(?m)^\s*(?:Uncaught )?(?:TypeError|ReferenceError|RangeError|Error \[ERR_[A-Z_]+\]|AttributeError|KeyError|IndexError|NameError|UnboundLocalError|ValueError|ImportError|ModuleNotFoundError)\b`)
	// partsDisagreeRe: a crash that says two installed parts do not fit (aider and litellm).
	partsDisagreeRe = lazyre.New(`(?i)is in \w+ but not in|cannot import name|incompatible version|requires \w[\w-]* ?(?:[<>=]=?|version)`)
	apiErrorTextRe  = lazyre.New(`(?i)API Error|talking to \w+ API|"code":\s*[45]\d\d|status(?: code)?:? [45]\d\d`)
)

var segfaultRe = lazyre.New(`(?im)^.*(?:Segmentation fault|SIGSEGV|signal: segmentation violation|exited with (?:status|code) 139|exit (?:status|code) 139|The forked VM terminated without (?:properly )?saying goodbye|unexpected signal code 11\b|signal 11\b|node down: Not properly terminated|worker '?\w+'? crashed while running|Gradle build daemon disappeared unexpectedly|the daemon has disappeared).*$`)

// pinnedModelRefused is the model the agent's command in the task file names (--model X, -m X)
// when the provider refused the account that model: the task file pins a model the account
// cannot use (a retired one, or one of another plan), and the task file is what changes.
func (f *facts) pinnedModelRefused() string {
	refusal := f.lastMatch(accountRe)
	a := f.agent(f.last().Agent)
	if refusal == "" || a == nil || !modelWordRe.MatchString(refusal) {
		return ""
	}
	msg := f.last().Message
	for i, arg := range a.Command {
		model := ""
		switch {
		case (arg == "--model" || arg == "-m") && i+1 < len(a.Command):
			model = a.Command[i+1]
		case strings.HasPrefix(arg, "--model="):
			model = strings.TrimPrefix(arg, "--model=")
		}
		if model != "" && strings.Contains(msg, model) {
			return model
		}
	}
	return ""
}

func sandboxWhy(f *facts) string {
	a, ne, _ := f.sandboxNetwork()
	why := fmt.Sprintf("agent %s reached its API, but the commands it ran could not reach %s", a.Agent, orWord(ne.Host, "the network"))
	if ne.Denied {
		why = fmt.Sprintf("agent %s reached its API, but the system refused its commands a connection (to %s): a sandbox's rule, not a host's answer", a.Agent, orWord(ne.Host, "the network"))
	}
	if m := f.agentOf(a).LastMessage; m != "" {
		why += "; the agent said: " + m
	}
	return why
}

func sandboxLines(f *facts) []string {
	a, ne, _ := f.sandboxNetwork()
	return []string{ne.Line, f.agentOf(a).LastMessage}
}

var modelWordRe = lazyre.New(`(?i)model is not supported|access to (?:the )?model|model \S+ is not available`)

// badFlagIsOwn: the flag the agent's program refused is one the task file's command adds, not
// one of its preset's documented command.
func (f *facts) badFlagIsOwn() bool {
	m := flagNameRe.FindStringSubmatch(f.lastMatch(badFlagRe))
	ag := f.agent(f.last().Agent)
	if m == nil || ag == nil {
		return false
	}
	flag := firstNonEmpty(m[1:]...)
	has := func(argv []string) bool {
		return slices.ContainsFunc(argv, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") })
	}
	return has(ag.Command) && !has(taskfile.PresetCommands[ag.Preset])
}

// flagNameRe finds the flag in a CLI's refusal ("unexpected argument '--ask-for-approval' found").
var flagNameRe = lazyre.New(`'(--?[\w-]+)|(?:option|flag|arguments?):? '?(--?[\w-]+)`)

var badFlagRe = lazyre.New(`(?i)unknown option '?-|unexpected argument '-[^']*' found|Unknown arguments?: |unrecognized arguments?: -|Unknown flag:? -|flag provided but not defined`)

var accountRe = lazyre.New(`(?i)organization must be verified|model is not supported when using \S+ with an? \S+ account|Verify Organization|organization has been (?:disabled|deactivated)|account (?:has been |is )?(?:disabled|suspended|deactivated|banned)|not available (?:on|in) your (?:plan|tier|region)|does not have access to (?:the )?model|You don't have access to|permission_error|"status":\s*"PERMISSION_DENIED"`)

// testReportLineRe: a line a test writes about itself (go's file_test.go:87:, pytest's
// test_x.py:12:, a jest spec's path).
var testReportLineRe = lazyre.New(`^\s*(?:\w+_test\.go|test_\w+\.py|\w+_test\.py|[\w.-]+\.(?:test|spec)\.[jt]sx?):\d+:`)

// blockedRung: the attempt in which a later rung of the task's chain failed its login, when no
// attempt of that agent came after it and the run stopped on an earlier rung's failure.
func (f *facts) blockedRung() (storeAttempt, bool) {
	if f.def == nil || len(f.def.Agents) < 2 || len(f.failed) == 0 {
		return storeAttempt{}, false
	}
	// (All attempts: the one a chain failed over from is set aside from the failures.)
	last := slices.Index(f.def.Agents, f.last().Agent)
	for i, a := range f.attempts {
		if a.TaskID != f.last().TaskID || a.N >= f.last().N || a.Class != cAuth && !lapsedLoginRe.MatchString(a.Message) {
			continue
		}
		if slices.Index(f.def.Agents, a.Agent) <= last || slices.ContainsFunc(f.attempts[i+1:], func(b storeAttempt) bool { return b.TaskID == a.TaskID && b.Agent == a.Agent }) {
			continue
		}
		return a, true
	}
	return storeAttempt{}, false
}

// sandboxStartRe: bubblewrap failing to set up the namespaces of codex's Linux sandbox.
var sandboxStartRe = lazyre.New(`bwrap: (?:loopback: Failed RTM_NEWADDR|setting up uid map|No permissions to creat(?:e|ing) new namespace|Creating new namespace failed|Can't mount proc|Failed to make / slave)[^"\\]*`)

// sandboxCannotStart: the attempt the run stopped on changed nothing and its agent's commands
// failed in bubblewrap's setup; the line.
func (f *facts) sandboxCannotStart() (string, bool) {
	a := f.last()
	if a.FilesChanged != nil && *a.FilesChanged > 0 {
		return "", false
	}
	if m := sandboxStartRe.FindString(f.output[key(a.TaskID, a.N)]); m != "" {
		return clip(m), true
	}
	return "", false
}
