package autopsy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// The failure-scenario set: whole runs as a night's run would leave them (the task file, every
// task's attempts with their exit codes, durations, files changed and post trees, the agent's and
// the verify command's logs on disk, the verify command run on the base tree), each with the
// verdict a senior engineer reading the same evidence would give and the first command they would
// run. It goes through gather and report like `mulligan autopsy` does, and is scored as a whole:
// `go test ./autopsy -run TestFailureScenarios -v` prints the score.

type scAttempt struct {
	task    string // "" = the scenario's task fix
	agent   string // "" = the task's first agent
	class   string // "" = succeeded
	code    string
	msg     string
	exit    int // -1: none recorded
	files   int
	dur     time.Duration
	tree    string // post tree id ("" = derived from files, so equal counts look alike)
	out     string // the agent's log
	verify  string // the verify log
	prompt  string // the prompt sent ("" = "Fix the failing tests.")
	resetAt *time.Time
}

type scenario struct {
	name      string
	file      string // task file; "" = scFile
	runState  string
	taskState string
	reason    string
	resumeAt  *time.Time
	atts      []scAttempt
	base      *baseVerify
	// want is the verdict category, cmd a pattern the first suggested command must match, and
	// notCmd one no suggested command may match.
	want, cmd, notCmd, notFirst string
}

const scFile = `version: 1
agents:
  claude: {preset: claude}
  codex: {preset: codex}
  gemini: {preset: gemini}
  opencode: {preset: opencode}
tasks:
  - id: fix
    prompt: Fix the failing tests.
    agent: [claude]
    on_failure: retry
    retries: 2
    timeout: 2m
    heartbeat: 1m
    retry_on: [quality_rejection]
    verify: {command: [go, test, ./...]}
  - id: docs
    prompt: Update the docs.
    agent: [claude]
    on_failure: retry
    retries: 2
`

var scNow = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func sc(class, msg string, exit, files int, out string) scAttempt {
	return scAttempt{class: class, msg: msg, exit: exit, files: files, out: out, dur: 40 * time.Second}
}

func (a scAttempt) withVerify(v string) scAttempt  { a.verify = v; return a }
func (a scAttempt) on(agent string) scAttempt      { a.agent = agent; return a }
func (a scAttempt) of(task string) scAttempt       { a.task = task; return a }
func (a scAttempt) took(d time.Duration) scAttempt { a.dur = d; return a }
func (a scAttempt) coded(code string) scAttempt    { a.code = code; return a }
func (a scAttempt) treeID(tree string) scAttempt   { a.tree = tree; return a }
func (a scAttempt) sent(prompt string) scAttempt   { a.prompt = prompt; return a }
func ok(files int) scAttempt                       { return scAttempt{exit: 0, files: files, dur: 30 * time.Second} }
func verifyFail(exit, files int, v string) scAttempt {
	return scAttempt{class: cQuality, code: "verify_failed", msg: fmt.Sprintf("verify `go test ./...` exited with status %d%s", exit, lastLineSuffixOf(v)),
		exit: 0, files: files, verify: v, dur: 50 * time.Second}
}

func lastLineSuffixOf(s string) string {
	if l := lastNonBlank(s); l != "" {
		return ": " + l
	}
	return ""
}

const (
	goFailTwo = "--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 1, want 2\n--- FAIL: TestEmit (0.00s)\n    emit_test.go:30: mismatch\nFAIL\nFAIL\texample.com/p\t0.004s\nFAIL\n"
	goFailOne = "--- FAIL: TestEmit (0.00s)\n    emit_test.go:30: mismatch\nFAIL\nFAIL\texample.com/p\t0.004s\nFAIL\n"
	goSyntax  = "# example.com/p\n./parse.go:41:2: syntax error: unexpected }, expected expression\nFAIL\texample.com/p [build failed]\nFAIL\n"
	noPython  = "python3 -m pytest tests\nmake: python3: No such file or directory\nmake: *** [Makefile:4: test] Error 127\n"
	goProxy   = "go: downloading github.com/google/go-cmp v0.6.0\ngo: github.com/google/go-cmp@v0.6.0: Get \"https://proxy.golang.org/github.com/google/go-cmp/@v/v0.6.0.zip\": dial tcp 142.250.74.17:443: connect: connection refused\n"
)

func scenarios() []scenario {
	future := scNow.Add(3 * time.Hour)
	invented := scNow.Add(30 * time.Minute)
	return []scenario{
		{name: "verify needs python3, which is not installed (exit 127 inside make)", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{verifyFail(2, 3, noPython), verifyFail(2, 2, noPython), verifyFail(2, 3, noPython)},
			base: &baseVerify{ExitCode: 2, Output: noPython}, want: Environment, cmd: `^sudo apt-get install -y python3$`},
		{name: "go test cannot download a module: connection refused to the proxy", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{verifyFail(1, 2, goProxy), verifyFail(1, 2, goProxy)},
			base: &baseVerify{ExitCode: 1, Output: goProxy}, want: Environment, cmd: `^curl -sSI https://`},
		{name: "the agent cannot write the tree: Permission denied (os error 13), nothing changed", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			file: strings.Replace(scFile, "agent: [claude]\n    on_failure: retry\n    retries: 2\n    timeout", "agent: [codex]\n    on_failure: retry\n    retries: 2\n    timeout", 1),
			atts: []scAttempt{
				sc(cAgentExit, "agent exited with status 1: Error: failed to write src/parse.rs: Permission denied (os error 13)", 1, 0, "{\"type\":\"item.completed\",\"item\":{\"type\":\"error\",\"message\":\"failed to write src/parse.rs: Permission denied (os error 13)\"}}\nError: failed to write src/parse.rs: Permission denied (os error 13)\n").on("codex"),
				sc(cAgentExit, "agent exited with status 1: Error: failed to write src/lib.rs: Permission denied (os error 13)", 1, 0, "Error: failed to write src/lib.rs: Permission denied (os error 13)\n").on("codex"),
			},
			want: Environment, cmd: `^ls -ld /src/proj$`},
		{name: "the claude launcher cannot find node (exit 127)", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{sc(cAgentExit, "agent exited with status 127: /usr/bin/env: 'node': No such file or directory", 127, 0, "/usr/bin/env: 'node': No such file or directory\n"),
				sc(cAgentExit, "agent exited with status 127: /usr/bin/env: 'node': No such file or directory", 127, 0, "/usr/bin/env: 'node': No such file or directory\n")},
			want: Environment, cmd: `^command -v node$`},
		{name: "a timeout far too short, hit at the limit each time with the same files", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{
				sc(cTimeout, "the attempt ran past its timeout: Editing src/emit.go", -1, 7, "Reading src/parse.go\nEditing src/emit.go\n").took(2*time.Minute + 80*time.Millisecond).treeID("t7"),
				sc(cTimeout, "the attempt ran past its timeout: Editing src/emit.go", -1, 7, "Reading src/parse.go\nEditing src/emit.go\n").took(2*time.Minute + 60*time.Millisecond).treeID("t7"),
				sc(cTimeout, "the attempt ran past its timeout: Editing src/emit.go", -1, 7, "Reading src/parse.go\nEditing src/emit.go\n").took(2*time.Minute + 90*time.Millisecond).treeID("t7"),
			},
			want: WorkflowBug, cmd: `^\$\{EDITOR:-vi\} /src/proj/mulligan\.yaml$`},
		{name: "one timeout among different failures", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{
				sc(cTimeout, "the attempt ran past its timeout: Running go test", -1, 3, "Running go test\n").took(2 * time.Minute),
				sc(cAgentExit, "agent exited with status 1: API Error: 500 {\"type\":\"error\",\"error\":{\"type\":\"api_error\"}}", 1, 1, "").took(20 * time.Second),
				verifyFail(1, 4, goFailOne),
			},
			want: AgentFlake, cmd: `^mulligan retry-task k3f9abcd fix$`},
		{name: "two identical empty exits with no output", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			file: strings.Replace(scFile, "claude: {preset: claude}", "claude: {preset: generic, command: [claude, -p, \"{{prompt}}\"]}", 1),
			atts: []scAttempt{sc(cAgentExit, "agent exited with status 1", 1, 0, "").took(time.Second), sc(cAgentExit, "agent exited with status 1", 1, 0, "").took(time.Second)},
			want: Unknown, cmd: `^mulligan logs k3f9abcd/fix@2$`, notCmd: `--reload`},
		{name: "529 overloaded then 500 api_error, while a sibling task recovered on retry", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{
				sc(cTransport, "claude: API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}", 1, 0, ""),
				sc(cTransport, "claude: API Error: 500 {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal server error\"}}", 1, 0, ""),
				sc(cTransport, "claude: API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}", 1, 0, ""),
				sc(cTransport, "claude: API Error: 529 Overloaded", 1, 0, "").of("docs"),
				ok(2).of("docs"),
			},
			want: AgentFlake, cmd: `^mulligan retry-task k3f9abcd fix$`},
		{name: "credit balance too low, parked with an invented 30-minute reset", runState: store.RunWaitingQuota, taskState: store.TaskWaitingQuota, reason: "quota", resumeAt: &invented,
			atts: []scAttempt{sc(cQuota, "claude: Credit balance is too low (the output names no reset time: waiting 30m0s)", 1, 0, "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":\"Credit balance is too low\"}\n").coded("usage_limit")},
			want: Environment, cmd: `billing|console\.anthropic\.com|retry-task`, notCmd: `resume .*--now`},
		{name: "opencode monthly usage limit, exit 0", runState: store.RunFailed, taskState: store.TaskFailed,
			file: strings.Replace(scFile, "agent: [claude]\n    on_failure: retry\n    retries: 2\n    timeout", "agent: [opencode]\n    on_failure: retry\n    retries: 2\n    timeout", 1),
			atts: []scAttempt{sc(cQuota, "opencode: Monthly usage limit reached", 0, 0, "{\"type\":\"error\",\"error\":{\"name\":\"APIError\",\"data\":{\"message\":\"Monthly usage limit reached\"}}}\n").on("opencode").coded("credit")},
			want: Environment, cmd: `billing|opencode|retry-task`, notCmd: `resume .*--now`},
		{name: "a 0-byte prompt_file sent as a newline", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			file: strings.Replace(scFile, "prompt: Fix the failing tests.", "prompt_file: prompts/fix.md", 1),
			atts: []scAttempt{
				scAttempt{class: cPayload, code: "is_error", msg: "claude: I don't see a task. What would you like me to do?", exit: 0, files: 0, dur: 5 * time.Second}.sent("\n"),
			},
			want: WorkflowBug, cmd: `^mulligan retry-task k3f9abcd fix$`},
		{name: "a run that succeeded on retry", runState: store.RunSucceeded, taskState: store.TaskSucceeded,
			atts: []scAttempt{sc(cTransport, "claude: API Error: Unable to connect to API (ECONNRESET)", 1, 0, ""), ok(3)},
			want: NoFailure, cmd: `^mulligan show k3f9abcd$`, notCmd: `revert|restore`},
		{name: "the same tests fail as on the base: the agent's changes did not fix them", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{verifyFail(1, 2, goFailTwo).treeID("a"), verifyFail(1, 3, goFailTwo).treeID("b"), verifyFail(1, 2, goFailTwo).treeID("c")},
			base: &baseVerify{ExitCode: 1, Output: goFailTwo}, want: AgentFlake, cmd: `^mulligan retry-task k3f9abcd fix$`},
		{name: "progress: one of the two failing tests fixed", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{verifyFail(1, 2, goFailTwo), verifyFail(1, 3, goFailOne)},
			base: &baseVerify{ExitCode: 1, Output: goFailTwo}, want: AgentFlake, cmd: `^mulligan (retry-task k3f9abcd fix|revert k3f9abcd/fix@2)$`},
		{name: "the agent introduced a syntax error", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{verifyFail(1, 1, goSyntax), verifyFail(1, 1, goSyntax)},
			base: &baseVerify{ExitCode: 1, Output: goFailOne}, want: AgentFlake, cmd: `^mulligan retry-task k3f9abcd fix$`},
		{name: "the verify command names a test file that does not exist", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{
				verifyFail(4, 2, "ERROR: file or directory not found: tests/test_api.py\n\nno tests ran in 0.01s\n"),
				verifyFail(4, 3, "ERROR: file or directory not found: tests/test_api.py\n\nno tests ran in 0.02s\n"),
			},
			base: &baseVerify{ExitCode: 4, Output: "ERROR: file or directory not found: tests/test_api.py\n\nno tests ran in 0.01s\n"},
			want: WorkflowBug, cmd: `^\$\{EDITOR:-vi\} /src/proj/mulligan\.yaml$`},
		{name: "gemini in an untrusted folder (exit 55)", runState: store.RunFailed, taskState: store.TaskFailed,
			file: strings.Replace(scFile, "agent: [claude]\n    on_failure: retry\n    retries: 2\n    timeout", "agent: [gemini]\n    on_failure: retry\n    retries: 2\n    timeout", 1),
			atts: []scAttempt{sc(cAgentExit, "gemini: Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or trust this directory in interactive mode.", 55, 0,
				"Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or trust this directory in interactive mode.\n").on("gemini").coded("nonzero_exit"),
				sc(cAgentExit, "agent exited with status 55: Gemini CLI is not running in a trusted directory.", 55, 0, "Gemini CLI is not running in a trusted directory.\n").on("gemini")},
			want: WorkflowBug, cmd: `GEMINI_CLI_TRUST_WORKSPACE|--skip-trust`}, // (the agent's env in the task file, as round e16's writer judged)
		{name: "codex ran out of room in the context window, twice", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			file: strings.Replace(scFile, "agent: [claude]\n    on_failure: retry\n    retries: 2\n    timeout", "agent: [codex]\n    on_failure: retry\n    retries: 2\n    timeout", 1),
			atts: []scAttempt{
				sc(cAgentExit, "agent exited with status 1: ERROR: Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying.", 1, 4, "ERROR: Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying.\n").on("codex"),
				sc(cAgentExit, "agent exited with status 1: ERROR: Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying.", 1, 5, "ERROR: Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying.\n").on("codex"),
			},
			want: WorkflowBug, cmd: `^\$\{EDITOR:-vi\} /src/proj/mulligan\.yaml$`},
		{name: "claude usage limit with a reset time: parked", runState: store.RunWaitingQuota, taskState: store.TaskWaitingQuota, reason: "quota", resumeAt: &future,
			atts: []scAttempt{sc(cQuota, "claude: You've hit your limit · resets 3pm (UTC) (resets 2026-12-03T15:00:00Z)", 1, 0, "You've hit your limit · resets 3pm (UTC)\n").coded("usage_limit")},
			want: Environment, cmd: `^mulligan (supervise|resume) `},
		{name: "the gemini fallback is not logged in, under a claude chain", runState: store.RunFailed, taskState: store.TaskFailed,
			file: strings.Replace(scFile, "agent: [claude]\n    on_failure: retry\n    retries: 2\n    timeout", "agent: [claude, gemini]\n    on_failure: retry\n    retries: 2\n    timeout", 1),
			atts: []scAttempt{
				sc(cAgentExit, "agent exited with status 1: claude: it went wrong", 1, 2, "it went wrong\n"),
				sc(cAuth, "gemini: Please set an Auth method in your settings.json or specify one of the following environment variables before running: GEMINI_API_KEY", 41, 0, "Please set an Auth method in your settings.json or specify one of the following environment variables before running: GEMINI_API_KEY\n").on("gemini").coded("not_logged_in"),
			},
			want: Environment, cmd: `GEMINI_API_KEY|gemini`, notCmd: `claude /login`},
		{name: "the go build cache disk is full during verify", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{
				verifyFail(1, 2, "go build example.com/p: copying /tmp/go-build1234/b001/exe/a.out: write /home/u/.cache/go-build/ab/ab12-d: no space left on device\nFAIL\texample.com/p [build failed]\n"),
				verifyFail(1, 2, "go build example.com/p: write /home/u/.cache/go-build/cd/cd34-d: no space left on device\nFAIL\texample.com/p [build failed]\n"),
			},
			base: &baseVerify{ExitCode: 1, Output: "write /home/u/.cache/go-build/ef/ef56-d: no space left on device\n"},
			want: Environment, cmd: `^df -h `},
		{name: "tests need a database that is not running", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{
				verifyFail(1, 3, "--- FAIL: TestStore (0.01s)\n    store_test.go:20: dial tcp 127.0.0.1:5432: connect: connection refused\nFAIL\n"),
				verifyFail(1, 2, "--- FAIL: TestStore (0.01s)\n    store_test.go:20: dial tcp 127.0.0.1:5432: connect: connection refused\nFAIL\n"),
			},
			base: &baseVerify{ExitCode: 1, Output: "--- FAIL: TestStore (0.01s)\n    store_test.go:20: dial tcp 127.0.0.1:5432: connect: connection refused\nFAIL\n"},
			want: Environment, cmd: `^sudo systemctl start postgresql$`},
		{name: "the agent breaks a different test each time on a passing base", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{verifyFail(1, 2, goFailOne), verifyFail(1, 2, "--- FAIL: TestParse (0.00s)\nFAIL\n")},
			base: &baseVerify{ExitCode: 0, Output: "ok  \texample.com/p\t0.003s\n"}, want: AgentFlake, cmd: `^mulligan retry-task k3f9abcd fix$`},
		{name: "the agent waits for a confirmation nobody gives", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{
				sc(cHeartbeat, "the agent printed nothing for longer than the heartbeat: Apply these edits? [y/N]", -1, 0, "Planning edits\nApply these edits? [y/N]\n").took(time.Minute + 200*time.Millisecond).treeID("t0"),
				sc(cHeartbeat, "the agent printed nothing for longer than the heartbeat: Apply these edits? [y/N]", -1, 0, "Planning edits\nApply these edits? [y/N]\n").took(time.Minute + 300*time.Millisecond).treeID("t0"),
			},
			want: WorkflowBug, cmd: `^\$\{EDITOR:-vi\} /src/proj/mulligan\.yaml$`},
		{name: "codex offline: Reconnecting… waiting for network", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			file: strings.Replace(scFile, "agent: [claude]\n    on_failure: retry\n    retries: 2\n    timeout", "agent: [codex]\n    on_failure: retry\n    retries: 2\n    timeout", 1),
			atts: []scAttempt{
				sc(cTransport, "codex: Reconnecting... waiting for network (Connection failed: error sending request)", 143, 0, "{\"type\":\"error\",\"message\":\"Reconnecting... 5/5 (stream disconnected before completion: failed to lookup address information: Name does not resolve)\"}\n{\"type\":\"error\",\"message\":\"Reconnecting... waiting for network (Connection failed: error sending request)\"}\n").on("codex").coded("network"),
				sc(cTransport, "codex: Reconnecting... waiting for network (Connection failed: error sending request)", 143, 0, "{\"type\":\"error\",\"message\":\"Reconnecting... waiting for network (Connection failed: error sending request)\"}\n").on("codex").coded("network"),
			},
			want: Environment, cmd: `^curl -sSI https://`},
		{name: "claude cannot reach the API at all", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{
				sc(cTransport, "claude: API Error: Unable to connect to API (ConnectionRefused)", 1, 0, "").coded("network"),
				sc(cTransport, "claude: API Error: Unable to connect to API (ConnectionRefused)", 1, 0, "").coded("network"),
			},
			want: Environment, cmd: `^curl -sSI https://`},
		{name: "a TLS-intercepting proxy", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{
				sc(cTransport, "claude: API Error: Unable to connect to API: Self-signed certificate detected. Check your proxy or corporate SSL certificates", 1, 0, "").coded("network"),
				sc(cTransport, "claude: API Error: Unable to connect to API: Self-signed certificate detected. Check your proxy or corporate SSL certificates", 1, 0, "").coded("network"),
			},
			want: Environment, cmd: `NODE_EXTRA_CA_CERTS|retry-task`},
		{name: "the agent gives up with different reasons", runState: store.RunBlocked, taskState: store.TaskBlocked, reason: "retries-exhausted",
			atts: []scAttempt{
				scAttempt{class: cPayload, code: "is_error", msg: "claude: I could not find where the parser is built", exit: 0, files: 1, dur: time.Minute},
				scAttempt{class: cPayload, code: "is_error", msg: "claude: The tests rely on a fixture I cannot regenerate", exit: 0, files: 2, dur: time.Minute},
			},
			want: AgentFlake, cmd: `^mulligan retry-task k3f9abcd fix$`},
	}
}

// buildScenario writes the logs of s under dir and returns the run as the store would give it.
func buildScenario(t *testing.T, s scenario, dir string) (*store.Run, *taskfile.File) {
	t.Helper()
	content := s.file
	if content == "" {
		content = scFile
	}
	file, err := taskfile.Parse("mulligan.yaml", []byte(content))
	if err != nil {
		t.Fatalf("%s: %v", s.name, err)
	}
	run := &store.Run{ID: "k3f9abcd", Worktree: "/src/proj", TaskFile: "mulligan.yaml", TaskFileContent: []byte(content),
		State: s.runState, Reason: "", StartedAt: scNow.Add(-time.Hour), BaseTree: "0000000000000000000000000000000000000000"}
	tasks := map[string]*store.Task{}
	var order []string
	started := scNow.Add(-50 * time.Minute)
	for _, a := range s.atts {
		id := a.task
		if id == "" {
			id = "fix"
		}
		tk := tasks[id]
		if tk == nil {
			tk = &store.Task{RunID: run.ID, ID: id, State: store.TaskSucceeded}
			if id == "fix" {
				tk.State, tk.Reason, tk.ResumeAt = s.taskState, s.reason, s.resumeAt
			}
			tasks[id] = tk
			order = append(order, id)
		}
		n := len(tk.Attempts) + 1
		agent := a.agent
		if agent == "" {
			agent = file.Task(id).Agents[0]
		}
		if err := os.MkdirAll(filepath.Join(dir, id), 0o700); err != nil {
			t.Fatal(err)
		}
		log := filepath.Join(dir, id, fmt.Sprintf("%d.log", n))
		if err := os.WriteFile(log, []byte(a.out), 0o600); err != nil {
			t.Fatal(err)
		}
		if a.verify != "" {
			if err := os.WriteFile(verifyLog(log), []byte(a.verify), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		prompt := a.prompt
		if prompt == "" {
			prompt = file.Task(id).Prompt + "\n"
		}
		tree := a.tree
		if tree == "" {
			tree = fmt.Sprintf("tree-%d-%d", n, a.files)
		}
		fin := started.Add(a.dur)
		sa := store.Attempt{RunID: run.ID, TaskID: id, N: n, Agent: agent, State: store.AttemptSucceeded, Counted: true,
			StartedAt: started, FinishedAt: &fin, DurationMS: store.Ptr(a.dur.Milliseconds()), FilesChanged: store.Ptr(a.files),
			Ref: fmt.Sprintf("refs/mulligan/runs/%s/%s/%d/post", run.ID, id, n), Tree: tree, Prompt: prompt, Log: log}
		if a.exit >= 0 {
			sa.ExitCode = store.Ptr(a.exit)
		}
		if a.class != "" {
			sa.State, sa.Class, sa.Code, sa.Message = store.AttemptFailed, a.class, a.code, a.msg
			if a.class == cQuota {
				sa.Counted = false
			}
		}
		tk.Attempts = append(tk.Attempts, sa)
		started = fin.Add(10 * time.Second)
	}
	for _, id := range order {
		run.Tasks = append(run.Tasks, *tasks[id])
	}
	fin := scNow
	run.FinishedAt = &fin
	return run, file
}

var scCommands = []string{"run", "ls", "show", "logs", "events", "diff", "resume", "pause", "cancel", "kill", "supervise",
	"retry-task", "revert", "timetravel", "prompt", "stop", "autopsy", "bug", "gc", "snapshot", "restore", "undo", "hooks", "effect", "effects", "compensate"}

func TestFailureScenarios(t *testing.T) {
	all := scenarios()
	score, verdicts := 0, 0
	for _, s := range all {
		r, bad := judgeScenario(t, s, nil)
		if r.Verdict.Category == s.want {
			verdicts++
		}
		if testing.Verbose() {
			t.Logf("%-5v %-26s %-13s %s", len(bad) == 0, r.Verdict.Rule, r.Verdict.Category, s.name)
		}
		if len(bad) == 0 {
			score++
			continue
		}
		t.Errorf("%s:\n  %s\n  why: %s\n  next: %s", s.name, strings.Join(bad, "\n  "), r.Verdict.Why, r.Suggestion.Text)
	}
	t.Logf("failure scenarios: %d of %d right (verdict and first command); verdict alone %d of %d", score, len(all), verdicts, len(all))
	if len(all) < 24 {
		t.Errorf("the set has %d scenarios, want at least 24", len(all))
	}
}
