package agentcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// What the presets know of their CLIs' failures beyond the common banners: documented exit codes
// (gemini's FatalError family), the JSON fields that declare a failure (claude's api_error_status,
// terminal_reason and rate_limit_event), texts no clock lifts (credit), failures a retry of the
// same task cannot get past (the context window, an untrusted folder), an error printed with exit
// 0 (opencode, aider), and the loop a CLI never leaves offline (codex). Texts are the CLIs' own, from
// their sources (@google/gemini-cli FatalError classes, claude-code's banners, codex's strings);
// agentcli/testdata/presets/banners holds them as fixtures.

// Failure codes the presets assign.
const (
	CodeBilling       = "billing"          // quota that money lifts, not time
	CodeContextWindow = "context_window"   // the conversation does not fit the model
	CodeUntrusted     = "untrusted_folder" // gemini refuses an untrusted folder (exit 55)
	CodeModelCapacity = "model_capacity"   // codex: "Selected model is at capacity"
	CodeOfflineLoop   = "offline_loop"     // the CLI retries for ever without the network
	CodeCLIError      = "cli_error"        // opencode's "Error: …" with exit 0
	CodeNeedsTerminal = "needs_terminal"   // an interactive UI started without a terminal
	CodeTurnLimit     = "turn_limit"       // the CLI's own limit of turns ended the session
	CodeBadArguments  = "bad_arguments"    // the CLI's argument parser refused its command line
)

// BillingHint is the hint of a billing failure: money lifts it, not time.
const BillingHint = "the account has no credit left: add credit (or raise its spend cap) on the provider's billing page, or add another agent to the task's chain"

// Default limits every agent gets from its preset unless the task sets them (SPEC §4 Policy).
const (
	DefaultAgentTimeout   = 2 * time.Hour
	DefaultAgentHeartbeat = 15 * time.Minute
)

// AgentLimits returns the timeout and heartbeat an attempt of def runs with: the task's, else
// the preset's defaults, so that no agent CLI that hangs can hold a run for ever.
func AgentLimits(def *taskfile.Task) (timeout, heartbeat time.Duration) {
	timeout, heartbeat = def.Timeout, def.Heartbeat
	if timeout <= 0 {
		timeout = DefaultAgentTimeout
	}
	if heartbeat <= 0 {
		heartbeat = DefaultAgentHeartbeat
	}
	return timeout, heartbeat
}

const geminiTrustHint = "gemini runs only in folders it trusts: set GEMINI_CLI_TRUST_WORKSPACE=true in the agent's env (or add --skip-trust to its command) to trust the working tree for that session — gemini then loads the folder's .gemini settings, .env, MCP servers and commands, so only for a repository you trust"

// exitRule is a CLI's documented exit status.
type exitRule struct {
	cls     taskfile.Class
	code    string
	what    string
	hint    string
	noRetry bool
}

// geminiExits are @google/gemini-cli's FatalError exit codes.
var geminiExits = map[int]exitRule{
	41: {taskfile.ClassAuth, "auth", "authentication failed", "", true},
	42: {taskfile.ClassAgentExit, "input_error", "the input was refused", "check the prompt and the command's arguments", true},
	44: {taskfile.ClassAgentExit, "sandbox_error", "the sandbox could not start", "start docker or podman for gemini's sandbox, or run it without --sandbox", true},
	52: {taskfile.ClassAgentExit, "config_error", "the configuration is invalid", "fix gemini's settings (.gemini/settings.json)", true},
	53: {taskfile.ClassAgentExit, CodeTurnLimit, "the session turn limit was reached", "raise model.maxSessionTurns in gemini's settings, or make the task smaller", true},
	54: {taskfile.ClassAgentExit, "tool_error", "a tool failed", "", false},
	55: {taskfile.ClassAgentExit, CodeUntrusted, "the folder is not trusted", geminiTrustHint, true},
}

// specificRules are checked after a preset's own rules and before the common ones: texts that
// would otherwise read as a usage limit or a plain exit.
var specificRules = []bannerRule{
	billingRule,
	// Usage limits the common rules do not know by these words; they name their reset.
	rule(taskfile.ClassQuota, "usage_limit", "", `(?i)out of extra usage|hit your (?:weekly|session|daily|opus|sonnet|fast) limit|exhausted your (?:daily )?(?:quota|capacity)`),
	// An Ink UI (claude's, gemini's) started without a terminal: every retry of the same command
	// meets it again.
	noRetry(rule(taskfile.ClassAgentExit, CodeNeedsTerminal, "the agent CLI started its interactive UI, which needs a terminal: run it headless (claude -p, gemini -p; the presets' commands do)", `Raw mode is not supported on the current process\.stdin`)),
	noRetry(rule(taskfile.ClassAgentExit, CodeContextWindow, "the task does not fit the model's context window: split it or shorten its prompt", `(?i)ran out of room in the model's context window|prompt is too long|context_length_exceeded|maximum context length|input exceeds the context window`)),
	// The CLI's argument parser refused its command line — clap (codex): "error: unexpected
	// argument '--foo' found"; commander (claude): "error: unknown option '--foo'"; yargs
	// (gemini): "Unknown argument: foo"; Go's flag and cobra: "flag provided but not defined:
	// -foo", "Error: unknown flag: --foo". Retried all the same: a retry costs nothing (the CLI
	// stops before any request) and moves a failover chain on to its next rung.
	rule(taskfile.ClassAgentExit, CodeBadArguments, "the agent CLI refused its command line (a flag its version does not know?): fix `command` of the agent in the task file, or update the CLI; its --help lists what it takes", `(?m)^(?:error: (?:unexpected argument '[^']*' found|unrecognized subcommand '[^']*'|unknown option '[^']*'|too many arguments|invalid value '[^']*' for '[^']*')|Unknown arguments?: \S|flag provided but not defined: -\S|Error: unknown (?:shorthand )?flag: \S)`),
}

func noRetry(r bannerRule) bannerRule { r.noRetry = true; return r }

// billingRule is credit, in the words of every provider the CLIs talk to: no reset time lifts
// it; a person adds funds or raises a cap. Anthropic's "credit balance is too low", OpenAI's
// insufficient_quota, OpenRouter's 402 "Insufficient credits" and "This request requires more
// credits", DeepSeek's 402 "Insufficient Balance", an HTTP 402 Payment Required.
var billingRule = noRetry(rule(taskfile.ClassQuota, CodeBilling, BillingHint, `(?i)credit balance is too low|out of credits|insufficient (?:credits?|balance|funds)|requires more credits|(?:hit|reached) your (?:workspace )?(?:spend cap|credit limit)|insufficient_quota|monthly usage limit reached|reached your specified API usage limits|payment required|check your plan and billing|billing details|credits? (?:are |is )?exhausted|(?:status(?: code)?:? ?|['"]?code['"]?:\s*|\berror(?: code)?:? ?|HTTP(?:/[\d.]+)? )402\b`))

// codexRules are codex's own texts.
var codexRules = []bannerRule{
	// Its ChatGPT login lapsed: "Your access token could not be refreshed because your refresh
	// token was already used. Please log out and sign in again." (openai/codex#9634), "Failed to
	// refresh token: …", "refresh_token_reused"; `codex login` mends it, not a retry.
	rule(taskfile.ClassAuth, "login_expired", "codex's login lapsed: codex logout, then codex login (or set OPENAI_API_KEY); another codex session may have used its refresh token", `(?i)access token could not be refreshed|failed to refresh (?:the )?(?:access )?token|refresh token (?:was|has|is) (?:already |been |now )*(?:used|revoked|expired|invalid)|refresh_token_(?:reused|expired|invalidated)|(?:sign(?:ing)?|log(?:ging)?) ?in again|re-?authenticate|log ?in again`),
	// codex retries a 429 itself (its provider's request_max_retries) and then gives up with
	// "exceeded retry limit, last status: 429 Too Many Requests": a transient limit it met
	// several times, for the task's policy to retry with its backoff, not a quota wall with an
	// invented reset (a usage limit says "usage limit" and names its reset).
	rule(taskfile.ClassTransport, "rate_limit", "codex gave up after its own retries of a 429; the task's policy retries it (on_failure: retry)", `(?i)exceeded retry limit, last status: 429`),
	noRetry(rule(taskfile.ClassAgentExit, CodeModelCapacity, "choose another model (codex -m …) or add an agent to the task's chain", `(?i)selected model is at capacity`)),
}

// aiderRules are aider's (litellm's exception names, its own notices). Credit comes first: a
// provider's insufficient_quota arrives as a litellm.RateLimitError.
var aiderRules = []bannerRule{
	billingRule,
	rule(taskfile.ClassAuth, "invalid_key", "", `AuthenticationError|API key (?:is )?(?:missing|invalid)|Missing these environment variables`),
	rule(taskfile.ClassQuota, "rate_limit", "", `RateLimitError|The API provider has rate limited you`),
	noRetry(rule(taskfile.ClassAgentExit, CodeContextWindow, "the task does not fit the model's context window: split it or shorten its prompt", `ContextWindowExceededError|has hit a token limit`)),
	rule(taskfile.ClassTransport, "server_error", "", `InternalServerError|ServiceUnavailableError|APIConnectionError|The API provider's servers are down or overloaded|litellm\.Timeout|The API provider timed out`),
}

// codexLoop is the line codex prints for ever without the network, after "Reconnecting… 5/5".
var codexLoop = lazyre.New(`(?i)reconnecting(?:\.\.\.|…)\s*waiting for network[^\n]*`)

// LoopWatcher returns a ProcSpec.Watch for the preset's "cannot reach the service" loop and the
// line that tripped it (after it did); nil when the preset knows no loop.
func (p *Preset) LoopWatcher() (watch func([]byte) bool, line func() string) {
	if p.loop == nil {
		return nil, nil
	}
	var pending []byte
	var hit string
	return func(chunk []byte) bool {
			if hit != "" {
				return true
			}
			pending = append(pending, chunk...)
			if loc := p.loop.FindIndex(pending); loc != nil {
				hit = HumanLine(lineAt(pending, loc[0]))
				return true
			}
			if i := bytes.LastIndexByte(pending, '\n'); i >= 0 {
				pending = append(pending[:0], pending[i+1:]...)
			}
			if len(pending) > 4<<10 {
				pending = pending[len(pending)-4<<10:]
			}
			return false
		}, func() string {
			return hit
		}
}

// loopFailure is the failure of an attempt its preset's watcher ended.
func (p *Preset) loopFailure(line string) *Failure {
	return &Failure{Class: taskfile.ClassTransport, Code: CodeOfflineLoop,
		Message: fmt.Sprintf("%s: %s (ended early: the CLI retries for ever while the service cannot be reached)", p.Name, line),
		Hint:    "check the network (DNS, proxy) and the provider's status page"}
}

// exitFailure applies the preset's exit-code table.
func (p *Preset) exitFailure(exitCode int, text []byte) *Failure {
	r, ok := p.exits[exitCode]
	if !ok {
		return nil
	}
	if f := p.matchRules(withoutAgentWork(text)); f != nil && f.Class == r.cls {
		// The text says the same as the exit code, more precisely.
		f.NoRetry = f.NoRetry || r.noRetry
		if r.hint != "" {
			f.Hint = r.hint
		}
		return f
	}
	msg := p.ErrorText(text)
	if msg == "" {
		msg = r.what
	}
	f := &Failure{Class: r.cls, Code: r.code, Message: fmt.Sprintf("%s: %s (exit status %d: %s)", p.Name, msg, exitCode, r.what), Hint: r.hint, NoRetry: r.noRetry}
	if f.Hint == "" {
		f.Hint = p.hintFor(r.cls)
	}
	return f
}

// claudeVerdict reads claude's JSON for what its text does not say plainly: a result that
// stopped at --max-turns, a stream-json rate_limit_event that was rejected (with its reset time),
// a result with api_error_status, or terminal_reason prompt_too_long.
func claudeVerdict(exitCode int, output []byte) *Failure {
	vals := jsonValues(output)
	var result map[string]any
	for _, v := range vals {
		if v["type"] == "result" {
			result = v
		}
	}
	if result != nil {
		if claudeTurnLimit(result) {
			return &Failure{Class: taskfile.ClassAgentExit, Code: CodeTurnLimit, Message: "claude: " + claudeTurnLimitSays(result),
				Hint: "raise --max-turns in the agent's command, or split the task into smaller ones", NoRetry: true}
		}
		if isErr, _ := result["is_error"].(bool); !isErr {
			return nil // it ended well, whatever it met on the way
		}
	}
	for i := len(vals) - 1; i >= 0; i-- {
		v := vals[i]
		switch v["type"] {
		case "rate_limit_event":
			info, _ := v["rate_limit_info"].(map[string]any)
			if info == nil || info["status"] != "rejected" {
				continue
			}
			f := &Failure{Class: taskfile.ClassQuota, Code: "rate_limit", Message: "claude: usage limit reached (rate_limit_event rejected"}
			if kind, _ := info["rateLimitType"].(string); kind != "" {
				f.Message += ", " + kind
			}
			f.Message += ")"
			if at, ok := num(info["resetsAt"]); ok && at > 0 {
				f.ResetAt = time.Unix(int64(at), 0).UTC()
			}
			return f
		}
	}
	if result == nil {
		return nil
	}
	text, _ := result["result"].(string)
	hint := (&Preset{Name: taskfile.PresetClaude}).hintFor
	status, _ := num(result["api_error_status"])
	switch {
	case result["terminal_reason"] == "prompt_too_long":
		return &Failure{Class: taskfile.ClassAgentExit, Code: CodeContextWindow, Message: "claude: " + clipLine([]byte(orText(text, "prompt too long"))),
			Hint: "the task does not fit the model's context window: split it or shorten its prompt", NoRetry: true}
	case billingRule.re.MatchString(text):
		return nil // credit: the banner rules say it
	case status == 402:
		return &Failure{Class: billingRule.cls, Code: billingRule.code, Message: "claude: " + clipLine([]byte(orText(text, "API error 402"))), Hint: billingRule.hint, NoRetry: true}
	case status == 429:
		return &Failure{Class: taskfile.ClassQuota, Code: "rate_limit", Message: "claude: " + clipLine([]byte(orText(text, "API error 429")))}
	case status == 401 || status == 403:
		return &Failure{Class: taskfile.ClassAuth, Code: "invalid_key", Message: "claude: " + clipLine([]byte(orText(text, "API error 401"))), Hint: hint(taskfile.ClassAuth)}
	case status >= 500:
		return &Failure{Class: taskfile.ClassTransport, Code: "server_error", Message: "claude: " + clipLine([]byte(orText(text, fmt.Sprintf("API error %d", int(status))))), Hint: hint(taskfile.ClassTransport)}
	}
	return nil
}

// claudeTurnLimit: claude's result says --max-turns ended the session (subtype error_max_turns,
// terminal_reason max_turns); its result text is then empty and the words are in errors.
func claudeTurnLimit(result map[string]any) bool {
	return result["subtype"] == "error_max_turns" || result["terminal_reason"] == "max_turns"
}

// claudeTurnLimitSays is the message of a result that reached the turn limit: that it did, the
// turns it counted, and claude's own words when it printed any ("Reached maximum number of
// turns (20)").
func claudeTurnLimitSays(result map[string]any) string {
	s := "the turn limit was reached (error_max_turns"
	if n, ok := num(result["num_turns"]); ok && n > 0 {
		s += fmt.Sprintf(", num_turns %d", int(n))
	}
	s += ")"
	if e := claudeErrors(result); e != "" {
		s += ": " + e
	}
	return clipLine([]byte(s))
}

// claudeErrors is the errors list of claude's result (its words when result is empty), joined.
func claudeErrors(result map[string]any) string {
	list, _ := result["errors"].([]any)
	var said []string
	for _, e := range list {
		if s, ok := e.(string); ok && strings.TrimSpace(s) != "" {
			said = append(said, oneLineOf(s))
		}
	}
	return strings.Join(said, "; ")
}

func orText(s, alt string) string {
	if strings.TrimSpace(s) == "" {
		return alt
	}
	return s
}

// cliErrorLine is opencode's "Error: …" (it exits 0 after it).
var cliErrorLine = lazyre.New(`^Error:\s*(.+)$`)

// What aider prints when a request fails for good (it still exits 0 with --message): litellm's
// exception and aider's description of it ("The API provider's servers are down or
// overloaded."), or its token-limit report; before each retry, "Retrying in 0.2 seconds...";
// for each edit, "Applied edit to FILE".
var (
	aiderGaveUp  = lazyre.New(`^((?:litellm\.\w+|BadRequestError)\b.*|The (?:API|OpenRouter API) provider .*|Insufficient credits with the API provider.*|Model .+ has hit a token limit!?)$`)
	aiderRetried = lazyre.New(`^Retrying in [\d.]+ seconds`)
	aiderEdited  = lazyre.New(`(?m)^Applied edit to `)
)

// gaveUpLines is how far from its end an output is read for the error a CLI gave up on.
const gaveUpLines = 12

// gaveUpFailure is the failure of an exit 0 whose last words are the CLI's own error: opencode
// prints "Error: …" and aider its litellm exception after its own retries, and both exit 0. The
// error must be among the last things said after the CLI's last retry (a request that failed
// and then succeeded on a retry is no failure), and a CLI that reports its edits must have made
// none (an edit and then a failed follow-up request is still the edit's attempt, for the output
// checks to judge). Its rules sort the error; one they do not know is an agent_exit.
func (p *Preset) gaveUpFailure(output []byte) *Failure {
	if p.gaveUp == nil || len(bytes.TrimSpace(output)) == 0 {
		return nil
	}
	lines := strings.Split(string(ansiRe.ReplaceAll(output, nil)), "\n")
	var said []string // the CLI's error lines, from the end
	seen := 0
	for i := len(lines) - 1; i >= 0 && seen < gaveUpLines; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if p.retried != nil && p.retried.MatchString(l) {
			if seen > 0 {
				break // what came after it is the retry's outcome
			}
			continue // its last words announced a retry: the error before it stands
		}
		seen++
		if m := p.gaveUp.FindStringSubmatch(l); m != nil {
			said = append(said, m[1])
		}
	}
	if len(said) == 0 || p.edited != nil && p.edited.Match(output) {
		return nil
	}
	slices.Reverse(said)
	if f := p.matchRules([]byte(strings.Join(said, "\n"))); f != nil {
		return f
	}
	return &Failure{Class: taskfile.ClassAgentExit, Code: CodeCLIError, Message: p.Name + ": " + clipLine([]byte(said[len(said)-1])) + " (exit status 0)"}
}

// ErrorText is what the CLI itself said went wrong: its result's error text (claude's result,
// codex's error message, gemini's error.message, opencode's error), else the last thing its
// output says (LastWords). It is what failure messages quote, instead of a raw JSON event.
func (p *Preset) ErrorText(output []byte) string {
	if p.Result != nil {
		if r := p.Result(output); r != nil && strings.TrimSpace(r.ErrorText) != "" {
			return clipLine([]byte(r.ErrorText))
		}
	}
	return LastWords(output)
}

// HumanLine reads a JSON line for the message in it (result, error.message, message, error).
func HumanLine(l string) string {
	if !strings.HasPrefix(l, "{") {
		return l
	}
	var v map[string]any
	if json.Unmarshal([]byte(l), &v) != nil {
		// A line cut by the tail: take the first message-like field by hand.
		if m := jsonTextRe.FindStringSubmatch(l); m != nil {
			return clipLine([]byte(m[1]))
		}
		return l
	}
	for _, p := range messagePaths {
		if s, ok := path(v, p...).(string); ok && strings.TrimSpace(s) != "" {
			return clipLine([]byte(s))
		}
	}
	return l
}

var jsonTextRe = lazyre.New(`"(?:result|message)"\s*:\s*"((?:[^"\\]|\\.)*)"`)

// withoutJSONLines is output without its lines that are JSON objects.
func withoutJSONLines(output []byte) []byte {
	return withoutEvents(output, func(map[string]any) bool { return true })
}

// withoutAgentWork is output without the JSON events that carry the agent's work rather than
// the CLI's word on the session: the model's messages, its tool calls and what they printed. A
// banner in those is the agent's business (a test it ran printed "401 Unauthorized", it wrote
// about rate limits), not its CLI's failure; claude's own API-error messages ("model":
// "<synthetic>") stay.
func withoutAgentWork(output []byte) []byte {
	return withoutEvents(output, func(v map[string]any) bool {
		switch v["type"] {
		case "assistant": // claude
			return path(v, "message", "model") != "<synthetic>"
		case "user", "tool_use", "tool_result", "text", "message": // claude, gemini, opencode
			return true
		case "item.started", "item.updated", "item.completed": // codex: every item but its errors
			return path(v, "item", "type") != "error"
		}
		return false
	})
}

// withoutEvents is output without its lines that are JSON objects drop picks.
func withoutEvents(output []byte, drop func(map[string]any) bool) []byte {
	var b bytes.Buffer
	for _, l := range bytes.SplitAfter(output, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] == '{' {
			var v map[string]any
			if json.Unmarshal(t, &v) == nil && drop(v) {
				continue
			}
		}
		b.Write(l)
	}
	return b.Bytes()
}
