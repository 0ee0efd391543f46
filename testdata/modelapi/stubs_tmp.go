package modelapi

import (
	"net/http"
	"time"
)

func rfc3339(unix int64) string { return time.Unix(unix, 0).UTC().Format(time.RFC3339) }

func (s *Server) responses(w http.ResponseWriter, body []byte, log *Request) {
	http.Error(w, "modelapi: not yet", http.StatusNotImplemented)
}
func (s *Server) chat(w http.ResponseWriter, body []byte, log *Request) {
	http.Error(w, "modelapi: not yet", http.StatusNotImplemented)
}
func (s *Server) gemini(w http.ResponseWriter, r *http.Request, body []byte, log *Request) {
	http.Error(w, "modelapi: not yet", http.StatusNotImplemented)
}
