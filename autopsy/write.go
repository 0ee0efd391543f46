package autopsy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/store"
)

// Dir is where a repository's autopsies live: <git-common-dir>/mulligan/autopsy.
func Dir(commonDir string) string { return filepath.Join(commonDir, "mulligan", "autopsy") }

// JSON is the report's `-o json` form, indented, with a final newline.
func JSON(r *Report) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Markdown writes the whole report for a person.
func Markdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Autopsy of run %s (%s)\n\n", r.Run, withReason(r.State, r.Reason))
	fmt.Fprintf(&b, "- repository: %s\n", r.Repository)
	fmt.Fprintf(&b, "- HEAD: %s\n", deref(r.Head, "none"))
	if r.TaskFile != nil {
		fmt.Fprintf(&b, "- task file: %s (%.12s)\n", *r.TaskFile, deref(r.TaskFileSHA, ""))
	}
	fmt.Fprintf(&b, "- started: %s, took %s\n", r.StartedAt, (time.Duration(r.DurationMS) * time.Millisecond).Round(time.Millisecond))
	if r.CostUSD != nil {
		fmt.Fprintf(&b, "- spend: $%.4f\n", *r.CostUSD)
	}
	fmt.Fprintf(&b, "\n## Verdict: %s\n\n", r.Verdict.Category)
	task := ""
	if r.Task != nil {
		task = " (task " + *r.Task + ")"
	}
	fmt.Fprintf(&b, "%s%s.\n\nRule `%s`, confidence %.2f.\n", r.Verdict.Why, task, r.Verdict.Rule, r.Verdict.Confidence)
	if len(r.Verdict.Lines) > 0 {
		b.WriteString("\nThe lines that decided it:\n\n```\n" + strings.Join(r.Verdict.Lines, "\n") + "\n```\n")
	}
	fmt.Fprintf(&b, "\n## Next\n\n%s.\n", r.Suggestion.Text)
	if len(r.Suggestion.Commands) > 0 {
		b.WriteString("\n```sh\n")
		for _, c := range r.Suggestion.Commands {
			b.WriteString(c + "\n")
		}
		b.WriteString("```\n")
	}
	b.WriteString("\n## Timeline\n\n")
	if len(r.Timeline) == 0 {
		b.WriteString("No attempts.\n")
	} else {
		b.WriteString("| attempt | agent | state | class | code | exit | duration | files | +/- | spend |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range r.Timeline {
			dur, exit, files, lines, spend := "-", "-", "-", "-", "-"
			if s.DurationMS != nil {
				dur = (time.Duration(*s.DurationMS) * time.Millisecond).Round(time.Millisecond).String()
			}
			if s.ExitCode != nil {
				exit = fmt.Sprint(*s.ExitCode)
			}
			if s.FilesChanged != nil {
				files = fmt.Sprint(*s.FilesChanged)
			}
			if s.Diff != nil {
				lines = fmt.Sprintf("+%d -%d", s.Diff.Added, s.Diff.Deleted)
			}
			if s.CostUSD != nil {
				spend = fmt.Sprintf("$%.4f", *s.CostUSD)
			}
			attempt := fmt.Sprintf("%s@%d", s.Task, s.N)
			if s.Lane != nil {
				attempt += fmt.Sprintf(" (lane %d)", *s.Lane)
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", attempt, s.Agent, s.State,
				deref(s.Class, "-"), deref(s.Code, "-"), exit, dur, files, lines, spend)
		}
	}
	for _, s := range r.Timeline {
		if s.ResumeCommand != nil && s.Ref != nil {
			fmt.Fprintf(&b, "\n%s@%d's conversation (session %s) continues by hand in its tree:\n`mulligan restore %s && %s`\n",
				s.Task, s.N, deref(s.AgentSession, "-"), *s.Ref, *s.ResumeCommand)
		}
	}
	if len(r.Evidence) > 0 {
		b.WriteString("\n## Evidence\n")
		for _, e := range r.Evidence {
			fmt.Fprintf(&b, "\n%s@%d, %s:\n\n```\n%s\n```\n", e.Task, e.Attempt, e.Kind, strings.Join(e.Lines, "\n"))
		}
	}
	var stats []string
	for _, s := range r.Timeline {
		if s.Diff == nil || s.Diff.Files == 0 {
			continue
		}
		var sb strings.Builder
		fmt.Fprintf(&sb, "%s@%d: %d file(s), +%d -%d\n", s.Task, s.N, s.Diff.Files, s.Diff.Added, s.Diff.Deleted)
		for _, p := range s.Diff.Paths {
			if p.Binary {
				fmt.Fprintf(&sb, "  %-6s %s (binary)\n", p.Action, p.Path)
			} else {
				fmt.Fprintf(&sb, "  %-6s %s +%d -%d\n", p.Action, p.Path, p.Added, p.Deleted)
			}
		}
		if more := s.Diff.Files - len(s.Diff.Paths); more > 0 {
			fmt.Fprintf(&sb, "  … and %d more\n", more)
		}
		stats = append(stats, sb.String())
	}
	if len(stats) > 0 {
		b.WriteString("\n## Diff stats\n\n```\n" + strings.Join(stats, "") + "```\n")
	}
	if len(r.Effects) > 0 {
		b.WriteString("\n## Unresolved side effects\n\n")
		for _, e := range r.Effects {
			if e.Implicit {
				fmt.Fprintf(&b, "- whatever %s@%d did (the task is marked side_effects: non_idempotent), %s\n", e.Task, e.Attempt, e.State)
				continue
			}
			fmt.Fprintf(&b, "- %s (%s@%d), %s\n", e.Name, e.Task, e.Attempt, strings.ReplaceAll(e.State, "_", " "))
		}
	}
	if len(r.FailedHooks) > 0 {
		b.WriteString("\n## Hooks that failed\n\n")
		for _, h := range r.FailedHooks {
			what := "run"
			if h.Task != "" {
				what = fmt.Sprintf("%s@%d", h.Task, h.Attempt)
			}
			fmt.Fprintf(&b, "- %s of %s (delivery %s): %s; `mulligan hooks %s --redeliver` runs it again\n",
				h.Hook, what, h.DeliveryID, h.Error, r.Run)
		}
	}
	if len(r.Suspicious) > 0 {
		b.WriteString("\n## Suspicious successes\n\n")
		for _, s := range r.Suspicious {
			fmt.Fprintf(&b, "- %s@%d: %s\n", s.Task, s.Attempt, s.Reason)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Summary is the short form printed when a run ends: the verdict, one line of why, the next
// command.
func Summary(r *Report, mdPath string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "autopsy: %s (rule %s, confidence %.2f)\n", r.Verdict.Category, r.Verdict.Rule, r.Verdict.Confidence)
	fmt.Fprintf(&b, "  why: %s\n", firstLine(r.Verdict.Why))
	if len(r.Suggestion.Commands) > 0 {
		fmt.Fprintf(&b, "  next: %s\n", r.Suggestion.Commands[0])
	}
	if mdPath != "" {
		fmt.Fprintf(&b, "  report: %s (mulligan autopsy %s)\n", mdPath, r.Run)
	}
	return b.String()
}

// WriteFiles writes <dir>/<run>.md and <run>.json (0600, the directory 0700) and returns the
// Markdown file's path. The files are replaced atomically.
func WriteFiles(dir string, r *Report) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	_ = os.Chmod(dir, 0o700)
	var md bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		return "", err
	}
	js, err := JSON(r)
	if err != nil {
		return "", err
	}
	mdPath, err := store.Under(dir, r.Run+".md")
	if err != nil {
		return "", err
	}
	jsPath, err := store.Under(dir, r.Run+".json")
	if err != nil {
		return "", err
	}
	if err := writePrivate(mdPath, md.Bytes()); err != nil {
		return "", err
	}
	if err := writePrivate(jsPath, js); err != nil {
		return "", err
	}
	return mdPath, nil
}

func writePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func withReason(state string, reason *string) string {
	if reason == nil {
		return state
	}
	return state + ", " + *reason
}

func deref(s *string, def string) string {
	if s == nil {
		return def
	}
	return *s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// ErrNotWritten is ReadWritten's error when no report was written for the run.
var ErrNotWritten = errors.New("no autopsy was written for this run")

// ReadWritten returns the report written for run in dir (<run>.json) and the path of its
// Markdown form; ErrNotWritten when there is none.
func ReadWritten(dir, run string) (*Report, string, error) {
	jsPath, err := store.Under(dir, run+".json")
	if err != nil {
		return nil, "", err
	}
	js, err := os.ReadFile(jsPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", ErrNotWritten
	}
	if err != nil {
		return nil, "", err
	}
	var r Report
	if err := json.Unmarshal(js, &r); err != nil {
		return nil, "", fmt.Errorf("the written autopsy of run %s does not read: %w", run, err)
	}
	return &r, strings.TrimSuffix(jsPath, ".json") + ".md", nil
}
