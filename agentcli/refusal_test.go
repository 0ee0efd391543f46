package agentcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mulligan-dev/mulligan/taskfile"
)

// The fixtures in testdata/presets/refusals are what the real CLIs printed (testdata/clis,
// against testdata/modelapi) when their permission mode refused the model's edits: claude
// without a permission mode (Write and a Bash command refused), gemini without an approval mode
// that allows edits (write_file not offered).
func TestRefusals(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "presets", "refusals", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		preset, file string
		out          []byte
		edits        string // the refused edit the message names; "" = no failure
		others       int
	}{
		{preset: taskfile.PresetClaude, file: "claude_default_mode.jsonl", edits: "Write ($WORK/repo/hello.txt)", others: 1},
		{preset: taskfile.PresetGemini, file: "gemini_default_mode.txt", edits: "write_file (hello.txt)"},
		// codex's words for a patch its read-only sandbox refused
		{preset: taskfile.PresetCodex, out: []byte(`{"type":"item.completed","item":{"id":"item_1","type":"error","message":"patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings"}}` + "\n"), edits: "apply_patch"},
		// the same words in another event's field, and as plain text on stderr
		{preset: taskfile.PresetCodex, out: []byte(`{"type":"item.completed","item":{"id":"item_2","type":"file_change","status":"failed","changes":[{"path":"hello.txt","kind":"add"}],"error":"patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings"}}` + "\n"), edits: "apply_patch"},
		{preset: taskfile.PresetCodex, out: []byte("ERROR codex_core::codex: patch rejected: writing outside of the project; rejected by user approval settings\n"), edits: "apply_patch"},
		// a gemini shell command not offered in auto_edit mode is told, not failed
		{preset: taskfile.PresetGemini, out: []byte(`{"type":"tool_use","tool_name":"run_shell_command","tool_id":"t1","parameters":{"command":"go test ./..."}}
{"type":"tool_result","tool_id":"t1","status":"error","error":{"type":"tool_not_registered","message":"Tool \"run_shell_command\" not found."}}
{"type":"result","status":"success","stats":{}}
`), others: 1},
		// opencode run rejects a bash call its settings ask about (edits stay allowed)
		{preset: taskfile.PresetOpencode, file: "opencode_bash_ask.jsonl", others: 1},
		{preset: taskfile.PresetOpencode, out: []byte(`{"type":"tool_use","part":{"type":"tool","tool":"write","state":{"status":"error","input":{"filePath":"/w/hello.txt","content":"hi"},"error":"The user has specified a rule which prevents you from using this specific tool call. Here are some of the relevant rules [{\"permission\":\"edit\",\"pattern\":\"*\",\"action\":\"deny\"}]"}}}` + "\n"), edits: "write (/w/hello.txt)"},
		// a successful claude session refused nothing
		{preset: taskfile.PresetClaude, out: []byte(`{"type":"result","is_error":false,"result":"done","permission_denials":[]}` + "\n")},
	}
	for _, c := range cases {
		out := c.out
		if c.file != "" {
			out = read(c.file)
		}
		p := PresetFor(c.preset)
		f, others := p.RefusalFailure(out)
		if len(others) != c.others {
			t.Errorf("%s %s: %d other refusals %v, want %d", c.preset, c.file, len(others), others, c.others)
		}
		if c.edits == "" {
			if f != nil {
				t.Errorf("%s %s: %v, want no failure", c.preset, c.file, f)
			}
			continue
		}
		if f == nil {
			t.Errorf("%s %s: no failure, want permission_denied", c.preset, c.file)
			continue
		}
		if f.Class != taskfile.ClassPayloadDeclared || f.Code != CodePermissionDenied || !strings.Contains(f.Message, c.edits) || f.Hint != p.Grant || p.Grant == "" {
			t.Errorf("%s %s: %+v, want payload_declared/permission_denied naming %q with the grant hint", c.preset, c.file, f, c.edits)
		}
		// CheckPayload fails the attempt even though the CLI exited 0 and answered.
		if g := CheckPayload(&taskfile.Task{}, p, ReadOutput("", out, p)); g == nil || g.Code != CodePermissionDenied {
			t.Errorf("%s %s: CheckPayload %v, want permission_denied", c.preset, c.file, g)
		}
	}
}

// The renderer shows the agent's words and tool calls, not its CLI's JSON.
func TestRender(t *testing.T) {
	claude, err := os.ReadFile(filepath.Join("testdata", "presets", "refusals", "claude_default_mode.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	gemini, err := os.ReadFile(filepath.Join("testdata", "presets", "refusals", "gemini_default_mode.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		preset string
		out    []byte
		want   []string
	}{
		{taskfile.PresetClaude, claude, []string{"→ Write: $WORK/repo/hello.txt\n", "✗ refused Write: Claude requested permissions", "→ Bash: node -e 1\n", "I could not write hello.txt.\n"}},
		{taskfile.PresetGemini, gemini, []string{"Ripgrep is not available", "→ write_file: hello.txt\n", "✗ Tool \"write_file\" not found", "I could not write hello.txt.\n"}},
		{taskfile.PresetGeneric, []byte(`{"a": 1}` + "\n"), []string{`{"a": 1}` + "\n"}},
	} {
		got := string(Humanize(c.preset, c.out))
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: rendered output lacks %q:\n%s", c.preset, w, got)
			}
		}
		if c.preset != taskfile.PresetGeneric && strings.Contains(got, `{"type"`) {
			t.Errorf("%s: rendered output holds JSON:\n%s", c.preset, got)
		}
	}
}

// A claude session ended before its result (cancelled, superseded) still reports what its
// assistant messages were billed for, each message once.
func TestClaudeRunningUsage(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "presets", "refusals", "claude_default_mode.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var cut []string
	for _, l := range strings.SplitAfter(string(out), "\n") {
		if !strings.Contains(l, `"type":"result"`) {
			cut = append(cut, l)
		}
	}
	// the first message once more, as claude repeats it for each content block
	cut = append(cut, cut[0])
	r := PresetFor(taskfile.PresetClaude).Result([]byte(strings.Join(cut, "")))
	if r == nil || r.TokensIn == nil || r.TokensOut == nil {
		t.Fatalf("no usage from the messages: %+v", r)
	}
	if *r.TokensIn != 1200+12548+300+1200 || *r.TokensOut != 3 || r.CostUSD != nil || r.HasText || r.IsError {
		t.Errorf("in %d out %d cost %v text %v error %v, want 15248 and 3, no cost, no result", *r.TokensIn, *r.TokensOut, r.CostUSD, r.HasText, r.IsError)
	}
}

// A refused shell command is granted by the preset's rule; claude refusing to leave plan mode is
// its command's permission mode, no command to allow.
func TestGrantFor(t *testing.T) {
	p := PresetFor(taskfile.PresetClaude)
	if g := p.GrantFor([]Refusal{{Tool: "Bash", Detail: "npm test"}}); g != p.GrantMore {
		t.Errorf("a shell command: %q", g)
	}
	if g := p.GrantFor([]Refusal{{Tool: "ExitPlanMode"}}); !strings.Contains(g, "--permission-mode plan") || strings.Contains(g, "allowedTools") {
		t.Errorf("plan mode: %q", g)
	}
}
