package agentcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/taskfile"
)

// The testdata/presets/*_api_* fixtures are what the real CLIs (versions in
// testdata/clis/package.json) printed against testdata/modelapi answering each HTTP error, with
// the preset's environment (claude: CLAUDE_CODE_MAX_RETRIES=0).
func TestPresetAPIFixtures(t *testing.T) {
	cases := []struct {
		file   string
		preset string
		exit   int
		class  taskfile.Class
		code   string
	}{
		{"claude_api_429.json", taskfile.PresetClaude, 1, taskfile.ClassQuota, "rate_limit"},
		{"claude_api_529.json", taskfile.PresetClaude, 1, taskfile.ClassTransport, "server_error"},
		{"claude_api_500.json", taskfile.PresetClaude, 1, taskfile.ClassTransport, "server_error"},
		{"claude_api_401.json", taskfile.PresetClaude, 1, taskfile.ClassAuth, "invalid_key"},
		{"claude_api_prompt_too_long.json", taskfile.PresetClaude, 1, taskfile.ClassAgentExit, CodeContextWindow},
		{"claude_api_usage_limit.json", taskfile.PresetClaude, 1, taskfile.ClassQuota, "rate_limit"},
		{"claude_api_credit.json", taskfile.PresetClaude, 1, taskfile.ClassQuota, CodeBilling},
		{"codex_api_rate_limit.jsonl", taskfile.PresetCodex, 1, taskfile.ClassTransport, "rate_limit"},
		{"codex_api_overloaded.jsonl", taskfile.PresetCodex, 1, taskfile.ClassTransport, "server_error"},
		{"codex_api_server.jsonl", taskfile.PresetCodex, 1, taskfile.ClassTransport, "server_error"},
		{"codex_api_auth.jsonl", taskfile.PresetCodex, 1, taskfile.ClassAuth, "invalid_key"},
		{"codex_api_prompt_too_long.jsonl", taskfile.PresetCodex, 1, taskfile.ClassAgentExit, CodeContextWindow},
		{"codex_api_usage_limit.jsonl", taskfile.PresetCodex, 1, taskfile.ClassQuota, "usage_limit"},
		{"codex_api_credit.jsonl", taskfile.PresetCodex, 1, taskfile.ClassQuota, CodeBilling},
		// gemini -o json exits with the HTTP status modulo 256 and prints its JSON on stderr
		{"gemini_api_rate_limit.txt", taskfile.PresetGemini, 173, taskfile.ClassQuota, "rate_limit"},
		{"gemini_api_overloaded.txt", taskfile.PresetGemini, 247, taskfile.ClassTransport, "server_error"},
		{"gemini_api_server.txt", taskfile.PresetGemini, 244, taskfile.ClassTransport, "server_error"},
		{"gemini_api_auth.txt", taskfile.PresetGemini, 144, taskfile.ClassAuth, "invalid_key"},
		{"gemini_api_prompt_too_long.txt", taskfile.PresetGemini, 144, taskfile.ClassAgentExit, CodeContextWindow},
		{"gemini_api_usage_limit.txt", taskfile.PresetGemini, 173, taskfile.ClassQuota, "usage_limit"},
		// gemini --output-format stream-json (the preset's): a stream cut mid-way exits 0 with a
		// result of status error (the words in an error event before it); a 401's result quotes
		// the API's JSON inside "[API Error: …]", after a stack trace on stderr
		{"gemini_stream_cut.jsonl", taskfile.PresetGemini, 0, taskfile.ClassTransport, "invalid_stream"},
		{"gemini_api_401_stream.txt", taskfile.PresetGemini, 1, taskfile.ClassAuth, "invalid_key"},
		{"gemini_api_401_stream.txt", taskfile.PresetGemini, 0, taskfile.ClassAuth, "invalid_key"},
		// opencode --format json (an openai-compatible provider): its error event after its own
		// five retries, exit 1
		{"opencode_api_rate_limit.jsonl", taskfile.PresetOpencode, 1, taskfile.ClassQuota, "rate_limit"},
		{"opencode_api_overloaded.jsonl", taskfile.PresetOpencode, 1, taskfile.ClassTransport, "server_error"},
		{"opencode_api_server.jsonl", taskfile.PresetOpencode, 1, taskfile.ClassTransport, "server_error"},
		{"opencode_api_auth.jsonl", taskfile.PresetOpencode, 1, taskfile.ClassAuth, "invalid_key"},
		{"opencode_api_prompt_too_long.jsonl", taskfile.PresetOpencode, 1, taskfile.ClassAgentExit, CodeContextWindow},
		// it compacted the conversation, wrote the file and answered, and still exited 1
		{"opencode_api_prompt_too_long_recovered.jsonl", taskfile.PresetOpencode, 1, taskfile.ClassAgentExit, CodeContextWindow},
		{"opencode_api_usage_limit.jsonl", taskfile.PresetOpencode, 1, taskfile.ClassQuota, "usage_limit"},
		{"opencode_api_credit.jsonl", taskfile.PresetOpencode, 1, taskfile.ClassQuota, CodeBilling},
	}
	for _, c := range cases {
		out, err := os.ReadFile(filepath.Join("testdata", "presets", c.file))
		if err != nil {
			t.Fatal(err)
		}
		f := Classify(Observation{ExitCode: c.exit, Output: out}, nil, PresetFor(c.preset))
		if f == nil || f.Class != c.class || f.Code != c.code {
			t.Errorf("%s under %s: got %+v, want %s/%s", c.file, c.preset, f, c.class, c.code)
		}
	}
}

// The reset times the CLIs print: codex a local clock time, gemini a relative delay.
func TestAPIQuotaResets(t *testing.T) {
	now := time.Date(2026, 12, 3, 15, 48, 15, 0, time.Local)
	cases := []struct {
		file string
		want time.Time
	}{
		{"codex_api_usage_limit.jsonl", time.Date(2026, 12, 3, 17, 48, 0, 0, time.Local)},
		{"gemini_api_rate_limit.txt", now.Add(20 * time.Second)},
	}
	for _, c := range cases {
		out, err := os.ReadFile(filepath.Join("testdata", "presets", c.file))
		if err != nil {
			t.Fatal(err)
		}
		got, ok := ParseQuotaReset(string(out), now)
		if !ok || !got.Equal(c.want) {
			t.Errorf("%s: reset %v %v, want %v", c.file, got, ok, c.want)
		}
	}
}

// claude prints a subscription's reset as a clock time in UTC: "resets 5:28pm (UTC)".
func TestClaudeUsageLimitReset(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "presets", "claude_api_usage_limit.json"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 3, 15, 28, 15, 0, time.UTC)
	got, ok := ParseQuotaReset(string(out), now)
	if want := time.Date(2026, 12, 3, 17, 28, 0, 0, time.UTC); !ok || !got.Equal(want) {
		t.Errorf("reset: got %v %v, want %v", got, ok, want)
	}
}

// opencode's error event carries the provider's answer: a usage limit's reset is the body's
// resets_at, a rate limit's the retry-after header from the event's time.
func TestOpencodeResets(t *testing.T) {
	cases := []struct {
		file string
		want time.Time
	}{
		{"opencode_api_usage_limit.jsonl", time.Unix(1796329400, 0)},
		{"opencode_api_rate_limit.jsonl", time.UnixMilli(1796322275438).Add(time.Second)},
	}
	for _, c := range cases {
		out, err := os.ReadFile(filepath.Join("testdata", "presets", c.file))
		if err != nil {
			t.Fatal(err)
		}
		f := Classify(Observation{ExitCode: 1, Output: out}, nil, PresetFor(taskfile.PresetOpencode))
		if f == nil || !f.ResetAt.Equal(c.want) {
			t.Errorf("%s: got %+v, want reset %v", c.file, f, c.want.UTC())
		}
	}
	out, err := os.ReadFile(filepath.Join("testdata", "presets", "opencode_api_prompt_too_long_recovered.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if f := Classify(Observation{ExitCode: 1, Output: out}, nil, PresetFor(taskfile.PresetOpencode)); f == nil || !strings.Contains(f.Message, "compacted the conversation and went on") || !strings.Contains(f.Hint, "post tree") {
		t.Errorf("an overflow opencode went on after: %+v", f)
	}
	if f := Classify(Observation{ExitCode: 0, Output: []byte(`{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"a 429 is a rate limit"}}` + "\n")}, nil, PresetFor(taskfile.PresetOpencode)); f != nil {
		t.Errorf("an answer that talks of a 429: %+v", f)
	}
}

// The id each CLI gives its conversation, and the command that continues it.
func TestAgentSessions(t *testing.T) {
	cases := []struct {
		preset, out, id, resume string
	}{
		{taskfile.PresetClaude, `{"type":"result","session_id":"0b9e3c1e-1111-4222-8333-444455556666"}`, "0b9e3c1e-1111-4222-8333-444455556666", "claude --resume 0b9e3c1e-1111-4222-8333-444455556666"},
		{taskfile.PresetCodex, `{"type":"thread.started","thread_id":"019a-thread"}`, "019a-thread", "codex exec resume 019a-thread"},
		{taskfile.PresetGemini, `{"session_id":"g-1","response":"ok"}`, "g-1", ""},
		{taskfile.PresetOpencode, `{"type":"step_start","sessionID":"ses_dc2de0273ffeU00DVNEyfPnXyL","part":{}}`, "ses_dc2de0273ffeU00DVNEyfPnXyL", "opencode --session ses_dc2de0273ffeU00DVNEyfPnXyL"},
		{taskfile.PresetOpencode, `{"type":"step_start","sessionID":"ses_1; rm -rf /","part":{}}`, "", ""},
	}
	for _, c := range cases {
		id := AgentSession(c.preset, []byte(c.out+"\n"))
		if id != c.id || ResumeCommand(c.preset, id) != c.resume {
			t.Errorf("%s: got %q / %q, want %q / %q", c.preset, id, ResumeCommand(c.preset, id), c.id, c.resume)
		}
	}
}

// A gemini failure's message is the API's words, not a line of the stack trace gemini prints
// before its JSON.
func TestGeminiErrorWords(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "presets", "gemini_api_401_stream.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, exit := range []int{0, 1} {
		f := Classify(Observation{ExitCode: exit, Output: out}, nil, PresetFor(taskfile.PresetGemini))
		if f == nil || !strings.Contains(f.Message, "Request had invalid authentication credentials") || strings.Contains(f.Message, ".js:") {
			t.Errorf("exit %d: %+v, want the API's message", exit, f)
		}
	}
	// INVALID_STREAM in -o json (type only, no message)
	f := Classify(Observation{ExitCode: 0, Output: []byte(`{"session_id": "s", "error": {"type": "INVALID_STREAM", "message": ""}}`)}, nil, PresetFor(taskfile.PresetGemini))
	if f == nil || f.Class != taskfile.ClassTransport {
		t.Errorf("INVALID_STREAM: %+v, want transport", f)
	}
	// a suspended consumer (403)
	f = Classify(Observation{ExitCode: 1, Output: []byte(`{"type":"result","status":"error","error":{"type":"unknown","message":"[API Error: {\"error\":{\"code\":403,\"message\":\"Permission denied: Consumer 'api_key:x' has been suspended.\",\"status\":\"PERMISSION_DENIED\"}}]"}}` + "\n")}, nil, PresetFor(taskfile.PresetGemini))
	if f == nil || f.Class != taskfile.ClassAuth || f.Code != "suspended" || !strings.HasPrefix(f.Message, "gemini: Permission denied: Consumer") {
		t.Errorf("suspended: %+v, want auth/suspended with the API's words", f)
	}
}
