package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

// TestWriteEscapes: the report quotes agent output, diffs and prompts, none of them trusted; a
// tag in them is text on the page, never markup, and the page allows no script anyway.
func TestWriteEscapes(t *testing.T) {
	evil := `<script>alert(1)</script><img src="https://example.com/x.png">`
	start := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	d := &Doc{
		Run:       &store.Run{ID: "k3f9", State: store.RunFailed, TaskFile: "mulligan.yaml", StartedAt: start},
		Generated: start.Add(time.Minute), Start: start, End: start.Add(time.Minute),
		Rows: []Row{{Label: "fix " + evil, Bars: []Bar{{Left: 0, Width: 50, Outcome: "failed", Label: evil, Title: evil, Anchor: "attempt-fix-1"}}}},
		Attempts: []Attempt{{Anchor: "attempt-fix-1", Addr: "k3f9/fix@1", Task: "fix", N: 1, Agent: "a", State: "failed",
			Message: evil, Diff: "+" + evil + "\n", Verify: evil, Output: evil, Prompt: evil}},
		Effects:  []Effect{{Name: "deploy", Addr: "fix@1", State: "recorded", Compensate: evil, Output: evil}},
		Autopsy:  evil,
		TaskFile: evil,
	}
	var b bytes.Buffer
	if err := Write(&b, d); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script", "<img", `src="https`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q: a quoted text became markup", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the quoted text is not on the page as text")
	}
	if !strings.Contains(page, `content="default-src 'none'; style-src 'unsafe-inline'"`) {
		t.Error("the page does not forbid loading anything")
	}
}
