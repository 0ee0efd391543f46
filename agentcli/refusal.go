package agentcli

import (
	"bytes"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Refusals (SPEC §3 Presets): an agent CLI that was refused permission for an edit (claude's
// permission_denials, a codex sandbox denial, a gemini edit tool rejected or not offered) has not
// done what it was asked, whatever its exit status and whatever it says: its attempt is
// payload_declared, code permission_denied, with the flag that grants the permission in the hint.
// A refused tool that edits nothing (a shell command in claude's acceptEdits mode) is told to the
// operator, not failed: the agent may have done the work another way.

// CodePermissionDenied is the code of an attempt whose edits the CLI refused.
const CodePermissionDenied = "permission_denied"

// Refusal is one tool call the CLI refused.
type Refusal struct {
	Tool   string
	Detail string // what it was called on, or the CLI's words
	Edit   bool   // the tool edits files
}

func (r Refusal) String() string {
	if r.Detail == "" {
		return r.Tool
	}
	return r.Tool + " (" + oneLineOf(r.Detail) + ")"
}

// GrantFor is what grants the refused tool calls others (none of them an edit): the preset's
// GrantMore, unless claude refused to leave plan mode (ExitPlanMode), which is no command to
// allow: its command runs it in plan mode, and leaving that needs a yes nobody gives headless.
func (p *Preset) GrantFor(others []Refusal) string {
	for _, o := range others {
		if o.Tool == "ExitPlanMode" {
			return "its command sets --permission-mode plan, in which claude only plans: use --permission-mode acceptEdits (the preset's) for it to edit"
		}
	}
	return p.GrantMore
}

// editTools are the tools of each CLI that write files.
var editTools = map[string]bool{
	// claude
	"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true,
	// gemini
	"write_file": true, "replace": true, "edit": true,
	// codex, opencode
	"apply_patch": true, "write": true, "patch": true,
}

// codexDenial is codex's word for a write its sandbox refused ("patch rejected: writing is
// blocked by read-only sandbox; rejected by user approval settings").
var codexDenial = lazyre.New(`(?i)writing is blocked by read-only sandbox|writing outside of the project; rejected|patch rejected`)

// geminiNotFound is gemini's answer to a call of a tool it did not offer (headless gemini offers
// no edit tool unless its approval mode allows edits).
var geminiNotFound = lazyre.New(`Tool "(\w+)" not found`)

// Refusals lists the tool calls the CLI refused, as its output reports them.
func (p *Preset) Refusals(stdout []byte) []Refusal {
	switch p.Name {
	case taskfile.PresetClaude:
		return claudeRefusals(stdout)
	case taskfile.PresetCodex:
		return codexRefusals(stdout)
	case taskfile.PresetGemini:
		return geminiRefusals(stdout)
	case taskfile.PresetOpencode:
		return opencodeRefusals(stdout)
	}
	return nil
}

// opencodeDenial is opencode's error for a tool call its permission settings refused: one set to
// ask, which `opencode run` rejects itself ("permission requested: bash (make gen);
// auto-rejecting"), or one set to deny.
var opencodeDenial = lazyre.New(`The user rejected permission to use this specific tool call|The user has specified a rule which prevents you from using this specific tool call`)

// opencodeRefusals reads `opencode run --format json`'s tool_use events whose call ended in that
// error (the event carries the call and its end).
func opencodeRefusals(stdout []byte) []Refusal {
	var out []Refusal
	for _, v := range jsonValues(stdout) {
		if v["type"] != "tool_use" || path(v, "part", "state", "status") != "error" {
			continue
		}
		if msg, _ := path(v, "part", "state", "error").(string); !opencodeDenial.MatchString(msg) {
			continue
		}
		tool, _ := path(v, "part", "tool").(string)
		in, _ := path(v, "part", "state", "input").(map[string]any)
		out = append(out, Refusal{Tool: tool, Detail: toolArg(in), Edit: editTools[tool]})
	}
	return out
}

// claudeRefusals reads the result's permission_denials ([{tool_name, tool_input}]).
func claudeRefusals(stdout []byte) []Refusal {
	var out []Refusal
	for _, v := range jsonValues(stdout) {
		if v["type"] != "result" {
			continue
		}
		out = out[:0]
		ds, _ := v["permission_denials"].([]any)
		for _, d := range ds {
			dm, _ := d.(map[string]any)
			tool, _ := dm["tool_name"].(string)
			in, _ := dm["tool_input"].(map[string]any)
			out = append(out, Refusal{Tool: tool, Detail: toolArg(in), Edit: editTools[tool]})
		}
	}
	return out
}

// codexRefusals reads codex's output for a sandbox denial, in whichever event carries it (an
// item's message or output, an error): each line that says it is one refusal, quoted by its
// message where it is JSON.
func codexRefusals(stdout []byte) []Refusal {
	var out []Refusal
	for _, l := range bytes.Split(stdout, []byte("\n")) {
		if loc := codexDenial.FindIndex(l); loc != nil {
			out = append(out, Refusal{Tool: "apply_patch", Detail: HumanLine(string(bytes.TrimSpace(l))), Edit: true})
		}
	}
	return out
}

// geminiRefusals reads stream-json tool results refused by gemini (not offered, refused by its
// policy), naming the tool from its tool_use event; with -o json, its "Tool … not found" lines.
func geminiRefusals(stdout []byte) []Refusal {
	var out []Refusal
	calls := map[string]map[string]any{}
	seen := false
	for _, v := range jsonValues(stdout) {
		switch v["type"] {
		case "tool_use":
			id, _ := v["tool_id"].(string)
			calls[id] = v
			seen = true
		case "tool_result":
			seen = true
			t, _ := path(v, "error", "type").(string)
			if v["status"] != "error" || (t != "tool_not_registered" && t != "policy_violation" && t != "permission_denied") {
				continue
			}
			id, _ := v["tool_id"].(string)
			call := calls[id]
			tool, _ := call["tool_name"].(string)
			in, _ := call["parameters"].(map[string]any)
			detail := toolArg(in)
			if detail == "" {
				detail, _ = path(v, "error", "message").(string)
			}
			out = append(out, Refusal{Tool: tool, Detail: detail, Edit: editTools[tool]})
		}
	}
	if !seen {
		for _, m := range geminiNotFound.FindAllSubmatch(stdout, -1) {
			tool := string(m[1])
			out = append(out, Refusal{Tool: tool, Detail: string(m[0]), Edit: editTools[tool]})
		}
	}
	return out
}

// RefusalFailure is the failure of an attempt whose edits the CLI refused; nil when none was.
// The others are returned for the operator to be told.
func (p *Preset) RefusalFailure(stdout []byte) (*Failure, []Refusal) {
	var edits, others []Refusal
	for _, r := range p.Refusals(stdout) {
		if r.Edit {
			edits = append(edits, r)
		} else {
			others = append(others, r)
		}
	}
	if len(edits) == 0 {
		return nil, others
	}
	names := make([]string, len(edits))
	for i, r := range edits {
		names[i] = r.String()
	}
	return &Failure{Class: taskfile.ClassPayloadDeclared, Code: CodePermissionDenied,
		Message: p.Name + " was refused permission to edit: " + clipLine([]byte(strings.Join(names, "; "))),
		Hint:    p.Grant}, others
}
