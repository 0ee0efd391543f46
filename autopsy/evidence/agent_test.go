package evidence

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExitOf(t *testing.T) {
	for _, c := range []struct {
		code     int
		text     string
		kind     string
		memory   bool
		lineHint string
	}{
		// go test when the kernel kills the test binary: golang/go#47467.
		{1, "signal: killed\nFAIL\texample.com/user/hello\t3.343s\n", Killed, false, "signal: killed"},
		{137, "", Killed, false, ""},
		// A test named after the signal it handles is no signal the verify got; bun's own
		// report of one is.
		{1, "✗ server > drains queue on SIGTERM [118.33ms]\n 11 pass\n 1 fail\n", "", false, ""},
		{143, "error: script \"test\" was terminated by signal SIGTERM (Polite quit request)\n", Terminated, false, "terminated by signal SIGTERM"},
		// node's heap limit (v8's fatal error text).
		{134, "<--- Last few GCs --->\nFATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n", Killed, true, "FATAL ERROR"},
		// DTRules/DTRules#870: a CI runner stopping the job.
		{143, "##[error]The runner has received a shutdown signal.\n", Terminated, false, "shutdown signal"},
		{124, "", TimedOut, false, ""},
		// pytest-xdist when a worker dies under it: killed or crashed, it does not say which.
		{1, "[gw1] node down: Not properly terminated\nreplacing crashed worker gw1\n", "", false, ""},
		{2, "panic: test timed out after 10m0s\n\trunning tests:\n\t\tTestSync (10m0s)\n", TimedOut, false, "panic: test timed out"},
		{1, "--- FAIL: TestX (0.00s)\nFAIL\n", "", false, ""},
	} {
		e := ExitOf(c.code, c.text)
		if e.Kind != c.kind || e.Memory != c.memory || !strings.Contains(e.Line, c.lineHint) {
			t.Errorf("ExitOf(%d, %q) = %+v, want %s memory=%v", c.code, c.text, e, c.kind, c.memory)
		}
	}
}

func TestWaitingPrompt(t *testing.T) {
	for _, c := range []struct{ text, kind string }{
		{"$ git push origin main\nUsername for 'https://github.com': ", AskCredentials},
		// stderr's prompt logged before the lines stdout printed earlier
		{"[check] 7 passed\nUsername for 'https://github.com': \n[git] branch fix-2\n[git] [fix-2 4e1d2c9] fix\n[git]  1 file changed\n[git] git push -u origin fix-2\n", AskCredentials},
		{"The authenticity of host 'github.com (140.82.121.4)' can't be established.\nED25519 key fingerprint is SHA256:+DiY3wvvV6TuJJhbpZisF/zLDA0zPMSvHdkr4UvCOqU.\nAre you sure you want to continue connecting (yes/no/[fingerprint])? ", AskHostKey},
		{"[sudo] password for dev: ", AskPassword},
		{"Need to install the following packages:\ncreate-vite@5.2.3\nOk to proceed? (y) ", AskConfirm},
		{"This utility will walk you through creating a package.json file.\nPress ^C at any time to quit.\npackage name: (app) ", AskNpmInit},
		{"Do you want to continue? [Y/n] ", AskConfirm},
		{"Apply these edits? [y/N]\n", AskConfirm},
		{"? Which template would you like to use? › - Use arrow-keys. Return to submit.\n", AskInput},
	} {
		p, ok := WaitingPrompt(c.text)
		if !ok || p.Kind != c.kind {
			t.Errorf("WaitingPrompt(%q) = %+v %v, want %s", c.text, p, ok, c.kind)
		}
		if p.Avoid() == "" {
			t.Errorf("%s: no way to avoid it", c.kind)
		}
	}
	// A question answered long before the end is not what the command waits on.
	if p, ok := WaitingPrompt("Ok to proceed? (y) y\nadded 12 packages\nbuilt in 3s\nwriting dist\ndone\n"); ok {
		t.Errorf("an answered question counts: %+v", p)
	}
}

func TestNetworkErrors(t *testing.T) {
	// openai/codex#10612: npm inside codex's sandbox.
	npm := `npm error code ENOTFOUND
npm error syscall getaddrinfo
npm error errno ENOTFOUND
npm error network request to https://registry.npmjs.org/@astrojs%2fstarlight failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org
npm error network This is a problem related to network connectivity.`
	for _, c := range []struct{ text, host string }{
		{npm, "registry.npmjs.org"},
		{`go: github.com/google/go-cmp@v0.6.0: Get "https://proxy.golang.org/github.com/google/go-cmp/@v/v0.6.0.zip": dial tcp: lookup proxy.golang.org on 127.0.0.53:53: server misbehaving`, "proxy.golang.org"},
		{"fatal: unable to access 'https://github.com/acme/app.git/': Could not resolve host: github.com", "github.com"},
		// curl 7.88 and later: a refused (or firewalled) connection.
		{"curl: (7) Failed to connect to files.example.com port 443 after 3 ms: Couldn't connect to server", "files.example.com"},
		// bazelbuild/bazel#27734: the remote cache's host.
		{"WARNING: Remote Cache: Unable to resolve host cache.build.acme.internal", "cache.build.acme.internal"},
		{"pip._vendor.urllib3.exceptions.NewConnectionError: <HTTPSConnection(host='pypi.org', port=443)>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution", "pypi.org"},
		// dart pub's words (flutter pub get offline).
		{"Got socket error trying to find package collection at https://pub.dev.", "pub.dev"},
	} {
		es := NetworkErrors(c.text)
		if len(es) == 0 || es[len(es)-1].Host != c.host || es[len(es)-1].API {
			t.Errorf("NetworkErrors(%q) = %+v, want host %s", c.text, es, c.host)
		}
	}
	for _, notNet := range []string{"E   ModuleNotFoundError: No module named 'app'", "TypeError: fileNotFound is not a function",
		// openai/codex#14260: the provider answered with an error; the network worked.
		"stream disconnected before completion: An error occurred while processing your request. You can retry your request, or contact us through our help center at help.openai.com if the error persists. Please include the request ID 8f3c2a91 in your message."} {
		if es := NetworkErrors(notNet); len(es) != 0 {
			t.Errorf("NetworkErrors(%q) = %+v, want none", notNet, es)
		}
	}
	// A connection the system refused to make (codex's seccomp sandbox; Go, pip) is denied; one
	// a host refused is not.
	for text, denied := range map[string]bool{
		"npm error FetchError: request to http://127.0.0.1:46365/npm/left-pad failed, reason: connect EPERM 127.0.0.1:46365 - Local (undefined:undefined)": true,
		`Get "https://proxy.golang.org/x/@v/list": dial tcp 142.250.74.113:443: connect: operation not permitted`:                                          true,
		"Failed to establish a new connection: [Errno 1] Operation not permitted')': /simple/httpx/":                                                       true,
		"npm error request to http://127.0.0.1:4873/left-pad failed, reason: connect ECONNREFUSED 127.0.0.1:4873":                                          false,
	} {
		if es := NetworkErrors(text); len(es) != 1 || es[0].Denied != denied {
			t.Errorf("NetworkErrors(%q) = %+v, want one, denied %v", text, es, denied)
		}
	}
	api := NetworkErrors("API Error: Unable to connect to API (ConnectionRefused)\n")
	if len(api) != 1 || !api[0].API {
		t.Errorf("claude's API error: %+v", api)
	}
}

func TestReadAgent(t *testing.T) {
	t.Run("claude json with permission denials", func(t *testing.T) {
		// The result shape of claude -p --output-format json (anthropics/claude-code#76867).
		out := `{"type":"result","subtype":"success","is_error":false,"duration_ms":20512,"num_turns":4,"result":"I could not create probe.txt: both the Write tool and Bash were denied.","session_id":"5f0c","total_cost_usd":0.021,"usage":{"input_tokens":12,"output_tokens":310},"permission_denials":[{"tool_name":"Write","tool_use_id":"toolu_01","tool_input":{"file_path":"/tmp/x/probe.txt","content":"hello"}},{"tool_name":"Bash","tool_use_id":"toolu_02","tool_input":{"command":"echo hello > probe.txt"}}]}`
		a := ReadAgent(out)
		if !a.APICalls || len(a.Denials) != 2 || a.Denials[0].Tool != "Write" || a.Denials[1].Input != "echo hello > probe.txt" || !strings.HasPrefix(a.LastMessage, "I could not create") {
			t.Errorf("%+v", a)
		}
	})
	t.Run("aider: its words, not its edit blocks or status lines", func(t *testing.T) {
		// aider --no-pretty's transcript (Aider-AI/aider's base_coder.py texts).
		out := "I'll add the `embedding` column to `Document`. Since the\nmigrations directory is frozen, I won't add an alembic revision.\n\napp/models.py\n<<<<<<< SEARCH\n    title = mapped_column(String(200))\n=======\n" +
			"    title = mapped_column(String(200))\n    embedding = mapped_column(Vector(1536), nullable=True)\n>>>>>>> REPLACE\n\nApplied edit to app/models.py\nTokens: 6.2k sent, 214 received. Cost: $0.02 message, $0.02 session.\n"
		a := ReadAgent(out)
		if a.LastMessage != "migrations directory is frozen, I won't add an alembic revision." || !strings.HasPrefix(a.Said, "I'll add the `embedding` column") || !strings.HasSuffix(a.Said, "alembic revision.") {
			t.Errorf("%+v", a)
		}
	})
	t.Run("codex exec --json, npm without network in the sandbox", func(t *testing.T) {
		out := `{"type":"thread.started","thread_id":"0199a213"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc 'npm install'","aggregated_output":"npm error code ENOTFOUND\nnpm error network request to https://registry.npmjs.org/vite failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org\n","exit_code":1,"status":"failed"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"npm install failed: the sandbox has no network access, so I could not install vite."}}
{"type":"turn.completed","usage":{"input_tokens":9000,"cached_input_tokens":0,"output_tokens":420}}`
		a := ReadAgent(out)
		if !a.APICalls || len(a.Network) == 0 || a.Network[0].Host != "registry.npmjs.org" || !a.NoNetworkSandbox || len(a.ToolErrors) != 1 {
			t.Errorf("%+v", a)
		}
	})
	t.Run("codex offline: the API itself", func(t *testing.T) {
		out := `{"type":"error","message":"Reconnecting... 2/5 (stream disconnected before completion: error sending request for url (https://chatgpt.com/backend-api/codex/responses))"}
{"type":"turn.failed","error":{"message":"stream disconnected before completion: error sending request for url (https://chatgpt.com/backend-api/codex/responses)"}}`
		a := ReadAgent(out)
		if a.APICalls || len(a.Network) == 0 || !a.Network[0].API {
			t.Errorf("%+v", a)
		}
	})
	t.Run("the agent says it has no network", func(t *testing.T) {
		a := ReadAgent(`{"type":"item.completed","item":{"type":"agent_message","text":"I don't have network access in this sandbox, so I couldn't install httpx."}}`)
		if !a.NoNetworkSandbox || !a.APICalls {
			t.Errorf("%+v", a)
		}
	})
	t.Run("gemini tool not allowed", func(t *testing.T) {
		// google-gemini/gemini-cli#16158.
		a := ReadAgent("Command \"ls -F\" is not in the list of allowed tools for non-interactive mode.\n")
		if len(a.Denials) != 1 {
			t.Errorf("%+v", a)
		}
	})
	t.Run("gemini -o json", func(t *testing.T) {
		a := ReadAgent("{\n  \"response\": \"Done: the tests pass.\",\n  \"stats\": {\"models\": {\"gemini-2.5-pro\": {\"tokens\": {\"prompt\": 900, \"candidates\": 80}}}}\n}\n")
		if !a.APICalls || a.LastMessage != "Done: the tests pass." {
			t.Errorf("%+v", a)
		}
	})
	t.Run("gemini stream-json: the last message, from its pieces", func(t *testing.T) {
		// A piece may end on the space before the next piece's word; a tool call ends a message.
		out := `{"type":"message","role":"user","content":"Fix it."}
{"type":"message","role":"assistant","content":"Let me ","delta":true}
{"type":"message","role":"assistant","content":"look.","delta":true}
{"type":"tool_use","tool_name":"write_file","tool_id":"w1","parameters":{"file_path":"api.py","content":"x"}}
{"type":"tool_result","tool_id":"w1","status":"success"}
{"type":"message","role":"assistant","content":"I changed api.py to ","delta":true}
{"type":"message","role":"assistant","content":"return 204.\n\nYou asked me not to edit tests/, so I ","delta":true}
{"type":"message","role":"assistant","content":"left it.","delta":true}
{"type":"result","status":"success","stats":{"total_tokens":90,"output_tokens":60}}`
		a := ReadAgent(out)
		if a.LastMessage != "I changed api.py to return 204. You asked me not to edit tests/, so I left it." || !strings.HasPrefix(a.Said, "I changed") || !strings.HasSuffix(a.Said, "so I left it.") {
			t.Errorf("%+v", a)
		}
	})
	t.Run("plain text", func(t *testing.T) {
		a := ReadAgent("Reading src/app.go\nI cannot finish: the spec file is missing.\n")
		if a.APICalls || a.LastMessage != "I cannot finish: the spec file is missing." {
			t.Errorf("%+v", a)
		}
	})
}

func FuzzReaders(f *testing.F) {
	f.Add(`{"type":"result","num_turns":1,"permission_denials":[{"tool_name":"Bash","tool_input":{"command":"x"}}]}`)
	f.Add("Username for 'https://github.com': ")
	f.Add("npm error network request to https://registry.npmjs.org/x failed, reason: getaddrinfo ENOTFOUND registry.npmjs.org")
	f.Add("signal: killed\nFAIL\tp\t1s\n")
	f.Add(`{"type":"item.completed","item":{"type":"command_execution","exit_code":1,"aggregated_output":"x\ny"}}`)
	f.Add("* What went wrong:\nExecution failed for task ':test'.\n\nBUILD FAILED in 1s\n")
	f.Add("==1==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000\n    #0 0x1 in f a.c:3\nSUMMARY: AddressSanitizer: SEGV a.c:3 in f\nErrors while running CTest\n")
	f.Fuzz(func(t *testing.T, text string) {
		a := ReadAgent(text)
		for _, d := range a.Denials {
			if d.Line == "" {
				t.Fatalf("a denial without its line: %+v", d)
			}
		}
		_ = ExitOf(137, text)
		if p, ok := WaitingPrompt(text); ok && (p.Line == "" || p.Avoid() == "") {
			t.Fatalf("prompt %+v", p)
		}
		_ = NetworkErrors(text)
		if l := DecisiveLine(text); len(l) > maxLine+len("…") || strings.Contains(l, "\n") {
			t.Fatalf("decisive line %q", l)
		}
	})
}

// The real CLIs' output that agentcli's fixtures keep (captured from the pinned CLIs).
func TestReadAgentFixtures(t *testing.T) {
	read := func(name string) Agent {
		b, err := os.ReadFile(filepath.Join("..", "..", "agentcli", "testdata", "presets", name))
		if err != nil {
			t.Skip(err)
		}
		return ReadAgent(string(b))
	}
	if a := read("claude_no_network.json"); a.APICalls || len(a.Network) == 0 || !a.Network[0].API || a.NoNetworkSandbox {
		t.Errorf("claude without network: %+v", a)
	}
	if a := read("codex_json_no_network.jsonl"); a.APICalls || len(a.Network) == 0 || a.NoNetworkSandbox {
		t.Errorf("codex without network: %+v", a)
	}
	if a := read("refusals/claude_default_mode.jsonl"); len(a.Denials) == 0 || a.Denials[0].Tool != "Write" || !a.APICalls {
		t.Errorf("claude refused: %+v", a)
	}
	// codex's workspace-write sandbox on Linux: npm's connect refused by seccomp (EPERM).
	if a := read("codex_sandbox_connect_eperm.jsonl"); !a.APICalls || len(a.Network) != 1 || !a.Network[0].Denied || a.Network[0].Host != "127.0.0.1" {
		t.Errorf("codex's sandbox refused a connection: %+v", a)
	}
	// opencode run rejects the bash call its settings ask about; the event carries call and end.
	if a := read("refusals/opencode_bash_ask.jsonl"); len(a.Denials) != 1 || a.Denials[0].Tool != "bash" || a.Denials[0].Input != "make gen" || !a.APICalls {
		t.Errorf("opencode refused a shell command: %+v", a)
	}
	if a := read("refusals/gemini_default_mode.txt"); len(a.Denials) == 0 || !a.APICalls || a.LastMessage != "I could not write hello.txt." {
		t.Errorf("gemini refused: %+v", a)
	}
	// gemini --approval-mode auto_edit offers no shell tool: its refusal of `make gen`, on a
	// retry whose prompt (echoed back) quotes the last attempt's refusal, and again as a plain line.
	if a := read("refusals/gemini_auto_edit_shell.txt"); len(a.Denials) != 1 || a.Denials[0].Tool != "run_shell_command" || a.Denials[0].Input != "make gen" || !strings.HasPrefix(a.LastMessage, "I set version.txt") {
		t.Errorf("gemini refused a shell command: %+v", a)
	}
}

// The prompt echoed back and a tool call's arguments name failures that did not happen.
func TestEchoed(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{
		{`{"type":"message","role":"user","content":"Our collector logs \"connect: network is unreachable\" when the VPN drops."}`, true},
		{`{"type":"tool_use","tool_name":"write_file","parameters":{"content":"# network is unreachable"}}`, true},
		{`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Write","input":{"content":"ECONNREFUSED"}}]}}`, true},
		{`{"type":"assistant","message":{"content":[{"type":"text","text":"npm install failed: ECONNREFUSED"}]}}`, false},
		{`{"type":"tool_result","status":"error","output":"getaddrinfo ENOTFOUND registry.npmjs.org"}`, false},
		{`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"fetch failed"}]}}`, false},
		{"dial tcp: connect: network is unreachable", false},
	} {
		if got := Echoed(c.line); got != c.want {
			t.Errorf("Echoed(%s) = %v, want %v", c.line, got, c.want)
		}
	}
	if n := NetworkErrors(`{"type":"message","role":"user","content":"dial tcp 10.0.0.7:4317: connect: network is unreachable"}`); len(n) != 0 {
		t.Errorf("the prompt echoed back is a network error: %v", n)
	}
}

// A connection failure the model only writes about is not one its tools met; a CLI's API error
// and a tool's output are.
func TestWithoutProse(t *testing.T) {
	out := `{"type":"assistant","message":{"model":"claude-sonnet-4-5","content":[{"type":"text","text":"The ECONNREFUSED warning comes from the cache fallback test."}]}}
{"type":"result","subtype":"success","is_error":false,"result":"Done. The ECONNREFUSED warning is expected."}
{"type":"item.completed","item":{"type":"agent_message","text":"npm could not reach registry.npmjs.org (getaddrinfo ENOTFOUND)"}}
{"type":"item.completed","item":{"type":"command_execution","aggregated_output":"npm error getaddrinfo EAI_AGAIN registry.npmjs.org"}}
{"type":"assistant","message":{"model":"<synthetic>","content":[{"type":"text","text":"API Error: Connection error."}]}}`
	got := WithoutProse(out)
	for _, want := range []string{"EAI_AGAIN registry.npmjs.org", "API Error: Connection error."} {
		if !strings.Contains(got, want) {
			t.Errorf("dropped %q", want)
		}
	}
	for _, gone := range []string{"cache fallback", "is expected", "could not reach"} {
		if strings.Contains(got, gone) {
			t.Errorf("kept the model's words %q", gone)
		}
	}
}
