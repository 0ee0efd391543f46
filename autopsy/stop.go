package autopsy

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// The readings that compare: what stopped the run against what it got past, a failing test
// against the base tree and against the other attempts, the agent's own words against its
// output. Each returns the attempt or the lines that decide.

// focusOnStop sets aside the failures the run got past: an agent disabled for the run (auth, a
// missing CLI, no credit), a quota wall or a transient failure of the provider, followed by
// other attempts (on another rung, or on the same one after a reset or a login). The verdict
// is about why the run stopped, not about the first failure it saw.
func (f *facts) focusOnStop() {
	if len(f.failed) < 2 {
		return
	}
	last := f.failed[len(f.failed)-1]
	if passable(last) {
		return
	}
	// A transient failure is got past when the agent went on to do the work and the verify
	// rejected it: the rejection is why the run stopped.
	gotPast := func(a storeAttempt) bool { return passable(a) || a.Class == cTransport && last.Class == cQuality }
	var kept []storeAttempt
	for _, a := range f.failed {
		if gotPast(a) {
			f.passed = append(f.passed, a)
			continue
		}
		kept = append(kept, a)
	}
	f.failed = kept
}

// notePassed adds to a verdict the failures the run got past that still need a person (an agent
// not logged in, not installed, out of credit: disabled for the run). Their commands are not
// suggested: they are not why the run stopped.
func (f *facts) notePassed(v *Verdict) {
	for _, a := range f.passed {
		if a.Class == cQuota && a.Code != "billing" && a.Code != "credit" {
			continue // a clock: it passes by itself
		}
		v.Why += fmt.Sprintf("; on the way, agent %s (%s) failed over (%s): %s", a.Agent, orWord(f.presetFor(a.Agent), "generic"), a.Class, firstLine(a.Message))
	}
}

// passable: a failure that fails the run over to the next rung instead of ending it.
func passable(a storeAttempt) bool {
	return a.Class == cAuth || a.Class == cMissing || a.Class == cQuota
}

// approval is the task of the run that waits for approve or reject, with its attempt.
func (f *facts) approval() (*store.Task, storeAttempt) {
	for i := range f.run.Tasks {
		t := &f.run.Tasks[i]
		if t.State != store.TaskWaitingApproval {
			continue
		}
		var last storeAttempt
		for _, a := range t.Attempts {
			if a.State == store.AttemptSucceeded {
				last = a
			}
		}
		return t, last
	}
	return nil, storeAttempt{}
}

// testsOf is what the test runners said in an attempt's verify output.
func (f *facts) testsOf(a storeAttempt) evidence.Tests {
	k := key(a.TaskID, a.N)
	if t, ok := f.tests[k]; ok {
		return t
	}
	out := f.verifyOutput[k]
	if strings.TrimSpace(out) == "" {
		_, out, _ = strings.Cut(a.Message, ": ")
	}
	t := evidence.ParseTests(out)
	if f.tests == nil {
		f.tests = map[string]evidence.Tests{}
	}
	f.tests[k] = t
	return t
}

// agentOf is what an attempt's agent output says about the agent's own run.
func (f *facts) agentOf(a storeAttempt) evidence.Agent {
	k := key(a.TaskID, a.N)
	if r, ok := f.agents[k]; ok {
		return r
	}
	r := evidence.ReadAgent(f.output[k])
	if f.agents == nil {
		f.agents = map[string]evidence.Agent{}
	}
	f.agents[k] = r
	return r
}

// verifyEnd is how the last rejected attempt's verify command ended: killed, terminated, out
// of its time.
func (f *facts) verifyEnd() (storeAttempt, evidence.Exit) {
	a := f.lastOf(cQuality)
	return a, f.verifyEndOf(a)
}

// verifyEndOf is how an attempt's verify command ended.
func (f *facts) verifyEndOf(a storeAttempt) evidence.Exit {
	if a.N == 0 || a.Class != cQuality {
		return evidence.Exit{}
	}
	code := -1
	if m := verifyStatusRe.FindStringSubmatch(a.Message); m != nil {
		code = atoi(m[1])
	}
	e := evidence.ExitOf(code, f.verifyOutput[key(a.TaskID, a.N)]+"\n"+a.Message)
	if a.Code == "verify_timeout" && e.Kind == "" {
		e.Kind, e.Line = evidence.TimedOut, clip(a.Message)
	}
	return e
}

var verifyStatusRe = lazyre.New("^verify `[^`]*` exited with status (-?\\d+)")

// waitingPrompt is a question the last attempt's agent (or its verify) stopped on.
func (f *facts) waitingPrompt() (storeAttempt, evidence.Prompt, bool) {
	a := f.last()
	if a.N == 0 {
		return a, evidence.Prompt{}, false
	}
	if a.Class == cQuality && a.Code != "verify_timeout" {
		// A verify that asked and found no one to answer: the question, then end of input.
		out := f.verifyOutput[key(a.TaskID, a.N)]
		if loc := noAnswerRe.FindStringIndex(out); loc != nil {
			var before []string // without the traceback between the question and its end
			for _, l := range strings.Split(out[:loc[0]], "\n") {
				if !tracebackLineRe.MatchString(l) {
					before = append(before, l)
				}
			}
			p, ok := evidence.WaitingPrompt(strings.Join(before, "\n"))
			return a, p, ok
		}
		return a, evidence.Prompt{}, false
	}
	if a.Class != cHeartbeat && a.Class != cTimeout && a.Code != "verify_timeout" {
		return a, evidence.Prompt{}, false
	}
	k := key(a.TaskID, a.N)
	text := f.output[k]
	if a.Code == "verify_timeout" {
		text = f.verifyOutput[k]
	}
	if strings.TrimSpace(text) == "" {
		_, text, _ = strings.Cut(a.Message, ": ")
	}
	p, ok := evidence.WaitingPrompt(text)
	return a, p, ok
}

// noAnswerRe: a program that asked on stdin and met its end: Python's input(), Laravel's and
// Django's cancelled questions, a tty check.
var noAnswerRe = lazyre.New(`(?m)^.*(?:EOFError: EOF when reading a line|EOFError$|Command cancelled|Aborted!|Error: Prompt cancelled|input device is not a TTY|stdin is not a (?:tty|terminal)).*$`)

var tracebackLineRe = lazyre.New(`^(?:Traceback \(most recent call last\):|\s+File "|\s{2,}\S|\s+\^+\s*$)`)

// sandboxNetwork: the agent reached its API (it answered) while the commands it ran could not
// reach the network, in every failed attempt that shows the agent's output; the host they tried.
func (f *facts) sandboxNetwork() (storeAttempt, evidence.NetError, bool) {
	var last storeAttempt
	var ne evidence.NetError
	if f.base.failed() && !f.triedToFetch(missingName(f.base.Output)) {
		// What the verify could not find was missing before the agent ran: not its sandbox's
		// doing — unless it is what the agent tried to fetch (`uv add httpx`, offline).
		return storeAttempt{}, evidence.NetError{}, false
	}
	for _, a := range f.failed {
		ag := f.agentOf(a)
		if strings.TrimSpace(f.output[key(a.TaskID, a.N)]) == "" {
			continue
		}
		if a.Class == cTransport {
			return storeAttempt{}, evidence.NetError{}, false // the agent's own API failed
		}
		// (A refused connection to this machine is a service's, not the network's; but in a
		// sandbox without network every connection fails, to this machine too, and no host
		// gets to refuse it: a failure that does not say who refused is the sandbox's.)
		noNet := f.sandboxWithoutNetwork(a.Agent)
		var tool *evidence.NetError
		for i := range ag.Network {
			n := ag.Network[i]
			if !n.API && (n.Denied || noNet && !hostRefusedRe.MatchString(n.Line) || !toThisMachine(n.Host+" "+n.Line)) {
				tool = &ag.Network[i]
			}
		}
		if !(ag.APICalls && tool != nil) && !ag.NoNetworkSandbox {
			return storeAttempt{}, evidence.NetError{}, false
		}
		if out := f.verifyOutput[key(a.TaskID, a.N)]; a.Class == cQuality && (verifyOffline(out) || noNet && len(evidence.NetworkErrors(out)) > 0) {
			// The verify runs on this machine, outside any sandbox of the agent's: when it
			// cannot reach the network (or the service) either, the machine is at fault.
			return storeAttempt{}, evidence.NetError{}, false
		}
		if out := f.verifyOutput[key(a.TaskID, a.N)]; a.Class == cQuality && (len(f.testsOf(a).Failed) > 0 || len(f.testsOf(a).Build) > 0) && !fetchFailedRe.MatchString(out) {
			// The verify's tests failed for something else (an assertion): what the agent's
			// commands could not fetch is not why.
			return storeAttempt{}, evidence.NetError{}, false
		}
		last = a
		if tool != nil {
			ne = *tool
		}
	}
	return last, ne, last.N > 0
}

// sandboxWithoutNetwork: the agent is codex and its command leaves its sandbox without network
// (workspace-write or read-only, without -c sandbox_workspace_write.network_access=true): its
// commands cannot connect anywhere, this machine included (its Linux sandbox refuses connect).
func (f *facts) sandboxWithoutNetwork(agent string) bool {
	ag := f.agent(agent)
	if ag == nil || f.presetFor(agent) != taskfile.PresetCodex {
		return false
	}
	cmd := strings.Join(ag.Command, " ")
	return !codexNetworkRe.MatchString(cmd)
}

// hostRefusedRe: a connection the host refused (it was reached: the network works).
var hostRefusedRe = lazyre.New(`(?i)connection refused|\bECONNREFUSED\b|Errno 111\b|\(111\)`)

// codexNetworkRe: a codex command line whose commands have network.
var codexNetworkRe = lazyre.New(`network_access\s*=\s*true|danger-full-access|--dangerously-bypass-approvals-and-sandbox|--yolo\b`)

// triedToFetch: some attempt's agent ran an install of name ("" : nothing is missing, so the
// answer is yes: nothing rules the sandbox out).
func (f *facts) triedToFetch(name string) bool {
	if name == "" {
		return true
	}
	for _, a := range f.failed {
		for _, m := range commandFieldRe.FindAllStringSubmatch(f.output[key(a.TaskID, a.N)], -1) {
			if strings.Contains(m[1], name) && installCmdRe.MatchString(m[1]) {
				return true
			}
		}
	}
	return false
}

// commandFieldRe: the command of a CLI's tool call (codex's command_execution, claude's Bash).
var commandFieldRe = lazyre.New(`"command":\s*"((?:[^"\\]|\\.)*)"`)

var installCmdRe = lazyre.New(`\b(?:uv (?:add|pip install)|pip3? install|poetry add|npm (?:i|install|add)|pnpm (?:add|install|i)|yarn add|go get|cargo add|gem install|bundle add|composer require|dotnet add)\b`)

// missingName is the module or package the text says is missing, or "".
func missingName(text string) string {
	if m := missingNameRe.FindStringSubmatch(text); m != nil {
		return firstNonEmpty(m[1:]...)
	}
	return ""
}

// missingNameRe: the module or package a verify says is missing.
var missingNameRe = lazyre.New(`No module named '([\w.-]+)'|Cannot find (?:module|package) '?(@?[\w./-]+?)'?[\s.]|cannot find package "([\w./-]+)"|could not find gem '([\w-]+)'|The "([\w.-]+)" plugin is not installed|Could not find ([A-Za-z][\w-]*?)-\d[\w.]*(?:,| in locally installed gems| in any of the (?:gem )?sources)|unresolved import ` + "`([\\w:]+)`")

// verifyOffline: the verify's own output shows it could not reach a host beyond this machine
// (or a proxy, wherever it runs, refused it).
func verifyOffline(out string) bool {
	for _, n := range evidence.NetworkErrors(out) {
		if !n.API && (!toThisMachine(n.Host+" "+n.Line) || strings.Contains(strings.ToLower(n.Line), "proxy")) {
			return true
		}
	}
	return false
}

// toThisMachine: a network error line about a connection to this machine (a service of its
// own refusing), not about reaching the network (a DNS lookup through 127.0.0.53 is that), nor
// a connection the operating system would not make (a sandbox's rule, wherever it goes).
func toThisMachine(line string) bool {
	return localHostRe.MatchString(line) && !strings.Contains(line, "lookup ") && !strings.Contains(strings.ToLower(line), "name resolution") && !evidence.ConnectDenied(line)
}

var (
	localHostRe = lazyre.New(`(?i)\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0)\b|\[::1\]|::1\b`)
	// fetchFailedRe: a verify output that shows something not fetched (a module, a package, a
	// crate, a gem) or the network itself failing.
	fetchFailedRe = lazyre.New(`(?i)No module named|Cannot find (?:module|package)|missing go\.sum entry|cannot find package|no required module provides|unresolved import|E043[23]|could not resolve|Could not find (?:gem|artifact)|Could not resolve dependencies|no matching distribution|not found in registry|failed to (?:download|fetch|select a version)|ENOTFOUND|EAI_AGAIN|getaddrinfo|network|offline|NU1301|Unable to load the service index|is not installed|undefined: \w+\.\w+|could not import|Failed to resolve import|ModuleNotFoundError`)
)

// preexisting: the tests failing after the last rejected attempt all fail on the base tree too.
func (f *facts) preexisting() ([]string, bool) {
	if !f.base.failed() || !f.allClasses(cQuality) {
		return nil, false
	}
	base := evidence.ParseTests(f.base.Output).Keys()
	now := f.testsOf(f.lastOf(cQuality)).Keys()
	if len(base) == 0 || len(now) == 0 {
		return nil, false
	}
	as, _ := f.qualityViews()
	for _, b := range as {
		if f.ranTests(b) && !subset(now, f.testsOf(b).Keys()) {
			return nil, false // an attempt's change made some of them pass: they can
		}
	}
	if failsOtherwise(f.testsOf(f.lastOf(cQuality)), evidence.ParseTests(f.base.Output)) {
		return nil, false // the same test, failing another way (a crash for an assertion): the change's
	}
	if f.valuesMoved(as) {
		return nil, false // the attempts changed what the test gets: it is about their change
	}
	return now, subset(now, base)
}

// valuesMoved: a test that fails on the base fails in two attempts with different values in its
// message ("ReadTimeout = 15s, want 30s", then "= 1m0s"): the attempts' changes move what it
// checks. (Dates, addresses, temporary paths and long numbers are a run's own, not values.)
func (f *facts) valuesMoved(as []storeAttempt) bool {
	seen := map[string][]string{}
	for _, a := range as {
		for _, t := range f.testsOf(a).Failed {
			vs := valuesOf(t.Message)
			// (One report may quote fewer of the values than another: only values that
			// neither quotes all of the other's are moved.)
			if prev, ok := seen[t.Key()]; ok && len(prev) > 0 && len(vs) > 0 && !subset(prev, vs) && !subset(vs, prev) {
				return true
			}
			seen[t.Key()] = vs
		}
	}
	return false
}

// valuesOf is the values a test's message quotes (quoted strings, numbers with their units).
func valuesOf(msg string) []string {
	var vs []string
	for _, v := range valueRe.FindAllString(runOwnRe.ReplaceAllString(msg, "#"), -1) {
		if !slices.Contains(vs, v) {
			vs = append(vs, v)
		}
	}
	return vs
}

var valueRe = lazyre.New(`"[^"]*"|'[^']*'|\b\d[\w.:]*`)

// runOwnRe: the parts of a message that change from run to run whatever the code does.
var runOwnRe = lazyre.New(`\d{4}-\d\d-\d\d[T_ ][\d:._]+Z?|0x[0-9a-f]+|/tmp/[^\s:]+|\d+\.\d+\s*(?:ns|µs|us|ms|s)?|\b\d{4,}\b|\(\d+(?:\.\d+)?s\)`)

// failsOtherwise: a test crashes in now (a sanitizer's report, a segfault, a panic) where it
// failed on the base without crashing.
func failsOtherwise(now, base evidence.Tests) bool {
	crashed := map[string]bool{}
	for _, t := range base.Failed {
		crashed[t.Key()] = testCrashRe.MatchString(t.Message)
	}
	for _, t := range now.Failed {
		if was, ok := crashed[t.Key()]; ok && !was && testCrashRe.MatchString(t.Message) {
			return true
		}
	}
	return false
}

// testCrashRe: a test's process crashed, rather than an assertion failing.
var testCrashRe = lazyre.New(`(?i)Sanitizer|runtime error:|Segmentation fault|SIGSEGV|SIGABRT|SIGBUS|stack overflow|core dumped|^panic:|\bpanicked\b|exit value 13[49]\b|exit (?:code|status) 139\b|Test host process crashed`)

// saidPreexistingRe: an agent saying the tests still failing were failing before its change.
var saidPreexistingRe = lazyre.New(`(?i)\bpre-?existing\b|fails? (?:on|in|with) the (?:clean|original|base|untouched|unmodified) (?:tree|checkout|branch|code)|(?:fails?|failing|failed) (?:without|before) my change|unrelated to (?:my|this|the) (?:change|fix|edit)|already (?:fails?|failing|failed|broken) (?:on|before|without)`)

// saidPreexisting is the line in which the last rejected attempt's agent said the failures
// left were there before its change, or "" (read only with the base's verify agreeing).
func (f *facts) saidPreexisting() string {
	a := f.lastOf(cQuality)
	ag := f.agentOf(a)
	for _, l := range evidence.Lines(ag.LastMessage + "\n" + ag.Said) {
		if saidPreexistingRe.MatchString(l) {
			return clip(strings.TrimSpace(l))
		}
	}
	return ""
}

// promptAsksToFix: the prompt asks for failing tests to be fixed, or names one of tests.
func (f *facts) promptAsksToFix(tests []string) bool {
	if f.def == nil {
		return false
	}
	p := f.def.Prompt
	if promptNamesTest(p, tests) {
		return true
	}
	// A prompt that names the tests it wants fixed does not ask for the others.
	if f.base != nil && promptNamesTest(p, evidence.ParseTests(f.base.Output).Keys()) {
		return false
	}
	return fixTestsRe.MatchString(p)
}

// testsAboutPrompt: a test that fails after the last attempt names what the prompt asks for (its
// identifier, its code "SAVE10", its quoted value) in its name or its message: it checks the
// task's own change, whatever the base said.
func (f *facts) testsAboutPrompt() bool {
	if f.def == nil {
		return false
	}
	var names []string
	for _, m := range promptNameRe.FindAllStringSubmatch(f.def.Prompt, -1) {
		names = append(names, firstNonEmpty(m[1:]...))
	}
	names = append(names, promptCodeRe.FindAllString(f.def.Prompt, -1)...)
	for _, t := range f.testsOf(f.lastOf(cQuality)).Failed {
		for _, n := range names {
			if len(n) >= 4 && (strings.Contains(t.Key(), n) || strings.Contains(t.Message, n)) {
				return true
			}
		}
	}
	return false
}

// promptCodeRe: a code a prompt names in capitals ("SAVE10", "MAX_RETRIES").
var promptCodeRe = lazyre.New(`\b[A-Z]{2,}\d+\b|\b[A-Z]+_[A-Z_]+\b`)

var fixTestsRe = lazyre.New(`(?i)\bfix\b.*\btests?\b|failing tests?|make (?:the )?tests? pass|tests? (?:are|is) (?:failing|red|broken)|\bgreen\b|\b(?:make|so(?: that)?|until)\s+` + "`[^`]+`" + `\s+pass(?:es)?\b`)

// flaky names a test that failed in one attempt and passed in another with no change in its
// package between them: the same code passed and failed.
func (f *facts) flaky() (string, storeAttempt, bool) {
	as, _ := f.qualityViews()
	var all []storeAttempt
	all = append(all, f.attempts...)
	for _, a := range as {
		for _, t := range f.testsOf(a).Failed {
			for _, b := range all {
				if b.N == a.N || !f.ranTests(b) || slices.ContainsFunc(f.testsOf(b).Failed, func(u evidence.Test) bool { return u.Key() == t.Key() }) {
					continue
				}
				if f.unchanged(a, b, t) || timingRe.MatchString(t.Message) && (f.repo == nil || f.otherPackage(a, b, t)) {
					return t.Name, a, true
				}
			}
		}
	}
	return "", storeAttempt{}, false
}

// timingRe: a failure that depends on time or scheduling, not on the code's logic.
var timingRe = lazyre.New(`(?i)timed? ?out|deadline exceeded|\d+(?:\.\d+)?(?:ms|s)\b.*\b(?:want|expected)\b|\b(?:want|expected)\b.*\d+(?:\.\d+)?(?:ms|s)\b|took \S+,? (?:want|expected)|elapsed|too slow|race detected|DATA RACE|flak|intermittent|ECONNRESET|Exceeded timeout of \d+ ?ms`)

// ranTests: the attempt's verify ran the tests (it passed, or its runner printed results).
func (f *facts) ranTests(a storeAttempt) bool {
	if a.State == store.AttemptSucceeded {
		return f.def != nil && f.def.Verify != nil
	}
	if a.Class != cQuality {
		return false
	}
	t := f.testsOf(a)
	return len(t.Build) == 0 && (len(t.Failed) > 0 || t.Total > 0)
}

// workspacePkgRe: a package of a monorepo's workspace (libs/cart-sync/…, packages/api/…).
var workspacePkgRe = lazyre.New(`^((?:libs|packages|apps|services|crates|modules|projects|components)/[^/]+)/`)

// otherPackage: t's file lies in one package of a workspace and attempts a and b differ only in
// others: a test that ran out of time there passed or failed for its own reasons.
func (f *facts) otherPackage(a, b storeAttempt, t evidence.Test) bool {
	m := workspacePkgRe.FindStringSubmatch(strings.TrimPrefix(t.File, "./"))
	if m == nil || a.Tree == "" || b.Tree == "" {
		return false
	}
	changes, err := f.repo.DiffTrees(snapshot.NewHash(a.Tree), snapshot.NewHash(b.Tree))
	if err != nil {
		return false
	}
	for _, c := range changes {
		if strings.HasPrefix(c.Path, m[1]+"/") {
			return false
		}
	}
	return true
}

// unchanged: attempts a and b left the same code in the test's package (its directory).
func (f *facts) unchanged(a, b storeAttempt, t evidence.Test) bool {
	if a.Tree != "" && a.Tree == b.Tree {
		return true
	}
	if f.repo == nil || a.Tree == "" || b.Tree == "" {
		return false
	}
	file := t.File
	if file == "" {
		return false
	}
	changes, err := f.repo.DiffTrees(snapshot.NewHash(a.Tree), snapshot.NewHash(b.Tree))
	if err != nil {
		return false
	}
	// A Go test lives in its package's directory, with the code it tests; elsewhere tests live
	// apart from the code (tests/, spec/, __tests__/), so any change to code outside the tests
	// may be what made the test pass.
	dir := path.Dir(strings.TrimPrefix(file, "./"))
	goTest := strings.HasSuffix(file, "_test.go")
	for _, c := range changes {
		if d := path.Dir(c.Path); d == dir || strings.HasSuffix(d, "/"+dir) || (!goTest && !testPathRe.MatchString(c.Path)) {
			return false
		}
	}
	return true
}

// testPathRe: a path of the tests, not of the code they test.
var testPathRe = lazyre.New(`(?i)(?:^|/)(?:tests?|spec|specs|__tests__|testing)/|(?:^|/)(?:test_[^/]*|[^/]*_test\.\w+|[^/]*\.(?:test|spec)\.\w+|[^/]*Tests?\.\w+)$`)

// agentKilled: the agent's own process ran out of memory.
func (f *facts) agentKilled() (storeAttempt, evidence.Exit, bool) {
	a := f.last()
	if a.Class != cAgentExit {
		return a, evidence.Exit{}, false
	}
	e := evidence.ExitOf(f.exit(a), f.output[key(a.TaskID, a.N)]+"\n"+a.Message)
	if e.Kind == evidence.Killed && e.Line == "" {
		e.Line = a.Message // exit 137 said nothing more: the kernel's OOM killer, as a rule
	}
	return a, e, e.Memory
}

// agentSigkilled: the agent was killed (SIGKILL, 137) and nothing it or the machine printed
// says why: the kernel's OOM killer as a rule, but a supervisor or a person can do the same.
func (f *facts) agentSigkilled() (storeAttempt, bool) {
	a, e, memory := f.agentKilled()
	return a, !memory && a.Class == cAgentExit && (f.exit(a) == 137 || e.Kind == evidence.Killed)
}

func atoi(s string) int {
	n := 0
	neg := strings.HasPrefix(s, "-")
	for _, c := range strings.TrimPrefix(s, "-") {
		n = n*10 + int(c-'0')
	}
	if neg {
		return -n
	}
	return n
}

// pendingCommand is the command an agent's output ends on while it still runs — a shell or
// tool call started and never answered, as agentcli's LastWords names it ("codex was running:
// git commit …") — or the agent's last words announcing one ("I'll run npm run codegen"). ""
// when the output ends on anything else.
func pendingCommand(out string) string {
	w := agentcli.LastWords([]byte(out))
	if _, cmd, ok := strings.Cut(w, " was running: "); ok {
		return cmd
	}
	if announceRe.MatchString(w) {
		return w
	}
	return ""
}

// announceRe: the agent's words that it starts a command now.
var announceRe = lazyre.New("(?i)\\b(?:I'll|I will|let me|I'm going to|now I|next,? I'll|running)\\b[^.]{0,80}\\b(?:run|running|execute|install|start|regenerate|commit|push)\\b|\\b(?:running|regenerating|installing|executing|committing|pushing|starting)\\b[^.]{0,40}`")

// hungInCommand: every attempt went silent while a command it had started still ran; the
// last attempt's command.
func (f *facts) hungInCommand() (string, bool) {
	if len(f.failed) < 2 || !f.allClasses(cHeartbeat, cTimeout) {
		return "", false
	}
	cmd, same := "", true
	for i, a := range f.failed {
		c := pendingCommand(f.output[key(a.TaskID, a.N)])
		if m := runningRe.FindStringSubmatch(a.Message); c == "" && m != nil {
			c = m[1] // the runner's "codex was running: CMD"
		}
		if c == "" {
			return "", false
		}
		if i > 0 && c != cmd {
			same = false
		}
		cmd = c
	}
	// Silent inside a command: it waits. Out of time inside the same command every time: it
	// takes longer than the limit allows (or never ends).
	if f.count(cHeartbeat) == 0 && !same {
		return "", false
	}
	return clip(cmd), true
}

var runningRe = lazyre.New(`\bwas running: (.+)$`)

// promptNamesTest: the prompt names one of the tests (by its last name part).
func promptNamesTest(prompt string, tests []string) bool {
	for _, t := range tests {
		for _, ref := range testRefs(t) {
			if len(ref) > 3 && strings.Contains(prompt, ref) {
				return true
			}
		}
	}
	return false
}

// testRefs are the ways a prompt names a failing test (its key "PKG-OR-FILE NAME"): the whole
// name, its file or package, and a test function's identifier — not a word of a title.
func testRefs(key string) []string {
	refs := []string{key}
	if file, title, ok := strings.Cut(key, " "); ok {
		refs = append(refs, title)
		if strings.ContainsAny(file, "/.") {
			refs = append(refs, file, path.Base(file))
		}
	}
	if mods := strings.Split(key, "::"); len(mods) >= 3 && mods[len(mods)-2] == "tests" {
		refs = append(refs, mods[len(mods)-3]+".rs") // a Rust unit test lives in its module's file
	}
	if id := key[strings.LastIndexAny(key, " ./:")+1:]; testIdentRe.MatchString(id) {
		refs = append(refs, id)
	}
	return refs
}

// testIdentRe: a test function's name (TestParse, test_parse, testParse, it_parses…).
var testIdentRe = lazyre.New(`^(?:Test|test|Benchmark|Example|Fuzz|it_|should)[\w]+$`)
