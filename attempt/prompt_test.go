package attempt

import (
	"fmt"
	"strings"
	"testing"
)

func TestComposePromptFirstAttempt(t *testing.T) {
	got := ComposePrompt(PromptParts{Task: "Make the tests pass.\n"})
	if got != "Make the tests pass.\n" {
		t.Fatalf("got %q", got)
	}
}

func TestComposePromptPrevious(t *testing.T) {
	got := ComposePrompt(PromptParts{
		Task:     "Fix it.",
		Prev:     &PrevAttempt{N: 2, Class: "agent_exit", Message: "agent exited with status 1\nmore", Output: []byte("a\nb\nerror: boom\n")},
		Operator: "try the other file",
	})
	for _, want := range []string{
		"Fix it.\n",
		"Attempt 2 failed (agent_exit): agent exited with status 1\n",
		"    error: boom\n",
		"## From the operator\n\ntry the other file\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("prompt lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "more") {
		t.Errorf("message should be one line:\n%s", got)
	}
}

func TestLastLinesBounded(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, "line %d %s\n", i, strings.Repeat("x", i%500))
	}
	got := LastLines([]byte(b.String()))
	if n := strings.Count(got, "\n"); n > prevTailLines {
		t.Fatalf("%d lines, want ≤ %d", n, prevTailLines)
	}
	if len(got) > prevTailBytes {
		t.Fatalf("%d bytes, want ≤ %d", len(got), prevTailBytes)
	}
	if !strings.Contains(got, "line 999 ") {
		t.Fatalf("the last line is missing")
	}
	if LastLines([]byte("\n\n  \n")) != "" {
		t.Fatalf("blank output should give nothing")
	}
	if s := LastLines([]byte("caf\xc3")); !strings.HasPrefix(s, "caf") || !strings.HasSuffix(s, "\n") {
		t.Fatalf("invalid UTF-8 not repaired: %q", s)
	}
}

// What a retry's prompt says of the tree and the conversation: cold (reset), carry_over (the
// edits are still there), resumed (the conversation continues; it already has the output).
func TestComposePromptRetryModes(t *testing.T) {
	prev := func(resumed, carry bool) *PrevAttempt {
		return &PrevAttempt{N: 1, Class: "quality_rejection", Message: "verify failed", Output: []byte("wrote it\n"),
			VerifyTail: []byte("FAIL hello\n"), Resumed: resumed, CarryOver: carry}
	}
	cases := []struct {
		resumed, carry bool
		want, not      []string
	}{
		{false, false, []string{"has been reset to where the task started", "    wrote it\n", "    FAIL hello\n"}, []string{"continues your conversation"}},
		{false, true, []string{"still holds its edits", "    wrote it\n"}, []string{"reset", "continues"}},
		{true, false, []string{"This continues your conversation of that attempt.", "Your edits of that attempt were reverted", "    FAIL hello\n"}, []string{"wrote it"}},
		{true, true, []string{"This continues your conversation of that attempt.", "still holds its edits"}, []string{"reverted", "wrote it"}},
	}
	for _, c := range cases {
		got := ComposePrompt(PromptParts{Task: "Fix it.", Prev: prev(c.resumed, c.carry)})
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("resumed=%v carry_over=%v: prompt lacks %q:\n%s", c.resumed, c.carry, w, got)
			}
		}
		for _, w := range c.not {
			if strings.Contains(got, w) {
				t.Errorf("resumed=%v carry_over=%v: prompt has %q:\n%s", c.resumed, c.carry, w, got)
			}
		}
	}
}

// A racing lane's prompt names its lane and the race's width, right after the task's text.
func TestComposePromptLane(t *testing.T) {
	got := ComposePrompt(PromptParts{Task: "Make the tests pass.", Lane: 2, Lanes: 3, Operator: "be quick"})
	want := "Make the tests pass.\n\nYou are lane 2 of 3: 3 attempts at this task run at the same time, each in a working tree of its own; the first whose work passes the checks is kept.\n\n## From the operator\n\nbe quick\n"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
