// Package modelapi is a scripted fake of the model APIs the agent CLIs talk to: Anthropic's
// Messages API (claude), OpenAI's Responses API (codex), Gemini's generateContent (gemini-cli)
// and OpenAI's Chat Completions (opencode's openai-compatible provider). Tests start it in-process
// on a loopback port and point a real CLI at it; a script of turns says what the "model" answers
// to each conversation request, and every request is logged so tests can assert on what the CLI
// sent (the tools it offered, the tokens it re-sent on a retry).
//
// A turn is provider-neutral: "write this file", "run this command", "answer this text", "fail
// with a 429". The server turns it into the wire format of the API the request came in on, using
// the tool names and argument names that CLI offered in its request.
package modelapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// Turn is one scripted model answer. Exactly one of Write, Shell, Text or Error is set.
type Turn struct {
	Write *WriteFile `json:"write,omitempty"` // a tool call that writes a file
	Shell string     `json:"shell,omitempty"` // a tool call that runs a shell command
	Text  string     `json:"text,omitempty"`  // a final answer
	Error *Error     `json:"error,omitempty"` // an HTTP error instead of an answer

	// Usage reported with the answer; zero values get small defaults derived from the request.
	Usage Usage `json:"usage,omitempty"`
	// Times is how many requests this turn answers (0 = 1, -1 = every request from now on).
	Times int `json:"times,omitempty"`
}

// WriteFile is a file-writing tool call: a path relative to the CLI's working directory.
type WriteFile struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// Usage is what the fake reports as consumed.
type Usage struct {
	Input         int `json:"input,omitempty"`
	Output        int `json:"output,omitempty"`
	CacheRead     int `json:"cache_read,omitempty"`
	CacheCreation int `json:"cache_creation,omitempty"`
}

// Error is an HTTP failure. Kind picks the provider's own body for it: rate_limit (429),
// overloaded (529, or 503 where the provider has no 529), server (500), auth (401),
// prompt_too_long (400), usage_limit (the provider's quota-exhausted answer, with ResetAt);
// gemini also suspended (403), unauthenticated (401) and cut (a 200 stream that ends mid-way).
type Error struct {
	Kind       string `json:"kind"`
	RetryAfter int    `json:"retry_after,omitempty"` // seconds, sent as retry-after
	// ResetAt is when a usage limit or rate limit window resets (Unix seconds); sent in the
	// provider's rate-limit headers and, where the provider does, in the body.
	ResetAt int64 `json:"reset_at,omitempty"`
	// ResetIn sets ResetAt to this many seconds after the request, when ResetAt is 0.
	ResetIn int `json:"reset_in,omitempty"`
}

// resolve fixes a relative reset to an absolute one at the moment the error is served, and
// remembers it as the last reset the server announced.
func (s *Server) resolve(e *Error) *Error {
	c := *e
	if c.ResetAt == 0 && c.ResetIn > 0 {
		c.ResetAt = time.Now().Unix() + int64(c.ResetIn)
	}
	if c.ResetAt != 0 {
		s.mu.Lock()
		s.lastReset = c.ResetAt
		s.mu.Unlock()
	}
	return &c
}

// LastReset is the reset time (Unix seconds) of the last error that announced one, 0 if none.
func (s *Server) LastReset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastReset
}

// Request is one logged request.
type Request struct {
	API    string          `json:"api"` // anthropic | openai-responses | openai-chat | gemini | other
	At     time.Time       `json:"at"`  // when it came in
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Header http.Header     `json:"header"`
	Body   json.RawMessage `json:"body,omitempty"`
	// Scripted is true for a conversation request answered from the script; false for side
	// requests (titles, quota probes, token counts) answered with a canned reply.
	Scripted bool `json:"scripted"`
	Turn     int  `json:"turn"` // the script index that answered, -1 when none
	Status   int  `json:"status"`
	// InputTokens is the fake's estimate of the prompt's size (bytes of the request's messages
	// / 4), the figure reported as input when a turn gives none.
	InputTokens int `json:"input_tokens"`
	// Reported is the usage the fake answered with (input split into uncached and cache reads).
	Reported *Usage `json:"reported,omitempty"`
}

// Server is a running fake.
type Server struct {
	URL string

	mu        sync.Mutex
	script    []Turn
	next      int // index into script
	used      int // requests the current turn has answered
	requests  []Request
	logFile   string
	srv       *http.Server
	ln        net.Listener
	seq       int
	lastReset int64
	prompts   [][]byte // the conversation prompts seen, for cacheFor
}

// Start serves script on a loopback port until Close.
func Start(script []Turn) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + ln.Addr().String(), script: script, ln: ln}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// SetScript replaces the script and starts it from its first turn, with an empty prompt cache
// (cacheFor): what comes next is measured as if against a fresh provider.
func (s *Server) SetScript(script []Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script, s.next, s.used, s.prompts = script, 0, 0, nil
}

// LogTo appends every request, as one JSON line, to path as it is answered.
func (s *Server) LogTo(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logFile = path
}

// Requests returns a copy of the log so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Remaining is how many turns of the script have not been reached.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script) - s.next
}

// take returns the turn that answers the next conversation request, or -1 when the script is
// used up (the fake then answers a plain "done" text, so a CLI never hangs on it).
func (s *Server) take() (Turn, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.script) {
		return Turn{Text: "done"}, -1
	}
	t, i := s.script[s.next], s.next
	s.used++
	if t.Times >= 0 && s.used >= max(1, t.Times) {
		s.next++
		s.used = 0
	}
	return t, i
}

// answer picks the turn that answers a request: side requests (no tools offered: a session
// title, a routing or quota probe) get side without spending a turn of the script; a
// conversation request gets the next turn, and when that is an error, fail sends it and ok is
// false.
func (s *Server) answer(w http.ResponseWriter, tools []string, side Turn, log *Request, fail func(http.ResponseWriter, *Error)) (t Turn, ok bool) {
	if len(tools) == 0 {
		return side, true
	}
	t, log.Turn = s.take()
	log.Scripted = true
	if t.Error != nil {
		fail(w, s.resolve(t.Error))
		return t, false
	}
	return t, true
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	if s.logFile != "" {
		if f, err := os.OpenFile(s.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			line, _ := json.Marshal(r)
			f.Write(append(line, '\n'))
			f.Close()
		}
	}
}

func (s *Server) id(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("%s_%06d", prefix, s.seq)
}

// ServeHTTP routes a request to the API its path belongs to.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	req := Request{At: time.Now().UTC(), Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Turn: -1}
	if json.Valid(body) {
		req.Body = body
	} else if len(body) > 0 {
		req.Body, _ = json.Marshal(string(body))
	}
	rw := &statusWriter{ResponseWriter: w, status: 200}
	p := r.URL.Path
	switch {
	case strings.HasSuffix(p, "/v1/messages") && r.Method == http.MethodPost:
		req.API = "anthropic"
		s.anthropic(rw, body, &req)
	case strings.HasSuffix(p, "/v1/messages/count_tokens"):
		req.API = "anthropic"
		writeJSON(rw, 200, map[string]any{"input_tokens": estimate(body)})
	case strings.HasSuffix(p, "/responses") && r.Method == http.MethodPost:
		req.API = "openai-responses"
		s.responses(rw, body, &req)
	case strings.HasSuffix(p, "/chat/completions") && r.Method == http.MethodPost:
		req.API = "openai-chat"
		s.chat(rw, body, &req)
	case strings.Contains(p, ":streamGenerateContent") || strings.Contains(p, ":generateContent"):
		req.API = "gemini"
		s.gemini(rw, r, body, &req)
	case strings.Contains(p, ":countTokens"):
		req.API = "gemini"
		writeJSON(rw, 200, map[string]any{"totalTokens": estimate(body)})
	case strings.HasSuffix(p, "/models") && r.Method == http.MethodGet:
		req.API = "other"
		writeJSON(rw, 200, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": "fake-model", "object": "model", "created": 1700000000, "owned_by": "modelapi"},
		}, "models": []any{}})
	default:
		req.API = "other"
		http.Error(rw, "modelapi: no such endpoint", http.StatusNotFound)
	}
	req.Status = rw.status
	s.record(req)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// estimate is the fake's token count of a request: a quarter of its bytes, at least 1.
func estimate(body []byte) int { return max(1, len(body)/4) }

// sse writes one server-sent event (name may be empty) and flushes it.
func sse(w http.ResponseWriter, name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		fmt.Fprintf(w, "event: %s\n", name)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func sseHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(200)
}

// usageFor fills a turn's usage with defaults: output 20, and the input split as a provider's
// prompt cache would split it (cacheFor).
func (s *Server) usageFor(t Turn, canon []byte, scripted bool) Usage {
	u := t.Usage
	if u.Input == 0 && u.CacheRead == 0 && u.CacheCreation == 0 {
		cached := 0
		if scripted {
			cached = s.cacheFor(canon)
		}
		u.Input, u.CacheRead = estimate(canon[cached:]), cached/4
	}
	if u.Output == 0 {
		u.Output = 20
	}
	return u
}

// cacheFor models a provider's prompt cache: the part of a conversation request's prompt (in
// the provider's cache order: tools, system, messages) that an earlier request already sent,
// as its longest common prefix in bytes. The prompt is then remembered. Warm and cold retries
// differ exactly here: a resumed conversation re-sends the earlier turns as a cached prefix.
func (s *Server) cacheFor(canon []byte) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	best := 0
	for _, p := range s.prompts {
		n := 0
		for n < len(p) && n < len(canon) && p[n] == canon[n] {
			n++
		}
		best = max(best, n)
	}
	s.prompts = append(s.prompts, append([]byte(nil), canon...))
	return best
}

// retryHeaders sets retry-after (and x-ratelimit reset headers) an error asks for.
func retryHeaders(w http.ResponseWriter, e *Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(e.RetryAfter))
	}
}

// toolName picks, among the tool names a request offered, the first of the candidates; "" when
// the CLI offered none of them.
func toolName(offered []string, candidates ...string) string {
	for _, c := range candidates {
		for _, o := range offered {
			if o == c {
				return c
			}
		}
	}
	return ""
}
