// Package report writes `mulligan report`: one self-contained HTML file that shows what a run
// did (a timeline of its attempts and lanes, each attempt's diff and verify output, the autopsy
// and the effects with their compensations) for a reviewer who has no access to the repository.
// The file loads nothing: no script, no font, no image from anywhere. Every text in it is
// scrubbed first; the package only reads the database, the repository and the logs.
package report

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/mulligan-dev/mulligan/attempt"
	"github.com/mulligan-dev/mulligan/autopsy"
	"github.com/mulligan-dev/mulligan/internal/tailfile"
	"github.com/mulligan-dev/mulligan/scrub"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
)

// Input is what a report reads.
type Input struct {
	Repo  *snapshot.Repo
	DB    *store.DB
	RunID string
	// AutopsyDir is where written autopsies are (autopsy.Dir); a run without one gets one read
	// from its records, running nothing.
	AutopsyDir string
	// Commands are mulligan's command names, for the autopsy's suggestions.
	Commands []string
	// Scrub removes secrets from every text the report holds; nil leaves them (--no-scrub).
	Scrub *scrub.Scrubber
	Now   func() time.Time
}

// Limits that keep a report a file a browser opens at once.
const (
	diffLimit   = 256 << 10 // of one attempt's diff
	verifyLimit = 64 << 10  // of one verify output (its end)
	outputLines = 40        // of an attempt's own output (its end)
)

// Doc is the report's content, ready to be drawn.
type Doc struct {
	Run       *store.Run
	Generated time.Time
	Start     time.Time
	End       time.Time
	Rows      []Row
	Ticks     []Tick
	Attempts  []Attempt
	Effects   []Effect
	Autopsy   string
	Verdict   *autopsy.Verdict
	Pruned    bool
	// TaskFile is the task file the run was started with, as stored with it.
	TaskFile string
}

// Row is one line of the timeline: a task, or one lane of a racing task.
type Row struct {
	Label string
	Bars  []Bar
}

// Tick is a mark on the timeline's axis: the time since the run started.
type Tick struct {
	Left  float64
	Label string
}

// Bar is an attempt on the timeline, placed in percent of the run's span.
type Bar struct {
	Left, Width float64
	Outcome     string // the CSS class: succeeded, failed, superseded, cancelled, running
	Label       string
	Title       string
	Anchor      string
}

// Attempt is one attempt's section.
type Attempt struct {
	Anchor, Addr         string
	Task                 string
	N, Lane              int
	Agent, State         string
	Class, Code, Message string
	Started              time.Time
	Duration, Spend      string
	Tokens               string
	Files                string
	Ref                  string
	Diff, DiffStat       string
	DiffNote             string
	Verify, Output       string
	Prompt               string
}

// Effect is one recorded side effect and what became of it.
type Effect struct {
	Name, Addr, State string
	Compensate        string
	Data, Output      string
	Recorded          time.Time
}

// Build reads the run and everything the report shows.
func Build(ctx context.Context, in Input) (*Doc, error) {
	var run *store.Run
	var effects []store.Effect
	err := in.DB.View(ctx, func(tx *store.Tx) error {
		var err error
		if run, err = tx.GetRun(in.RunID); err != nil {
			return err
		}
		effects, err = tx.Effects(in.RunID)
		return err
	})
	if err != nil {
		return nil, err
	}
	now := time.Now
	if in.Now != nil {
		now = in.Now
	}
	sc := func(s string) string {
		if in.Scrub == nil {
			return s
		}
		return in.Scrub.String(s)
	}
	d := &Doc{Run: run, Generated: now().UTC(), Start: run.StartedAt, Pruned: run.Pruned, TaskFile: sc(string(run.TaskFileContent))}
	// The timeline ends with the run, or with its last attempt when it is parked (a blocked
	// run's report written a day later is not a day long), or now while an attempt runs.
	d.End = d.Start
	if run.FinishedAt != nil {
		d.End = *run.FinishedAt
	}
	for _, t := range run.Tasks {
		for _, a := range t.Attempts {
			end := d.Generated
			if a.FinishedAt != nil {
				end = *a.FinishedAt
			}
			if end.After(d.End) {
				d.End = end
			}
		}
	}
	span := d.End.Sub(d.Start)
	for i := range 5 {
		at := span * time.Duration(i) / 4
		d.Ticks = append(d.Ticks, Tick{Left: float64(i) * 25, Label: roundSpan(at, span)})
	}
	for _, t := range run.Tasks {
		d.Rows = append(d.Rows, rows(d, t)...)
		for _, a := range t.Attempts {
			d.Attempts = append(d.Attempts, d.attempt(in, run, a, sc))
		}
	}
	for _, e := range effects {
		ef := Effect{Name: sc(e.Name), Addr: fmt.Sprintf("%s@%d", e.TaskID, e.Attempt), State: e.State,
			Output: sc(e.Output), Recorded: e.RecordedAt}
		if e.Compensate != nil {
			ef.Compensate = sc(strings.Join(e.Compensate, " "))
		}
		if e.Data != nil {
			ef.Data = sc(string(e.Data))
		}
		d.Effects = append(d.Effects, ef)
	}
	d.Autopsy, d.Verdict = readAutopsy(ctx, in)
	return d, nil
}

// readAutopsy is the run's written autopsy, or one read from its records now (running nothing),
// as Markdown; "" when neither can be had.
func readAutopsy(ctx context.Context, in Input) (string, *autopsy.Verdict) {
	r, _, err := autopsy.ReadWritten(in.AutopsyDir, in.RunID)
	if errors.Is(err, autopsy.ErrNotWritten) {
		r, err = autopsy.Build(ctx, autopsy.Input{Repo: in.Repo, DB: in.DB, RunID: in.RunID,
			Commands: in.Commands, Scrub: in.Scrub, Now: in.Now, NoBaseCheck: true})
	}
	if err != nil || r == nil {
		return "", nil
	}
	var b bytes.Buffer
	if autopsy.Markdown(&b, r) != nil {
		return "", nil
	}
	text := b.String()
	if in.Scrub != nil {
		text = in.Scrub.String(text)
	}
	return text, &r.Verdict
}

// rows are a task's lines of the timeline: one, or one per lane when it raced.
func rows(d *Doc, t store.Task) []Row {
	byLane := map[int][]store.Attempt{}
	for _, a := range t.Attempts {
		byLane[a.Lane] = append(byLane[a.Lane], a)
	}
	lanes := make([]int, 0, len(byLane))
	for l := range byLane {
		lanes = append(lanes, l)
	}
	slices.Sort(lanes)
	if len(lanes) == 0 {
		return []Row{{Label: t.ID + " (no attempt)"}}
	}
	span := d.End.Sub(d.Start)
	var out []Row
	for _, l := range lanes {
		r := Row{Label: t.ID}
		if l > 0 {
			r.Label = fmt.Sprintf("%s · lane %d", t.ID, l)
		}
		for _, a := range byLane[l] {
			end := d.End
			if a.FinishedAt != nil {
				end = *a.FinishedAt
			}
			left, width := 0.0, 100.0
			if span > 0 {
				left = 100 * float64(a.StartedAt.Sub(d.Start)) / float64(span)
				width = 100 * float64(end.Sub(a.StartedAt)) / float64(span)
			}
			left = min(max(left, 0), 99.5)
			width = min(max(width, 0.5), 100-left)
			label := fmt.Sprintf("@%d %s", a.N, a.Agent)
			if a.Class != "" {
				label += " · " + a.Class
			}
			label += " · " + duration(a, d.End)
			if a.CostUSD != nil {
				label += " · " + cost(a.CostUSD)
			}
			title := fmt.Sprintf("%s@%d · %s · %s · %s · %s · spend %s", t.ID, a.N, a.Agent, a.State,
				cmp.Or(a.Class, "no class"), duration(a, d.End), cost(a.CostUSD))
			r.Bars = append(r.Bars, Bar{Left: left, Width: width, Outcome: a.State, Label: label, Title: title, Anchor: anchor(a)})
		}
		out = append(out, r)
	}
	return out
}

// roundSpan rounds d to what tells the marks of a timeline of span apart.
func roundSpan(d, span time.Duration) string {
	switch {
	case span < 2*time.Second:
		return d.Round(time.Millisecond).String()
	case span < 2*time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func anchor(a store.Attempt) string { return fmt.Sprintf("attempt-%s-%d", a.TaskID, a.N) }

func (d *Doc) attempt(in Input, run *store.Run, a store.Attempt, sc func(string) string) Attempt {
	at := Attempt{Anchor: anchor(a), Addr: fmt.Sprintf("%s/%s@%d", run.ID, a.TaskID, a.N), Task: a.TaskID,
		N: a.N, Lane: a.Lane, Agent: a.Agent, State: a.State, Class: a.Class, Code: a.Code,
		Message: sc(a.Message), Started: a.StartedAt, Duration: duration(a, d.End), Spend: cost(a.CostUSD), Ref: a.Ref}
	if a.TokensIn != nil || a.TokensOut != nil {
		at.Tokens = fmt.Sprintf("%s in, %s out", count(a.TokensIn), count(a.TokensOut))
	}
	if a.FilesChanged != nil {
		at.Files = fmt.Sprint(*a.FilesChanged)
	}
	at.Diff, at.DiffStat, at.DiffNote = diff(in.Repo, run, a)
	at.Diff = sc(at.Diff)
	at.Verify = sc(tail(attempt.VerifyLogPath(a.Log), verifyLimit, 0))
	at.Output = sc(tail(a.Log, 64<<10, outputLines))
	at.Prompt = sc(a.Prompt)
	return at
}

// diff is the attempt's change (pre → post) as a unified diff, its stat line, and a note when
// there is none to show.
func diff(repo *snapshot.Repo, run *store.Run, a store.Attempt) (text, stat, note string) {
	switch {
	case run.Pruned:
		return "", "", "the run was pruned by gc: its trees are gone"
	case a.PreTree == "" || a.Tree == "":
		return "", "", "no tree recorded (the attempt did not finish)"
	}
	changes, err := repo.DiffTrees(snapshot.NewHash(a.PreTree), snapshot.NewHash(a.Tree))
	if err != nil {
		return "", "", "the diff cannot be read: " + err.Error()
	}
	if len(changes) == 0 {
		return "", "", "no change"
	}
	patches := make([]*snapshot.FilePatch, 0, len(changes))
	adds, dels := 0, 0
	for _, ch := range changes {
		p, err := repo.Patch(ch)
		if err != nil {
			return "", "", "the diff cannot be read: " + err.Error()
		}
		add, del := p.Counts()
		adds, dels = adds+add, dels+del
		patches = append(patches, p)
	}
	var b bytes.Buffer
	if err := snapshot.WriteUnified(&b, patches, false); err != nil {
		return "", "", "the diff cannot be written: " + err.Error()
	}
	stat = fmt.Sprintf("%d file%s changed, +%d -%d", len(changes), plural(len(changes)), adds, dels)
	if b.Len() > diffLimit {
		note = fmt.Sprintf("the diff is %d KB: its first %d KB are shown (mulligan diff %s/%s@%d prints it whole)",
			b.Len()>>10, diffLimit>>10, run.ID, a.TaskID, a.N)
		b.Truncate(diffLimit)
	}
	return b.String(), stat, note
}

// tail is the end of a file: at most limit bytes, and at most lines lines when lines > 0 ("" when
// it cannot be read).
func tail(path string, limit int64, lines int) string {
	if path == "" {
		return ""
	}
	buf, _, err := tailfile.Read(path, limit)
	if err != nil {
		return ""
	}
	s := ansi.Strip(string(buf))
	if lines > 0 {
		ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
		if len(ls) > lines {
			ls = ls[len(ls)-lines:]
		}
		s = strings.Join(ls, "\n")
	}
	return s
}

func duration(a store.Attempt, end time.Time) string {
	if a.DurationMS != nil {
		return (time.Duration(*a.DurationMS) * time.Millisecond).Round(time.Millisecond).String()
	}
	return end.Sub(a.StartedAt).Round(time.Second).String() + " (running)"
}

func cost(c *float64) string {
	if c == nil {
		return "-"
	}
	return fmt.Sprintf("$%.4f", *c)
}

func count(n *int64) string {
	if n == nil {
		return "-"
	}
	return fmt.Sprint(*n)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
