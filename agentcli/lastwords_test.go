package agentcli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mulligan-dev/mulligan/taskfile"
)

// A failure message quotes what the agent said, not a JSON event: events without words are passed
// over, a tool call is named by its command, and nothing said leaves the message bare.
func TestFailureQuotesWords(t *testing.T) {
	const (
		threadStarted = `{"type":"thread.started","thread_id":"019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"}` + "\n"
		turnStarted   = `{"type":"turn.started"}` + "\n"
		stepStart     = `{"type":"step_start","timestamp":1764800000000,"sessionID":"ses_1","part":{"id":"prt_1","sessionID":"ses_1","messageID":"msg_1","type":"step-start","snapshot":"4b825dc"}}` + "\n"
		codexCommit   = `{"type":"item.started","item":{"id":"item_3","type":"command_execution","command":"bash -lc 'git commit -am \"wip: save\"'","aggregated_output":"","exit_code":null,"status":"in_progress"}}` + "\n"
		codexTestFail = `{"type":"item.completed","item":{"id":"item_4","type":"command_execution","command":"/bin/bash -lc \"go test ./...\"","aggregated_output":"FAIL\n","exit_code":1,"status":"failed"}}` + "\n"
		codexSays     = `{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"I will commit the fix now."}}` + "\n"
		claudeBash    = `{"type":"assistant","message":{"id":"msg_1","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"go test ./...","description":"Run the tests"}}]},"session_id":"s"}` + "\n"
		claudeOK      = `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"ok  \tx\t0.1s","is_error":false}]},"session_id":"s"}` + "\n"
		opencodeBash  = `{"type":"tool_use","timestamp":1764800000000,"sessionID":"ses_1","part":{"type":"tool","tool":"bash","state":{"status":"running","input":{"command":"npm test"}}}}` + "\n"
		geminiEdit    = `{"type":"tool_use","timestamp":"2026-12-04T10:00:00Z","tool_name":"replace","tool_id":"t1","parameters":{"file_path":"src/a.go","old_string":"x","new_string":"y"}}` + "\n"
	)
	codex, opencode, claude := PresetFor(taskfile.PresetCodex), PresetFor(taskfile.PresetOpencode), PresetFor(taskfile.PresetClaude)
	cases := []struct {
		name   string
		o      Observation
		preset PresetRules
		want   string
	}{
		{"codex, no words", Observation{ExitCode: 1, Output: []byte(threadStarted + turnStarted)}, codex, "agent exited with status 1"},
		{"no words, no preset", Observation{ExitCode: 1, Output: []byte(threadStarted + turnStarted)}, nil, "agent exited with status 1"},
		{"opencode step_start", Observation{ExitCode: 1, Output: []byte(stepStart)}, opencode, "agent exited with status 1"},
		{"words before an event", Observation{ExitCode: 1, Output: []byte(threadStarted + codexSays + turnStarted)}, codex, "agent exited with status 1: I will commit the fix now."},
		{"text before an event", Observation{ExitCode: 2, Output: []byte("fatal: not a git repository\n" + turnStarted)}, nil, "agent exited with status 2: fatal: not a git repository"},
		{"heartbeat, codex command", Observation{Silent: true, ExitCode: -1, Output: []byte(threadStarted + codexSays + codexCommit)}, codex,
			`the agent printed nothing for longer than the heartbeat: codex was running: git commit -am "wip: save"`},
		{"timeout, codex command done", Observation{TimedOut: true, ExitCode: -1, Output: []byte(codexTestFail + turnStarted)}, codex,
			"the attempt ran past its timeout: codex ran: go test ./... (exit 1)"},
		{"timeout, claude command", Observation{TimedOut: true, ExitCode: -1, Output: []byte(claudeBash)}, claude,
			"the attempt ran past its timeout: claude was running: go test ./..."},
		{"timeout, claude command done", Observation{TimedOut: true, ExitCode: -1, Output: []byte(claudeBash + claudeOK)}, claude,
			"the attempt ran past its timeout: claude ran: go test ./..."},
		{"heartbeat, opencode command", Observation{Silent: true, ExitCode: -1, Output: []byte(stepStart + opencodeBash)}, opencode,
			"the agent printed nothing for longer than the heartbeat: opencode was running: npm test"},
		{"heartbeat, gemini edit", Observation{Silent: true, ExitCode: -1, Output: []byte(geminiEdit)}, PresetFor(taskfile.PresetGemini),
			"the agent printed nothing for longer than the heartbeat: gemini was running: replace src/a.go"},
		{"gemini's prompt is not its words", Observation{ExitCode: 1, Output: []byte(`{"type":"init","timestamp":"2026-12-04T10:00:00Z","session_id":"s","model":"gemini-2.5-pro"}` + "\n" + `{"type":"message","timestamp":"2026-12-04T10:00:00Z","role":"user","content":"Fix the failing test"}` + "\n")}, PresetFor(taskfile.PresetGemini), "agent exited with status 1"},
		{"an indented JSON object", Observation{TimedOut: true, ExitCode: -1, Output: []byte("{\n  \"response\": \"Still reading the tests.\",\n  \"stats\": {\n    \"models\": {}\n  }\n}\n")}, nil,
			"the attempt ran past its timeout: Still reading the tests."},
		{"JSON in a line of text", Observation{ExitCode: 2, Output: []byte("loading\nError: invalid config {\"model\": \"x\"}\n")}, nil, `agent exited with status 2: Error: invalid config {"model": "x"}`},
		{"text that opens with a brace", Observation{ExitCode: 1, Output: []byte("{main} failed to build\n")}, nil, "agent exited with status 1: {main} failed to build"},
		{"punctuation says nothing", Observation{ExitCode: 1, Output: []byte("Tests still fail.\n```\n---\n")}, nil, "agent exited with status 1: Tests still fail."},
		{"signal, nothing said", Observation{ExitCode: -1, Output: []byte(threadStarted + turnStarted)}, codex, "agent was killed by a signal"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Classify(c.o, nil, c.preset)
			if f == nil || f.Message != c.want {
				t.Errorf("got %+v\nwant message %q", f, c.want)
			}
		})
	}
	if got := PresetFor(taskfile.PresetCodex).ErrorText([]byte(threadStarted + turnStarted)); got != "" {
		t.Errorf("ErrorText of wordless events = %q", got)
	}
}

// An output that ends in a stack trace is quoted by its error line, not its last frame.
func TestFailureQuotesTraceError(t *testing.T) {
	const raw = "Error: Raw mode is not supported on the current process.stdin, which Ink uses as input stream by default."
	nodeTrace := raw + "\nRead about how to prevent this error on https://github.com/vadimdemedes/ink/#israwmodesupported\n" +
		"    at handleSetRawMode (file:///usr/lib/node_modules/@anthropic-ai/claude-code/cli.js:674:3662)\n" +
		"    at file:///usr/lib/node_modules/@anthropic-ai/claude-code/cli.js:683:261\n" +
		"    at UD (file:///usr/lib/node_modules/@anthropic-ai/claude-code/cli.js:106:21373)\n" +
		"    at Immediate.OO1 [as _onImmediate] (file:///usr/lib/node_modules/@anthropic-ai/claude-code/cli.js:61:79295)\n" +
		"    at process.processImmediate (node:internal/timers:485:21)\n"
	inkBox := "\n  ERROR  Raw mode is not supported on the current process.stdin, which Ink uses as input stream by default.\n" +
		"        Read about how to prevent this error on https://github.com/vadimdemedes/ink/#israwmodesupported\n\n" +
		" - Read about how to prevent this error on https://github.com/vadimdemedes/ink/#israwmodesupported\n" +
		" - handleSetRawMode (node_modules/@anthropic-ai/claude-code/cli.js:800:3853)\n" +
		" -  (node_modules/@anthropic-ai/claude-code/cli.js:809:259)\n" +
		" - process.processImmediate (node:internal/timers:485:21)\n\n"
	cases := []struct {
		name, out, want string
	}{
		{"node", nodeTrace, raw},
		{"ink's box, then node's", inkBox + nodeTrace, raw},
		{"ink's box", inkBox, "ERROR  Raw mode is not supported on the current process.stdin, which Ink uses as input stream by default."},
		{"node, with the error's properties", "Error: ENOENT: no such file or directory, open '/work/.env'\n" +
			"    at Object.openSync (node:fs:573:18)\n    at Object.readFileSync (node:fs:452:35) {\n" +
			"  errno: -2,\n  code: 'ENOENT',\n  syscall: 'open',\n  path: '/work/.env'\n}\n\nNode.js v22.15.0\n",
			"Error: ENOENT: no such file or directory, open '/work/.env'"},
		{"go", "panic: runtime error: invalid memory address or nil pointer dereference\n[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x47a0f2]\n\n" +
			"goroutine 1 [running]:\nmain.(*agent).run(0x0)\n\t/src/agent/main.go:42 +0x12\nmain.main()\n\t/src/agent/main.go:17 +0x1d\nexit status 2\n",
			"panic: runtime error: invalid memory address or nil pointer dereference"},
		{"java", "Exception in thread \"main\" java.lang.IllegalStateException: wrapper\n\tat a.B.run(B.java:10)\n" +
			"Caused by: java.io.IOException: disk full\n\tat a.C.write(C.java:3)\n\t... 2 more\n",
			"Caused by: java.io.IOException: disk full"},
		{"rust", "thread 'main' panicked at src/main.rs:2:5:\nindex out of bounds: the len is 0 but the index is 0\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
			"thread 'main' panicked at src/main.rs:2:5: index out of bounds: the len is 0 but the index is 0"},
		{"python (the error is last)", "Traceback (most recent call last):\n  File \"/usr/bin/aider\", line 8, in <module>\n    sys.exit(main())\n             ^^^^^^\nModuleNotFoundError: No module named 'litellm'\n",
			"ModuleNotFoundError: No module named 'litellm'"},
		{"nothing but a trace", "Traceback (most recent call last):\n  File \"/usr/bin/aider\", line 8, in <module>\n    sys.exit(main())\n", "sys.exit(main())"},
		// node's heap exhaustion in gemini: the native stack ends on a frame with no symbol, its
		// address alone (google-gemini/gemini-cli#19280 on Linux, #19207 on Windows).
		{"node's native stack, a last frame without a symbol", "<--- JS stacktrace --->\n\n" +
			"FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n----- Native stack trace -----\n\n" +
			" 1: 0x7a6b3b node::OOMErrorHandler(char const*, v8::OOMDetails const&) [/home/u/.nvm/versions/node/v25.4.0/bin/node]\n" +
			" 2: 0xbf504a  [/home/u/.nvm/versions/node/v25.4.0/bin/node]\n 9: 0x7f36fe63aa36 \n",
			"FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"},
		{"node's native stack on Windows", "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory\n----- Native stack trace -----\n\n" +
			" 1: 00007FF700701427 node::SetCppgcReference+16599\n10: 00007FF700D107DB v8::base::AddressSpaceReservation::AddressSpaceReservation+323419\n11: 00007FF6A126D4BA\n",
			"FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"},
		{"no trace", "running tests\nat least one test failed\n", "at least one test failed"},
		{"a time is no frame", "Error: the meeting tool failed\nrescheduled at 10:30\nat 12:45:10\n", "at 12:45:10"},
	}
	// claude's own preset knows the raw-mode error: a retry meets it again.
	if f := Classify(Observation{ExitCode: 1, Output: []byte(nodeTrace)}, nil, PresetFor(taskfile.PresetClaude)); f == nil ||
		f.Class != taskfile.ClassAgentExit || f.Code != CodeNeedsTerminal || f.RetryEligible || f.Message != "claude: "+raw || !strings.Contains(f.Hint, "claude -p") {
		t.Errorf("claude without a terminal: %+v", f)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := Classify(Observation{ExitCode: 1, Output: []byte(c.out)}, nil, nil)
			if want := "agent exited with status 1: " + c.want; f == nil || f.Message != want {
				t.Errorf("got %+v\nwant message %q", f, want)
			}
			if got, want := LastLineSuffix([]byte(c.out)), ": "+c.want; got != want {
				t.Errorf("LastLineSuffix = %q, want %q", got, want)
			}
		})
	}
}

// A rule that matches inside a JSON event quotes the words it matched, not the event.
func TestRuleMatchQuotesWords(t *testing.T) {
	curl := `{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"bash -lc 'curl -sf https://api.example.com/v1/models'","aggregated_output":"curl: (6) Could not resolve host: api.example.com\n","exit_code":6,"status":"failed"}}` + "\n"
	f := Classify(Observation{ExitCode: 1, Output: []byte(curl)}, []taskfile.ClassifyRule{clsRule("Could not resolve host", taskfile.ClassTransport, 0)}, PresetFor(taskfile.PresetCodex))
	if want := "output matched classify rule 1 (Could not resolve host): curl: (6) Could not resolve host: api.example.com"; f == nil || f.Message != want {
		t.Errorf("a tool's output: got %+v, want message %q", f, want)
	}
	ev := `{"type":"error","message":"API Error: Overloaded, retrying later","request_id":"req_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}` + "\n"
	f = Classify(Observation{ExitCode: 1, Output: []byte(ev)}, []taskfile.ClassifyRule{clsRule("(?i)overloaded", taskfile.ClassTransport, 0)}, nil)
	if want := "output matched classify rule 1 ((?i)overloaded): API Error: Overloaded, retrying later"; f == nil || f.Message != want {
		t.Errorf("user rule: got %+v, want message %q", f, want)
	}
}

// FuzzLastWords: no panic, and what a message quotes is one bounded line of valid text.
func FuzzLastWords(f *testing.F) {
	f.Add([]byte("Error: x\n    at f (a.js:1:2) {\n  code: 'E'\n}\nNode.js v22.1.0\n"))
	f.Add([]byte("panic: x\n\ngoroutine 1 [running]:\nmain.main()\n\t/a.go:3 +0x1d\nexit status 2\n"))
	f.Add([]byte(`{"type":"item.started","item":{"type":"command_execution","command":"bash -lc 'a'"}}` + "\n}\n"))
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{}}]}}`))
	f.Fuzz(func(t *testing.T, out []byte) {
		w := LastWords(out)
		if strings.ContainsAny(w, "\n\r") || len(w) > maxMessageLine+len("…") || !utf8.ValidString(w) {
			t.Fatalf("LastWords(%q) = %q", out, w)
		}
	})
}

// The agent's own work — its messages, its tool calls and their output — is no banner of its
// CLI: a test that printed "401 Unauthorized" does not disable the agent, a message about rate
// limits does not park the run. The CLI's error events still decide.
func TestAgentWorkIsNoBanner(t *testing.T) {
	cases := []struct {
		name, preset, out string
		class             taskfile.Class
	}{
		{"codex, a test's 401", taskfile.PresetCodex, `{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"bash -lc 'go test ./api'","aggregated_output":"--- FAIL: TestLogin\n    got 401 Unauthorized, want 200\n","exit_code":1,"status":"failed"}}` + "\n", taskfile.ClassAgentExit},
		{"codex, its message on rate limits", taskfile.PresetCodex, `{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"The client now backs off on 429 Too Many Requests and rate limit headers."}}` + "\n", taskfile.ClassAgentExit},
		{"claude, a tool's output", taskfile.PresetClaude, `{"type":"user","message":{"role":"user","content":[{"tool_use_id":"t1","type":"tool_result","content":"curl: (7) Failed to connect: Connection refused","is_error":true}]}}` + "\n", taskfile.ClassAgentExit},
		{"opencode, its text", taskfile.PresetOpencode, `{"type":"text","part":{"type":"text","text":"Your credit balance is too low is what the billing page says when the card fails."}}` + "\n", taskfile.ClassAgentExit},
		{"gemini, a tool's result", taskfile.PresetGemini, `{"type":"tool_result","tool_id":"t1","status":"error","output":"Error: insufficient_quota in fixture"}` + "\n", taskfile.ClassAgentExit},
		// the CLI's own words still decide
		{"codex, its error item", taskfile.PresetCodex, `{"type":"item.completed","item":{"id":"item_0","type":"error","message":"stream disconnected before completion: Connection reset by peer"}}` + "\n", taskfile.ClassTransport},
		{"claude, its API error message", taskfile.PresetClaude, `{"type":"assistant","message":{"model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}"}]}}` + "\n", taskfile.ClassTransport},
		{"plain text", taskfile.PresetCodex, "ERROR: unexpected status 401 Unauthorized: Incorrect API key provided\n", taskfile.ClassAuth},
	}
	for _, c := range cases {
		f := Classify(Observation{ExitCode: 1, Output: []byte(c.out)}, nil, PresetFor(c.preset))
		if f == nil || f.Class != c.class {
			t.Errorf("%s: got %+v, want %s", c.name, f, c.class)
		}
	}
}

// A CLI's trailer is passed over for the line that says the cause: a parser's pointer to --help
// for its error line, an error block's last advice for its head; a block the CLI went on past
// (an edit applied after it) is not its last word.
func TestLastWordsPassOverTrailers(t *testing.T) {
	for _, c := range []struct{ out, want string }{
		{"ls: unrecognized option '--frob'\nTry 'ls --help' for more information.\n", "ls: unrecognized option '--frob'"},
		{"Error: unknown flag: --frob\nUsage:\n  tool run [flags]\n\nRun 'tool run --help' for usage.\n", "Error: unknown flag: --frob"},
		{"Usage: x [OPTIONS]\n\nFor more information, try '--help'.\n", "For more information, try '--help'."}, // no error above: nothing better to say
		{"The LLM did not conform to the edit format.\nhttps://aider.chat/docs/troubleshooting/edit-errors.html\n\n# 2 SEARCH/REPLACE blocks failed to match!\n\nDon't re-send them.\n",
			"The LLM did not conform to the edit format. (2 SEARCH/REPLACE blocks failed to match!)"},
		{"The LLM did not conform to the edit format.\n# 1 SEARCH/REPLACE block failed to match!\nTokens: 9k sent, 200 received.\nApplied edit to src/a.py\n", "Applied edit to src/a.py"},
		// What Node and a terminal-less start print whatever the agent does are not its words.
		{"Reading src/price.ts\nWarning: 256-color support not detected. Using a terminal with at least 256-color support is recommended for a better visual experience.\n", "Reading src/price.ts"},
		{"Thinking about the retry loop\n(node:4242) [DEP0040] DeprecationWarning: The `punycode` module is deprecated. Please use a userland alternative instead.\n(Use `node --trace-deprecation ...` to show where the warning was created)\n", "Thinking about the retry loop"},
	} {
		if got := LastWords([]byte(c.out)); got != c.want {
			t.Errorf("LastWords(%q)\n got %q\nwant %q", c.out, got, c.want)
		}
	}
}

// A node CLI that prints its error object as "[object Object]" said what failed above it: the
// API's JSON body, or the line before (gemini's text from google-gemini/gemini-cli#13553).
func TestLastWordsPassOverObjectPlaceholder(t *testing.T) {
	gemini404 := "Loaded cached credentials.\n" +
		"Error when talking to Gemini API Full report available at: /tmp/gemini-client-error-Turn.run-sendMessageStream-2025-11-21T03-01-36-648Z.json\n" +
		"[API Error: [{\n  \"error\": {\n    \"code\": 404,\n    \"message\": \"Requested entity was not found.\",\n    \"errors\": [\n      {\n" +
		"        \"message\": \"Requested entity was not found.\",\n        \"domain\": \"global\",\n        \"reason\": \"notFound\"\n      }\n    ],\n" +
		"    \"status\": \"NOT_FOUND\"\n  }\n}\n]]\nAn unexpected critical error occurred:\n[object Object]\n\n"
	for _, c := range []struct{ out, want string }{
		{gemini404, "An unexpected critical error occurred: Requested entity was not found."},
		{"Error: model gemini-9 is not available for this account\n[object Object]\n", "Error: model gemini-9 is not available for this account"},
		{"Error: [object Object]\n", "Error: [object Object]"}, // nothing else was said
	} {
		if got := LastWords([]byte(c.out)); got != c.want {
			t.Errorf("LastWords(%q)\n got %q\nwant %q", c.out, got, c.want)
		}
	}
}

// A runtime that dies of a fatal error is ended by a signal the shell reports last ("Aborted
// (core dumped)" for node's abort()): the runtime's own line names the cause. Node's words and
// native stack as jestjs/jest#9980 and google-gemini/gemini-cli#4359 quote them.
func TestLastWordsPassOverSignalReport(t *testing.T) {
	const (
		gcs    = "<--- Last few GCs --->\n\n[10418:0x608a1e0]   232289 ms: Scavenge (reduce) 982.5 (998.4) -> 981.9 (999.4) MB, 19.0 / 0.0 ms  (average mu = 0.299, current mu = 0.342) allocation failure \n\n\n<--- JS stacktrace --->\n\n"
		mark   = "FATAL ERROR: Ineffective mark-compacts near heap limit Allocation failed - JavaScript heap out of memory"
		limit  = "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"
		native = " 1: 0xa04200 node::Abort() [/opt/hostedtoolcache/node/14.15.4/x64/bin/node]\n 2: 0x94e4e9 node::FatalError(char const*, char const*) [/opt/hostedtoolcache/node/14.15.4/x64/bin/node]\n" +
			" 3: 0xb797be v8::Utils::ReportOOMFailure(v8::internal::Isolate*, char const*, bool) [/opt/hostedtoolcache/node/14.15.4/x64/bin/node]\n"
		native22 = "----- Native stack trace -----\n\n 1: 0x557067693af3 node::OOMErrorHandler(char const*, v8::OOMDetails const&) [node]\n 2: 0x557067ac1f04 v8::Utils::ReportOOMFailure(v8::internal::Isolate*, char const*, v8::OOMDetails const&) [node]\n"
	)
	for _, c := range []struct{ out, want, died string }{
		{gcs + mark + "\n" + native + "Aborted (core dumped)\n", mark, mark},
		{gcs + limit + "\n" + native22 + "Aborted (core dumped)\n", limit, limit},
		{limit + "\nAborted\n", limit, limit},
		// the agent's own process, which no shell ran: its native stack is its last word
		{gcs + limit + "\n" + native22, limit, ""},
		// nothing above names an error
		{"compiling 3 files\nSegmentation fault (core dumped)\n", "Segmentation fault (core dumped)", ""},
	} {
		if got := LastWords([]byte(c.out)); got != c.want {
			t.Errorf("LastWords(%q)\n got %q\nwant %q", c.out, got, c.want)
		}
		if got := DiedOf([]byte(c.out)); got != c.died {
			t.Errorf("DiedOf(%q) = %q, want %q", c.out, got, c.died)
		}
	}
}

// A banner rule that matches a property of a printed error ("  status: 500") quotes the error's
// message, not the property (gemini's 500, captured in testdata/presets/gemini_api_server.txt).
func TestRuleOnPropertyQuotesError(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "presets", "gemini_api_server.txt"))
	if err != nil {
		t.Fatal(err)
	}
	f := Classify(Observation{ExitCode: 244, Output: out}, nil, PresetFor(taskfile.PresetGemini))
	const want = "gemini: An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	if f == nil || f.Class != taskfile.ClassTransport || f.Message != want {
		t.Errorf("got %+v\nwant message %q", f, want)
	}
	node := "Error: connect ECONNREFUSED 127.0.0.1:5432\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16) {\n  errno: -111,\n  code: 'ECONNREFUSED',\n  syscall: 'connect'\n}\n"
	f = Classify(Observation{ExitCode: 1, Output: []byte(node)}, []taskfile.ClassifyRule{clsRule("code: 'ECONNREFUSED'", taskfile.ClassTransport, 0)}, nil)
	if want := "output matched classify rule 1 (code: 'ECONNREFUSED'): Error: connect ECONNREFUSED 127.0.0.1:5432"; f == nil || f.Message != want {
		t.Errorf("got %+v\nwant message %q", f, want)
	}
}
