package agentcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mulligan-dev/mulligan/taskfile"
)

// What a person reads of an agent CLI's streamed JSON: the presets' commands stream events
// (claude's and gemini's stream-json, codex's and opencode's JSONL) so that an attempt shows its
// progress, but a line of JSON is for programs. A renderer turns each event into the line a person
// wants (the agent's words, the tool it calls, what was refused) or drops it (session metadata,
// usage); the log keeps the raw events.

// Renderer turns an agent CLI's output, line by line, into what a person reads.
type Renderer struct {
	event func(r *Renderer, v map[string]any) string
	delta strings.Builder // gemini's assistant text, sent in pieces
}

// NewRenderer returns the preset's renderer; nil when the CLI prints text already (aider, a
// generic command).
func (p *Preset) NewRenderer() *Renderer {
	switch p.Name {
	case taskfile.PresetClaude:
		return &Renderer{event: claudeEvent}
	case taskfile.PresetCodex:
		return &Renderer{event: codexEvent}
	case taskfile.PresetGemini:
		return &Renderer{event: geminiEvent}
	case taskfile.PresetOpencode:
		return &Renderer{event: opencodeEvent}
	}
	return nil
}

// Line renders one line of output (with its newline): a JSON event becomes the text it stands
// for, possibly several lines or none; any other line is returned as it is.
func (r *Renderer) Line(line []byte) []byte {
	t := bytes.TrimSpace(line)
	if len(t) == 0 || t[0] != '{' {
		return append(r.flush(), line...)
	}
	var v map[string]any
	if json.Unmarshal(t, &v) != nil {
		return append(r.flush(), line...)
	}
	s := r.event(r, v)
	out := r.flushIf(v)
	if s == "" {
		return out
	}
	return append(out, strings.TrimRight(s, "\n")+"\n"...)
}

// Flush returns text held back for a line still to come (gemini's pieces of an answer).
func (r *Renderer) Flush() []byte { return r.flush() }

func (r *Renderer) flush() []byte {
	if r.delta.Len() == 0 {
		return nil
	}
	s := r.delta.String()
	r.delta.Reset()
	return []byte(strings.TrimRight(s, "\n") + "\n")
}

// flushIf ends a run of gemini's pieces at the first event that is not one.
func (r *Renderer) flushIf(v map[string]any) []byte {
	if v["type"] == "message" && v["delta"] == true {
		return nil
	}
	return r.flush()
}

// Humanize renders a whole output (a log's tail) for the preset; the output as it is when the
// preset prints text.
func Humanize(preset string, out []byte) []byte {
	r := PresetFor(preset).NewRenderer()
	if r == nil {
		return out
	}
	var b []byte
	for _, l := range bytes.SplitAfter(out, []byte("\n")) {
		b = append(b, r.Line(l)...)
	}
	return append(b, r.Flush()...)
}

// toolLine is "→ TOOL: ARG" with the argument cut to one short line.
func toolLine(tool, arg string) string {
	if arg = oneLineOf(arg); arg == "" {
		return "→ " + tool
	}
	return "→ " + tool + ": " + arg
}

func oneLineOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i] + " …"
	}
	return clipLine([]byte(s))
}

// toolArg picks the argument a person recognises a tool call by.
func toolArg(input map[string]any) string {
	for _, k := range []string{"file_path", "filePath", "path", "command", "cmd", "pattern", "url", "query", "description"} {
		if s, ok := input[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func claudeEvent(r *Renderer, v map[string]any) string {
	switch v["type"] {
	case "assistant":
		content, _ := path(v, "message", "content").([]any)
		var lines []string
		for _, c := range content {
			cm, _ := c.(map[string]any)
			switch cm["type"] {
			case "text":
				if s, _ := cm["text"].(string); strings.TrimSpace(s) != "" {
					lines = append(lines, strings.TrimSpace(s))
				}
			case "tool_use":
				name, _ := cm["name"].(string)
				in, _ := cm["input"].(map[string]any)
				lines = append(lines, toolLine(name, toolArg(in)))
			}
		}
		return strings.Join(lines, "\n")
	case "user":
		// a tool's failure (a refusal is said by its own system event)
		content, _ := path(v, "message", "content").([]any)
		var lines []string
		for _, c := range content {
			cm, _ := c.(map[string]any)
			if isErr, _ := cm["is_error"].(bool); isErr && cm["type"] == "tool_result" {
				s, _ := cm["content"].(string)
				if !strings.Contains(s, "requested permissions") && !strings.Contains(s, "requires approval") {
					lines = append(lines, "  ✗ "+oneLineOf(s))
				}
			}
		}
		return strings.Join(lines, "\n")
	case "system":
		if v["subtype"] == "permission_denied" {
			msg, _ := v["message"].(string)
			tool, _ := v["tool_name"].(string)
			return "✗ refused " + tool + ": " + oneLineOf(msg)
		}
	case "result":
		if isErr, _ := v["is_error"].(bool); isErr {
			s, _ := v["result"].(string)
			return "✗ " + oneLineOf(orText(s, "the session ended in an error"))
		}
		// the answer itself was the last assistant message
	}
	return ""
}

func codexEvent(r *Renderer, v map[string]any) string {
	switch v["type"] {
	case "item.started":
		if path(v, "item", "type") == "command_execution" {
			cmd, _ := path(v, "item", "command").(string)
			return "$ " + oneLineOf(cmd)
		}
	case "item.completed":
		item, _ := v["item"].(map[string]any)
		switch item["type"] {
		case "agent_message":
			s, _ := item["text"].(string)
			return strings.TrimSpace(s)
		case "command_execution":
			if code, ok := num(item["exit_code"]); ok && code != 0 {
				return fmt.Sprintf("  exit %d: %s", int(code), oneLineOf(lastLine([]byte(fmt.Sprint(item["aggregated_output"])))))
			}
		case "file_change":
			var paths []string
			changes, _ := item["changes"].([]any)
			for _, c := range changes {
				cm, _ := c.(map[string]any)
				if p, ok := cm["path"].(string); ok {
					paths = append(paths, p)
				}
			}
			status, _ := item["status"].(string)
			return "→ edit " + strings.Join(paths, ", ") + " (" + orText(status, "done") + ")"
		case "error":
			s, _ := item["message"].(string)
			return "! " + oneLineOf(s)
		}
	case "error":
		s, _ := v["message"].(string)
		return "✗ " + oneLineOf(s)
	case "turn.failed":
		s, _ := path(v, "error", "message").(string)
		return "✗ " + oneLineOf(s)
	}
	return ""
}

func geminiEvent(r *Renderer, v map[string]any) string {
	switch v["type"] {
	case "message":
		if v["role"] != "assistant" {
			return ""
		}
		s, _ := v["content"].(string)
		if v["delta"] == true {
			r.delta.WriteString(s)
			return ""
		}
		return strings.TrimSpace(s)
	case "tool_use":
		name, _ := v["tool_name"].(string)
		in, _ := v["parameters"].(map[string]any)
		return toolLine(name, toolArg(in))
	case "tool_result":
		if v["status"] == "error" {
			s, _ := path(v, "error", "message").(string)
			return "  ✗ " + oneLineOf(orText(s, fmt.Sprint(v["output"])))
		}
	case "error":
		s, _ := v["message"].(string)
		return "! " + oneLineOf(s)
	case "result":
		if e, ok := v["error"].(map[string]any); ok {
			return "✗ " + oneLineOf(geminiErrorText(e))
		}
		// (status error without an error object: its error event said why)
	}
	return ""
}

func opencodeEvent(r *Renderer, v map[string]any) string {
	part, _ := v["part"].(map[string]any)
	switch v["type"] {
	case "text":
		s, _ := part["text"].(string)
		return strings.TrimSpace(s)
	case "tool_use":
		tool, _ := part["tool"].(string)
		in, _ := path(part, "state", "input").(map[string]any)
		line := toolLine(tool, toolArg(in))
		if path(part, "state", "status") == "error" {
			s, _ := path(part, "state", "error").(string)
			line += "\n  ✗ " + oneLineOf(s)
		}
		return line
	case "error":
		s, _ := path(v, "error", "data", "message").(string)
		n, _ := path(v, "error", "name").(string)
		return "✗ " + oneLineOf(orText(s, n))
	}
	return ""
}
