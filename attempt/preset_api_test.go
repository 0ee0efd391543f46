package attempt

import (
	"os"
	"path/filepath"
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
		{"claude_api_credit.json", taskfile.PresetClaude, 1, taskfile.ClassQuota, CodeCredit},
		{"codex_api_rate_limit.jsonl", taskfile.PresetCodex, 1, taskfile.ClassQuota, "rate_limit"},
		{"codex_api_overloaded.jsonl", taskfile.PresetCodex, 1, taskfile.ClassTransport, "server_error"},
		{"codex_api_server.jsonl", taskfile.PresetCodex, 1, taskfile.ClassTransport, "server_error"},
		{"codex_api_auth.jsonl", taskfile.PresetCodex, 1, taskfile.ClassAuth, "invalid_key"},
		{"codex_api_prompt_too_long.jsonl", taskfile.PresetCodex, 1, taskfile.ClassAgentExit, CodeContextWindow},
		{"codex_api_usage_limit.jsonl", taskfile.PresetCodex, 1, taskfile.ClassQuota, "usage_limit"},
		{"codex_api_credit.jsonl", taskfile.PresetCodex, 1, taskfile.ClassQuota, "usage_limit"},
		// gemini -o json exits with the HTTP status modulo 256 and prints its JSON on stderr
		{"gemini_api_rate_limit.txt", taskfile.PresetGemini, 173, taskfile.ClassQuota, "rate_limit"},
		{"gemini_api_overloaded.txt", taskfile.PresetGemini, 247, taskfile.ClassTransport, "server_error"},
		{"gemini_api_server.txt", taskfile.PresetGemini, 244, taskfile.ClassTransport, "server_error"},
		{"gemini_api_auth.txt", taskfile.PresetGemini, 144, taskfile.ClassAuth, "invalid_key"},
		{"gemini_api_prompt_too_long.txt", taskfile.PresetGemini, 144, taskfile.ClassAgentExit, CodeContextWindow},
		{"gemini_api_usage_limit.txt", taskfile.PresetGemini, 173, taskfile.ClassQuota, "usage_limit"},
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
