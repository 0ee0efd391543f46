package agentcli

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// What a failure message quotes of an agent's output: the last thing it said in words. The
// streamed CLIs end on JSON events, and many carry no words at all (codex's turn.started and
// thread.started, opencode's step_start, claude's system init): those are passed over for the
// line before them. A tool call is named by what it runs ("codex was running: git commit …"),
// which is what a person wants to know of an agent that went silent or ran past its timeout.

// lastWords is the last line of out that says something, clipped for a message; "" when no line
// does.
func lastWords(out []byte) string {
	lines := strings.Split(strings.ToValidUTF8(string(ansiRe.ReplaceAll(out, nil)), "\uFFFD"), "\n")
	done := false // a tool's completion was passed over: the call before it is no longer running
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if !looksJSON(l) {
			return clipLine([]byte(l))
		}
		var v map[string]any
		if json.Unmarshal([]byte(l), &v) != nil {
			// A line the tail cut: its message field by hand, else nothing to quote.
			if m := jsonTextRe.FindStringSubmatch(l); m != nil {
				return clipLine([]byte(m[1]))
			}
			continue
		}
		w, completes := eventWords(v, done)
		if w != "" {
			return clipLine([]byte(w))
		}
		done = done || completes
	}
	return ""
}

// looksJSON: an event line, or the end of one the tail cut at its start.
func looksJSON(l string) bool {
	return l[0] == '{' || l[len(l)-1] == '}' && strings.Contains(l, `":`)
}

// messagePaths are where the CLIs' events keep a result or an error's message (HumanLine);
// wordPaths add the agent's text (codex's items, opencode's parts, gemini's messages).
var (
	messagePaths = [][]string{{"result"}, {"error", "message"}, {"error", "data", "message"}, {"message"}, {"item", "message"}, {"error"}}
	wordPaths    = append(messagePaths[:len(messagePaths):len(messagePaths)], []string{"item", "text"}, []string{"part", "text"}, []string{"content"}, []string{"text"}, []string{"error", "name"})
)

// eventWords is what an event says: its words, else the tool call it starts or ends; "" for an
// event with none. completes reports a tool's end that carries no words of its own (claude's and
// gemini's tool results), so that the call before it is not called running (done).
func eventWords(v map[string]any, done bool) (words string, completes bool) {
	for _, p := range wordPaths {
		if s, ok := path(v, p...).(string); ok && strings.TrimSpace(s) != "" {
			return oneLineOf(s), false
		}
	}
	tense := func(cli string, running bool) string {
		if running && !done {
			return cli + " was running: "
		}
		return cli + " ran: "
	}
	switch v["type"] {
	case "item.started", "item.updated", "item.completed": // codex
		item, _ := v["item"].(map[string]any)
		if item["type"] == "command_execution" {
			cmd, _ := item["command"].(string)
			w := tense("codex", v["type"] != "item.completed") + shellCommand(cmd)
			if code, ok := num(item["exit_code"]); ok && code != 0 {
				w += fmt.Sprintf(" (exit %d)", int(code))
			}
			return w, false
		}
	case "assistant": // claude: the message's last block
		content, _ := path(v, "message", "content").([]any)
		if len(content) == 0 {
			break
		}
		c, _ := content[len(content)-1].(map[string]any)
		switch c["type"] {
		case "text":
			s, _ := c["text"].(string)
			return oneLineOf(s), false
		case "tool_use":
			name, _ := c["name"].(string)
			in, _ := c["input"].(map[string]any)
			return tense("claude", true) + toolCall(name, in), false
		}
	case "user": // claude's tool results: a failure says why, a success nothing
		content, _ := path(v, "message", "content").([]any)
		for _, c := range content {
			cm, _ := c.(map[string]any)
			if isErr, _ := cm["is_error"].(bool); isErr {
				if s, _ := cm["content"].(string); strings.TrimSpace(s) != "" {
					return oneLineOf(s), false
				}
			}
		}
		return "", true
	case "tool_use":
		if part, ok := v["part"].(map[string]any); ok { // opencode: the part's state says whether it ended
			tool, _ := part["tool"].(string)
			in, _ := path(part, "state", "input").(map[string]any)
			st := path(part, "state", "status")
			return tense("opencode", st == "running" || st == "pending") + toolCall(tool, in), false
		}
		name, _ := v["tool_name"].(string) // gemini
		in, _ := v["parameters"].(map[string]any)
		return tense("gemini", true) + toolCall(name, in), false
	case "tool_result": // gemini
		return "", true
	}
	return "", false
}

// toolCall names a tool call: a shell tool by its command, another by its name and argument.
func toolCall(name string, input map[string]any) string {
	if s, ok := input["command"].(string); ok && s != "" {
		return shellCommand(s)
	}
	if s, ok := input["cmd"].(string); ok && s != "" {
		return shellCommand(s)
	}
	if arg := toolArg(input); arg != "" {
		return name + " " + oneLineOf(arg)
	}
	return name
}

var shellWrapRe = lazyre.New(`^(?:\S*/)?(?:ba|z|da)?sh\s+-l?c\s+(.+)$`)

// shellCommand is a command without the shell that wraps it (codex runs `bash -lc '…'`).
func shellCommand(s string) string {
	s = strings.TrimSpace(s)
	m := shellWrapRe.FindStringSubmatch(s)
	if m == nil {
		return oneLineOf(s)
	}
	inner := m[1]
	switch {
	case len(inner) >= 2 && inner[0] == '\'' && inner[len(inner)-1] == '\'':
		inner = strings.ReplaceAll(inner[1:len(inner)-1], `'\''`, `'`)
	case len(inner) >= 2 && inner[0] == '"' && inner[len(inner)-1] == '"':
		inner = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\$`, `$`, "\\`", "`").Replace(inner[1 : len(inner)-1])
	}
	return oneLineOf(inner)
}
