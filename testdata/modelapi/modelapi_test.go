package modelapi

import (
	"testing"
)

// The prompt cache sees through Claude Code's moving cache_control marker: the second request of
// a conversation re-sends the first message as a plain string, without the marker, and the
// whole first request is still a cached prefix.
func TestAnthropicCacheMarkerMoves(t *testing.T) {
	s := &Server{}
	first := []byte(`{"model":"m","tools":[{"name":"Write","input_schema":{}}],"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],
		"messages":[{"role":"user","content":[{"type":"text","text":"write hello.txt","cache_control":{"type":"ephemeral"}}]}]}`)
	second := []byte(`{"model":"m","tools":[{"name":"Write","input_schema":{}}],"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],
		"messages":[{"role":"user","content":"write hello.txt"},{"role":"assistant","content":[{"type":"text","text":"done"}]},
		{"role":"user","content":[{"type":"text","text":"again","cache_control":{"type":"ephemeral"}}]}]}`)
	c1, c2 := anthropicCanon(first), anthropicCanon(second)
	if got := s.cacheFor(c1); got != 0 {
		t.Fatalf("first request: %d bytes cached, want 0", got)
	}
	got := s.cacheFor(c2)
	// the first request's messages array ends where the second's goes on: all but its "]"
	if want := len(c1) - 1; got != want {
		t.Fatalf("second request: %d bytes cached, want %d\n%s\n%s", got, want, c1, c2)
	}
	s.SetScript(nil)
	if got := s.cacheFor(c2); got != 0 {
		t.Fatalf("after SetScript: %d bytes cached, want 0", got)
	}
}
