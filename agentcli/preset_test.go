package agentcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/taskfile"
)

// The fixtures in testdata/presets are what the real CLIs printed (npm packages
// @anthropic-ai/claude-code, @openai/codex, @google/gemini-cli, opencode-ai, installed in a
// scratch directory) with no login and no network but the package registry.
func TestPresetFixtures(t *testing.T) {
	cases := []struct {
		file   string
		preset string
		exit   int
		class  taskfile.Class
		code   string
	}{
		{"claude_not_logged_in.json", taskfile.PresetClaude, 1, taskfile.ClassAuth, "not_logged_in"},
		{"claude_not_logged_in.txt", taskfile.PresetClaude, 1, taskfile.ClassAuth, "not_logged_in"},
		{"claude_no_network.txt", taskfile.PresetClaude, 1, taskfile.ClassTransport, "network"}, // with an API key, after 200s of retries
		{"claude_no_network.json", taskfile.PresetClaude, 1, taskfile.ClassTransport, "network"},
		{"claude_no_network.json", taskfile.PresetClaude, 0, taskfile.ClassTransport, "network"}, // is_error decides even on exit 0
		{"codex_no_network.txt", taskfile.PresetCodex, 1, taskfile.ClassTransport, "network"},
		{"codex_json_no_network.jsonl", taskfile.PresetCodex, 1, taskfile.ClassTransport, "network"},
		{"codex_not_logged_in.txt", taskfile.PresetCodex, 1, taskfile.ClassAuth, "not_logged_in"},
		{"gemini_no_auth.txt", taskfile.PresetGemini, 41, taskfile.ClassAuth, "not_logged_in"},
		{"gemini_no_network.txt", taskfile.PresetGemini, 1, taskfile.ClassTransport, "network"},
		{"gemini_untrusted.txt", taskfile.PresetGemini, 55, taskfile.ClassAgentExit, "untrusted_folder"},
		{"opencode_no_network.txt", taskfile.PresetOpencode, 1, taskfile.ClassTransport, "network"},
		// the same texts under the generic preset: the common rules know them too
		{"claude_not_logged_in.txt", taskfile.PresetGeneric, 1, taskfile.ClassAuth, "not_logged_in"},
		{"codex_no_network.txt", taskfile.PresetGeneric, 1, taskfile.ClassTransport, "network"},
	}
	for _, c := range cases {
		out, err := os.ReadFile(filepath.Join("testdata", "presets", c.file))
		if err != nil {
			t.Fatal(err)
		}
		f := Classify(Observation{ExitCode: c.exit, Output: out}, nil, PresetFor(c.preset))
		if f == nil || f.Class != c.class || f.Code != c.code {
			t.Errorf("%s under %s: got %+v, want %s/%s", c.file, c.preset, f, c.class, c.code)
			continue
		}
		if c.class == taskfile.ClassAuth && f.Hint == "" {
			t.Errorf("%s: an auth failure without a hint", c.file)
		}
		if !taskfile.Eligible(f.Class, nil, nil) && c.class == taskfile.ClassTransport {
			t.Errorf("%s: transport must be retried", c.file)
		}
	}
}

func TestClaudeResult(t *testing.T) {
	out, err := os.ReadFile("testdata/presets/claude_not_logged_in.json")
	if err != nil {
		t.Fatal(err)
	}
	r := claudeResult(out)
	if r == nil || !r.IsError || r.Text != "Not logged in · Please run /login" || r.CostUSD == nil || *r.CostUSD != 0 || r.TokensIn == nil || *r.TokensIn != 0 {
		t.Fatalf("claude fixture: %+v", r)
	}
	ok := []byte(`{"type":"result","subtype":"success","is_error":false,"result":"done","total_cost_usd":0.0123,` +
		`"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":55}}`)
	r = claudeResult(ok)
	if r == nil || r.IsError || r.Text != "done" || *r.TokensIn != 1110 || *r.TokensOut != 55 || *r.CostUSD != 0.0123 {
		t.Fatalf("claude success: %+v", r)
	}
	// stream-json: the last result line counts
	stream := []byte("{\"type\":\"system\"}\n{\"type\":\"assistant\",\"message\":{}}\n" + string(ok) + "\n")
	if r = claudeResult(stream); r == nil || r.Text != "done" {
		t.Fatalf("claude stream-json: %+v", r)
	}
	if claudeResult([]byte("plain text, no JSON")) != nil {
		t.Fatal("text output is no result")
	}
}

func TestOtherResults(t *testing.T) {
	codex := []byte(`{"type":"thread.started","thread_id":"x"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"all fixed"}}
{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":200,"output_tokens":80}}
`)
	if r := codexResult(codex); r == nil || r.Text != "all fixed" || *r.TokensIn != 1200 || *r.TokensOut != 80 || r.IsError {
		t.Fatalf("codex: %+v", r)
	}
	gemini := []byte(`{"session_id":"s","response":"ok","stats":{"models":{"gemini-2.5-pro":{"tokens":{"input":0,"prompt":900,"candidates":40,"total":940}}}}}`)
	if r := geminiResult(gemini); r == nil || r.Text != "ok" || *r.TokensIn != 900 || *r.TokensOut != 40 {
		t.Fatalf("gemini: %+v", r)
	}
	gerr := []byte("{\n  \"error\": {\n    \"type\": \"Error\",\n    \"message\": \"quota exceeded\",\n    \"code\": 1\n  }\n}")
	if r := geminiResult(gerr); r == nil || !r.IsError || r.ErrorText != "quota exceeded" {
		t.Fatalf("gemini error: %+v", r)
	}
	aider := []byte("Applied edit to calc.go\nTokens: 2.3k sent, 120 received. Cost: $0.01 message, $0.05 session.\n")
	if r := aiderResult(aider); r == nil || *r.TokensIn != 2300 || *r.TokensOut != 120 || *r.CostUSD != 0.05 {
		t.Fatalf("aider: %+v", r)
	}
	oc := []byte(`{"type":"text","part":{"type":"text","text":"hello"}}
{"type":"step_finish","part":{"type":"step-finish","tokens":{"input":50,"output":7,"cache":{"read":100,"write":10}},"cost":0.002}}`)
	if r := opencodeResult(oc); r == nil || r.Text != "hello" || *r.TokensIn != 160 || *r.CostUSD != 0.002 {
		t.Fatalf("opencode: %+v", r)
	}
}

// Banners the CLIs print for quota walls and API errors, as their users have reported them. The
// network-free capture could not provoke these, so they are in the test, not in testdata/presets.
func TestPresetBanners(t *testing.T) {
	cases := []struct {
		preset, text string
		exit         int
		class        taskfile.Class
	}{
		{taskfile.PresetClaude, `{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1773487800"}`, 1, taskfile.ClassQuota},
		{taskfile.PresetClaude, `{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1773487800"}`, 0, taskfile.ClassQuota},
		{taskfile.PresetClaude, "5-hour limit reached ∙ resets 3pm", 1, taskfile.ClassQuota},
		{taskfile.PresetClaude, "Credit balance is too low", 1, taskfile.ClassQuota},
		{taskfile.PresetClaude, `API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, 1, taskfile.ClassTransport},
		{taskfile.PresetClaude, `Invalid API key · Please run /login`, 1, taskfile.ClassAuth},
		{taskfile.PresetClaude, `API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"OAuth token has expired."}}`, 1, taskfile.ClassAuth},
		{taskfile.PresetCodex, "■ You've hit your usage limit. Upgrade to Pro or try again in 1 day 2 hours 3 minutes.", 1, taskfile.ClassQuota},
		{taskfile.PresetCodex, "stream error: exceeded retry limit, last status: 429 Too Many Requests", 1, taskfile.ClassTransport},
		{taskfile.PresetCodex, "unexpected status 401 Unauthorized: Incorrect API key provided", 1, taskfile.ClassAuth},
		{taskfile.PresetGemini, `[API Error: You have exhausted your capacity on this model. Quota exceeded for quota metric 'Gemini 2.5 Pro Requests'. Please retry in 27.12s.]`, 1, taskfile.ClassQuota},
		{taskfile.PresetGemini, `API key not valid. Please pass a valid API key.`, 1, taskfile.ClassAuth},
		// google-gemini/gemini-cli: a key past its expiry (INVALID_ARGUMENT, reason API_KEY_EXPIRED).
		{taskfile.PresetGemini, `[API Error: API key expired. Please renew the API key.]`, 1, taskfile.ClassAuth},
		{taskfile.PresetGemini, `got status: 503 Service Unavailable. {"error":{"code":503,"message":"The model is overloaded."}}`, 1, taskfile.ClassTransport},
		{taskfile.PresetAider, "litellm.RateLimitError: AnthropicException - rate_limit_error", 1, taskfile.ClassQuota},
		{taskfile.PresetGeneric, "curl: (6) Could not resolve host: api.example.com", 6, taskfile.ClassTransport},
		{taskfile.PresetGeneric, "read tcp 10.0.0.2:5555->1.2.3.4:443: read: connection reset by peer", 1, taskfile.ClassTransport},
		// exit 0 with a chatty success is never a banner
		{taskfile.PresetGeneric, "I added handling for rate limit errors and 401 Unauthorized responses.", 0, ""},
		{taskfile.PresetClaude, `{"type":"result","is_error":false,"result":"handled the usage limit reached case"}`, 0, ""},
	}
	for _, c := range cases {
		f := Classify(Observation{ExitCode: c.exit, Output: []byte(c.text)}, nil, PresetFor(c.preset))
		var got taskfile.Class
		if f != nil {
			got = f.Class
		}
		if got != c.class {
			t.Errorf("%s %q exit %d: got %v, want %q", c.preset, c.text, c.exit, f, c.class)
		}
	}
	// and the reset times in them parse
	now := time.Date(2026, 3, 14, 10, 20, 0, 0, time.UTC)
	for _, s := range []string{"Claude AI usage limit reached|1773487800", "try again in 1 day 2 hours 3 minutes", "Please retry in 27.12s."} {
		if _, ok := ParseQuotaReset(s, now); !ok {
			t.Errorf("%q: no reset time", s)
		}
	}
}

// FuzzPresetClassify: no panics, and the verdict depends only on the bounded tail.
func FuzzPresetClassify(f *testing.F) {
	for _, name := range []string{"claude_not_logged_in.json", "codex_no_network.txt", "gemini_no_auth.txt", "opencode_no_network.txt"} {
		b, _ := os.ReadFile(filepath.Join("testdata", "presets", name))
		f.Add(b, 1)
	}
	f.Add([]byte(`{"type":"result","is_error":true,"result":"usage limit|1773487800"}`), 0)
	f.Fuzz(func(t *testing.T, out []byte, exit int) {
		for _, name := range taskfile.Presets {
			p := PresetFor(name)
			got := p.ClassifyOutput(exit, out)
			if exit != 0 && len(out) > classifyTail {
				again := p.ClassifyOutput(exit, out[len(out)-classifyTail:])
				if (got == nil) != (again == nil) || (got != nil && got.Class != again.Class) {
					t.Fatalf("%s: the verdict read more than the tail", name)
				}
			}
			if got != nil {
				if _, err := taskfile.ParseClass(string(got.Class)); err != nil {
					t.Fatalf("%s: class %q", name, got.Class)
				}
			}
		}
	})
}

// A long output is classified in bounded time: only its tail is read.
func TestPresetClassifyLongOutput(t *testing.T) {
	long := []byte(strings.Repeat("rate limit ", 1<<20) + strings.Repeat("x", classifyTail) + "\nNot logged in\n")
	f := PresetFor(taskfile.PresetClaude).ClassifyOutput(1, long)
	if f == nil || f.Class != taskfile.ClassAuth {
		t.Fatalf("got %+v: the banner at the end decides", f)
	}
}

// Every preset but generic documents a command that takes the prompt as one argument.
func TestPresetCommands(t *testing.T) {
	for _, name := range taskfile.Presets {
		p := PresetFor(name)
		if p.Name != name {
			t.Errorf("%s: PresetFor gave %s", name, p.Name)
		}
		if name == taskfile.PresetGeneric {
			continue
		}
		argv, err := taskfile.Expand(p.Command, taskfile.Vars{Prompt: "fix the bug; don't $(rm -rf)"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		found := false
		for _, a := range argv {
			found = found || a == "fix the bug; don't $(rm -rf)"
		}
		if !found || p.Install == "" {
			t.Errorf("%s: %q does not pass the prompt as one argument (or has no install hint)", name, argv)
		}
	}
	if PresetFor("nonsense").Name != taskfile.PresetGeneric {
		t.Error("an unknown preset is generic")
	}
}

// No built-in banner rule matches blank output (whitespace, or only ANSI codes once they are
// stripped): matchRules skips blank text without compiling them, and must lose nothing by it.
func TestBannerRulesNeedText(t *testing.T) {
	sets := map[string][]bannerRule{"specific": specificRules, "common": commonRules}
	for name, p := range presets {
		sets["preset "+name] = p.rules
	}
	for name, rs := range apiRules {
		sets["api "+name] = rs
	}
	blanks := []string{"", " ", "\n", "\r\n\t \n", "\x1b[0m\n", "\x1b[2K\x1b[1G \n"}
	rules := 0
	for set, rs := range sets {
		for i, r := range rs {
			rules++
			for _, b := range blanks {
				text := ansiRe.ReplaceAll([]byte(b), nil)
				if r.re.Match(text) {
					t.Errorf("%s rule %d (%s) matches blank output %q", set, i, r.re, b)
				}
			}
		}
	}
	if rules < 20 {
		t.Fatalf("only %d rules found", rules)
	}
}
