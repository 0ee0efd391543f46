package agentcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// What a failure message quotes of an agent's output: the last thing it said in words. The
// streamed CLIs end on JSON events, and many carry no words at all (codex's turn.started and
// thread.started, opencode's step_start, claude's system init): those are passed over for the
// line before them. A tool call is named by what it runs ("codex was running: git commit …"),
// which is what a person wants to know of an agent that went silent or ran past its timeout.

// runtimeNoiseRe: what Node and a terminal-less start print on stderr whatever the agent does
// (gemini's colour warning, Node's deprecation and experimental warnings and their trace hint).
var runtimeNoiseRe = lazyre.New(`^Warning: 256-color support not detected|^(?:\(node:\d+\) )?\[DEP\d+\] DeprecationWarning:|^\(node:\d+\) (?:\[\w+\] )?(?:Deprecation|Experimental)Warning:|^\(Use ` + "`node --trace-(?:deprecation|warnings) \\.\\.\\.`" + ` to show where the warning was created\)$`)

// LastWords is the last line of an agent's output that says something, clipped for a message
// (what failure messages quote; a report quoting what the agent said should too); "" when no
// line does. An output that ends in a stack trace says it in the error line above the trace.
func LastWords(out []byte) string {
	text := strings.ToValidUTF8(string(ansiRe.ReplaceAll(out, nil)), "\uFFFD")
	if w := prettyJSONWords(text); w != "" {
		return clipLine([]byte(w))
	}
	// A carriage return ends a line too: what follows it is what a terminal shows.
	lines := strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	if l := placeholderCause(lines); l != "" {
		return clipLine([]byte(l))
	}
	if l := diedOf(lines); l != "" {
		return clipLine([]byte(l))
	}
	if l := traceError(lines); l != "" {
		return clipLine([]byte(l))
	}
	if l := blockHead(lines); l != "" {
		return clipLine([]byte(l))
	}
	if l := usageError(lines); l != "" {
		return clipLine([]byte(l))
	}
	done := false // a tool's completion was passed over: the call before it is no longer running
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if !strings.ContainsFunc(l, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			continue // blank, or punctuation ("}", "---", "```"): it says nothing
		}
		if runtimeNoiseRe.MatchString(l) {
			continue // the runtime's or the terminal's, whatever the agent did
		}
		if l[0] != '{' && (i > 0 || !cutJSON(l)) {
			return clipLine([]byte(l))
		}
		var v map[string]any
		if json.Unmarshal([]byte(l), &v) != nil {
			if !strings.Contains(l, `":`) {
				return clipLine([]byte(l)) // text that opens with a brace
			}
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

// matchedLine is the line of text holding the match at loc of a rule (find): a JSON event is
// quoted by its words when the match is in them, else by the line of the string value that
// holds the match (a tool's output, a body), never as the raw event.
func matchedLine(text []byte, loc []int, find func(string) []int) string {
	whole := bytes.TrimSpace(wholeLineAt(text, loc[0]))
	l := clipLine(whole)
	if len(whole) == 0 || whole[0] != '{' {
		if propertyRe.MatchString(l) {
			if w := ownerWords(text, loc[0]); w != "" {
				return w
			}
		}
		return l
	}
	var v map[string]any
	if json.Unmarshal(whole, &v) != nil {
		return HumanLine(l) // cut by the tail
	}
	w, _ := eventWords(v, false)
	if w != "" && find(w) != nil {
		return clipLine([]byte(w))
	}
	if s, at := stringMatching(v, find); at != nil {
		return lineAt([]byte(s), at[0])
	}
	if w != "" {
		return clipLine([]byte(w))
	}
	return l
}

// stringMatching is the first string value in v (keys in order) that find matches, and where.
func stringMatching(v any, find func(string) []int) (string, []int) {
	switch x := v.(type) {
	case string:
		return x, find(x)
	case []any:
		for _, e := range x {
			if s, at := stringMatching(e, find); at != nil {
				return s, at
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if s, at := stringMatching(x[k], find); at != nil {
				return s, at
			}
		}
	}
	return "", nil
}

// cutJSON: the first line of a tail looks like the end of a JSON event the tail cut.
func cutJSON(l string) bool {
	return l[len(l)-1] == '}' && strings.Contains(l, `":`)
}

// prettyJSONWords are the words of the JSON object an output ends with when it spans lines
// (gemini -o json prints one, indented); "" when it ends otherwise or the object says nothing.
func prettyJSONWords(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasSuffix(t, "}") {
		return ""
	}
	raw := lastJSONValue([]byte(t))
	if raw == nil || !strings.HasSuffix(t, string(raw)) || !bytes.ContainsRune(raw, '\n') {
		return ""
	}
	var v map[string]any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	w, _ := eventWords(v, false)
	return w
}

// messagePaths are where the CLIs' events keep a result or an error's message (HumanLine);
// wordPaths add the agent's text (codex's items, opencode's parts, gemini's messages and
// response).
var (
	messagePaths = [][]string{{"result"}, {"error", "message"}, {"error", "data", "message"}, {"message"}, {"item", "message"}, {"error"}}
	wordPaths    = append(messagePaths[:len(messagePaths):len(messagePaths)], []string{"item", "text"}, []string{"part", "text"}, []string{"content"}, []string{"text"}, []string{"response"}, []string{"error", "name"})
)

// eventWords is what an event says: its words, else the tool call it starts or ends; "" for an
// event with none. completes reports a tool's end that carries no words of its own (claude's and
// gemini's tool results), so that the call before it is not called running (done).
func eventWords(v map[string]any, done bool) (words string, completes bool) {
	if v["role"] == "user" {
		return "", false // gemini's echo of the prompt
	}
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

// A stack trace's lines (trimmed): a frame of node, Java or Rust ("at f (file.js:1:2)"), of an
// Ink error box ("- f (cli.js:1:2)"), of Python ("File "x.py", line 3"), of Go ("/src/x.go:12
// +0x1d", "created by …"), of node's native stack (" 1: 0xb8d11b node::Abort() [node]"); the
// headers that open one; and what a runtime prints after it. A native frame without a symbol
// is its address alone ("10: 0x7f3c5a6d9ef6", a libc frame).
var (
	frameRe      = lazyre.New(`^(?:at (?:async |new )?(?:.*\(\S+:\d+(?::\d+)?\)|(?:node:|\S*[/.])\S*:\d+:\d+|.*\((?:native|Native Method|Unknown Source|<anonymous>|index \d+)\))|- .*\(\S+:\d+:\d+\)|File ".+", line \d+.*|\S+\.go:\d+(?: \+0x[0-9a-f]+)?|created by \S.*|\.\.\. \d+ (?:more|frames omitted)|\^+|\d+: (?:0x)?[0-9a-fA-F]{6,}(?: .*)?)$`)
	traceHeadRe  = lazyre.New(`^(?:goroutine \d+ \[.*\]:|Traceback \(most recent call last\):|stack backtrace:|Stack trace:|<--- JS stacktrace --->|-+ Native stack trace -+)$`)
	traceTailRe  = lazyre.New(`^(?:Node\.js v\d+\S*|exit status \d+|note: .*RUST_BACKTRACE.*)$`)
	errorishRe   = lazyre.New(`(?i)^\W{0,3}(?:uncaught |unhandled |caused by: ?|exception in thread "[^"]*" )?(?:[\w$.]*(?:error|exception)\b|panic\b|fatal\b|thread '[^']*' panicked)`)
	goFileLineRe = lazyre.New(`^\S+\.go:\d+(?: \+0x[0-9a-f]+)?$`)
)

// traceError is the error line of an output that ends in a stack trace (lines trimmed): the
// line above the trace that names the error ("Error: …", "panic: …", "Caused by: …"), else the
// line just above it; "" when the output does not end in one.
func traceError(lines []string) string {
	i := lastSaid(lines, len(lines)-1)
	end := i
	// What a runtime prints after the trace, and the properties node prints after an error's
	// last frame ("at f (x.js:1:2) {", "  code: 'ENOENT'", "}").
trailer:
	for ; i >= 0; i-- {
		switch {
		case lines[i] == "", traceTailRe.MatchString(lines[i]):
		case lines[i] == "}":
			j := i - 1
			for j >= 0 && j > i-30 && !strings.HasSuffix(lines[j], " {") {
				j--
			}
			if j < 0 || j <= i-30 || !frameRe.MatchString(strings.TrimSuffix(lines[j], " {")) {
				return ""
			}
			lines[j] = strings.TrimSuffix(lines[j], " {") // the frame, for the walk below
			i = j + 1
		default:
			break trailer
		}
	}
	for i >= 0 && (lines[i] == "" || isFrame(lines, i) || traceHeadRe.MatchString(lines[i])) {
		i--
	}
	if i < 0 || i == end {
		return ""
	}
	// The error is in the few lines above the trace (node prints "Error: …" and then "Read
	// about …"; Go "panic: …" and then "[signal …]").
	seen := 0
	for j := i; j >= 0 && seen < 6; j-- {
		if lines[j] == "" {
			continue
		}
		seen++
		if !errorishRe.MatchString(lines[j]) {
			continue
		}
		l := lines[j]
		if strings.HasSuffix(l, ":") && j < i {
			// "thread 'main' panicked at src/main.rs:2:5:" says what on the next line
			for k := j + 1; k <= i; k++ {
				if lines[k] != "" {
					l += " " + lines[k]
					break
				}
			}
		}
		return l
	}
	return lines[i]
}

// A CLI's error that it follows with a block of its own (aider echoes the SEARCH/REPLACE blocks
// that failed, how to write them, "Don't re-send them.", then "Only 3 reflections allowed,
// stopping."): its head says what went wrong, its count line how much; the block's last line
// says nothing of the cause. Work after the head (an edit applied, a model reply's token count)
// means the CLI went on past it.
var (
	blockHeadRe  = lazyre.New(`^The LLM did not conform to the edit format\.$`)
	blockCountRe = lazyre.New(`^# (\d+ SEARCH/REPLACE blocks? failed to match!?)$`)
	blockPastRe  = lazyre.New(`^(?:Applied edit to |Tokens: )`)
)

// blockHead is the head of the error block an output ends in, with its count ("The LLM did not
// conform to the edit format. (1 SEARCH/REPLACE block failed to match!)"); "" when it does not
// end in one.
func blockHead(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		switch {
		case blockPastRe.MatchString(lines[i]):
			return ""
		case blockHeadRe.MatchString(lines[i]):
			for _, l := range lines[i+1 : min(i+5, len(lines))] {
				if m := blockCountRe.FindStringSubmatch(l); m != nil {
					return lines[i] + " (" + m[1] + ")"
				}
			}
			return lines[i]
		}
	}
	return ""
}

// A command-line parser's refusal ends on its usage and a pointer to --help: clap's "error:
// unexpected argument '--foo' found", "tip: …", "Usage: codex exec …", "For more information,
// try '--help'."; coreutils' "Try 'ls --help' for more information."; cobra's "Run 'x --help'
// for usage."; docker's "See 'docker run --help'.". The error line above says what was wrong.
var (
	helpTrailerRe = lazyre.New(`^(?:For more information,? try '?--help'?\.?|Try '[^']*--help' for more information\.?|Run '[^']*--help' for (?:usage|more information)\.?|See '[^']*--help'\.?)$`)
	usageErrorRe  = lazyre.New(`^(?:error|Error|ERROR|fatal)(?:\[\w+\])?: \S|^[\w.-]+: (?:unrecognized|invalid|unknown|illegal|missing) (?:option|argument|flag|command|subcommand|operand)`)
)

// usageLines is how far above its --help pointer a parser's error is looked for.
const usageLines = 15

// usageError is the error line of an output that ends on a pointer to --help; "" when it ends
// otherwise or no such line is close above it.
func usageError(lines []string) string {
	i := lastSaid(lines, len(lines)-1)
	if i < 0 || !helpTrailerRe.MatchString(lines[i]) {
		return ""
	}
	for j := i - 1; j >= 0 && j >= i-usageLines; j-- {
		if usageErrorRe.MatchString(lines[j]) {
			return lines[j]
		}
	}
	return ""
}

// isFrame: lines[i] is a line of a stack trace; a Python frame's source line and a Go frame's
// function are known by their neighbour.
func isFrame(lines []string, i int) bool {
	l := lines[i]
	if frameRe.MatchString(l) {
		return true
	}
	if i > 0 && strings.HasPrefix(lines[i-1], "File \"") && frameRe.MatchString(lines[i-1]) {
		return true
	}
	return i+1 < len(lines) && strings.HasSuffix(l, ")") && goFileLineRe.MatchString(lines[i+1])
}

// propertyRe is a line of the properties node prints after an error's message ("  status:
// 500", "code: 'ENOENT',"): a rule that matches it matched a detail of the error, which says
// nothing by itself.
var propertyRe = lazyre.New(`^[\w$]+: (?:-?\d+|'[^']*'|"[^"]*"|\w+),?$`)

// ownerWords are the words of the error the property line at offset at belongs to: the line
// above its properties and its stack, by the message of the JSON it carries when it carries one (gemini's
// "… _ApiError: {"error":{"code":500,"message":"An internal error has occurred. …"}}"); ""
// when there is none.
func ownerWords(text []byte, at int) string {
	start := bytes.LastIndexByte(text[:at], '\n') + 1
	for start > 0 {
		prev := bytes.LastIndexByte(text[:start-1], '\n') + 1
		l := strings.TrimSpace(string(text[prev : start-1]))
		start = prev
		if l == "" || l == "{" || propertyRe.MatchString(l) || frameRe.MatchString(strings.TrimSuffix(l, " {")) {
			continue // the error's other properties, the stack printed between it and them
		}
		if w := jsonWords(l); w != "" {
			return clipLine([]byte(w))
		}
		return clipLine([]byte(l))
	}
	return ""
}

// jsonWords is the message of the last JSON object or array in s (an array by its first
// object), itself read again when it is JSON (gemini's error message is the API's body); "" when
// s holds none or it says nothing.
func jsonWords(s string) string {
	raw := lastJSONValue([]byte(s))
	if raw == nil {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	if a, ok := v.([]any); ok && len(a) > 0 {
		v = a[0]
	}
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	for _, p := range messagePaths {
		if w, ok := path(m, p...).(string); ok && strings.TrimSpace(w) != "" {
			if inner := jsonWords(w); inner != "" && strings.HasPrefix(strings.TrimSpace(w), "{") {
				return inner
			}
			return oneLineOf(w)
		}
	}
	return ""
}

// A node program that prints an error object with String() prints "[object Object]" (gemini's
// "An unexpected critical error occurred:\n[object Object]", google-gemini/gemini-cli#13553):
// the placeholder says nothing, and its heading only that something failed. What failed is
// above them: an error's JSON body, or the line before.
var placeholderRe = lazyre.New(`^(?:\w*Error: )?\[object Object\]$`)

// placeholderCause is what an output that ends on "[object Object]" says before it, with the
// heading that introduced the placeholder ("An unexpected critical error occurred: Requested
// entity was not found."); "" when it ends otherwise.
func placeholderCause(lines []string) string {
	i := lastSaid(lines, len(lines)-1)
	if i < 0 || !placeholderRe.MatchString(lines[i]) {
		return ""
	}
	i = lastSaid(lines, i-1)
	head := ""
	if i >= 0 && strings.HasSuffix(lines[i], ":") {
		head, i = lines[i], i-1
	}
	words := jsonWords(strings.Join(lines[max(0, i-60):i+1], "\n"))
	if words == "" {
		words = LastWords([]byte(strings.Join(lines[:i+1], "\n")))
	}
	switch {
	case words == "":
		return strings.TrimSuffix(head, ":")
	case head == "":
		return words
	}
	return head + " " + words
}

// What a shell prints of a program a signal ended ("Aborted (core dumped)", "Segmentation
// fault"): said after a runtime's own last words ("FATAL ERROR: Reached heap limit Allocation
// failed - JavaScript heap out of memory" and its native stack), which name the cause.
var signalReportRe = lazyre.New(`^(?:Aborted|Segmentation fault|Bus error|Illegal instruction|Floating point exception|Trace/breakpoint trap|Killed)(?: \(core dumped\))?$`)

// DiedOf is the error line a program printed before a shell reported the signal that ended it
// (the output's last line); "" when the output ends otherwise or no such line names an error.
func DiedOf(out []byte) string {
	text := strings.ToValidUTF8(string(ansiRe.ReplaceAll(out, nil)), "\uFFFD")
	lines := strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return clipLine([]byte(diedOf(lines)))
}

func diedOf(lines []string) string {
	i := lastSaid(lines, len(lines)-1)
	if i < 0 || !signalReportRe.MatchString(lines[i]) {
		return ""
	}
	above := lines[:i]
	l := traceError(above)
	if j := lastSaid(above, len(above)-1); l == "" && j >= 0 {
		l = above[j]
	}
	if !errorishRe.MatchString(l) {
		return ""
	}
	return l
}

// lastSaid is the index of the last line at or before i that is not blank; -1 when none is.
func lastSaid(lines []string, i int) int {
	for i >= 0 && lines[i] == "" {
		i--
	}
	return i
}
