package autopsy

import (
	"slices"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/store"
)

// The facts' readings the rules are made of: each names one thing a person checks in a failed
// run, and returns the attempt or the line that shows it.

func (f *facts) exit(a storeAttempt) int {
	if a.ExitCode == nil {
		return -1
	}
	return *a.ExitCode
}

func (f *facts) files(a storeAttempt) int {
	if a.FilesChanged == nil {
		return -1
	}
	return *a.FilesChanged
}

// presetFor is the preset of an agent of the run: the one its definition names, else the CLI
// its command runs (a --fallback 'gemini …' under --preset claude is gemini).
func (f *facts) presetFor(agent string) string {
	a := f.agent(agent)
	if a == nil {
		return ""
	}
	return presetOf(a.Preset, a.Command)
}

// agentSignals: the environment evidence in an attempt's failure and the agent's output; a
// connection the model only wrote about (its messages, not its tools' output) is none.
// (A rejected attempt's message is the verify's summary: verifySignals reads the verify.)
func (f *facts) agentSignals(a storeAttempt) []envSignal {
	return f.signalsOnce("agent "+key(a.TaskID, a.N), func() []envSignal {
		out, msg := f.output[key(a.TaskID, a.N)], a.Message
		if a.Class == cQuality {
			msg = ""
		}
		sigs := slices.DeleteFunc(envSignals(msg+"\n"+out), isConnection)
		return append(sigs, slices.DeleteFunc(envSignals(msg+"\n"+evidence.WithoutProse(out)), func(s envSignal) bool { return !isConnection(s) })...)
	})
}

// signalsOnce reads an attempt's signals once: the rules ask for them again and again.
func (f *facts) signalsOnce(k string, read func() []envSignal) []envSignal {
	if s, ok := f.signals[k]; ok {
		return s
	}
	if f.signals == nil {
		f.signals = map[string][]envSignal{}
	}
	f.signals[k] = read()
	return f.signals[k]
}

func isConnection(s envSignal) bool {
	return s.kind == sigService || s.kind == sigHighPort || s.kind == sigNetwork || s.kind == sigTLS
}

func (f *facts) verifySignals(a storeAttempt) []envSignal {
	return f.signalsOnce("verify "+key(a.TaskID, a.N), func() []envSignal { return verifyEnvSignals(f.verifyOutput[key(a.TaskID, a.N)]) })
}

// verifyView reads an attempt's verify log (its message when the log is gone).
func (f *facts) verifyView(a storeAttempt) verifyView {
	out := f.verifyOutput[key(a.TaskID, a.N)]
	if strings.TrimSpace(out) == "" {
		_, out, _ = strings.Cut(a.Message, ": ")
	}
	return readVerify(out)
}

// recoveredAttempts counts the failed attempts of tasks that went on to succeed.
func (f *facts) recoveredAttempts() int {
	n := 0
	for _, t := range f.run.Tasks {
		if t.State != store.TaskSucceeded {
			continue
		}
		for _, a := range t.Attempts {
			if a.State == store.AttemptFailed {
				n++
			}
		}
	}
	return n
}

// siblingRecovered names another task of the run that failed on the transport and then
// succeeded: the network and the provider worked for it.
func (f *facts) siblingRecovered() string {
	for _, t := range f.run.Tasks {
		if f.task != nil && t.ID == f.task.ID {
			continue
		}
		failed := false
		for _, a := range t.Attempts {
			switch {
			case a.Class == cTransport:
				failed = true
			case a.State == store.AttemptSucceeded && failed:
				return t.ID
			}
		}
	}
	return ""
}

// emptyPrompt: the first attempt was sent no instructions although its agent takes a prompt.
func (f *facts) emptyPrompt() bool {
	if f.def == nil || len(f.attempts) == 0 {
		return false
	}
	first := f.attempts[0]
	if strings.TrimSpace(first.Prompt) != "" {
		return false
	}
	if f.def.PromptFile != "" {
		return true
	}
	a := f.agent(first.Agent)
	if a == nil {
		return false
	}
	if presetOf(a.Preset, a.Command) != "generic" && presetOf(a.Preset, a.Command) != "" {
		return true
	}
	return slices.ContainsFunc(a.Command, func(s string) bool { return strings.Contains(s, "prompt}}") || strings.Contains(s, "prompt_file}}") })
}

func (f *facts) exitAttempt(preset string, code int) storeAttempt {
	for _, a := range f.failed {
		if f.exit(a) == code && f.presetFor(a.Agent) == preset {
			return a
		}
	}
	return storeAttempt{}
}

func (f *facts) anyExit(preset string, code int) bool { return f.exitAttempt(preset, code).N > 0 }

func (f *facts) authAttempt() storeAttempt {
	if f.anyClass(cAuth) {
		return f.firstOf(cAuth)
	}
	if f.lapsedLogin() {
		return f.last()
	}
	return f.exitAttempt("gemini", 41)
}

// agentToolMissing: the agent's command started, exited 126 or 127, and said which program it
// could not find.
func (f *facts) agentToolMissing() (storeAttempt, bool) {
	for _, a := range f.failed {
		if a.Class != cAgentExit || (f.exit(a) != 127 && f.exit(a) != 126) {
			continue
		}
		if _, ok := signalOf(f.agentSignals(a), sigTool); ok {
			return a, true
		}
	}
	return storeAttempt{}, false
}

var untrustedRe = lazyre.New(`(?i)not running in a trusted directory|untrusted (?:folder|workspace)`)

func (f *facts) untrusted() (storeAttempt, bool) {
	for _, a := range f.failed {
		if a.Code == "untrusted_folder" || (f.exit(a) == 55 && f.presetFor(a.Agent) == "gemini") ||
			(a.Class == cAgentExit && untrustedRe.MatchString(a.Message)) {
			return a, true
		}
	}
	return storeAttempt{}, false
}

// creditWall: a quota that money lifts, not time (the runner's code credit, or the banner).
func (f *facts) creditWall() (storeAttempt, bool) {
	for i := len(f.failed) - 1; i >= 0; i-- {
		a := f.failed[i]
		switch {
		case a.Code == agentcli.CodeBilling, a.Code == "credit": // (credit: recorded before billing)
			return a, true
		case a.Class == cQuota && (a.RetryAfterMS != nil || strings.Contains(a.Message, "(resets ")):
			// A limit the runner read a reset time for is a clock, whatever else the text says
			// (Google's daily quota quotes "check your plan and billing details" too).
			continue
		case a.Class == cQuota && creditRe.MatchString(a.Message+"\n"+lastLines(f.output[key(a.TaskID, a.N)], 5)):
			return a, true
		case (a.Class == cPayload || a.Class == cAgentExit) && creditRe.MatchString(a.Message):
			return a, true
		case f.files(a) == 0 && creditRe.MatchString(lastLines(f.output[key(a.TaskID, a.N)], 30)):
			return a, true // the CLI said so and exited anyway (aider through litellm), changing nothing
		}
	}
	return storeAttempt{}, false
}

// anySignal: the kind shows in a failure (the agent's output, the verify output) or on the base.
func (f *facts) anySignal(kind string) (envSignal, bool) {
	for i := len(f.failed) - 1; i >= 0; i-- {
		a := f.failed[i]
		for _, sigs := range [][]envSignal{f.agentSignals(a), f.verifySignals(a)} {
			if s, ok := signalOf(sigs, kind); ok {
				return s, true
			}
		}
	}
	if f.base.failed() {
		return signalOf(verifyEnvSignals(f.base.Output), kind)
	}
	return envSignal{}, false
}

// stopSignal: the kind shows in every failed attempt, or in the last two and every one after
// the last attempt without it — why the run stopped, after what it got past (a compile error
// of the agent's, then a proxy's certificate twice).
func (f *facts) stopSignal(kind string) (envSignal, bool) {
	if s, ok := f.everySignal(kind); ok {
		return s, true
	}
	var last envSignal
	n := 0
	for i := len(f.failed) - 1; i >= 0; i-- {
		a := f.failed[i]
		s, ok := signalOf(f.agentSignals(a), kind)
		if !ok {
			s, ok = signalOf(f.verifySignals(a), kind)
		}
		if !ok {
			break
		}
		if n == 0 {
			last = s
		}
		n++
	}
	return last, n >= 2
}

// everySignal: the kind shows in every failed attempt.
func (f *facts) everySignal(kinds ...string) (envSignal, bool) {
	if len(f.failed) == 0 {
		return envSignal{}, false
	}
	var last envSignal
	for _, a := range f.failed {
		found := false
		sources := [][]envSignal{f.agentSignals(a), f.verifySignals(a)}
		if f.verifyExplains(a) {
			sources = sources[1:] // what the agent's own commands met did not fail the tests
		}
		for _, sigs := range sources {
			for _, k := range kinds {
				if s, ok := signalOf(sigs, k); ok {
					found, last = true, s
				}
			}
		}
		if !found {
			return envSignal{}, false
		}
	}
	return last, true
}

// verifyExplains: the verify rejected the attempt on tests that failed on their values, none of
// them for want of a module, a connection or a file: the tests' own failure explains it.
func (f *facts) verifyExplains(a storeAttempt) bool {
	if a.Class != cQuality {
		return false
	}
	ts := f.testsOf(a).Failed
	if len(ts) == 0 {
		return false
	}
	for _, t := range ts {
		if t.Message == "" || unreadyRe.MatchString(t.Message) {
			return false
		}
	}
	return true
}

// unreadyRe: a test that failed because something it needs was not there, not on a value.
var unreadyRe = lazyre.New(`(?i)cannot find module|no module named|modulenotfound|importerror|cannot import|could not resolve|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|getaddrinfo|network|fetch failed|connect|timed? ?out|no such file|not found|not installed`)

// verifyToolMissing: the verify command could not run a program, in every rejected attempt or
// on the base tree (or could not start at all).
func (f *facts) verifyToolMissing() (envSignal, bool) {
	if !f.anyClass(cQuality) {
		return envSignal{}, false
	}
	last := f.lastOf(cQuality)
	if strings.Contains(last.Message, "could not start") && f.verifyArgv0() != "" {
		return envSignal{kind: sigTool, line: clip(last.Message), what: f.verifyArgv0()}, true
	}
	if f.base.failed() {
		if s, ok := signalOf(verifyEnvSignals(f.base.Output), sigTool); ok {
			return s, true
		}
	}
	return f.everyVerify(sigTool, true)
}

// everyVerify is the signal of the kind in the verify output of every rejected attempt (or in
// its message, withMessage), the last one's.
func (f *facts) everyVerify(kind string, withMessage bool) (envSignal, bool) {
	var last envSignal
	for _, a := range f.failed {
		if a.Class != cQuality {
			continue
		}
		s, ok := signalOf(f.verifySignals(a), kind)
		if !ok && withMessage {
			s, ok = signalOf(envSignals(a.Message), kind)
		}
		if !ok {
			return envSignal{}, false
		}
		last = s
	}
	return last, last.kind != ""
}

// serviceDown: a local service refused the tests' connection on the base tree and after the
// attempts (or after every attempt, when the base was not checked).
func (f *facts) serviceDown() (envSignal, bool) {
	if !f.anyClass(cQuality) {
		return envSignal{}, false
	}
	if f.base.failed() {
		if s, ok := signalOf(verifyEnvSignals(f.base.Output), sigService); ok {
			if _, again := signalOf(f.verifySignals(f.lastOf(cQuality)), sigService); again {
				return s, true
			}
		}
		if s, ok := signalOf(verifyEnvSignals(f.base.Output), sigHighPort); ok && !checksValue(f.base.Output) {
			if again, ok := signalOf(f.verifySignals(f.lastOf(cQuality)), sigHighPort); ok && again.what == s.what {
				s.kind = sigService
				return s, true
			}
		}
		// The base failed before it reached the service (the type error the task is to fix),
		// and the last two attempts got past that to find it down: where the run stopped.
		return f.lastTwoVerify(sigService)
	}
	if f.base != nil {
		return envSignal{}, false // it passes on the base: the attempts broke the connection
	}
	// In the verify's output, where the tests ran: a refusal inside the agent's own commands
	// may be its sandbox's (codex's proxy on a loopback port), not a service the tests need.
	// The attempt the run stopped on decides; one the agent broke before it does not.
	if s, ok := signalOf(f.verifySignals(f.lastOf(cQuality)), sigService); ok && f.lastClass() == cQuality {
		return s, true
	}
	return f.everyVerify(sigService, false)
}

// valueCheckRe: a test checking a value (want, got, expected), as against an error it met.
var valueCheckRe = lazyre.New(`(?i)\b(?:want|got|expected)\b`)

// checksValue: a line of out checks a value and names no refused connection: the refusal on a
// high port is on the test's way (a listener it dials on purpose), not what failed it.
func checksValue(out string) bool {
	for _, l := range evidence.Lines(out) {
		if valueCheckRe.MatchString(l) && !serviceRe.MatchString(l) {
			return true
		}
	}
	return false
}

// lastTwoVerify is the signal of the kind in the verify output of each of the last two
// attempts, both rejected by their verify (the last one's).
func (f *facts) lastTwoVerify(kind string) (envSignal, bool) {
	n := len(f.failed)
	if n < 2 || f.failed[n-1].Class != cQuality || f.failed[n-2].Class != cQuality {
		return envSignal{}, false
	}
	if _, ok := signalOf(f.verifySignals(f.failed[n-2]), kind); !ok {
		return envSignal{}, false
	}
	return signalOf(f.verifySignals(f.failed[n-1]), kind)
}

// cannotWrite: the agent said permission denied and no attempt changed a file.
func (f *facts) cannotWrite() (envSignal, bool) {
	if !f.noAttemptChanged() {
		return envSignal{}, false
	}
	for i := len(f.failed) - 1; i >= 0; i-- {
		if s, ok := signalOf(f.agentSignals(f.failed[i]), sigPermission); ok {
			return s, true
		}
	}
	return envSignal{}, false
}

func (f *facts) noAttemptChanged() bool {
	if len(f.failed) == 0 {
		return false
	}
	for _, a := range f.failed {
		if f.files(a) != 0 {
			return false
		}
	}
	return true
}

// networkDown: every failure shows the network failing, and no task of the run got past it.
func (f *facts) networkDown() (envSignal, bool) {
	if f.siblingRecovered() != "" {
		return envSignal{}, false
	}
	if s, ok := f.everySignal(sigNetwork); ok {
		return s, true
	}
	s, n := f.networkStreak()
	return s, n >= 2
}

// networkStreak is the network failing in the last attempts, where the run stopped (an attempt
// before them that got through and failed otherwise was on the way): the agent's own connection,
// or the verify's own fetch; the last of them and how many. Of the agent's, only a host this
// machine cannot reach counts (refused, not resolved, unreachable): a stream the provider
// dropped is the provider's.
func (f *facts) networkStreak() (envSignal, int) {
	var last envSignal
	n := 0
	for i := len(f.failed) - 1; i >= 0; i-- {
		a := f.failed[i]
		var s envSignal
		ok := false
		switch a.Class {
		case cQuality:
			// The verify's own fetch (an advisory database, a module, a Pact broker) failed
			// on the network after the attempt's change built: a test that failed on its own
			// values explains the attempt, unless a host could not be reached at all.
			s, ok = signalOf(f.verifySignals(a), sigNetwork)
			ok = ok && (!f.verifyExplains(a) || unreachableRe.MatchString(s.line))
		case cTransport:
			s, ok = signalOf(f.agentSignals(a), sigNetwork)
			ok = ok && unreachableRe.MatchString(s.line)
		}
		if !ok {
			break
		}
		if n == 0 {
			last = s
		}
		n++
	}
	return last, n
}

// nearLimit: an attempt that ran until the limit, not far past it (the runner's grace and the
// post snapshot add seconds).
func nearLimit(ms *int64, limit time.Duration) bool {
	if ms == nil || limit <= 0 {
		return false
	}
	d := time.Duration(*ms) * time.Millisecond
	return d >= limit-time.Second && d <= limit+limit/10+30*time.Second
}

// deterministicTimeouts: every attempt ran to the timeout and left the same result.
func (f *facts) deterministicTimeouts() bool {
	if f.def == nil || len(f.failed) < 2 || !f.allClasses(cTimeout) {
		return false
	}
	// Every attempt ran into the limit: each starts from the same tree, so one that got further
	// than another is luck, not a trend; the limit decides.
	// Unless an attempt went round in circles (the same failure again and again): a loop of the
	// agent's, which another attempt may not repeat.
	limit, _ := agentcli.AgentLimits(f.def)
	for _, a := range f.failed {
		if !nearLimit(a.DurationMS, limit) || looping(f.output[key(a.TaskID, a.N)]) {
			return false
		}
	}
	return true
}

// looping: the output's last lines go round in circles: a failure line repeats (the agent ran
// the same failing step again and again), or a few lines make up most of them (the same tool
// call with the same answer, over and over: an agent that checks `git status` until the time
// is up makes no progress a longer timeout would let it finish).
func looping(out string) bool {
	failures, same := map[string]int{}, map[string]int{}
	lines := 0
	for _, l := range strings.Split(lastLines(out, 40), "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		lines++
		if k := digitsRe.ReplaceAllString(l, "#"); testFailLineRe.MatchString(l) {
			if failures[k]++; failures[k] >= 2 {
				return true
			}
		}
		same[eventIDRe.ReplaceAllString(l, "")]++ // exactly the same, numbers and all
	}
	if lines < 12 {
		return false
	}
	for k, n := range same {
		if len(k) > 20 && n >= 4 && n*4 >= lines {
			return true
		}
	}
	return false
}

// eventIDRe: the fields of a CLI's JSON event that differ from one event to the next whatever
// the event says (ids, times).
var eventIDRe = lazyre.New(`"(?:id|\w+ID|\w+Id|\w+_id|timestamp|time)"\s*:\s*(?:"[^"]*"|[\d.]+|\{[^{}]*\})`)

var testFailLineRe = lazyre.New(`--- FAIL|\bFAIL(?:ED)?\b|✗|×|AssertionError|\bassert`)

// stuckSameWay: every attempt went silent after the same last line.
func (f *facts) stuckSameWay() bool {
	if len(f.failed) < 2 || !f.allClasses(cHeartbeat) {
		return false
	}
	first := f.lastOutputLine(f.failed[0])
	for _, a := range f.failed[1:] {
		if f.lastOutputLine(a) != first || f.files(a) != f.files(f.failed[0]) {
			return false
		}
	}
	return true
}

// sameTrees: the attempts left the same tree, where the trees are known and differ by content
// only (the same files changed).
func (f *facts) sameTrees() bool {
	for _, a := range f.failed[1:] {
		if a.Tree != "" && f.failed[0].Tree != "" && a.Tree != f.failed[0].Tree && f.files(a) != f.files(f.failed[0]) {
			return false
		}
	}
	return true
}

func (f *facts) lastOutputLine(a storeAttempt) string {
	return digitsRe.ReplaceAllString(lastNonBlank(f.output[key(a.TaskID, a.N)]), "#")
}

func (f *facts) lastOf(c string) storeAttempt {
	for i := len(f.failed) - 1; i >= 0; i-- {
		if f.failed[i].Class == c {
			return f.failed[i]
		}
	}
	return storeAttempt{}
}

var genericExitRe = lazyre.New(`^agent exited with status -?\d+$|^agent was killed by a signal$`)

// allSilent: every failure is a bare exit status, with no output and no verify output.
func (f *facts) allSilent() bool {
	for _, a := range f.failed {
		k := key(a.TaskID, a.N)
		if !genericExitRe.MatchString(a.Message) || strings.TrimSpace(f.output[k]) != "" || strings.TrimSpace(f.verifyOutput[k]) != "" {
			return false
		}
	}
	return len(f.failed) > 0
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// providerDown: every failed attempt changed nothing and its agent's output ends on its
// provider failing (overloaded, a 5xx): the CLI retried, gave up and exited, often with 0, so
// the runner saw a verify failure or an empty attempt, not the provider's.
func (f *facts) providerDown() (storeAttempt, string, bool) {
	if len(f.failed) == 0 {
		return storeAttempt{}, "", false
	}
	var line string
	for _, a := range f.failed {
		if f.files(a) != 0 {
			return storeAttempt{}, "", false
		}
		l := ""
		for _, x := range strings.Split(lastLines(f.output[key(a.TaskID, a.N)], 30), "\n") {
			if providerDownRe.MatchString(x) {
				l = strings.TrimSpace(agentcli.HumanLine(strings.TrimSpace(x)))
			}
		}
		if l == "" {
			return storeAttempt{}, "", false
		}
		line = l
	}
	return f.last(), clip(line), true
}

var providerDownRe = lazyre.New(`(?i)overloaded|InternalServerError|Internal server error|ServiceUnavailable|Service Unavailable|Bad Gateway|servers are down|\b(?:status|code|error)\W{0,3}(?:500|502|503|504|529)\b|\b(?:500|502|503|504|529) (?:Internal|Bad|Service|Gateway)`)

// lapsedLogin: every failed attempt says its login or key lapsed, in words the runner did not
// know yet (recorded as a plain exit).
func (f *facts) lapsedLogin() bool {
	// The failures after the verify's last rejection: why the run stopped.
	n := 0
	for i := len(f.failed) - 1; i >= 0 && f.failed[i].Class != cQuality; i-- {
		a := f.failed[i]
		if a.Class == cTransport {
			continue // a provider's blip on the way
		}
		if (a.Class != cAgentExit && a.Class != cPayload) || !lapsedLoginRe.MatchString(a.Message) {
			return false
		}
		n++
	}
	return n > 0
}

// lapsedLoginRe: an agent CLI saying its login or key no longer works.
var lapsedLoginRe = lazyre.New(`(?i)(?:log|sign) (?:out and )?(?:log|sign)? ?in again|refresh token (?:was already used|is invalid|has expired)|could not be refreshed|(?:access|oauth|auth) token (?:has )?expired|please (?:re-?authenticate|run /login|log ?in)|not logged in|invalid (?:api[ _]key|x-api-key)|incorrect api key|api key (?:has )?expired|renew the api key`)

// billingURL is the page where credit is added: the one the provider's message names, else the
// preset's provider's.
func billingURL(text, preset string) string {
	if m := billingURLRe.FindString(text); m != "" {
		return strings.TrimRight(m, ".,;:)\"'")
	}
	for _, p := range providerBilling {
		if p.re.MatchString(text) {
			return p.url
		}
	}
	return map[string]string{"claude": "https://console.anthropic.com/settings/billing", "codex": "https://platform.openai.com/settings/organization/billing",
		"gemini": "https://console.cloud.google.com/billing"}[preset]
}

// providerBilling: the billing page of the provider a message names.
var providerBilling = []struct {
	re  *lazyre.Regexp
	url string
}{
	{lazyre.New(`(?i)openrouter`), "https://openrouter.ai/settings/credits"},
	{lazyre.New(`(?i)deepseek`), "https://platform.deepseek.com/top_up"},
	{lazyre.New(`(?i)googleapis|generativelanguage|gemini|\bgoogle\b`), "https://console.cloud.google.com/billing"},
	{lazyre.New(`(?i)anthropic|credit balance is too low`), "https://console.anthropic.com/settings/billing"},
	{lazyre.New(`(?i)openai|check your plan and billing|insufficient_quota`), "https://platform.openai.com/settings/organization/billing"},
}

var billingURLRe = lazyre.New(`https?://[^\s"')]*(?:billing|credits|balance|top-?up|plan|usage)[^\s"')]*`)

// billing is where a person adds credit for a preset's provider.
func billing(preset string) string {
	switch preset {
	case "claude":
		return "for an API key at https://console.anthropic.com/settings/billing, for a subscription in claude's /usage"
	case "codex":
		return "at https://chatgpt.com/codex/settings/usage (or the OpenAI platform's billing page for an API key)"
	case "gemini":
		return "in the Google Cloud console's billing for the project, or a key with quota left"
	case "opencode":
		return "in the opencode account's billing (or switch its model to a provider with credit)"
	case "aider":
		return "on the billing page of the provider of aider's model"
	}
	return "on the provider's billing page"
}

// unreachableRe: a connection this machine could not make at all.
var unreachableRe = lazyre.New(`(?i)ConnectionRefused|connection refused|\bECONNREFUSED\b|could not resolve|\bENOTFOUND\b|\bEAI_AGAIN\b|failed to lookup address|name or service not known|temporary failure in name resolution|no such host|network is unreachable|\bENETUNREACH\b|\bnxdomain\b|proxy`)
