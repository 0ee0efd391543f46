package agentcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mulligan-dev/mulligan/taskfile"
)

func TestLastJSONValue(t *testing.T) {
	cases := map[string]string{
		"noise {\"a\":1} more {\"b\":[1,2]} end": `{"b":[1,2]}`,
		"[1,2]\n":                                `[1,2]`,
		"no json here":                           ``,
		"broken {\"a\": then {\"ok\":true}":      `{"ok":true}`,
		"```json\n{\"x\": \"y\"}\n```":           `{"x": "y"}`,
	}
	for in, want := range cases {
		if got := string(lastJSONValue([]byte(in))); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestReadOutputOrder(t *testing.T) {
	dir := t.TempDir()
	of := filepath.Join(dir, "out.json")
	claude := []byte(`{"type":"result","is_error":false,"result":"{\"from\":\"result\"}"}`)
	if o := ReadOutput(of, claude, PresetFor(taskfile.PresetClaude)); o.Source != "result" || string(o.Raw) != `{"from":"result"}` {
		t.Errorf("result field: %+v", o)
	}
	os.WriteFile(of, []byte(`{"from":"file"}`), 0o600)
	if o := ReadOutput(of, claude, PresetFor(taskfile.PresetClaude)); o.Source != "output_file" {
		t.Errorf("output file first: %+v", o)
	}
	if o := ReadOutput("", []byte("log\n{\"from\":\"stdout\"}\n"), PresetFor(taskfile.PresetGeneric)); o.Source != "stdout" || string(o.Raw) != `{"from":"stdout"}` {
		t.Errorf("stdout: %+v", o)
	}
}

func TestCheckPayload(t *testing.T) {
	generic, claude := PresetFor(taskfile.PresetGeneric), PresetFor(taskfile.PresetClaude)
	plain := &taskfile.Task{}
	contract := &taskfile.Task{ResultContract: &taskfile.ResultContract{FailureField: "error", MessageField: "error.message"}}
	cases := []struct {
		name string
		def  *taskfile.Task
		p    *Preset
		out  string
		code string // "" = passes
	}{
		{"generic, no output, nothing expected", plain, generic, "", ""},
		{"claude is_error", plain, claude, `{"type":"result","is_error":true,"result":"something broke"}`, CodeIsError},
		{"claude empty result", plain, claude, `{"type":"result","is_error":false,"result":""}`, CodeEmptyOutput},
		{"claude no result object", plain, claude, "", CodeEmptyOutput},
		{"claude fine", plain, claude, `{"type":"result","is_error":false,"result":"done"}`, ""},
		{"contract failure", contract, generic, `{"error": {"message": "tests still fail"}}`, CodeResultContract},
		{"contract null error", contract, generic, `{"error": null, "ok": true}`, ""},
		{"contract false error", &taskfile.Task{ResultContract: &taskfile.ResultContract{FailureField: "failed"}}, generic, `{"failed": false}`, ""},
		{"contract no JSON", contract, generic, "just text", CodeResultContract},
		{"contract empty", contract, generic, "", CodeEmptyOutput},
	}
	for _, c := range cases {
		o := ReadOutput("", []byte(c.out), c.p)
		f := CheckPayload(c.def, c.p, o)
		got := ""
		if f != nil {
			got = f.Code
			if f.Class != taskfile.ClassPayloadDeclared {
				t.Errorf("%s: class %s", c.name, f.Class)
			}
		}
		if got != c.code {
			t.Errorf("%s: got %q (%v), want %q", c.name, got, f, c.code)
		}
	}
	f := CheckPayload(contract, generic, ReadOutput("", []byte(`{"error": {"message": "tests still fail"}}`), generic))
	if !strings.Contains(f.Message, "tests still fail") {
		t.Errorf("the message field is quoted: %q", f.Message)
	}
}

// Pathological outputs (openers that never close, prefixes that are valid JSON for a long time)
// are scanned once, not once per opener.
func TestScanJSONLinear(t *testing.T) {
	if v := lastJSONValue([]byte(strings.Repeat("[", 1<<20))); v != nil {
		t.Errorf("got %q", v)
	}
	bad := strings.Repeat(`{"a": [1, `, 1<<16) + "x" + strings.Repeat(`[[`, 1<<16) + "x\n{\"ok\": true}\n"
	if v := lastJSONValue([]byte(bad)); string(v) != `{"ok": true}` {
		t.Errorf("got %q", v)
	}
	if vs := jsonValues([]byte(bad)); len(vs) != 1 {
		t.Errorf("got %d values", len(vs))
	}
}

// A stream-json CLI that exits 0 after its stream started and before the event that ends a session
// gave no answer, whatever it printed before: gemini's init and the echo of the prompt, claude's
// init, codex's thread and turn start, opencode's step that never finished. Its output declares
// nothing (SPEC §4's payload_declared is an output that declares failure): the CLI died before
// its stream ended, at random as claude does (anthropics/claude-code#8126), so it is agent_exit,
// which a retry policy retries.
func TestCheckPayloadUnfinishedStream(t *testing.T) {
	plain := &taskfile.Task{}
	for _, c := range []struct {
		preset, out string
		code        string // "" = passes
	}{
		{taskfile.PresetGemini, `{"type":"init","timestamp":"2026-12-04T21:36:32.255Z","session_id":"13ed7a43-4acd-4c93-8e4b-26291613ed83","model":"auto"}
{"type":"message","timestamp":"2026-12-04T21:36:32.257Z","role":"user","content":"write hello.txt\n"}
`, CodeNoResult},
		{taskfile.PresetGemini, `{"type":"init","session_id":"13ed7a43","model":"auto"}
{"type":"message","role":"user","content":"write hello.txt\n"}
{"type":"message","role":"assistant","content":"Done.","delta":true}
{"type":"result","status":"success","stats":{"input_tokens":915,"output_tokens":20}}
`, ""},
		{taskfile.PresetClaude, `{"type":"system","subtype":"init","cwd":"/w","session_id":"0b8a2c5e-1111-4a4a-9c9c-000000000001","tools":["Bash"],"model":"claude-sonnet-4-5"}
`, CodeNoResult},
		{taskfile.PresetClaude, `{"type":"system","subtype":"init","session_id":"0b8a2c5e"}
{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"Done."}],"usage":{"input_tokens":10,"output_tokens":2}},"session_id":"0b8a2c5e"}
{"type":"result","subtype":"success","is_error":false,"result":"Done.","session_id":"0b8a2c5e"}
`, ""},
		{taskfile.PresetCodex, `{"type":"thread.started","thread_id":"019a1f02-6b1e-7d33-9c40-2e8a5f1b7c90"}
{"type":"turn.started"}
`, CodeNoResult},
		{taskfile.PresetCodex, `{"type":"thread.started","thread_id":"019a1f02"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"Done."}}
{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":2}}
`, ""},
		{taskfile.PresetOpencode, `{"type":"step_start","timestamp":1796325918954,"sessionID":"ses_dc2a24744ffeeZGvegUsSYWNpi","part":{"id":"prt_23d5e458a001bnbVUA5ZVtvC1b","messageID":"msg_23d5e3d37001VwhHtpfRgTX12i","sessionID":"ses_dc2a24744ffeeZGvegUsSYWNpi","type":"step-start"}}
`, CodeNoResult},
		{taskfile.PresetOpencode, `{"type":"step_start","sessionID":"ses_1","part":{"type":"step-start"}}
{"type":"text","sessionID":"ses_1","part":{"type":"text","text":"Done."}}
{"type":"step_finish","sessionID":"ses_1","part":{"type":"step-finish","reason":"stop","tokens":{"input":70,"output":20,"cache":{"write":0,"read":7768}},"cost":0.0028}}
`, ""},
	} {
		p := PresetFor(c.preset)
		f := CheckPayload(plain, p, ReadOutput("", []byte(c.out), p))
		got := ""
		if f != nil {
			got = f.Code
		}
		if got != c.code {
			t.Errorf("%s %q: got %v, want code %q", c.preset, c.out, f, c.code)
		} else if f != nil && (f.Class != taskfile.ClassAgentExit || !taskfile.Eligible(f.Class, nil, nil) || f.NoRetry || !strings.Contains(f.Message, "without an answer")) {
			t.Errorf("%s: %s: %s", c.preset, f.Class, f.Message)
		}
	}
}
