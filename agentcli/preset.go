package agentcli

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Preset is what mulligan knows of one agent CLI: the command shape it documents, where the prompt
// goes, how its final result and usage are read, and the rules that sort its failure texts into
// classes. Rules come from what the real CLIs print (agentcli/testdata/presets holds captured texts).
type Preset struct {
	Name string
	// Command is the documented invocation, for `command:` in a task file; the prompt is passed as
	// the {{prompt}} argument (every preset CLI takes it on the command line).
	Command []string
	// Install is the hint given when the command is missing.
	Install string
	// Permits says what Command lets the agent do without a question (`mulligan presets`).
	Permits string
	// Grant is the hint of an attempt whose edits the CLI refused: the flag that grants them.
	// GrantMore is the one for another refused tool (a shell command).
	Grant, GrantMore string
	// Result reads the final result and usage from stdout; nil: the CLI prints none we can read.
	Result func(stdout []byte) *AgentResult
	rules  []bannerRule
	// exits are the CLI's documented exit codes (preset_banners.go); verdict reads what its JSON
	// declares; loop is the line of a loop it never leaves offline.
	exits   map[int]exitRule
	verdict func(exitCode int, output []byte) *Failure
	loop    *lazyre.Regexp
	// gaveUp is a line of the error a CLI prints when it gives up and still exits 0 (its first
	// group: the words to quote); retried its notice of a retry; edited its report of an edit
	// it applied (gaveUpFailure).
	gaveUp, retried, edited *lazyre.Regexp
}

// AgentResult is what an agent CLI reported at the end of an attempt.
type AgentResult struct {
	Text      string // the final answer
	HasText   bool   // the CLI printed a result object (Text may still be empty)
	IsError   bool   // the CLI declared the run failed (claude's is_error, gemini's error)
	ErrorText string
	// Unfinished is the event the CLI's stream ends a session with ("result", "turn.completed")
	// when the stream started and that event never came: the CLI stopped before it answered.
	Unfinished string
	TokensIn   *int64
	TokensOut  *int64
	CostUSD    *float64
}

type bannerRule struct {
	re      *lazyre.Regexp
	cls     taskfile.Class
	code    string
	hint    string
	noRetry bool // a retry of the same task meets the same wall
}

// classifyTail is how much of the end of an attempt's output the banner rules read: the verdict
// is at the end, and a bounded read keeps classification linear in a small constant.
const classifyTail = 16 << 10

func rule(cls taskfile.Class, code, hint, pattern string) bannerRule {
	return bannerRule{re: lazyre.New(pattern), cls: cls, code: code, hint: hint}
}

// Rules shared by every preset (generic included), checked in this order: quota, auth, transport.
var commonRules = []bannerRule{
	rule(taskfile.ClassQuota, "usage_limit", "", `(?i)usage limit|hit your (?:usage )?limit|\d+-hour limit reached|limit reached\W+resets|credit balance is too low|insufficient_quota|exceeded your current quota|quota exceeded|RESOURCE_EXHAUSTED`),
	rule(taskfile.ClassQuota, "rate_limit", "", `(?i)rate[ _-]?limit(?:ed)?|too many requests|status(?: code)?:? 429\b|\b429 Too Many|retry-after:`),
	rule(taskfile.ClassAuth, "not_logged_in", "", `(?i)not logged in|please run /login|please log ?in|run .?\w+ login|please set an auth method`),
	// A login that lapsed: "Please log out and sign in again", "Please try signing in again",
	// "please re-authenticate". Only as a request ("please …"): an agent's answer may well talk
	// of signing in.
	rule(taskfile.ClassAuth, "login_expired", "", `(?i)please (?:log out and |try )?(?:sign(?:ing)?|log(?:ging)?) ?in again|please re-?authenticate|please re-?login`),
	rule(taskfile.ClassAuth, "invalid_key", "", `(?i)invalid (?:x-)?api[ _-]?key|incorrect api key|api key not valid|api key expired|API_KEY_EXPIRED|invalid_api_key|missing api key|no api key|authentication_error|authentication failed|invalid bearer token|oauth token (?:has )?expired|token (?:has )?expired|401 unauthorized|status(?: code)?:? 401\b|\bunauthorized\b`),
	rule(taskfile.ClassTransport, "network", "", `(?i)\bE(?:CONNRESET|CONNREFUSED|TIMEDOUT|NOTFOUND|AI_AGAIN|NETUNREACH)\b|fetch failed|failed to lookup address|name does not resolve|getaddrinfo|could not resolve host|unable to connect|cannot connect to api|connection (?:reset|refused|failed|error)|stream disconnected|network is unreachable|socket hang up|waiting for network|error sending request`),
	rule(taskfile.ClassTransport, "server_error", "", `(?i)overloaded|internal server error|bad gateway|service unavailable|gateway timeout|status(?: code)?:? 5\d\d\b|\b5(?:00|02|03|04|29)\b\s*(?:error|server|from)|\bapi_error\b`),
}

var presets = map[string]*Preset{
	taskfile.PresetClaude: {
		Name:    taskfile.PresetClaude,
		Command: taskfile.PresetCommands[taskfile.PresetClaude],
		Install: "install it: npm install -g @anthropic-ai/claude-code, then claude /login",
		Permits: "edits files in the tree and runs file commands (mkdir, mv, cp) without a question (--permission-mode acceptEdits); any other shell command is refused",
		Grant:   "claude needs --permission-mode acceptEdits (the preset's command has it) or --allowedTools Write,Edit in the agent's command",
		GrantMore: "grant the command in the agent's command: --allowedTools 'Bash(go test:*)' (one rule per command), " +
			"or --permission-mode bypassPermissions to allow everything (only in a sandbox)",
		Result:  claudeResult,
		verdict: claudeVerdict,
	},
	taskfile.PresetCodex: {
		Name:      taskfile.PresetCodex,
		Command:   taskfile.PresetCommands[taskfile.PresetCodex],
		Install:   "install it: npm install -g @openai/codex, then codex login",
		Permits:   "edits files and runs commands inside the working tree, without network (--sandbox workspace-write); writes outside it are refused",
		Grant:     "codex exec runs read-only unless told: add --sandbox workspace-write to the agent's command (the preset's command has it)",
		GrantMore: "--sandbox danger-full-access lifts codex's sandbox (network, writes outside the tree): only where the machine is a sandbox itself",
		Result:    codexResult,
		rules:     codexRules,
		loop:      codexLoop,
	},
	taskfile.PresetGemini: {
		Name:      taskfile.PresetGemini,
		Command:   taskfile.PresetCommands[taskfile.PresetGemini],
		Install:   "install it: npm install -g @google/gemini-cli, then set GEMINI_API_KEY or log in",
		Permits:   "edits files without a question (--approval-mode auto_edit); headless gemini offers no shell tool in that mode",
		Grant:     "headless gemini offers its edit tools only when its approval mode allows edits: add --approval-mode auto_edit to the agent's command (the preset's command has it)",
		GrantMore: "--approval-mode yolo lets gemini run every tool, shell commands included (gemini then starts its sandbox by default)",
		Result:    geminiResult,
		rules: []bannerRule{
			noRetry(rule(taskfile.ClassAgentExit, CodeUntrusted, geminiTrustHint, `(?i)not running in a trusted directory`)),
		},
		exits: geminiExits,
	},
	taskfile.PresetAider: {
		Name:    taskfile.PresetAider,
		Command: taskfile.PresetCommands[taskfile.PresetAider],
		Install: "install it: python -m pip install aider-install && aider-install",
		Permits: "edits the files it adds to the chat and answers yes to every question (--yes-always); commits nothing (--no-auto-commits): mulligan snapshots the tree",
		Result:  aiderResult,
		rules:   aiderRules,
		gaveUp:  aiderGaveUp,
		retried: aiderRetried,
		edited:  aiderEdited,
	},
	taskfile.PresetOpencode: {
		Name:    taskfile.PresetOpencode,
		Command: taskfile.PresetCommands[taskfile.PresetOpencode],
		Install: "install it: npm install -g opencode-ai, then opencode auth login",
		Permits: "what opencode's permission settings allow (by default: edits and shell commands); a permission set to ask is refused headless, --auto approves those",
		Grant:   `opencode's permission settings refused the edit: allow it in opencode.json ("permission": {"edit": "allow"}), or add --auto to the agent's command to approve what they ask for`,
		GrantMore: `allow the command in opencode.json ("permission": {"bash": {"go test *": "allow"}}, one rule per command), ` +
			"or add --auto to the agent's command to approve every permission set to ask (only in a sandbox)",
		Result:  opencodeResult,
		verdict: opencodeVerdict,
		gaveUp:  cliErrorLine,
	},
	taskfile.PresetGeneric: {Name: taskfile.PresetGeneric},
}

// PresetFor returns the preset of that name; unknown names get generic.
func PresetFor(name string) *Preset {
	if p, ok := presets[name]; ok {
		return p
	}
	return presets[taskfile.PresetGeneric]
}

var ansiRe = lazyre.New(`\x1b\[[0-9;?]*[A-Za-z]`)

// ClassifyOutput sorts a failed attempt's output by the preset's banners. A non-zero exit is read
// whole (its bounded tail); an exit 0 only when the CLI's own result declares an error, or when
// its last words are its own error (gaveUpFailure), so an agent that merely talks about rate
// limits in a successful answer is not taken for one.
func (p *Preset) ClassifyOutput(exitCode int, output []byte) *Failure {
	if len(output) > classifyTail {
		output = output[len(output)-classifyTail:]
	}
	if p.verdict != nil {
		if f := p.verdict(exitCode, output); f != nil {
			return f
		}
	}
	if exitCode != 0 {
		if f := p.exitFailure(exitCode, output); f != nil {
			return f
		}
	}
	if exitCode == 0 {
		var res *AgentResult
		if p.Result != nil {
			res = p.Result(output)
		}
		if res == nil || !res.IsError {
			return p.gaveUpFailure(output)
		}
		return p.matchRules([]byte(res.ErrorText))
	}
	// The CLI's own error text first: its words decide, and the message quotes them. Its JSON
	// lines say no more than it (their field names are no banners: "api_error_status": null).
	if p.Result != nil {
		if res := p.Result(output); res != nil && strings.TrimSpace(res.ErrorText) != "" {
			if f := p.matchRules([]byte(res.ErrorText)); f != nil {
				return f
			}
			return p.matchRules(withoutJSONLines(output))
		}
	}
	return p.matchRules(withoutAgentWork(output))
}

// matchRules applies the preset's rules, then the specific and the common ones, to text; the
// message quotes the matching line (a JSON line by its message). Blank text matches none of them
// (TestBannerRulesNeedText): an agent that printed nothing costs no compilation of them.
func (p *Preset) matchRules(text []byte) *Failure {
	if len(bytes.TrimSpace(text)) == 0 {
		return nil
	}
	text = ansiRe.ReplaceAll(text, nil)
	for _, rs := range [][]bannerRule{p.rules, apiRules[p.Name], specificRules, commonRules} {
		for _, r := range rs {
			loc := r.re.FindIndex(text)
			if loc == nil {
				continue
			}
			f := &Failure{Class: r.cls, Code: r.code, Message: p.Name + ": " + matchedLine(text, loc, r.re.FindStringIndex), Hint: r.hint, NoRetry: r.noRetry}
			if f.Hint == "" {
				f.Hint = p.hintFor(r.cls)
			}
			return f
		}
	}
	return nil
}

func (p *Preset) hintFor(c taskfile.Class) string {
	switch c {
	case taskfile.ClassAuth:
		switch p.Name {
		case taskfile.PresetClaude:
			return "log in: claude /login (or set ANTHROPIC_API_KEY)"
		case taskfile.PresetCodex:
			return "log in: codex login (or set OPENAI_API_KEY)"
		case taskfile.PresetGemini:
			return "set GEMINI_API_KEY, or run gemini once to choose an auth method"
		case taskfile.PresetOpencode:
			return "log in: opencode auth login"
		case taskfile.PresetAider:
			return "set the API key of aider's model (e.g. ANTHROPIC_API_KEY or OPENAI_API_KEY)"
		}
		return "log the agent CLI in, or set its API key"
	case taskfile.ClassTransport:
		return "check the network (DNS, proxy) and the provider's status page"
	}
	return ""
}

// jsonValues decodes every top-level JSON object of b in order (JSONL or one pretty-printed
// object), skipping text that is not JSON.
func jsonValues(b []byte) []map[string]any {
	var out []map[string]any
	scanJSON(b, "{", func(raw []byte) {
		var v map[string]any
		if json.Unmarshal(raw, &v) == nil {
			out = append(out, v)
		}
	})
	return out
}

// scanJSON calls fn with each complete top-level JSON value of b that starts with one of the
// opener bytes. It runs in time linear in len(b): after a syntax error the scan goes on where the
// error was found (not one byte further), and a value that never closes ends the scan.
func scanJSON(b []byte, openers string, fn func(raw []byte)) {
	for i := 0; i < len(b); {
		j := bytes.IndexAny(b[i:], openers)
		if j < 0 {
			return
		}
		start := i + j
		dec := json.NewDecoder(bytes.NewReader(b[start:]))
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == nil {
			fn(raw)
			i = start + int(dec.InputOffset())
			continue
		}
		var se *json.SyntaxError
		if !errors.As(err, &se) {
			return // unexpected EOF: nothing after this opener closes it
		}
		i = start + max(1, int(se.Offset)-1)
	}
}

func num(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

func intp(v float64) *int64 { n := int64(v); return &n }
func addInt(p *int64, v float64) *int64 {
	if p == nil {
		return intp(v)
	}
	n := *p + int64(v)
	return &n
}

func path(m map[string]any, keys ...string) any { return Field(m, keys...) }

// Field walks a decoded JSON value along object keys: nil where one is missing.
func Field(v any, keys ...string) any {
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[k]
	}
	return v
}

// claudeResult reads `claude -p --output-format json` (one object) or stream-json (the last
// {"type":"result"} line): is_error, result, usage, total_cost_usd. A stream-json session ended
// before its result (cancelled, superseded, killed) is read for the usage its assistant messages
// reported so far: what it was billed for, without a cost (claude prints that at the end).
func claudeResult(stdout []byte) *AgentResult {
	var last map[string]any
	vals := jsonValues(stdout)
	for _, v := range vals {
		if v["type"] == "result" {
			last = v
		}
	}
	if last == nil {
		r := claudeRunningUsage(vals)
		if slices.ContainsFunc(vals, func(v map[string]any) bool { return v["session_id"] != nil }) {
			// stream-json that never printed its result
			if r == nil {
				r = &AgentResult{}
			}
			r.Unfinished = "result"
		}
		return r
	}
	r := &AgentResult{HasText: true}
	r.Text, _ = last["result"].(string)
	switch e, _ := last["is_error"].(bool); {
	case claudeTurnLimit(last):
		// Stopped by --max-turns, whatever is_error says: the work was not finished.
		r.IsError, r.ErrorText = true, claudeTurnLimitSays(last)
	case e:
		r.IsError, r.ErrorText = true, orText(r.Text, claudeErrors(last))
		if sub, _ := last["subtype"].(string); r.ErrorText == "" && strings.HasPrefix(sub, "error_") {
			r.ErrorText = sub // error_during_execution, error_max_budget_usd: at least what ended it
		}
	}
	if u, ok := last["usage"].(map[string]any); ok {
		for _, k := range []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"} {
			if n, ok := num(u[k]); ok {
				r.TokensIn = addInt(r.TokensIn, n)
			}
		}
		if n, ok := num(u["output_tokens"]); ok {
			r.TokensOut = intp(n)
		}
	}
	if c, ok := num(last["total_cost_usd"]); ok {
		r.CostUSD = &c
	}
	return r
}

// claudeRunningUsage sums the usage of the assistant messages of a stream-json session that
// printed no result; each message counts once (claude repeats it on each of its content blocks).
// nil when it printed none.
func claudeRunningUsage(vals []map[string]any) *AgentResult {
	var r *AgentResult
	seen := map[string]bool{}
	for _, v := range vals {
		if v["type"] != "assistant" {
			continue
		}
		u, ok := path(v, "message", "usage").(map[string]any)
		id, _ := path(v, "message", "id").(string)
		if !ok || seen[id] && id != "" {
			continue
		}
		seen[id] = true
		if r == nil {
			r = &AgentResult{}
		}
		for _, k := range []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"} {
			if n, ok := num(u[k]); ok {
				r.TokensIn = addInt(r.TokensIn, n)
			}
		}
		if n, ok := num(u["output_tokens"]); ok {
			r.TokensOut = addInt(r.TokensOut, n)
		}
	}
	return r
}

// codexResult reads `codex exec --json` events: the last agent_message item is the result,
// turn.completed carries usage, turn.failed (and a final error event) declare failure.
func codexResult(stdout []byte) *AgentResult {
	vals := jsonValues(stdout)
	if len(vals) == 0 {
		return nil
	}
	r := &AgentResult{}
	seen, started, ended := false, false, false
	for _, v := range vals {
		switch v["type"] {
		case "thread.started", "turn.started":
			started = true
		case "item.completed":
			if path(v, "item", "type") == "agent_message" {
				r.Text, _ = path(v, "item", "text").(string)
				r.HasText, seen = true, true
			}
		case "turn.completed":
			seen, ended = true, true
			if n, ok := num(path(v, "usage", "input_tokens")); ok {
				r.TokensIn = addInt(r.TokensIn, n)
			}
			if n, ok := num(path(v, "usage", "output_tokens")); ok {
				r.TokensOut = addInt(r.TokensOut, n)
			}
		case "turn.failed":
			seen, ended = true, true
			r.IsError = true
			r.ErrorText, _ = path(v, "error", "message").(string)
		case "error":
			seen = true
			r.ErrorText, _ = v["message"].(string)
		}
	}
	if started && !ended {
		seen, r.Unfinished = true, "turn.completed"
	}
	if !seen {
		return nil
	}
	return r
}

// geminiResult reads `gemini -p -o json`: {"response", "stats": {"models": {M: {"tokens": …}}},
// "error": {"type", "message", "code"}}, or `-o stream-json` events (geminiStreamResult).
func geminiResult(stdout []byte) *AgentResult {
	vals := jsonValues(stdout)
	for _, v := range vals {
		if t, _ := v["type"].(string); t == "init" || t == "result" || t == "message" || t == "tool_use" {
			return geminiStreamResult(vals)
		}
	}
	var obj map[string]any
	for _, v := range vals {
		if _, ok := v["response"]; ok {
			obj = v
		} else if _, ok := v["error"]; ok {
			obj = v
		}
	}
	if obj == nil {
		return nil
	}
	r := &AgentResult{}
	if s, ok := obj["response"].(string); ok {
		r.Text, r.HasText = s, true
	}
	if e, ok := obj["error"].(map[string]any); ok {
		r.IsError = true
		r.ErrorText = geminiErrorText(e)
	}
	if models, ok := path(obj, "stats", "models").(map[string]any); ok {
		for _, m := range models {
			mm, _ := m.(map[string]any)
			if n, ok := num(path(mm, "tokens", "prompt")); ok {
				r.TokensIn = addInt(r.TokensIn, n)
			}
			if n, ok := num(path(mm, "tokens", "candidates")); ok {
				r.TokensOut = addInt(r.TokensOut, n)
			}
		}
	}
	return r
}

// geminiStreamResult reads `gemini -p -o stream-json`: the assistant's messages after the last
// tool call are the answer (sent in pieces, "delta": true), the result event carries the status,
// the error and the stats (input_tokens counts cached input too, as claude's and codex's do).
func geminiStreamResult(vals []map[string]any) *AgentResult {
	r := &AgentResult{}
	var text strings.Builder
	var lastError string // the last error event's words (a stream cut: "Model stream ended …")
	r.Unfinished = "result"
	for _, v := range vals {
		switch v["type"] {
		case "error":
			if s, _ := v["message"].(string); s != "" {
				lastError = s
			}
		case "message":
			if v["role"] == "assistant" {
				s, _ := v["content"].(string)
				text.WriteString(s)
				r.HasText = true
			}
		case "tool_use":
			text.Reset()
		case "result":
			r.Unfinished = ""
			if e, ok := v["error"].(map[string]any); ok || v["status"] == "error" {
				r.IsError = true
				r.ErrorText = orText(geminiErrorText(e), lastError)
			}
			if n, ok := num(path(v, "stats", "input_tokens")); ok {
				r.TokensIn = intp(n)
			}
			if n, ok := num(path(v, "stats", "output_tokens")); ok {
				r.TokensOut = intp(n)
			}
		}
	}
	r.Text = text.String()
	if r.Unfinished != "" {
		r.ErrorText = lastError
	}
	return r
}

// geminiErrorText is the message of gemini's error object; an API error's JSON ({"error":
// {"message"}}) quoted whole in it is read for its message, and an error with no message is named
// by its type (INVALID_STREAM).
func geminiErrorText(e map[string]any) string {
	msg, _ := e["message"].(string)
	// the API's JSON, whole or wrapped: "[API Error: {"error": {"message": …}}]"
	if i, j := strings.IndexByte(msg, '{'), strings.LastIndexByte(msg, '}'); i >= 0 && j > i {
		var inner map[string]any
		if json.Unmarshal([]byte(msg[i:j+1]), &inner) == nil {
			if s, ok := path(inner, "error", "message").(string); ok && s != "" {
				msg = s
			}
		}
	}
	t, _ := e["type"].(string)
	switch {
	case strings.TrimSpace(msg) == "":
		msg = t
	case t != "" && t != "Error" && t != "unknown" && !strings.Contains(msg, t): // (gemini types what it cannot name "unknown")
		msg += " (" + t + ")"
	}
	return msg
}

// opencodeResult reads `opencode run --format json` events: text parts are the answer, a step
// that started and never finished was cut, step-finish parts carry tokens (input is the uncached part: cache reads and writes are added,
// as claude's and codex's input counts them) and cost.
func opencodeResult(stdout []byte) *AgentResult {
	vals := jsonValues(stdout)
	r := &AgentResult{}
	seen, open := false, false // open: a step started and has not finished
	var text strings.Builder
	for _, v := range vals {
		part, _ := v["part"].(map[string]any)
		if part == nil {
			if v["type"] == "error" {
				seen, r.IsError = true, true
				r.ErrorText, _ = path(v, "error", "data", "message").(string)
			}
			continue
		}
		switch part["type"] {
		case "step-start":
			open = true
		case "text":
			if s, ok := part["text"].(string); ok {
				text.WriteString(s)
				seen, r.HasText = true, true
			}
		case "step-finish":
			seen, open = true, false
			for _, k := range [][]string{{"tokens", "input"}, {"tokens", "cache", "read"}, {"tokens", "cache", "write"}} {
				if n, ok := num(path(part, k...)); ok {
					r.TokensIn = addInt(r.TokensIn, n)
				}
			}
			if n, ok := num(path(part, "tokens", "output")); ok {
				r.TokensOut = addInt(r.TokensOut, n)
			}
			if c, ok := num(part["cost"]); ok {
				if r.CostUSD == nil {
					r.CostUSD = new(float64)
				}
				*r.CostUSD += c
			}
		}
	}
	if open {
		seen, r.Unfinished = true, "step_finish"
	}
	if !seen {
		return nil
	}
	r.Text = text.String()
	return r
}

var aiderTokensRe = lazyre.New(`Tokens: ([\d.]+)(k?) sent(?:, [^,]*?cache[^,]*)*, ([\d.]+)(k?) received\.(?:\s*Cost: \$[\d.]+ message, \$([\d.]+) session\.)?`)

// aiderResult reads aider's usage line: "Tokens: 2.3k sent, 120 received. Cost: $0.01 message,
// $0.05 session." (the last one; session cost is cumulative).
func aiderResult(stdout []byte) *AgentResult {
	ms := aiderTokensRe.FindAllSubmatch(stdout, -1)
	if len(ms) == 0 {
		return nil
	}
	r := &AgentResult{}
	var in, out float64
	for _, m := range ms {
		in += kNum(m[1], m[2])
		out += kNum(m[3], m[4])
		if len(m[5]) > 0 {
			if c, err := strconv.ParseFloat(string(m[5]), 64); err == nil {
				r.CostUSD = &c
			}
		}
	}
	r.TokensIn, r.TokensOut = intp(in), intp(out)
	return r
}

func kNum(n, k []byte) float64 {
	f, _ := strconv.ParseFloat(string(n), 64)
	if len(k) > 0 {
		f *= 1000
	}
	return f
}
