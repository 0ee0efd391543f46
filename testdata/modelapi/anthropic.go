package modelapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
)

// anthropicReq is the part of a Messages API request the fake reads.
type anthropicReq struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	System   json.RawMessage `json:"system"`
	Messages json.RawMessage `json:"messages"`
	Tools    []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

var workdirRe = regexp.MustCompile(`(?i)(?:primary )?working directory: ?([^\s"\\]+)`)

// absPath makes a scripted relative path absolute against the working directory the CLI's
// system prompt names (CLIs that insist on absolute paths for their write tool: claude, gemini).
func absPath(p string, body []byte) string {
	if filepath.IsAbs(p) {
		return p
	}
	if m := workdirRe.FindSubmatch(body); m != nil {
		return filepath.Join(string(m[1]), p)
	}
	return p
}

func (s *Server) anthropic(w http.ResponseWriter, body []byte, log *Request) {
	var req anthropicReq
	if err := json.Unmarshal(body, &req); err != nil {
		writeJSON(w, 400, anthropicError("invalid_request_error", "modelapi: "+err.Error()))
		return
	}
	canon := anthropicCanon(body)
	log.InputTokens = estimate(canon)
	var tools []string
	for _, t := range req.Tools {
		tools = append(tools, t.Name)
	}
	t, ok := s.answer(w, tools, Turn{Text: "ok"}, log, anthropicFail)
	if !ok {
		return
	}
	u := s.usageFor(t, canon, log.Scripted)
	log.Reported = &u
	s.anthropicAnswer(w, req, t, tools, body, u)
}

// anthropicCanon is a request's prompt as the provider's cache sees it: tools, system, messages
// in that order, without the cache_control markers and with a string content written as the one
// text block it stands for. Claude Code moves its cache_control marker to the newest message on
// every request and sends the older ones' content as a plain string: the same tokens, and a
// prefix match of the raw bytes would end at the first of them.
func anthropicCanon(body []byte) []byte {
	var req map[string]any
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	var out []byte
	for _, k := range []string{"tools", "system", "messages"} {
		v := withoutCacheControl(req[k])
		switch x := v.(type) {
		case string: // a system prompt given as a string
			v = []any{map[string]any{"type": "text", "text": x}}
		case []any:
			if k == "messages" {
				for _, m := range x {
					if mm, ok := m.(map[string]any); ok {
						if c, ok := mm["content"].(string); ok {
							mm["content"] = []any{map[string]any{"type": "text", "text": c}}
						}
					}
				}
			}
		}
		if v == nil {
			continue
		}
		b, _ := json.Marshal(v) // map keys sorted: one spelling per prompt
		out = append(out, b...)
	}
	return out
}

func withoutCacheControl(v any) any {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "cache_control")
		for k, e := range x {
			x[k] = withoutCacheControl(e)
		}
	case []any:
		for i, e := range x {
			x[i] = withoutCacheControl(e)
		}
	}
	return v
}

func anthropicError(typ, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

// anthropicFail answers an error the way api.anthropic.com does: status, error type, message,
// and for rate limits the anthropic-ratelimit-* headers (the unified ones a subscription's usage
// limit is reported in).
func anthropicFail(w http.ResponseWriter, e *Error) {
	h := w.Header()
	retryHeaders(w, e)
	h.Set("request-id", "req_modelapi")
	reset := ""
	if e.ResetAt > 0 {
		reset = fmt.Sprint(e.ResetAt)
	}
	switch e.Kind {
	case "rate_limit":
		h.Set("anthropic-ratelimit-requests-limit", "50")
		h.Set("anthropic-ratelimit-requests-remaining", "0")
		if reset != "" {
			h.Set("anthropic-ratelimit-requests-reset", rfc3339(e.ResetAt))
		}
		writeJSON(w, 429, anthropicError("rate_limit_error", "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits."))
	case "overloaded":
		writeJSON(w, 529, anthropicError("overloaded_error", "Overloaded"))
	case "server":
		writeJSON(w, 500, anthropicError("api_error", "Internal server error"))
	case "auth":
		writeJSON(w, 401, anthropicError("authentication_error", "invalid x-api-key"))
	case "prompt_too_long":
		writeJSON(w, 400, anthropicError("invalid_request_error", "prompt is too long: 212345 tokens > 200000 maximum"))
	case "usage_limit":
		// A subscription's five-hour window: 429 with the unified rate-limit headers.
		h.Set("anthropic-ratelimit-unified-status", "rejected")
		h.Set("anthropic-ratelimit-unified-representative-claim", "five_hour")
		h.Set("anthropic-ratelimit-unified-5h-status", "rejected")
		if reset != "" {
			h.Set("anthropic-ratelimit-unified-reset", reset)
			h.Set("anthropic-ratelimit-unified-5h-reset", reset)
		}
		h.Set("anthropic-ratelimit-unified-overage-status", "rejected")
		h.Set("anthropic-ratelimit-unified-overage-disabled-reason", "org_level_disabled")
		writeJSON(w, 429, anthropicError("rate_limit_error", "This request would exceed your account's rate limit. Please try again later."))
	case "credit":
		writeJSON(w, 400, anthropicError("invalid_request_error", "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."))
	default:
		writeJSON(w, 500, anthropicError("api_error", "modelapi: unknown error kind "+e.Kind))
	}
}

// anthropicAnswer sends t as a Messages API response, streamed or whole.
func (s *Server) anthropicAnswer(w http.ResponseWriter, req anthropicReq, t Turn, tools []string, body []byte, u Usage) {
	var block map[string]any
	stop := "end_turn"
	switch {
	case t.Write != nil:
		name := toolName(tools, "Write", "write_file", "str_replace_based_edit_tool")
		input := map[string]any{"file_path": absPath(t.Write.Path, body), "content": t.Write.Content}
		if name == "str_replace_based_edit_tool" {
			input = map[string]any{"command": "create", "path": absPath(t.Write.Path, body), "file_text": t.Write.Content}
		}
		block = map[string]any{"type": "tool_use", "id": s.id("toolu"), "name": name, "input": input}
		stop = "tool_use"
	case t.Shell != "":
		block = map[string]any{"type": "tool_use", "id": s.id("toolu"), "name": toolName(tools, "Bash", "bash"),
			"input": map[string]any{"command": t.Shell, "description": "run " + t.Shell}}
		stop = "tool_use"
	default:
		block = map[string]any{"type": "text", "text": t.Text}
	}
	usage := map[string]any{"input_tokens": u.Input, "output_tokens": u.Output,
		"cache_read_input_tokens": u.CacheRead, "cache_creation_input_tokens": u.CacheCreation}
	model := req.Model
	if model == "" {
		model = "claude-fake"
	}
	msgID := s.id("msg")
	if !req.Stream {
		writeJSON(w, 200, map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	sseHeaders(w)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": u.Input, "output_tokens": 1,
			"cache_read_input_tokens": u.CacheRead, "cache_creation_input_tokens": u.CacheCreation}}})
	if block["type"] == "text" {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for _, chunk := range chunks(t.Text, 16) {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "text_delta", "text": chunk}})
		}
	} else {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}})
		args, _ := json.Marshal(block["input"])
		for _, chunk := range chunks(string(args), 32) {
			sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": chunk}})
		}
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": usage})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// chunks splits s into pieces of at most n bytes (at rune boundaries), at least one piece.
func chunks(s string, n int) []string {
	if s == "" {
		return []string{""}
	}
	var out []string
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= n {
			out = append(out, b.String())
			b.Reset()
		}
		b.WriteRune(r)
	}
	return append(out, b.String())
}
