package modelapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// gemini is generateContent and streamGenerateContent (?alt=sse) as gemini-cli's @google/genai
// client calls them under GOOGLE_GEMINI_BASE_URL.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request, body []byte, log *Request) {
	var req struct {
		Contents json.RawMessage `json:"contents"`
		System   json.RawMessage `json:"systemInstruction"`
		Tools    []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		geminiFail(w, &Error{Kind: "bad_request"})
		return
	}
	log.InputTokens = estimate(append(append([]byte{}, req.System...), req.Contents...))
	var names []string
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			names = append(names, f.Name)
		}
	}
	// gemini-cli's side requests (model routing, next-speaker checks, loop detection) ask for
	// JSON: one object with every field they read.
	side := Turn{Text: `{"reasoning": "a simple task", "model_choice": "flash", "complexity_reasoning": "a simple task", "complexity_score": 10, "next_speaker": "user"}`}
	t, ok := s.answer(w, names, side, log, geminiFail)
	if !ok {
		return
	}
	u := s.usageFor(t, body, log.Scripted)
	log.Reported = &u
	var part map[string]any
	finish := "STOP"
	switch {
	// gemini's own tool names, offered or not, as a model that knows gemini-cli asks for them:
	// headless gemini offers write_file only in an approval mode that allows edits, and a
	// call of a tool it did not offer is its refusal ("Tool "write_file" not found").
	case t.Write != nil:
		part = map[string]any{"functionCall": map[string]any{"name": "write_file",
			"args": map[string]any{"file_path": absPath(t.Write.Path, body), "content": t.Write.Content}}}
	case t.Shell != "":
		part = map[string]any{"functionCall": map[string]any{"name": "run_shell_command",
			"args": map[string]any{"command": t.Shell, "description": "run a command"}}}
	default:
		part = map[string]any{"text": t.Text}
	}
	usage := map[string]any{"promptTokenCount": u.Input + u.CacheRead, "candidatesTokenCount": u.Output,
		"totalTokenCount": u.Input + u.CacheRead + u.Output, "cachedContentTokenCount": u.CacheRead}
	resp := func(p map[string]any, fin any, usage any) map[string]any {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": []any{p}}, "index": 0}
		if fin != nil {
			c["finishReason"] = fin
		}
		out := map[string]any{"candidates": []any{c}, "modelVersion": "gemini-fake", "responseId": s.id("resp")}
		if usage != nil {
			out["usageMetadata"] = usage
		}
		return out
	}
	if !strings.Contains(r.URL.Path, ":streamGenerateContent") {
		writeJSON(w, 200, resp(part, finish, usage))
		return
	}
	sseHeaders(w)
	if txt, ok := part["text"].(string); ok {
		cs := chunks(txt, 16)
		for i, c := range cs {
			if i == len(cs)-1 {
				sse(w, "", resp(map[string]any{"text": c}, finish, usage))
			} else {
				sse(w, "", resp(map[string]any{"text": c}, nil, nil))
			}
		}
		return
	}
	sse(w, "", resp(part, finish, usage))
}

func geminiError(code int, status, msg string, details ...any) map[string]any {
	e := map[string]any{"code": code, "message": msg, "status": status}
	if len(details) > 0 {
		e["details"] = details
	}
	return map[string]any{"error": e}
}

// geminiFail answers as generativelanguage.googleapis.com does: google.rpc.Status bodies, a
// RetryInfo detail on 429s.
func geminiFail(w http.ResponseWriter, e *Error) {
	retryHeaders(w, e)
	delay := e.RetryAfter
	if delay == 0 {
		delay = 20
	}
	if e.ResetAt > 0 {
		delay = int(max(0, e.ResetAt-time.Now().Unix()))
	}
	retry := map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": fmt.Sprintf("%ds", delay)}
	switch e.Kind {
	case "rate_limit":
		writeJSON(w, 429, geminiError(429, "RESOURCE_EXHAUSTED",
			"Resource has been exhausted (e.g. check quota).", retry))
	case "usage_limit", "credit":
		writeJSON(w, 429, geminiError(429, "RESOURCE_EXHAUSTED",
			fmt.Sprintf("You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. Please retry in %d.0s.", delay),
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				"quotaId":     "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}}},
			retry))
	case "overloaded":
		writeJSON(w, 503, geminiError(503, "UNAVAILABLE", "The model is overloaded. Please try again later."))
	case "server":
		writeJSON(w, 500, geminiError(500, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"))
	case "auth":
		writeJSON(w, 400, geminiError(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
			map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}))
	case "prompt_too_long":
		writeJSON(w, 400, geminiError(400, "INVALID_ARGUMENT", "The input token count (1234567) exceeds the maximum number of tokens allowed (1048576)."))
	case "suspended":
		writeJSON(w, 403, geminiError(403, "PERMISSION_DENIED", "Permission denied: Consumer 'api_key:modelapi' has been suspended.",
			map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "CONSUMER_SUSPENDED", "domain": "googleapis.com"}))
	case "unauthenticated":
		writeJSON(w, 401, geminiError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."))
	case "cut":
		// a stream cut mid-way: a 200 whose events end without a finish reason
		sseHeaders(w)
		sse(w, "", map[string]any{"candidates": []any{map[string]any{"content": map[string]any{"role": "model",
			"parts": []any{map[string]any{"text": "I will wri"}}}, "index": 0}}, "modelVersion": "gemini-fake"})
	case "bad_request":
		writeJSON(w, 400, geminiError(400, "INVALID_ARGUMENT", "modelapi: the request is not JSON"))
	default:
		writeJSON(w, 500, geminiError(500, "INTERNAL", "modelapi: unknown error kind "+e.Kind))
	}
}
