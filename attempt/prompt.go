package attempt

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Bounds of the "previous attempt" section: enough for the agent to see what went wrong, never so
// much that a chatty failure crowds the task out of the prompt.
const (
	prevTailLines   = 40
	prevTailLineMax = 300
	prevTailBytes   = 4000
)

// PrevAttempt is what the next attempt's prompt says of the one before it.
type PrevAttempt struct {
	N          int
	Class      string
	Message    string
	Output     []byte // the tail of its output
	VerifyTail []byte // the tail of the verify command's output, when verify failed
	// Resumed: this prompt continues that attempt's conversation (retry_mode: resume), which
	// already holds its output. CarryOver: the tree still holds that attempt's edits.
	Resumed, CarryOver bool
}

// PromptParts are the pieces of one attempt's prompt, composed in this order.
type PromptParts struct {
	Task           string
	Prev           *PrevAttempt
	EffectsWarning string // set when earlier attempts may have run non-idempotent side effects
	Operator       string // text from `mulligan prompt`
	// Lane and Lanes are a racing attempt's lane and the race's width (best_of); 0: no race.
	Lane, Lanes int
}

// ComposePrompt builds the exact text sent to the agent (and stored with the attempt).
func ComposePrompt(p PromptParts) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(p.Task, "\n"))
	b.WriteString("\n")
	if p.Lane > 0 {
		fmt.Fprintf(&b, "\nYou are lane %d of %d: %d attempts at this task run at the same time, each in a working tree of its own; the first whose work passes the checks is kept.\n", p.Lane, p.Lanes, p.Lanes)
	}
	if p.Prev != nil {
		fmt.Fprintf(&b, "\n## Previous attempt\n\nAttempt %d failed (%s): %s\n", p.Prev.N, p.Prev.Class, oneLine(p.Prev.Message))
		switch {
		case p.Prev.Resumed && p.Prev.CarryOver:
			b.WriteString("This continues your conversation of that attempt. The working tree still holds its edits.\n")
		case p.Prev.Resumed:
			b.WriteString("This continues your conversation of that attempt. Your edits of that attempt were reverted: the working tree is back where the task started, so read the files again before you change them.\n")
		case p.Prev.CarryOver:
			b.WriteString("The working tree still holds its edits.\n")
		default:
			b.WriteString("The working tree has been reset to where the task started; its edits are not here.\n")
		}
		if tail := LastLines(p.Prev.VerifyTail); tail != "" {
			b.WriteString("\nThe verify command's output ended with:\n\n")
			b.WriteString(indent(tail))
		}
		// A resumed conversation already holds the attempt's output.
		if tail := LastLines(p.Prev.Output); tail != "" && !p.Prev.Resumed {
			b.WriteString("\nIts output ended with:\n\n")
			b.WriteString(indent(tail))
		}
	}
	if w := strings.TrimSpace(p.EffectsWarning); w != "" {
		b.WriteString("\n## Side effects of earlier attempts\n\n")
		b.WriteString(w)
		b.WriteString("\n")
	}
	if op := strings.TrimSpace(p.Operator); op != "" {
		b.WriteString("\n## From the operator\n\n")
		b.WriteString(op)
		b.WriteString("\n")
	}
	return b.String()
}

// LastLines returns the last lines of out, bounded in lines, line length and bytes, as valid UTF-8.
func LastLines(out []byte) string {
	s := strings.ToValidUTF8(string(out), "\uFFFD")
	s = strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n \t")
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > prevTailLines {
		lines = lines[len(lines)-prevTailLines:]
	}
	total := 0
	start := len(lines)
	for i := len(lines) - 1; i >= 0; i-- {
		l := truncateRunes(strings.TrimRight(lines[i], "\r"), prevTailLineMax)
		if total+len(l)+1 > prevTailBytes {
			break
		}
		lines[i] = l
		total += len(l) + 1
		start = i
	}
	return strings.Join(lines[start:], "\n") + "\n"
}

func truncateRunes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("    ")
			b.WriteString(l)
		}
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return truncateRunes(s, prevTailLineMax)
}

// composePrompt builds attempt n's prompt from the task's and the previous failed attempt.
func (r *runner) composePrompt(def *taskfile.Task, prev *store.Attempt, operator, effectsWarning string, resumed bool) (string, error) {
	text := def.Prompt
	if def.PromptFile != "" {
		p := def.PromptFile
		if !filepath.IsAbs(p) {
			p = filepath.Join(r.env.Repo.Root(), p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return "", fmt.Errorf("task %s: prompt_file: %w", def.ID, err)
		}
		if strings.TrimSpace(string(data)) == "" {
			// run refuses it before anything runs (CheckFiles); emptied since, sent as it is, the
			// agent would get no instructions and "succeed" with nothing done.
			return "", fmt.Errorf("task %s: prompt_file %s is empty: the agent would get no instructions", def.ID, def.PromptFile)
		}
		text = string(data)
	}
	parts := PromptParts{Task: text, Operator: operator, EffectsWarning: effectsWarning}
	if r.lane != nil {
		parts.Lane, parts.Lanes = r.lane.n, r.lane.race.width
	}
	if prev != nil {
		var out []byte
		if prev.Log != "" {
			out = readTail(prev.Log, 64<<10)
			if i := bytes.IndexByte(out, '\n'); len(out) == 64<<10 && i >= 0 {
				out = out[i+1:] // a line cut by the tail is no event to render
			}
			if a := r.file.Agents[prev.Agent]; a != nil {
				// What the agent said and did, not its CLI's JSON events.
				out = agentcli.Humanize(a.Preset, out)
			}
		}
		parts.Prev = &PrevAttempt{N: prev.N, Class: prev.Class, Message: prev.Message, Output: out, Resumed: resumed, CarryOver: def.CarryOver}
		if prev.Class == string(taskfile.ClassQualityRejection) && prev.Log != "" {
			parts.Prev.VerifyTail = readTail(VerifyLogPath(prev.Log), 64<<10)
		}
	}
	return ComposePrompt(parts), nil
}

// readTail returns up to max bytes from the end of the file at path.
func readTail(path string, limit int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(0, st.Size()-limit)
	buf := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(buf, off)
	return buf[:n]
}
