package attempt

import (
	"regexp"
	"strings"

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
		// a 400 INVALID_ARGUMENT for a prompt over the window (claude's and codex's words are
		// among the common banners)
		noRetry(rule(taskfile.ClassAgentExit, CodeContextWindow, contextHint, `(?i)input token count \(\d+\) exceeds the maximum`)),
	},
}

const contextHint = "the task does not fit the model's context window: split it or shorten its prompt"

// AgentSession reads the agent CLI's own id of the conversation from its output: claude's
// session_id, codex's thread_id (thread.started), gemini's session_id. "" when there is none.
func AgentSession(preset string, stdout []byte) string {
	var id string
	for _, v := range jsonValues(stdout) {
		switch preset {
		case taskfile.PresetClaude, taskfile.PresetGemini:
			if s, ok := v["session_id"].(string); ok && s != "" {
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

var sessionIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

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
	}
	return nil
}

// ResumeCommand is ResumeArgv as one line for a shell ("" when there is none); the id is
// checked to need no quoting.
func ResumeCommand(preset, id string) string { return strings.Join(ResumeArgv(preset, id), " ") }
