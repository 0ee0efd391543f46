package modelapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

func rfc3339(unix int64) string { return time.Unix(unix, 0).UTC().Format(time.RFC3339) }

// openaiTool is one entry of a request's tools: a function ({type: function, name} in the
// Responses API, {type: function, function: {name}} in Chat Completions), a custom (freeform)
// tool, or a built-in such as local_shell.
type openaiTool struct {
	Type     string `json:"type"`
	Name     string `json:"name"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

func (t openaiTool) name() string {
	if t.Name != "" {
		return t.Name
	}
	if t.Function.Name != "" {
		return t.Function.Name
	}
	return t.Type
}

func openaiError(typ, code, msg string) map[string]any {
	var c any
	if code != "" {
		c = code
	}
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}}
}

// openaiFail answers an error as api.openai.com does, with its x-ratelimit-* headers on 429s.
// usage_limit is the answer ChatGPT-plan sign-ins get (codex reads resets_at from it); credit
// is an API account's exhausted quota.
func openaiFail(w http.ResponseWriter, e *Error) {
	h := w.Header()
	retryHeaders(w, e)
	h.Set("x-request-id", "req_modelapi")
	switch e.Kind {
	case "rate_limit":
		h.Set("x-ratelimit-limit-requests", "500")
		h.Set("x-ratelimit-remaining-requests", "0")
		wait := e.RetryAfter
		if wait == 0 {
			wait = 20
		}
		h.Set("x-ratelimit-reset-requests", fmt.Sprintf("%ds", wait))
		writeJSON(w, 429, openaiError("requests", "rate_limit_exceeded",
			fmt.Sprintf("Rate limit reached for fake-model in organization org-modelapi on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in %ds. Visit https://platform.openai.com/account/rate-limits to learn more.", wait)))
	case "overloaded":
		writeJSON(w, 503, openaiError("server_error", "", "The server is overloaded or not ready yet."))
	case "server":
		writeJSON(w, 500, openaiError("server_error", "", "The server had an error while processing your request. Sorry about that!"))
	case "auth":
		writeJSON(w, 401, openaiError("invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-model***. You can find your API key at https://platform.openai.com/account/api-keys."))
	case "prompt_too_long":
		writeJSON(w, 400, openaiError("invalid_request_error", "context_length_exceeded", "Your input exceeds the context window of this model. Please adjust your input and try again."))
	case "usage_limit":
		body := map[string]any{"error": map[string]any{"type": "usage_limit_reached",
			"message": "The usage limit has been reached", "plan_type": "plus"}}
		if e.ResetAt > 0 {
			body["error"].(map[string]any)["resets_at"] = e.ResetAt
			body["error"].(map[string]any)["resets_in_seconds"] = max(0, e.ResetAt-time.Now().Unix())
		}
		writeJSON(w, 429, body)
	case "credit":
		writeJSON(w, 429, openaiError("insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."))
	default:
		writeJSON(w, 500, openaiError("server_error", "", "modelapi: unknown error kind "+e.Kind))
	}
}

// promptCanon is a request's prompt in the provider's cache order (tools, then the system
// text, then the conversation): the request's fields of those names, raw, one after another. The
// body's own order puts the conversation first, so a longer conversation would end the prefix
// match before the tools.
func promptCanon(body []byte, fields ...string) []byte {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	var out []byte
	for _, f := range fields {
		out = append(out, req[f]...)
	}
	return out
}

// patchAdd is an apply_patch envelope that adds one file.
func patchAdd(path, content string) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: " + path + "\n")
	for _, l := range strings.SplitAfter(strings.TrimSuffix(content, "\n"), "\n") {
		b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

// shellHeredoc is a shell command that writes content to path.
func shellHeredoc(path, content string) string {
	return fmt.Sprintf("cat > %q <<'MODELAPI_EOF'\n%sMODELAPI_EOF", path, content)
}

// responses is the Responses API as codex uses it: POST …/responses with stream: true, answered
// with response.* server-sent events.
func (s *Server) responses(w http.ResponseWriter, body []byte, log *Request) {
	var req struct {
		Model  string          `json:"model"`
		Input  json.RawMessage `json:"input"`
		Tools  []openaiTool    `json:"tools"`
		Stream bool            `json:"stream"`
		Instr  json.RawMessage `json:"instructions"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, 400, openaiError("invalid_request_error", "", "modelapi: "+err.Error()))
		return
	}
	log.InputTokens = estimate(append(append([]byte{}, req.Instr...), req.Input...))
	tools := map[string]openaiTool{}
	var names []string
	for _, t := range req.Tools {
		tools[t.name()] = t
		names = append(names, t.name())
	}
	t, ok := s.answer(w, names, Turn{Text: "ok"}, log, openaiFail)
	if !ok {
		return
	}
	u := s.usageFor(t, promptCanon(body, "tools", "instructions", "input"), log.Scripted)
	log.Reported = &u
	var item map[string]any
	switch {
	case t.Write != nil && toolName(names, "apply_patch") != "":
		patch := patchAdd(t.Write.Path, t.Write.Content)
		if tools["apply_patch"].Type == "custom" {
			item = map[string]any{"type": "custom_tool_call", "id": s.id("ctc"), "call_id": s.id("call"), "name": "apply_patch", "input": patch, "status": "completed"}
		} else {
			args, _ := json.Marshal(map[string]any{"input": patch})
			item = map[string]any{"type": "function_call", "id": s.id("fc"), "call_id": s.id("call"), "name": "apply_patch", "arguments": string(args), "status": "completed"}
		}
	case t.Write != nil || t.Shell != "":
		cmd := t.Shell
		if t.Write != nil {
			cmd = shellHeredoc(t.Write.Path, t.Write.Content)
		}
		item = s.responsesShell(names, tools, cmd)
	default:
		item = map[string]any{"type": "message", "id": s.id("msg"), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}}}
	}
	respID := s.id("resp")
	usage := map[string]any{"input_tokens": u.Input + u.CacheRead, "input_tokens_details": map[string]any{"cached_tokens": u.CacheRead},
		"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": u.Input + u.CacheRead + u.Output}
	model := req.Model
	final := map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(), "status": "completed",
		"model": model, "output": []any{item}, "usage": usage}
	if !req.Stream {
		writeJSON(w, 200, final)
		return
	}
	sseHeaders(w)
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": respID, "object": "response", "status": "in_progress", "model": model, "output": []any{}}})
	sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	if item["type"] == "message" {
		for _, c := range chunks(t.Text, 16) {
			sse(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0, "content_index": 0, "delta": c})
		}
	}
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": final})
}

// responsesShell is a shell tool call in whichever form the request offered: codex's
// exec_command (unified exec), shell_command, shell (argv) or the built-in local_shell.
func (s *Server) responsesShell(names []string, tools map[string]openaiTool, cmd string) map[string]any {
	call := s.id("call")
	fc := func(name string, args map[string]any) map[string]any {
		b, _ := json.Marshal(args)
		return map[string]any{"type": "function_call", "id": s.id("fc"), "call_id": call, "name": name, "arguments": string(b), "status": "completed"}
	}
	switch toolName(names, "exec_command", "shell_command", "shell", "local_shell") {
	case "exec_command":
		return fc("exec_command", map[string]any{"cmd": cmd})
	case "shell_command":
		return fc("shell_command", map[string]any{"command": cmd})
	case "shell":
		if tools["shell"].Type == "local_shell" {
			break
		}
		return fc("shell", map[string]any{"command": []string{"bash", "-lc", cmd}})
	}
	return map[string]any{"type": "local_shell_call", "id": s.id("lsc"), "call_id": call, "status": "completed",
		"action": map[string]any{"type": "exec", "command": []string{"bash", "-lc", cmd}}}
}

// chat is OpenAI's Chat Completions, as openai-compatible clients (opencode) use it.
func (s *Server) chat(w http.ResponseWriter, body []byte, log *Request) {
	var req struct {
		Model    string          `json:"model"`
		Messages json.RawMessage `json:"messages"`
		Tools    []openaiTool    `json:"tools"`
		Stream   bool            `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, 400, openaiError("invalid_request_error", "", "modelapi: "+err.Error()))
		return
	}
	log.InputTokens = estimate(req.Messages)
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.name())
	}
	t, ok := s.answer(w, names, Turn{Text: "ok"}, log, openaiFail)
	if !ok {
		return
	}
	u := s.usageFor(t, promptCanon(body, "tools", "messages"), log.Scripted)
	log.Reported = &u
	var call map[string]any
	finish := "stop"
	switch {
	case t.Write != nil && toolName(names, "write") != "":
		args, _ := json.Marshal(map[string]any{"filePath": absPath(t.Write.Path, body), "content": t.Write.Content})
		call = map[string]any{"name": "write", "arguments": string(args)}
	case t.Write != nil || t.Shell != "":
		cmd := t.Shell
		if t.Write != nil {
			cmd = shellHeredoc(t.Write.Path, t.Write.Content)
		}
		args, _ := json.Marshal(map[string]any{"command": cmd, "description": "run a command"})
		call = map[string]any{"name": toolName(names, "bash", "shell"), "arguments": string(args)}
	}
	msg := map[string]any{"role": "assistant", "content": t.Text}
	if call != nil {
		finish = "tool_calls"
		msg["content"] = nil
		msg["tool_calls"] = []any{map[string]any{"index": 0, "id": s.id("call"), "type": "function", "function": call}}
	}
	usage := map[string]any{"prompt_tokens": u.Input + u.CacheRead, "completion_tokens": u.Output,
		"total_tokens": u.Input + u.CacheRead + u.Output, "prompt_tokens_details": map[string]any{"cached_tokens": u.CacheRead}}
	id := s.id("chatcmpl")
	if !req.Stream {
		writeJSON(w, 200, map[string]any{"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	sseHeaders(w)
	chunk := func(delta map[string]any, finish any, usage any) {
		sse(w, "", map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}, "usage": usage})
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	if call != nil {
		chunk(map[string]any{"tool_calls": msg["tool_calls"]}, nil, nil)
	} else {
		for _, c := range chunks(t.Text, 16) {
			chunk(map[string]any{"content": c}, nil, nil)
		}
	}
	chunk(map[string]any{}, finish, usage)
	fmt.Fprint(w, "data: [DONE]\n\n")
}
