package agentcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/taskfile"
)

// The quota, credit, context and exit-code texts of the current CLIs (their source strings:
// codex's binary, claude-code's, @google/gemini-cli's FatalError classes and quota errors,
// opencode's error line), each classified by its preset, with the reset time its words imply
// read in the zone they imply: codex prints local time without a zone, claude names its zone.
func TestPresetBannerFixtures(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	london, _ := time.LoadLocation("Europe/London")
	// 09:00 in New York (14:00 UTC) on 3 December 2026: the machine's local zone is New York.
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, ny)
	cases := []struct {
		file    string
		preset  string
		exit    int
		class   taskfile.Class
		code    string
		noRetry bool
		reset   time.Time // zero: the text names none
		msg     string    // the message quotes the CLI's own words
	}{
		{"codex_usage_limit_at.txt", taskfile.PresetCodex, 1, taskfile.ClassQuota, "usage_limit", false, time.Date(2026, 12, 3, 15, 28, 0, 0, ny), "codex: ■ You've hit your usage limit."},
		{"codex_usage_limit_in.txt", taskfile.PresetCodex, 1, taskfile.ClassQuota, "usage_limit", false, now.Add(3*24*time.Hour + 6*time.Hour + 57*time.Minute), ""},
		{"codex_usage_limit_date.jsonl", taskfile.PresetCodex, 1, taskfile.ClassQuota, "usage_limit", false, time.Date(2026, 12, 8, 12, 30, 0, 0, ny), "codex: You've hit your usage limit. Visit"},
		{"codex_out_of_credits.txt", taskfile.PresetCodex, 1, taskfile.ClassQuota, CodeBilling, true, time.Time{}, ""},
		{"codex_spend_cap.txt", taskfile.PresetCodex, 1, taskfile.ClassQuota, CodeBilling, true, time.Time{}, ""},
		{"codex_model_capacity.txt", taskfile.PresetCodex, 1, taskfile.ClassAgentExit, CodeModelCapacity, true, time.Time{}, ""},
		{"codex_context_window.txt", taskfile.PresetCodex, 1, taskfile.ClassAgentExit, CodeContextWindow, true, time.Time{}, ""},
		{"claude_limit_utc.txt", taskfile.PresetClaude, 1, taskfile.ClassQuota, "usage_limit", false, time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC), ""},
		{"claude_weekly_london.txt", taskfile.PresetClaude, 1, taskfile.ClassQuota, "usage_limit", false, time.Date(2026, 12, 4, 3, 0, 0, 0, london), ""},
		{"claude_extra_usage.txt", taskfile.PresetClaude, 1, taskfile.ClassQuota, "usage_limit", false, time.Date(2026, 12, 3, 17, 0, 0, 0, time.UTC), ""},
		{"claude_5hour.txt", taskfile.PresetClaude, 1, taskfile.ClassQuota, "usage_limit", false, time.Date(2026, 12, 3, 15, 0, 0, 0, ny), ""},
		{"claude_pipe_unix.txt", taskfile.PresetClaude, 1, taskfile.ClassQuota, "usage_limit", false, time.Unix(1796374800, 0), ""},
		{"claude_api_error_429.json", taskfile.PresetClaude, 1, taskfile.ClassQuota, "rate_limit", false, time.Time{}, "claude: API Error: Request rejected (429)"},
		{"claude_api_error_429.json", taskfile.PresetClaude, 0, taskfile.ClassQuota, "rate_limit", false, time.Time{}, ""}, // is_error with subtype "success"
		{"claude_prompt_too_long.json", taskfile.PresetClaude, 1, taskfile.ClassAgentExit, CodeContextWindow, true, time.Time{}, "claude: Prompt is too long"},
		{"claude_rate_limit_event.jsonl", taskfile.PresetClaude, 1, taskfile.ClassQuota, "rate_limit", false, time.Unix(1796374800, 0), ""},
		{"claude_credit.json", taskfile.PresetClaude, 1, taskfile.ClassQuota, CodeBilling, true, time.Time{}, "claude: Credit balance is too low"},
		// An API key's monthly spend limit set in the console: a person raises it; "You will regain
		// access on 2027-01-01" is weeks away, not a reset to park on.
		{"claude_spend_limit.json", taskfile.PresetClaude, 1, taskfile.ClassQuota, CodeBilling, true, time.Time{}, "claude: API Error: 400"},
		// --max-turns reached: the result's shape as anthropics/claude-code-action#823 and
		// Abilityai/trinity#361 quote it (subtype error_max_turns, terminal_reason max_turns,
		// errors ["Reached maximum number of turns (20)"], exit 1); its errors may be empty (#823).
		{"claude_max_turns.jsonl", taskfile.PresetClaude, 1, taskfile.ClassAgentExit, CodeTurnLimit, true, time.Time{}, "claude: the turn limit was reached (error_max_turns, num_turns 4): Reached maximum number of turns (3)"},
		{"claude_max_turns.jsonl", taskfile.PresetClaude, 0, taskfile.ClassAgentExit, CodeTurnLimit, true, time.Time{}, "claude: the turn limit was reached"},
		{"claude_max_turns_no_errors.json", taskfile.PresetClaude, 1, taskfile.ClassAgentExit, CodeTurnLimit, true, time.Time{}, "claude: the turn limit was reached (error_max_turns, num_turns 11)"},
		// --max-budget-usd reached: subtype error_max_budget_usd (anthropics/claude-agent-sdk-python#1273),
		// nothing in result or errors: the subtype is what the message can say.
		{"claude_max_budget.json", taskfile.PresetClaude, 1, taskfile.ClassAgentExit, CodeNonZeroExit, false, time.Time{}, "agent exited with status 1: error_max_budget_usd"},
		{"claude_overloaded.json", taskfile.PresetClaude, 1, taskfile.ClassTransport, "server_error", false, time.Time{}, "claude: API Error: 529"},
		{"gemini_daily_quota.txt", taskfile.PresetGemini, 1, taskfile.ClassQuota, "usage_limit", false, nextMidnight(now, pacific()), ""}, // midnight Pacific
		{"gemini_retry_in.txt", taskfile.PresetGemini, 1, taskfile.ClassQuota, "usage_limit", false, now.Add(12500 * time.Millisecond), ""},
		{"../gemini_untrusted.txt", taskfile.PresetGemini, 55, taskfile.ClassAgentExit, CodeUntrusted, true, time.Time{}, ""},
		{"aider_auth.txt", taskfile.PresetAider, 1, taskfile.ClassAuth, "invalid_key", false, time.Time{}, "aider: litellm.AuthenticationError"},
		{"aider_rate_limit.txt", taskfile.PresetAider, 1, taskfile.ClassQuota, "rate_limit", false, now.Add(200 * time.Millisecond), ""},
		{"aider_context.txt", taskfile.PresetAider, 1, taskfile.ClassAgentExit, CodeContextWindow, true, time.Time{}, ""},
		// aider's edit-format failure (Aider-AI/aider#830, #3651) after its last reflection: the
		// head of the block is the cause, not "Only 3 reflections allowed, stopping.".
		{"aider_edit_format.txt", taskfile.PresetAider, 1, taskfile.ClassAgentExit, CodeNonZeroExit, false, time.Time{}, "agent exited with status 1: The LLM did not conform to the edit format. (1 SEARCH/REPLACE block failed to match!)"},
		// clap's refusal of an argument (HLND2T/CS2_VibeSignatures#26, fastclaw-ai/weclaw#49):
		// the error line, not "For more information, try '--help'.".
		{"codex_bad_argument.txt", taskfile.PresetCodex, 2, taskfile.ClassAgentExit, CodeBadArguments, false, time.Time{}, "codex: error: unexpected argument '--foo' found"},
		{"opencode_monthly_limit.txt", taskfile.PresetOpencode, 0, taskfile.ClassQuota, CodeBilling, true, time.Time{}, "opencode: Monthly usage limit reached"},
		{"opencode_error_exit0.txt", taskfile.PresetOpencode, 0, taskfile.ClassAgentExit, CodeCLIError, false, time.Time{}, "opencode: Model not found: opencode/gpt-9 (exit status 0)"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", "presets", "banners", c.file))
			if err != nil {
				t.Fatal(err)
			}
			f := Classify(Observation{ExitCode: c.exit, Output: out}, nil, PresetFor(c.preset))
			if f == nil || f.Class != c.class || f.Code != c.code {
				t.Fatalf("got %+v, want %s/%s", f, c.class, c.code)
			}
			if f.NoRetry != c.noRetry || f.RetryEligible == c.noRetry && c.class == taskfile.ClassAgentExit {
				t.Errorf("no-retry %v, retry eligible %v; want no-retry %v", f.NoRetry, f.RetryEligible, c.noRetry)
			}
			if c.msg != "" && (len(f.Message) < len(c.msg) || f.Message[:len(c.msg)] != c.msg) {
				t.Errorf("message %q, want it to start %q", f.Message, c.msg)
			}
			if c.class != taskfile.ClassQuota || c.code == CodeBilling {
				return
			}
			at := f.ResetAt
			if at.IsZero() {
				var ok bool
				if at, ok = ParseQuotaReset(string(out), now); !ok {
					at = time.Time{}
				}
			}
			if !at.Equal(c.reset) {
				t.Errorf("reset %v, want %v", at, c.reset)
			}
		})
	}
}

// The same texts are no failure where they are not the CLI's verdict: an exit 0 whose result
// succeeded, a successful stream that met a rejected rate limit on the way.
func TestPresetBannersNegative(t *testing.T) {
	ok := []byte(`{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1796374800}}` + "\n" +
		`{"type":"result","subtype":"success","is_error":false,"result":"Done: I noted the usage limit reached message in the docs."}` + "\n")
	if f := Classify(Observation{ExitCode: 0, Output: ok}, nil, PresetFor(taskfile.PresetClaude)); f != nil {
		t.Errorf("a successful claude stream: %+v", f)
	}
	talk := []byte("{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"The model's context window is large.\"}}\n")
	if f := Classify(Observation{ExitCode: 0, Output: talk}, nil, PresetFor(taskfile.PresetCodex)); f != nil {
		t.Errorf("codex talking about context windows: %+v", f)
	}
	if f := Classify(Observation{ExitCode: 0, Output: []byte("{\"type\":\"text\",\"part\":{\"type\":\"text\",\"text\":\"Error: is a word\"}}\n")}, nil, PresetFor(taskfile.PresetOpencode)); f != nil {
		t.Errorf("opencode's answer mentioning Error: %+v", f)
	}
	// A usage limit with a reset is a clock, not a credit wall.
	if f := Classify(Observation{ExitCode: 1, Output: []byte("You've hit your usage limit. Visit https://chatgpt.com/settings/usage to purchase more credits or try again at 3:28 PM.\n")}, nil, PresetFor(taskfile.PresetCodex)); f == nil || f.Code == CodeBilling {
		t.Errorf("codex usage limit: %+v", f)
	}
	// gemini's exit 1 is no documented FatalError.
	if f := Classify(Observation{ExitCode: 1, Output: []byte("something broke\n")}, nil, PresetFor(taskfile.PresetGemini)); f == nil || f.Class != taskfile.ClassAgentExit || f.NoRetry {
		t.Errorf("gemini exit 1: %+v", f)
	}
}

// gemini's FatalError exit codes: auth is auth, the rest are not retried but a tool error.
func TestGeminiExitCodes(t *testing.T) {
	cases := []struct {
		exit    int
		class   taskfile.Class
		code    string
		noRetry bool
	}{
		{41, taskfile.ClassAuth, "auth", true},
		{42, taskfile.ClassAgentExit, "input_error", true},
		{44, taskfile.ClassAgentExit, "sandbox_error", true},
		{52, taskfile.ClassAgentExit, "config_error", true},
		{53, taskfile.ClassAgentExit, "turn_limit", true},
		{54, taskfile.ClassAgentExit, "tool_error", false},
		{55, taskfile.ClassAgentExit, CodeUntrusted, true},
	}
	for _, c := range cases {
		f := Classify(Observation{ExitCode: c.exit, Output: []byte("Error: it stopped\n")}, nil, PresetFor(taskfile.PresetGemini))
		if f == nil || f.Class != c.class || f.Code != c.code || f.NoRetry != c.noRetry || f.RetryEligible == c.noRetry {
			t.Errorf("exit %d: %+v, want %s/%s no-retry %v", c.exit, f, c.class, c.code, c.noRetry)
		}
		if c.exit == 55 && (f == nil || !contains(f.Hint, "GEMINI_CLI_TRUST_WORKSPACE=true") || !contains(f.Hint, "--skip-trust")) {
			t.Errorf("exit 55 hint: %+v", f)
		}
	}
	// The same codes under another preset mean nothing.
	if f := Classify(Observation{ExitCode: 55, Output: []byte("x\n")}, nil, PresetFor(taskfile.PresetClaude)); f == nil || f.Code != CodeNonZeroExit {
		t.Errorf("exit 55 under claude: %+v", f)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// codex offline: the watcher trips on "Reconnecting... waiting for network", not before, and the
// attempt is transport with the line.
func TestCodexLoopWatcher(t *testing.T) {
	out, err := os.ReadFile("testdata/presets/codex_json_no_network.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	watch, line := PresetFor(taskfile.PresetCodex).LoopWatcher()
	tripped := -1
	for i := 0; i < len(out); i += 37 { // in chunks, as a pipe delivers it
		if watch(out[i:min(i+37, len(out))]) {
			tripped = i
			break
		}
	}
	if tripped < 0 || line() == "" {
		t.Fatalf("the watcher did not trip (line %q)", line())
	}
	if got := line(); !contains(got, "waiting for network") {
		t.Errorf("line %q", got)
	}
	f := Classify(Observation{ExitCode: 143, Output: out, Looped: line(), Loop: PresetFor(taskfile.PresetCodex)}, nil, PresetFor(taskfile.PresetCodex))
	if f == nil || f.Class != taskfile.ClassTransport || f.Code != CodeOfflineLoop || !contains(f.Message, "waiting for network") {
		t.Errorf("looped attempt: %+v", f)
	}
	w2, _ := PresetFor(taskfile.PresetCodex).LoopWatcher()
	if w2([]byte("{\"type\":\"error\",\"message\":\"Reconnecting... 2/5 (stream disconnected before completion)\"}\n")) {
		t.Error("a reconnect that may succeed is no loop yet")
	}
	if w, _ := PresetFor(taskfile.PresetClaude).LoopWatcher(); w != nil {
		t.Error("claude has no loop watcher")
	}
}

// Each rung of an ad-hoc chain has its own preset: --preset names main's, a fallback that runs
// a known CLI is that CLI's, and main without --preset is its command's.
func TestAdHocRungPresets(t *testing.T) {
	f, err := taskfile.AdHoc(taskfile.AdHocOptions{Command: []string{"claude", "-p", "{{prompt}}"}, Prompt: "p", Preset: taskfile.PresetClaude, Fallback: "/usr/local/bin/gemini -p '{{prompt}}'"})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Agents["main"].Preset; got != taskfile.PresetClaude {
		t.Errorf("main preset %s", got)
	}
	if got := f.Agents["fallback"].Preset; got != taskfile.PresetGemini {
		t.Errorf("fallback preset %s, want gemini", got)
	}
	f, err = taskfile.AdHoc(taskfile.AdHocOptions{Command: []string{"codex", "exec", "{{prompt}}"}, Prompt: "p", Fallback: "my-agent {{prompt}}", Preset: ""})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Agents["main"].Preset; got != taskfile.PresetCodex {
		t.Errorf("main without --preset: %s, want codex", got)
	}
	if got := f.Agents["fallback"].Preset; got != taskfile.PresetGeneric {
		t.Errorf("unknown fallback: %s, want generic", got)
	}
}

// taskfile.Presets give every agent a timeout and a heartbeat unless the task sets them.
func TestAgentLimits(t *testing.T) {
	if to, hb := AgentLimits(&taskfile.Task{}); to != 2*time.Hour || hb != 15*time.Minute {
		t.Errorf("defaults %v %v", to, hb)
	}
	if to, hb := AgentLimits(&taskfile.Task{Timeout: time.Minute, Heartbeat: time.Second}); to != time.Minute || hb != time.Second {
		t.Errorf("the task's own %v %v", to, hb)
	}
}

// A login that lapsed is auth, not an exit to retry: codex's refresh-token texts
// (openai/codex#9634 and its kin), and for any preset a request to sign or log in again.
func TestLoginExpired(t *testing.T) {
	refresh := "Your access token could not be refreshed because your refresh token was already used. Please log out and sign in again."
	cases := []struct {
		preset, text string
		code         string
	}{
		{taskfile.PresetCodex, "ERROR: " + refresh, "login_expired"},
		{taskfile.PresetCodex, `{"type":"thread.started","thread_id":"t"}` + "\n" + `{"type":"turn.started"}` + "\n" +
			`{"type":"error","message":"Your access token could not be refreshed because you have since logged out or signed in to another account. Please sign in again."}` + "\n" +
			`{"type":"turn.failed","error":{"message":"Your access token could not be refreshed because you have since logged out or signed in to another account. Please sign in again."}}`, "login_expired"},
		{taskfile.PresetCodex, "Your access token could not be refreshed because your refresh token was revoked.", "login_expired"},
		{taskfile.PresetCodex, "stream error: refresh_token_reused; please re-authenticate", "login_expired"},
		{taskfile.PresetCodex, "Error: the session token has expired, run `codex login`", ""},
		{taskfile.PresetClaude, "Your session has ended. Please log in again.", ""}, // "please log in": not_logged_in
		{taskfile.PresetOpencode, "Error: Please sign in again to continue", "login_expired"},
		{taskfile.PresetAider, "Please re-authenticate with your provider.", "login_expired"},
		{taskfile.PresetGeneric, "Token refresh failed. Please log out and sign in again.", "login_expired"},
	}
	for _, c := range cases {
		f := Classify(Observation{ExitCode: 1, Output: []byte(c.text + "\n")}, nil, PresetFor(c.preset))
		if f == nil || f.Class != taskfile.ClassAuth || c.code != "" && f.Code != c.code || f.Hint == "" {
			t.Errorf("%s %q: got %+v, want auth %s with a hint", c.preset, c.text, f, c.code)
		}
	}
	if f := Classify(Observation{ExitCode: 1, Output: []byte("ERROR: " + refresh + "\n")}, nil, PresetFor(taskfile.PresetCodex)); f == nil || f.Message != "codex: ERROR: "+refresh {
		t.Errorf("message %+v, want codex's words", f)
	}
	// An agent that talks of signing in is no login wall.
	if f := Classify(Observation{ExitCode: 1, Output: []byte("I changed the page so that users sign in again after a reset.\n")}, nil, PresetFor(taskfile.PresetGeneric)); f == nil || f.Class != taskfile.ClassAgentExit {
		t.Errorf("an answer about signing in: %+v", f)
	}
}

// Credit in other providers' words is billing for every preset: aider and opencode talk to
// OpenRouter, DeepSeek and the rest.
func TestBillingEveryProvider(t *testing.T) {
	texts := []string{
		`OpenrouterException - {"error":{"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits","code":402}}`,
		`{"error":{"message":"This request requires more credits, or fewer max_tokens. You requested up to 32000 tokens, but can only afford 1234.","code":402}}`,
		`Error code: 402 - {'error': {'message': 'Insufficient Balance', 'type': 'unknown_error', 'param': None, 'code': 'invalid_request_error'}}`,
		`litellm.RateLimitError: RateLimitError: OpenAIException - {"error":{"message":"Quota exceeded.","type":"insufficient_quota","code":"insufficient_quota"}}`,
		`unexpected status 402 Payment Required`,
		`Insufficient credits with the API provider. Please add credits.`,
	}
	for _, name := range []string{taskfile.PresetClaude, taskfile.PresetCodex, taskfile.PresetGemini, taskfile.PresetAider, taskfile.PresetOpencode, taskfile.PresetGeneric} {
		for _, text := range texts {
			f := Classify(Observation{ExitCode: 1, Output: []byte(text + "\n")}, nil, PresetFor(name))
			if f == nil || f.Class != taskfile.ClassQuota || f.Code != CodeBilling || !f.NoRetry || f.Hint != BillingHint {
				t.Errorf("%s %q: got %+v, want quota/billing", name, text, f)
			}
		}
	}
	// opencode's error event for a 402, whatever its words.
	ev := `{"type":"error","timestamp":1764800000000,"sessionID":"ses_1","error":{"name":"APIError","data":{"message":"Payment Required: top up","statusCode":402,"isRetryable":false,"responseBody":"{}"}}}`
	if f := Classify(Observation{ExitCode: 1, Output: []byte(ev + "\n")}, nil, PresetFor(taskfile.PresetOpencode)); f == nil || f.Code != CodeBilling {
		t.Errorf("opencode 402: %+v", f)
	}
	ev = strings.Replace(ev, "Payment Required: top up", "no money", 1)
	if f := Classify(Observation{ExitCode: 1, Output: []byte(ev + "\n")}, nil, PresetFor(taskfile.PresetOpencode)); f == nil || f.Code != CodeBilling {
		t.Errorf("opencode 402 without the words: %+v", f)
	}
	// claude's result for a 402 (through a proxy), whatever its words.
	res := `{"type":"result","subtype":"success","is_error":true,"api_error_status":402,"result":"API Error: the upstream refused the request"}`
	if f := Classify(Observation{ExitCode: 1, Output: []byte(res + "\n")}, nil, PresetFor(taskfile.PresetClaude)); f == nil || f.Code != CodeBilling || !f.NoRetry {
		t.Errorf("claude 402: %+v", f)
	}
	if f := Classify(Observation{ExitCode: 1, Output: []byte("API Error: 402 {\"error\":{\"message\":\"no\"}}\n")}, nil, PresetFor(taskfile.PresetClaude)); f == nil || f.Code != CodeBilling {
		t.Errorf("claude's API Error: 402: %+v", f)
	}
	// A 402 in a path or a count is no payment wall.
	if f := Classify(Observation{ExitCode: 1, Output: []byte("wrote 402 lines to build/402.log\n")}, nil, PresetFor(taskfile.PresetGeneric)); f == nil || f.Class != taskfile.ClassAgentExit {
		t.Errorf("402 in a count: %+v", f)
	}
}

// aider gives up on a request after its own retries and still exits 0: its last words decide.
// A request that failed once and then succeeded, or an attempt that applied an edit, is no
// failure.
func TestAiderGaveUp(t *testing.T) {
	const (
		banner   = "Aider v0.86.1\nMain model: anthropic/claude-sonnet-4-20250514 with diff edit format, infinite output\nGit repo: none\nRepo-map: disabled\nAdded main.go to the chat.\n\n"
		overload = "litellm.InternalServerError: AnthropicException - {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}. Handle with `litellm.InternalServerError`.\nThe API provider's servers are down or overloaded.\n"
		answer   = "I'll make the loop stop at n.\n\nmain.go\n```go\n<<<<<<< SEARCH\nfor i := 0; i <= n; i++ {\n=======\nfor i := 0; i < n; i++ {\n>>>>>>> REPLACE\n```\n\n"
		usage    = "Tokens: 2.3k sent, 120 received. Cost: $0.01 message, $0.01 session.\n"
	)
	retry := func(d string) string { return "Retrying in " + d + " seconds...\n" }
	tokenLimit := "\nModel claude-sonnet-4 has hit a token limit!\nToken counts below are approximate.\n\nInput tokens: ~212,000 of 200,000 -- possibly exceeded context window!\nOutput tokens: ~0 of 64,000\nTotal tokens: ~212,000 of 200,000 -- possibly exceeded context window!\n\nTo reduce input tokens:\n- Use /tokens to see token usage.\n- Use /drop to remove unneeded files from the chat session.\n- Use /clear to clear the chat history.\n- Break your code into smaller source files.\nFor more info: https://aider.chat/docs/troubleshooting/token-limits.html\n"
	cases := []struct {
		name  string
		out   string
		class taskfile.Class // "": no failure
		code  string
		msg   string
	}{
		{"overloaded to the end", banner + overload + retry("0.2") + overload + retry("0.5") + overload, taskfile.ClassTransport, "server_error", "aider: litellm.InternalServerError: AnthropicException"},
		{"last words a retry", banner + overload + retry("0.2") + overload + retry("32.0"), taskfile.ClassTransport, "server_error", ""},
		{"overloaded with a stale usage line", banner + answer + "Applied no edit.\n" + usage + overload + "\n" + usage, taskfile.ClassTransport, "server_error", ""},
		{"timed out", banner + "litellm.Timeout: Connection timed out after 600.0 seconds.\nThe API provider timed out without returning a response. They may be down or overloaded.\n", taskfile.ClassTransport, "server_error", ""},
		{"rate limited", banner + "litellm.RateLimitError: AnthropicException - rate_limit_error\nThe API provider has rate limited you. Try again later or check your quotas.\n" + retry("0.2"), taskfile.ClassQuota, "rate_limit", ""},
		{"no credit", banner + "litellm.APIError: APIError: OpenrouterException - {\"error\":{\"message\":\"Insufficient credits. Add more using https://openrouter.ai/settings/credits\",\"code\":402}}\nInsufficient credits with the API provider. Please add credits.\nOpen URL for more info? (Y)es/(N)o/(D)on't ask again [Yes]: y\n", taskfile.ClassQuota, CodeBilling, ""},
		{"bad key", banner + "litellm.AuthenticationError: AnthropicException - {\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}\nThe API provider is not able to authenticate you. Check your API key.\n", taskfile.ClassAuth, "invalid_key", ""},
		{"token limit", banner + tokenLimit, taskfile.ClassAgentExit, CodeContextWindow, ""},
		{"unknown error", banner + "litellm.NotFoundError: AnthropicException - model: claude-sonnet-9 not found\n", taskfile.ClassAgentExit, CodeCLIError, "aider: litellm.NotFoundError: AnthropicException - model: claude-sonnet-9 not found (exit status 0)"},
		// no failure
		{"retried once, then edited", banner + overload + retry("0.2") + answer + "Applied edit to main.go\n" + usage, "", "", ""},
		{"retried once, then answered", banner + overload + retry("0.2") + "The loop is already correct; nothing to change.\n" + usage, "", "", ""},
		{"edited, then a follow-up failed", banner + answer + "Applied edit to main.go\n" + usage + overload, "", "", ""},
		{"a success", banner + answer + "Applied edit to main.go\n" + usage, "", "", ""},
		{"an answer about errors", banner + "I made the client retry on InternalServerError and rate limits.\n" + usage, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Classify(Observation{ExitCode: 0, Output: []byte(c.out)}, nil, PresetFor(taskfile.PresetAider))
			if c.class == "" {
				if f != nil {
					t.Fatalf("got %+v, want no failure", f)
				}
				return
			}
			if f == nil || f.Class != c.class || f.Code != c.code {
				t.Fatalf("got %+v, want %s/%s", f, c.class, c.code)
			}
			if !strings.HasPrefix(f.Message, c.msg) {
				t.Errorf("message %q, want it to start %q", f.Message, c.msg)
			}
		})
	}
}

// An agent CLI whose argument parser refused its command line is agent_exit bad_arguments, quoting
// the parser's line; still retried, so that a failover chain moves on to its next rung. Texts: commander's as claude
// prints it (mgechev/skillgrade#8, cline/cline#4566), clap's (codex_bad_argument.txt), yargs'
// strict mode, Go's flag package.
func TestBadArgumentsNotRetried(t *testing.T) {
	for _, c := range []struct {
		preset, out, msg string
		exit             int
	}{
		{taskfile.PresetClaude, "error: unknown option '--yes'\n", "claude: error: unknown option '--yes'", 1},
		{taskfile.PresetGemini, "Usage: gemini [options] [command]\n\nOptions:\n  -p, --prompt  Prompt. Appended to input on stdin (if any).\n\nUnknown argument: frob\n", "gemini: Unknown argument: frob", 1},
		{taskfile.PresetGeneric, "flag provided but not defined: -frob\nUsage of ./agent:\n  -model string\n", "generic: flag provided but not defined: -frob", 2},
	} {
		f := Classify(Observation{ExitCode: c.exit, Output: []byte(c.out)}, nil, PresetFor(c.preset))
		if f == nil || f.Code != CodeBadArguments || !f.RetryEligible || f.Message != c.msg {
			t.Errorf("%s: got %+v, want bad_arguments, retried, %q", c.preset, f, c.msg)
		}
	}
	// A tool the agent ran that printed such a line, indented or prefixed, is not the CLI's.
	out := "Running cargo run -- --frob\n    error: unexpected argument '--frob' found\nI will fix the flag.\n"
	if f := Classify(Observation{ExitCode: 1, Output: []byte(out)}, nil, PresetFor(taskfile.PresetGeneric)); f != nil && f.Code == CodeBadArguments {
		t.Errorf("a tool's output taken for the CLI's refusal: %+v", f)
	}
}
