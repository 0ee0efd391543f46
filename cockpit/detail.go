package cockpit

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/autopsy"
	"github.com/mulligan-dev/mulligan/internal/tailfile"
)

// Detail is the text enter opens: for a task, its attempts, the tail of its newest output and
// the autopsy's verdict when the run has one about it; for a run (task ""), its tasks and the
// verdict. autopsyDir is where the written reports are (autopsy.Dir).
func Detail(b *Board, autopsyDir, run, task string, scrub func(string) string) string {
	var r *RunView
	for i := range b.Runs {
		if b.Runs[i].ID == run {
			r = &b.Runs[i]
		}
	}
	if r == nil {
		return "run " + run + " is no longer on the board"
	}
	var sb strings.Builder
	verdict, _, _ := autopsy.ReadWritten(autopsyDir, run)
	if task == "" {
		fmt.Fprintf(&sb, "run %s  %s", r.ID, r.State)
		if r.Reason != "" {
			fmt.Fprintf(&sb, " (%s)", r.Reason)
		}
		fmt.Fprintf(&sb, "\nstarted %s, spend $%s\n\n", r.StartedAt.Local().Format(time.DateTime), money(r.CostUSD))
		tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TASK\tSTATE\tATTEMPTS\tREASON")
		for _, t := range r.Tasks {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", t.ID, t.State, len(t.Attempts), t.Reason)
		}
		tw.Flush()
		writeVerdict(&sb, verdict, "")
		return sb.String()
	}
	var t *TaskView
	for i := range r.Tasks {
		if r.Tasks[i].ID == task {
			t = &r.Tasks[i]
		}
	}
	if t == nil {
		return "task " + task + " is no longer in run " + run
	}
	fmt.Fprintf(&sb, "task %s  %s", t.Addr(), t.State)
	if t.Reason != "" {
		fmt.Fprintf(&sb, " (%s)", t.Reason)
	}
	sb.WriteString("\n\n")
	tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tLANE\tAGENT\tSTATE\tCLASS\tDURATION\tFILES\tSPEND")
	for _, a := range t.Attempts {
		lane, class, dur, files := "-", "-", "-", "-"
		if a.Lane > 0 {
			lane = fmt.Sprint(a.Lane)
		}
		if a.Class != "" {
			class = a.Class
		}
		if a.DurationMS != nil {
			dur = short(time.Duration(*a.DurationMS) * time.Millisecond)
		}
		if a.FilesChanged != nil {
			files = fmt.Sprint(*a.FilesChanged)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t$%s\n", a.N, lane, a.Agent, a.State, class, dur, files, money(a.CostUSD))
	}
	tw.Flush()
	for _, a := range t.Attempts {
		if a.Message != "" {
			fmt.Fprintf(&sb, "@%d: %s\n", a.N, scrub(firstLine(a.Message)))
		}
	}
	// The end of the newest attempt's output; of each lane's newest when the task raced.
	var newest []int
	for _, l := range lanes(*t) {
		newest = append(newest, l.N)
	}
	if a := t.Latest(); a != nil && len(newest) == 0 {
		newest = []int{a.N}
	}
	for _, a := range t.Attempts {
		if !slices.Contains(newest, a.N) {
			continue
		}
		if tail := Tail(a.Log, 12/len(newest)+2); len(tail) > 0 {
			where := ""
			if a.Lane > 0 {
				where = fmt.Sprintf(", lane %d", a.Lane)
			}
			fmt.Fprintf(&sb, "\noutput of @%d%s (its end):\n", a.N, where)
			for _, l := range tail {
				sb.WriteString("  " + scrub(l) + "\n")
			}
		}
	}
	writeVerdict(&sb, verdict, task)
	return sb.String()
}

func writeVerdict(w io.Writer, r *autopsy.Report, task string) {
	if r == nil || (task != "" && r.Task != nil && *r.Task != task) {
		return
	}
	fmt.Fprintf(w, "\nautopsy: %s (%s, rule %s)\n  %s\n", r.Verdict.Category, confidence(r.Verdict.Confidence), r.Verdict.Rule, r.Verdict.Why)
	if r.Suggestion.Text != "" {
		fmt.Fprintf(w, "next: %s\n", r.Suggestion.Text)
		for _, c := range r.Suggestion.Commands {
			fmt.Fprintf(w, "  %s\n", c)
		}
	}
}

func confidence(c float64) string { return fmt.Sprintf("%.0f%%", c*100) }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// logLimit is how much of a log's end the log pane shows.
const logLimit = 256 << 10

// ReadLog is a log's end (at most logLimit bytes), then its verify command's output when it
// ran (as `mulligan logs` prints them), scrubbed, and the two files' size.
func ReadLog(path string, scrub func(string) string) (string, int64) {
	buf, size, err := tailfile.Read(path, logLimit)
	if err != nil {
		return "(no log: " + err.Error() + ")", -1
	}
	text := string(buf)
	vpath := attempt.VerifyLogPath(path)
	if v, vsize, err := tailfile.Read(vpath, logLimit); err == nil {
		text += "\n--- verify output (" + vpath + ") ---\n" + string(v)
		size += vsize
	}
	return scrub(text), size
}

// DBStamp is a cheap fingerprint of the database at path: the size and time of the file and of
// its write-ahead log, one of which every commit changes. A tick compares it, and LogStamp,
// instead of reading the database.
func DBStamp(path string) string {
	var sb strings.Builder
	for _, p := range []string{path, path + "-wal"} {
		if st, err := os.Stat(p); err == nil {
			fmt.Fprintf(&sb, "%d.%d;", st.Size(), st.ModTime().UnixNano())
		}
	}
	return sb.String()
}

// LogStamp is the size of the logs of the board's attempts in flight: their last line changes
// without a commit.
func LogStamp(b *Board) string {
	var sb strings.Builder
	for _, r := range b.Runs {
		for _, t := range r.Tasks {
			for _, lv := range t.Live {
				if st, err := os.Stat(lv.Log); err == nil {
					fmt.Fprintf(&sb, "%d;", st.Size())
				}
			}
		}
	}
	return sb.String()
}
