package agentcli

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// What the presets learned from driving the real CLIs against a model API (testdata/modelapi,
// testdata/clis): the environment that turns their own retry loops off, so mulligan's policy
// decides what a failed request costs, and the texts they print for the API's errors.

// presetEnv is set in a preset agent's environment, after the inherited environment and before
// the agent's own `env:` (which wins).
//
//   - claude retries a 429, a 529 and a 5xx by itself (about three minutes of backoff for a 429)
//     unless CLAUDE_CODE_MAX_RETRIES says otherwise; with 0 it sends one request and prints the
//     API's error in its result.
//   - gemini-cli retries 429s and 5xx up to ten times with backoff; only its settings file
//     lowers that (general.maxAttempts), no environment variable does: see the README.
//   - codex's retries are per provider (request_max_retries, stream_max_retries in config.toml
//     or -c overrides of model_providers.NAME); they belong in the agent's configuration.
//   - opencode (1.18) retries a retryable API error (429, 5xx, "overloaded", …) five times by
//     itself, waiting the answer's retry-after (retry-after-ms) or 2s, 4s, 8s, 16s, 30s: a
//     constant of its session loop, no setting or variable changes it. Its error event comes
//     after the sixth request; a retry-after as long as a usage limit's reset keeps it waiting
//     that long (mulligan's heartbeat and timeout still bound the attempt).
var presetEnv = map[string]map[string]string{
	taskfile.PresetClaude: {"CLAUDE_CODE_MAX_RETRIES": "0"},
}

// PresetEnv returns the environment the preset sets for its CLI (nil for none).
func PresetEnv(name string) map[string]string { return presetEnv[name] }

// apiRules are checked after a preset's own rules and before the common ones: texts the real
// CLIs print for model API errors (captured in testdata/presets/*_api_*).
var apiRules = map[string][]bannerRule{
	taskfile.PresetClaude: {
		// "You've hit your 5-hour limit · resets 5:28pm (UTC)" (a subscription's window)
		rule(taskfile.ClassQuota, "usage_limit", "", `(?i)hit your [\w-]+ limit`),
	},
	taskfile.PresetCodex: {
		// codex's own words for a 500 from the Responses API
		rule(taskfile.ClassTransport, "server_error", "", `(?i)experiencing high demand`),
	},
	taskfile.PresetGemini: {
		// a 429 RESOURCE_EXHAUSTED with a RetryInfo: "Resource has been exhausted (e.g. check
		// quota).\nSuggested retry after 20s."
		rule(taskfile.ClassQuota, "rate_limit", "", `(?i)resource has been exhausted`),
		// a 429 with a QuotaFailure for a daily quota (TerminalQuotaError)
		rule(taskfile.ClassQuota, "usage_limit", "", `(?i)exhausted your (?:daily )?quota`),
		// Google's words for every quota 429 ask to "check your plan and billing details": for
		// gemini they are a quota with its retry delay, not a billing failure
		rule(taskfile.ClassQuota, "usage_limit", "", `(?i)you exceeded your current quota`),
		// a stream cut mid-way: gemini exits 0 with {"error": {"type": "INVALID_STREAM"}}
		rule(taskfile.ClassTransport, "invalid_stream", "", `INVALID_STREAM|(?i)invalid stream received from model|model stream ended`),
		// a 401 for credentials Google does not take
		rule(taskfile.ClassAuth, "invalid_key", "", `(?i)invalid authentication credentials|"status": ?"UNAUTHENTICATED"`),
		// a 403 for a key or project Google suspended: no retry and no reset lifts it
		rule(taskfile.ClassAuth, "suspended", "the API key's project is suspended: use another key (GEMINI_API_KEY) or ask Google to lift the suspension", `(?i)consumer .{0,200}has been suspended`),
		// a 400 INVALID_ARGUMENT for a prompt over the window (claude's and codex's words are
		// among the common banners)
		noRetry(rule(taskfile.ClassAgentExit, CodeContextWindow, contextHint, `(?i)input token count \(\d+\) exceeds the maximum`)),
	},
}

const contextHint = "the task does not fit the model's context window: split it or shorten its prompt"

// opencodeVerdict reads the error event `opencode run --format json` ends with: an APIError
// carries the provider's answer as it came (statusCode, responseHeaders, responseBody), after
// opencode's own retries; a ContextOverflowError is the window. The message quotes the provider's
// words; a usage limit's reset is the body's resets_at, else its retry-after from the event's
// time.
func opencodeVerdict(exitCode int, output []byte) *Failure {
	var ev map[string]any
	after := 0 // steps opencode finished after the error
	for _, v := range jsonValues(output) {
		switch v["type"] {
		case "error":
			ev, after = v, 0
		case "step_finish":
			after++
		}
	}
	if ev == nil {
		return nil
	}
	name, _ := path(ev, "error", "name").(string)
	data, _ := path(ev, "error", "data").(map[string]any)
	msg, _ := data["message"].(string)
	body, _ := data["responseBody"].(string)
	status, _ := num(data["statusCode"])
	line := "opencode: " + clipLine([]byte(orText(msg, name)))
	hint := (&Preset{Name: taskfile.PresetOpencode}).hintFor
	credit := billingRule
	switch {
	case name == "ContextOverflowError":
		hint := contextHint
		if after > 0 {
			// opencode compacts the conversation and goes on; it still exits 1
			line += " (opencode compacted the conversation and went on, then exited 1)"
			hint = "opencode went on after compacting the conversation: the attempt's post tree has what it did; " + contextHint
		}
		return &Failure{Class: taskfile.ClassAgentExit, Code: CodeContextWindow, Message: line, Hint: hint, NoRetry: true}
	case status == 402 || credit.re.MatchString(msg+"\n"+body):
		return &Failure{Class: credit.cls, Code: credit.code, Message: line, Hint: credit.hint, NoRetry: credit.noRetry}
	case status == 429:
		f := &Failure{Class: taskfile.ClassQuota, Code: "rate_limit", Message: line}
		var b struct {
			Error struct {
				Type     string  `json:"type"`
				ResetsAt float64 `json:"resets_at"`
			} `json:"error"`
		}
		_ = json.Unmarshal([]byte(body), &b) // not JSON: no usage-limit fields
		if b.Error.Type == "usage_limit_reached" || usageLimitRe.MatchString(msg) {
			f.Code = "usage_limit"
		}
		if b.Error.ResetsAt > 0 {
			f.ResetAt = time.Unix(int64(b.Error.ResetsAt), 0).UTC()
		} else if ra, err := strconv.ParseFloat(headerValue(data, "retry-after"), 64); err == nil && ra > 0 {
			if at, ok := num(ev["timestamp"]); ok {
				f.ResetAt = time.UnixMilli(int64(at)).Add(time.Duration(ra * float64(time.Second))).UTC()
			}
		}
		return f
	case status == 401 || status == 403:
		return &Failure{Class: taskfile.ClassAuth, Code: "invalid_key", Message: line, Hint: hint(taskfile.ClassAuth)}
	case status >= 500:
		return &Failure{Class: taskfile.ClassTransport, Code: "server_error", Message: line, Hint: hint(taskfile.ClassTransport)}
	}
	return nil
}

var usageLimitRe = lazyre.New(`(?i)usage limit`)

// headerValue is a response header opencode recorded (its keys are lower case).
func headerValue(data map[string]any, key string) string {
	h, _ := data["responseHeaders"].(map[string]any)
	s, _ := h[key].(string)
	return s
}

// AgentSession reads the agent CLI's own id of the conversation from its output: claude's
// session_id, codex's thread_id (thread.started), gemini's session_id, opencode's sessionID.
// "" when there is none.
func AgentSession(preset string, stdout []byte) string {
	var id string
	for _, v := range jsonValues(stdout) {
		switch preset {
		case taskfile.PresetClaude, taskfile.PresetGemini:
			if s, ok := v["session_id"].(string); ok && s != "" {
				id = s
			}
		case taskfile.PresetOpencode:
			if s, ok := v["sessionID"].(string); ok && s != "" {
				id = s
			}
		case taskfile.PresetCodex:
			if v["type"] == "thread.started" {
				if s, ok := v["thread_id"].(string); ok && s != "" {
					id = s
				}
			}
		}
	}
	if !sessionIDRe.MatchString(id) {
		return "" // not an id a shell command may carry as it is
	}
	return id
}

var sessionIDRe = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// ResumeArgv is the command that continues session id of the preset's CLI by hand, in the
// attempt's tree; nil when the CLI cannot take a session id back (gemini resumes by index).
func ResumeArgv(preset, id string) []string {
	if id == "" {
		return nil
	}
	switch preset {
	case taskfile.PresetClaude:
		return []string{"claude", "--resume", id}
	case taskfile.PresetCodex:
		return []string{"codex", "exec", "resume", id}
	case taskfile.PresetOpencode:
		return []string{"opencode", "--session", id}
	}
	return nil
}

// ResumeCommand is ResumeArgv as one line for a shell ("" when there is none); the id is
// checked to need no quoting.
func ResumeCommand(preset, id string) string { return strings.Join(ResumeArgv(preset, id), " ") }
