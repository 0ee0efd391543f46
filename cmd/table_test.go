package cmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
)

// TestTableAlignsPaintedCells checks that columns line up by display width whatever the paint:
// with color escapes stripped, every row's second column starts at the same display column.
func TestTableAlignsPaintedCells(t *testing.T) {
	red := func(s string) string { return "\x1b[31m" + s + "\x1b[0m" }
	var tb table
	tb.indent = "  "
	tb.header("#", "STATE", "CLASS")
	tb.row(plain("1"), painted("failed", red), plain("agent_exit"))
	tb.row(plain("2"), painted("succeeded", red), plain("-"))
	tb.row(plain("日本"), plain("running"), plain("-"))
	var buf bytes.Buffer
	if err := tb.write(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("got %d lines:\n%s", len(lines), buf.String())
	}
	col := -1
	for _, l := range lines {
		plainLine := ansiEscape.ReplaceAllString(l, "")
		if strings.HasSuffix(plainLine, " ") {
			t.Errorf("line ends in blanks: %q", plainLine)
		}
		fields := strings.Fields(plainLine)
		i := strings.Index(plainLine, " "+fields[2])
		at := runewidth.StringWidth(plainLine[:i+1])
		if col == -1 {
			col = at
		} else if at != col {
			t.Errorf("third column at %d, want %d:\n%s", at, col, ansiEscape.ReplaceAllString(buf.String(), ""))
		}
	}
}

// TestStatusLineFitsWidth: whatever the agent prints (long lines, escapes, tabs, wide characters),
// the status line is one line of at most width-1 display cells.
func TestStatusLineFitsWidth(t *testing.T) {
	lasts := []string{
		"",
		strings.Repeat("x", 300),
		"\x1b[1;32mPASS\x1b[0m\tok  \tgithub.com/spf13/cobra\t0.412s " + strings.Repeat("y", 90),
		strings.Repeat("日本語のテキスト", 20),
		"\x1b]0;title\x07progress 42%\r",
	}
	heads := []string{"fix@1/3 claude 12s", strings.Repeat("long-task-id", 8) + "@12/20 opencode 1h2m3s"}
	for _, width := range []int{10, 20, 40, 80, 81, 200} {
		for _, head := range heads {
			for _, last := range lasts {
				line := statusLine(head, last, width)
				vis := ansiEscape.ReplaceAllString(line, "")
				if w := runewidth.StringWidth(vis); w > width-1 {
					t.Errorf("width %d: line is %d cells: %q", width, w, vis)
				}
				if strings.ContainsAny(vis, "\n\r\t\x1b") {
					t.Errorf("width %d: control characters in %q", width, vis)
				}
			}
		}
	}
	if got := statusLine("fix@1/3 claude 2s", "hello", 80); !strings.Contains(got, "hello") {
		t.Errorf("short output not shown: %q", got)
	}
}
