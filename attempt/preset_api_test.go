package attempt

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The testdata/presets/*_api_* fixtures are what the real CLIs (versions in
// testdata/clis/package.json) printed against testdata/modelapi answering each HTTP error, with
// the preset's environment (claude: CLAUDE_CODE_MAX_RETRIES=0).
func TestPresetAPIFixtures(t *testing.T) {
	cases := []struct {
		file   string
		preset string
		exit   int
		class  Class
		code   string
	}{
		{"claude_api_429.json", PresetClaude, 1, ClassQuota, "rate_limit"},
		{"claude_api_529.json", PresetClaude, 1, ClassTransport, "server_error"},
		{"claude_api_500.json", PresetClaude, 1, ClassTransport, "server_error"},
		{"claude_api_401.json", PresetClaude, 1, ClassAuth, "invalid_key"},
		{"claude_api_prompt_too_long.json", PresetClaude, 1, ClassAgentExit, "context_overflow"},
		{"claude_api_usage_limit.json", PresetClaude, 1, ClassQuota, "usage_limit"},
		{"claude_api_credit.json", PresetClaude, 1, ClassQuota, "usage_limit"},
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
