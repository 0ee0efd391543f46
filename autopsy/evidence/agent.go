package evidence

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// Denial is a tool call the agent CLI refused: a permission rule, the CLI's sandbox, a tool
// not allowed in non-interactive mode.
type Denial struct {
	Tool  string // Bash, Write, run_shell_command, …; "" when the text does not say
	Input string // the command or the path, when known
	Line  string // what the CLI said
	// Sandbox: the CLI's sandbox refused it (codex's seatbelt or landlock, no network in
	// it), not a permission setting.
	Sandbox bool
}

// Agent is what an agent CLI's output says about its own run.
type Agent struct {
	LastMessage string   // the agent's own last words (its result, its last message)
	Said        string   // the whole of that last message, where the CLI's events carry it
	Denials     []Denial // refused tool calls
	ToolErrors  []string // tool calls that ran and failed: the CLI's error, or the command's last line
	// APICalls: the model answered at least once (a turn completed, tokens were counted, an
	// assistant message came): whatever failed, the agent reached its API.
	APICalls bool
	// Network are the network failures anywhere in the output: in the tools' output (npm, git,
	// go) or the CLI's own.
	Network []NetError
	// NoNetworkSandbox: the CLI ran its commands without network (codex's workspace-write
	// sandbox), as its output shows or the agent itself says (its words prove its API works).
	NoNetworkSandbox bool

	// ReadOnlySandbox: the CLI ran in a sandbox that may not write the tree (codex's
	// "sandbox: read-only" header).
	ReadOnlySandbox bool

	// Spoke: LastMessage is the model's own words (its result or last message), not a CLI's
	// error, a tool's line or, for a CLI that prints JSON events, its own chatter on stderr.
	Spoke bool

	apiError bool // LastMessage is the CLI's API error, not the agent's words
	events   bool // the output holds JSON events: its plain lines are the CLI's, not the model's
	// calls are gemini's tool calls by their id: its tool_result names the id only.
	calls map[string]Denial
	// inMessage: the last event was a piece of gemini's message, which the next piece continues.
	inMessage bool
}

var (
	denialTextRe = lazyre.New(`(?i)Tool "[^"]+" not found|tool_not_registered|policy_violation|requested permissions? to (?:use |write to |read |edit )?(\S+).*haven't granted|permission to use (\S+) (?:has been|was) denied|is not in the list of allowed tools|not found in registry|Tool execution (?:denied|was denied)|denied by (?:policy|the user|user)|rejected by (?:the )?user|user rejected permission|exec command rejected|This command requires approval|prevents you from using this specific tool call`)
	sandboxRe    = lazyre.New(`(?i)failed in sandbox|sandbox(?:ed)? (?:denied|denial|error)|Sandbox\(\w+\)|LandlockRestrict|seatbelt|CODEX_SANDBOX_NETWORK_DISABLED|network_access[" ]*[:=] *false|sandbox: (?:read-only|workspace-write)`)
	noNetSbRe    = lazyre.New(`(?i)CODEX_SANDBOX_NETWORK_DISABLED=1|network_access[" ]*[:=] *false|network-sandbox-policy: restricted|sandbox has no network|(?:without|no) network access(?: in| inside)? (?:the |this |my )?sandbox|sandbox(?:ed)? (?:environment )?(?:has |with )?no network|network (?:access )?is (?:disabled|blocked|restricted) (?:in|inside|by) (?:the |this |my )?sandbox`)
	// saysNoNetRe: the agent's own words that its commands have no network.
	saysNoNetRe  = lazyre.New(`(?i)\b(?:no|without|lacks?|lacking|blocked|blocks|disabled|restricted|denied|don't have|do not have|doesn't have|does not have|can't access|cannot access|unable to access)\b[^.]{0,40}\b(?:network|internet)\b|\b(?:network|internet)\b[^.]{0,30}\b(?:is |was )?(?:blocked|disabled|restricted|unavailable|not available|denied|unreachable)\b|\b(?:is|are|am|i'm|we're|it's|be|being|seems|appears(?: to be)?|running|work(?:ing)?|stays?) offline\b`)
	codexHeadRe  = lazyre.New(`^\[\d{4}-\d\d-\d\dT[\d:.]+Z?\] codex$`)
	timestampRe  = lazyre.New(`^\[\d{4}-\d\d-\d\dT[\d:.]+Z?\] `)
	readOnlySbRe = lazyre.New(`^sandbox: read-only$|"sandbox":\s*"read-only"|read-only sandbox`)
	apiErrorRe   = lazyre.New(`^(?:API Error|Error|\[API Error)`)
	// toolLineRe: a line a tool or the CLI printed, not the agent's words.
	// aider's SEARCH/REPLACE block marks, and its status lines.
	editBlockRe   = lazyre.New(`^(?:<{7} SEARCH|>{7} REPLACE)$`)
	aiderStatusRe = lazyre.New(`^(?:Tokens: [\d.,]+k? sent|Applied edit to |Commit [0-9a-f]{7,} |Aider v\d|Main model: |Weak model: |Git repo: |Repo-map: |Added \S+ to the chat|Cost: \$)`)
	toolLineRe    = lazyre.New(`(?i)^(?:error|fatal|warn(?:ing)?|npm|pip|go:|\[?api error|exception|traceback|\S+:\d+:)`)
	tokensRe      = lazyre.New(`(?i)(?:^|\]\s*)tokens used:? [\d,]+|"(?:output_tokens|total_tokens|candidates)"\s*:\s*[1-9]`)
)

// ReadAgent reads an agent CLI's output: claude's json and stream-json, codex exec --json (both
// event shapes), gemini's json and stream-json, and plain text.
func ReadAgent(out string) Agent {
	var a Agent
	lines := Lines(out)
	if doc := wholeJSON(out); doc != nil {
		a.event(doc)
	} else {
		for _, l := range lines {
			t := strings.TrimSpace(l)
			if !strings.HasPrefix(t, "{") {
				continue
			}
			var v map[string]any
			if json.Unmarshal([]byte(t), &v) == nil {
				a.event(v)
				a.events = true
			}
		}
	}
	var plainLast, codexSaid string
	var prose []string // the plain transcript's last run of the model's words (aider's)
	inCodex, inBlock, fresh := false, false, false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		// aider's edit blocks and status lines are not what the model said: the words around
		// them are ("Since the migrations directory is frozen, I won't add a revision.").
		if editBlockRe.MatchString(t) {
			inBlock, fresh = strings.HasPrefix(t, "<"), true
			if inBlock && len(prose) > 0 && !strings.Contains(prose[len(prose)-1], " ") {
				prose = prose[:len(prose)-1] // the file the block edits
			}
			continue
		}
		if inBlock || aiderStatusRe.MatchString(t) {
			continue
		}
		if !strings.HasPrefix(t, "{") {
			if fresh {
				prose, fresh = nil, false
			}
			prose = append(prose, t)
		}
		// codex exec's plain transcript: "[time] codex" heads the agent's own message.
		if codexHeadRe.MatchString(t) {
			inCodex, codexSaid = true, ""
			continue
		}
		if strings.HasPrefix(t, "[") && timestampRe.MatchString(t) {
			inCodex = false
		} else if inCodex {
			codexSaid = strings.TrimSpace(codexSaid + " " + t)
		}
		h := agentcli.HumanLine(t)
		if !strings.HasPrefix(t, "{") {
			plainLast = h
		}
		if tokensRe.MatchString(t) {
			a.APICalls = true
		}
		if noNetSbRe.MatchString(h) {
			a.NoNetworkSandbox = true
		}
		if readOnlySbRe.MatchString(t) {
			a.ReadOnlySandbox = true
		}
		if strings.HasPrefix(h, "{") {
			// A JSON event with no message of its own: quote the text in it that says the
			// refusal (claude's tool_result), never the raw event; nor one the agent did not
			// meet: the prompt echoed back (a retry's quotes the last attempt's refusal), a
			// tool call's arguments.
			h = ""
			if !Echoed(t) {
				h = jsonTextWith(t, denialTextRe, sandboxRe)
			}
		}
		if denialTextRe.MatchString(h) || (sandboxRe.MatchString(h) && !strings.Contains(h, "sandbox: ")) {
			a.addDenial(Denial{Line: clip(firstLines(h)), Sandbox: sandboxRe.MatchString(h)})
		}
	}
	spoke := a.LastMessage != "" && !a.apiError // the model's own message, from the CLI's events
	if a.LastMessage == "" && codexSaid != "" {
		a.LastMessage, a.Said, spoke, a.APICalls = clip(codexSaid), codexSaid, true, true
	}
	if a.LastMessage == "" && !a.events && len(prose) > 0 {
		a.Said, plainLast = strings.Join(prose, " "), agentcli.HumanLine(prose[len(prose)-1])
	}
	if a.LastMessage == "" {
		a.LastMessage = clip(plainLast)
		spoke = !toolLineRe.MatchString(plainLast) && !netErrRe.MatchString(plainLast) && !a.events
	}
	a.Spoke = spoke && a.LastMessage != ""
	if spoke && saysNoNetRe.MatchString(a.LastMessage) {
		a.NoNetworkSandbox = true
	}
	a.Network = NetworkErrors(WithoutProse(out))
	return a
}

// WithoutProse leaves out the model's own words (its messages, its reasoning, the final result
// that repeats them): an agent that writes "the ECONNREFUSED warning comes from a passing test"
// met no network failure. Its tools' output and the CLI's errors stay.
func WithoutProse(out string) string {
	if !strings.Contains(out, "{") {
		return out
	}
	lines := Lines(out)
	kept := lines[:0:0]
	for _, l := range lines {
		if !prose(strings.TrimSpace(l)) {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, "\n")
}

func prose(line string) bool {
	if !strings.HasPrefix(line, "{") {
		return false
	}
	var e struct {
		Type    string `json:"type"`
		Role    string `json:"role"`
		IsError *bool  `json:"is_error"`
		Item    struct {
			Type string `json:"type"`
		} `json:"item"`
		Message struct {
			Model   string `json:"model"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal([]byte(line), &e) != nil {
		return false
	}
	switch e.Type {
	case "assistant": // claude: text only, written by the model (an API error is "<synthetic>")
		if e.Message.Model == "<synthetic>" || len(e.Message.Content) == 0 {
			return false
		}
		for _, c := range e.Message.Content {
			if c.Type != "text" || strings.HasPrefix(c.Text, "API Error") {
				return false
			}
		}
		return true
	case "result": // claude's last word, when it is not an error
		return e.IsError != nil && !*e.IsError
	case "item.completed", "item.started", "item.updated": // codex
		return e.Item.Type == "agent_message" || e.Item.Type == "reasoning"
	case "message": // gemini
		return e.Role == "assistant"
	case "text": // opencode
		return true
	}
	return false
}

// jsonTextWith is the first string in the JSON line l that one of res matches, "" when none
// does or l is not whole JSON (a line the tail cut).
func jsonTextWith(l string, res ...*lazyre.Regexp) string {
	var v any
	if json.Unmarshal([]byte(l), &v) != nil {
		return ""
	}
	var walk func(v any) string
	walk = func(v any) string {
		switch v := v.(type) {
		case string:
			for _, re := range res {
				if re.MatchString(v) {
					return v
				}
			}
		case []any:
			for _, e := range v {
				if s := walk(e); s != "" {
					return s
				}
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if s := walk(v[k]); s != "" {
					return s
				}
			}
		}
		return ""
	}
	return walk(v)
}

// wholeJSON is the output as one JSON object when it is one (gemini -o json pretty-prints it).
func wholeJSON(out string) map[string]any {
	t := strings.TrimSpace(out)
	if !strings.HasPrefix(t, "{") || !strings.Contains(t[:min(len(t), 200)], "\n") {
		return nil
	}
	var v map[string]any
	if json.Unmarshal([]byte(t), &v) != nil {
		return nil
	}
	return v
}

// addDenial adds d unless it is one already there: the same call, or the same words (a CLI
// that reports a refusal in its JSON event and again as a plain line wraps the one in the
// other: "Error executing tool run_shell_command: Tool … not found").
func (a *Agent) addDenial(d Denial) {
	for i, e := range a.Denials {
		if d.Tool != "" && e.Tool == d.Tool && e.Input == d.Input {
			return
		}
		if (e.Tool == "" || d.Tool == "") && e.Line != "" && d.Line != "" && (strings.Contains(e.Line, d.Line) || strings.Contains(d.Line, e.Line)) {
			if e.Tool == "" && d.Tool != "" {
				a.Denials[i].Tool, a.Denials[i].Input = d.Tool, d.Input
			}
			return
		}
	}
	a.Denials = append(a.Denials, d)
}

// event reads one JSON event (or a whole result document) of any of the CLIs.
func (a *Agent) event(v map[string]any) {
	typ, _ := v["type"].(string)
	switch {
	case typ == "result" || v["permission_denials"] != nil: // claude's result (gemini's stream-json too)
		if s, ok := v["result"].(string); ok && strings.TrimSpace(s) != "" {
			a.LastMessage, a.Said = clip(firstLines(s)), s
		}
		if v["is_error"] == true && apiErrorRe.MatchString(a.LastMessage) {
			a.apiError = true // the CLI's own error in the result field, not the model speaking
		}
		// Tokens, not turns: a result that never reached the API still counts one turn.
		if tokens(v["usage"]) || tokens(v["stats"]) {
			a.APICalls = true
		}
		if ds, ok := v["permission_denials"].([]any); ok {
			for _, d := range ds {
				m, _ := d.(map[string]any)
				tool, _ := m["tool_name"].(string)
				in := toolInput(m["tool_input"])
				if tool == "" && in == "" {
					continue
				}
				a.addDenial(Denial{Tool: tool, Input: in, Line: clip(strings.TrimSpace(fmt.Sprintf("%s %s", tool, in)))})
			}
		}
	case typ == "system" && v["subtype"] == "permission_denied": // claude stream-json
		tool, _ := v["tool_name"].(string)
		msg, _ := v["message"].(string)
		a.addDenial(Denial{Tool: tool, Line: clip(orString(msg, tool))})
	case typ == "assistant": // claude stream-json
		a.APICalls = true
		if msg, ok := v["message"].(map[string]any); ok {
			if cs, ok := msg["content"].([]any); ok {
				for _, c := range cs {
					m, _ := c.(map[string]any)
					if s, ok := m["text"].(string); ok && m["type"] == "text" && strings.TrimSpace(s) != "" {
						a.LastMessage, a.Said = clip(firstLines(s)), s
					}
				}
			}
		}
	case typ == "user": // claude stream-json: tool results
		if msg, ok := v["message"].(map[string]any); ok {
			if cs, ok := msg["content"].([]any); ok {
				for _, c := range cs {
					m, _ := c.(map[string]any)
					if m["is_error"] == true {
						a.toolError(text(m["content"]))
					}
				}
			}
		}
	case typ == "message" && v["role"] == "assistant": // gemini stream-json
		a.APICalls = true
		// The pieces of one message ("delta": true) are joined whole, then read: a piece may end
		// on the space before the next one's word. A tool call ends the message.
		if s, ok := v["content"].(string); ok {
			if v["delta"] == true && a.inMessage {
				a.Said += s
			} else if strings.TrimSpace(s) != "" || v["delta"] == true {
				a.Said = s
			}
			a.inMessage = v["delta"] == true
			if strings.TrimSpace(a.Said) != "" {
				a.LastMessage = clip(firstLines(a.Said))
			}
		}
	case typ == "tool_use" && v["part"] != nil: // opencode run --format json: the call and its end
		part, _ := v["part"].(map[string]any)
		state, _ := part["state"].(map[string]any)
		if state["status"] == "error" {
			tool, _ := part["tool"].(string)
			a.toolCallError(text(state["error"]), tool, toolInput(state["input"]))
		}
	case typ == "tool_use": // gemini stream-json
		a.inMessage = false
		if id, _ := v["tool_id"].(string); id != "" {
			if a.calls == nil {
				a.calls = map[string]Denial{}
			}
			tool, _ := v["tool_name"].(string)
			a.calls[id] = Denial{Tool: tool, Input: toolInput(v["parameters"])}
		}
	case typ == "tool_result": // gemini stream-json
		if v["status"] == "error" {
			msg := text(v["error"])
			if msg == "" {
				msg = text(v["output"])
			}
			id, _ := v["tool_id"].(string)
			call := a.calls[id]
			if e, _ := v["error"].(map[string]any); e["type"] == "tool_not_registered" || e["type"] == "policy_violation" || e["type"] == "permission_denied" {
				a.addDenial(Denial{Tool: call.Tool, Input: call.Input, Line: clip(firstLines(msg))})
			}
			a.toolCallError(msg, call.Tool, call.Input)
		}
	case typ == "item.completed" || typ == "item.updated": // codex exec --json
		item, _ := v["item"].(map[string]any)
		switch item["type"] {
		case "agent_message":
			a.APICalls = true
			if s, ok := item["text"].(string); ok && strings.TrimSpace(s) != "" {
				a.LastMessage, a.Said = clip(firstLines(s)), s
			}
		case "reasoning":
			a.APICalls = true
		case "command_execution":
			a.APICalls = true
			if code, ok := item["exit_code"].(float64); ok && code != 0 || item["status"] == "failed" || item["status"] == "declined" {
				cmd, _ := item["command"].(string)
				out, _ := item["aggregated_output"].(string)
				if item["status"] == "declined" {
					a.addDenial(Denial{Tool: "exec", Input: cmd, Line: clip("declined: " + cmd), Sandbox: true})
				}
				a.toolCallError(strings.TrimSpace(cmd+": "+lastLine(out)), "exec", cmd)
			}
		case "error":
			a.toolError(text(item["message"]))
		}
	case typ == "turn.completed":
		a.APICalls = true
	case typ == "text" || typ == "step_finish": // opencode run --format json
		part, _ := v["part"].(map[string]any)
		a.APICalls = true
		if s, ok := part["text"].(string); ok && typ == "text" && strings.TrimSpace(s) != "" {
			a.LastMessage, a.Said = clip(firstLines(s)), s
		}
	case v["response"] != nil || v["stats"] != nil: // gemini -o json
		if s, ok := v["response"].(string); ok && strings.TrimSpace(s) != "" {
			a.LastMessage, a.Said = clip(firstLines(s)), s
		}
		if tokens(v["stats"]) {
			a.APICalls = true
		}
	}
	if msg, ok := v["msg"].(map[string]any); ok { // codex exec --json, older events
		switch msg["type"] {
		case "agent_message":
			a.APICalls = true
			if s, ok := msg["message"].(string); ok && strings.TrimSpace(s) != "" {
				a.LastMessage, a.Said = clip(firstLines(s)), s
			}
		case "token_count", "agent_reasoning", "task_complete":
			a.APICalls = true
		case "exec_command_end":
			if code, ok := msg["exit_code"].(float64); ok && code != 0 {
				a.toolError(lastLine(text(msg["stderr"]) + "\n" + text(msg["stdout"])))
			}
		}
	}
}

func (a *Agent) toolError(s string) { a.toolCallError(s, "", "") }

// toolCallError records a failed tool call's text; tool and input, when known, name the call
// (codex's command) so a refusal of it can be told apart from a refusal of the work.
func (a *Agent) toolCallError(s, tool, input string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	if denialTextRe.MatchString(s) || sandboxRe.MatchString(s) {
		a.addDenial(Denial{Tool: tool, Input: input, Line: clip(firstLines(s)), Sandbox: sandboxRe.MatchString(s)})
	}
	if noNetSbRe.MatchString(s) {
		a.NoNetworkSandbox = true
	}
	if len(a.ToolErrors) < 20 {
		a.ToolErrors = append(a.ToolErrors, clip(firstLines(s)))
	}
}

// tokens: a usage or stats object that counts some tokens.
func tokens(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if n, ok := x.(float64); ok && n > 0 && strings.Contains(k, "token") {
				return true
			}
			if tokens(x) {
				return true
			}
		}
	case []any:
		for _, x := range t {
			if tokens(x) {
				return true
			}
		}
	}
	return false
}

func toolInput(v any) string {
	m, _ := v.(map[string]any)
	for _, k := range []string{"command", "file_path", "filePath", "path", "url", "pattern"} {
		if s, ok := m[k].(string); ok {
			return clip(firstLines(s))
		}
	}
	return ""
}

// text is a JSON value as text: a string, a message field, a list of text blocks.
func text(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case map[string]any:
		for _, k := range []string{"message", "text", "content"} {
			if s := text(t[k]); s != "" {
				return s
			}
		}
	case []any:
		var parts []string
		for _, x := range t {
			if s := text(x); s != "" {
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

func orString(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func firstLines(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		// The first paragraph: an agent's summary leads with the point.
		return strings.Join(strings.Fields(s[:min(len(s), 400)]), " ")
	}
	return s
}

func lastLine(s string) string {
	ls := Lines(strings.TrimSpace(s))
	return strings.TrimSpace(ls[len(ls)-1])
}
