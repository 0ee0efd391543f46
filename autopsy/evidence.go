package autopsy

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/scrub"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// facts is everything the rules look at, gathered once.
type facts struct {
	run      *store.Run
	file     *taskfile.File // nil when the stored task file does not parse any more
	task     *store.Task    // the decisive task; nil when nothing failed
	def      *taskfile.Task // its definition, when known
	attempts []store.Attempt
	failed   []store.Attempt // attempts with a failure class
	passes   int             // attempts of the task that succeeded
	died     int             // runner_died attempts set aside (see setAsideDeaths)
	// before is the failure the task recorded without an attempt (class authoring for a
	// prompt_file, internal), when no attempt failed.
	before storeAttempt
	output map[string]string
	// verifyOutput is the tail of each attempt's verify log, <n>.verify.log beside its log.
	verifyOutput map[string]string
	missing      []string        // paths the prompt names that the task's base tree lacks
	passed       []store.Attempt // failures the run failed over past (see focusOnStop)
	tests        map[string]evidence.Tests
	agents       map[string]evidence.Agent
	signals      map[string][]envSignal // each attempt's, read once (agentSignals, verifySignals)
	diffs        map[string]*DiffStat   // each attempt's change, read once (diffOf)
	base         *baseVerify            // the verify command on the task's base tree; nil when not run
	events       []store.Event
	effects      []store.Effect // the run's effect ledger
	commands     map[string]bool
	clock        func() time.Time // Input.Now
	scrub        *scrub.Scrubber
	repo         *snapshot.Repo
}

const (
	tailBytes     = 64 << 10 // of each log: the decisive lines are at the end
	maxEvidence   = 12       // lines per excerpt
	maxLineLength = 200
)

// verifyLog is where the runner writes an attempt's verify output.
func verifyLog(log string) string {
	if log == "" {
		return ""
	}
	return strings.TrimSuffix(log, ".log") + ".verify.log"
}

// readTail reads at most n bytes from the end of a log, dropping the first partial line.
// withoutMarkers is an attempt's log without the lines the runner writes into it ("--- mulligan:
// verify … exited with status 1 … ---", a schema correction call): what is left is the agent's
// own output, whose last words are the agent's, not the runner's summary of the verify.
func withoutMarkers(log string) string {
	if !strings.Contains(log, "--- mulligan: ") {
		return log
	}
	return markerRe.ReplaceAllString(log, "")
}

var markerRe = lazyre.New(`(?m)^--- mulligan: .* ---\n?`)

func readTail(path string, n int64) string {
	if path == "" {
		return ""
	}
	fh, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-n, 0)
	b, err := io.ReadAll(io.NewSectionReader(fh, off, st.Size()-off))
	if err != nil {
		return ""
	}
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if off > 0 {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return s
}

// decisiveRe finds the lines that usually say what went wrong.
var decisiveRe = lazyre.New(`(?i)(error|fail|fatal|panic|exception|traceback|denied|refused|not found|no such|no space|cannot|can't|unable|invalid|expired|unauthori[sz]ed|forbidden|limit|quota|timeout|timed out|--- FAIL|\bFAIL\b|assert)`)

// decisiveLines picks up to maxEvidence lines: the matching lines near the end, else the
// last lines.
func decisiveLines(out string) []string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	var hits []string
	for i := len(lines) - 1; i >= 0 && len(hits) < maxEvidence; i-- {
		if decisiveRe.MatchString(lines[i]) {
			hits = append(hits, clip(lines[i]))
		}
	}
	if len(hits) == 0 {
		for i := len(lines) - 1; i >= 0 && len(hits) < maxEvidence; i-- {
			if strings.TrimSpace(lines[i]) != "" {
				hits = append(hits, clip(lines[i]))
			}
		}
	}
	for i, j := 0, len(hits)-1; i < j; i, j = i+1, j-1 {
		hits[i], hits[j] = hits[j], hits[i]
	}
	return hits
}

func clip(s string) string {
	s = strings.TrimRight(s, " \t\r")
	if len(s) <= maxLineLength {
		return s
	}
	cut := maxLineLength
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// evidence quotes the decisive task's failed attempts: the recorded message and the decisive
// lines of the output (the verify output is part of the attempt's log and message).
func (f *facts) evidence() []Evidence {
	var ev []Evidence
	failed := f.failed
	if len(failed) > 3 { // the last three tell the story; the timeline has the rest
		failed = failed[len(failed)-3:]
	}
	for _, a := range failed {
		if a.Message != "" {
			ev = append(ev, Evidence{Task: a.TaskID, Attempt: a.N, Kind: "message", Lines: f.scrub.Strings([]string{clip(a.Message)})})
		}
		if out := f.output[key(a.TaskID, a.N)]; strings.TrimSpace(out) != "" {
			lines := decisiveLines(f.scrub.String(out)) // whole, so a key block split over lines is found
			if len(lines) == 1 && strings.Contains(a.Message, strings.TrimSpace(lines[0])) {
				continue // the message already quotes it
			}
			ev = append(ev, Evidence{Task: a.TaskID, Attempt: a.N, Kind: "output", Lines: f.scrub.Strings(lines)})
		}
		if out := f.verifyOutput[key(a.TaskID, a.N)]; strings.TrimSpace(out) != "" {
			ev = append(ev, Evidence{Task: a.TaskID, Attempt: a.N, Kind: "verify", Lines: f.scrub.Strings(decisiveLines(f.scrub.String(out)))})
		}
	}
	return ev
}

// pathRe finds words in a prompt that look like repository paths: with a slash or a file
// extension, no spaces, no URL scheme.
var pathRe = lazyre.New("(?:^|[\\s`'\"(])((?:\\.{0,2}/)?[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*\\.[A-Za-z0-9]{1,8}|[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+/?)(?:$|[\\s`'\",.:;)])")

// createRe: the words before a path that ask the agent to make it.
var createRe = lazyre.New(`(?i)\b(?:create|creates|creating|add|adds|adding|write|writes|writing|new|generate|scaffold|introduce|make|touch|save|output|produce|named|called|into|to)\s+(?:a |an |the |new |empty |file |files |module |test |tests |script |doc |docs |page |package |directory |folder |in |at |under |as |for )*$`)

// fileExtRe: an extension a file in a repository has (lower case, known): render.JSON and
// os.Exit are identifiers, not files.
var fileExtRe = lazyre.New(`\.(?:go|mod|sum|py|pyi|js|mjs|cjs|ts|tsx|jsx|json|jsonc|ya?ml|toml|ini|cfg|conf|md|mdx|rst|txt|csv|rs|java|kt|kts|scala|rb|php|c|h|cc|cpp|hpp|cs|swift|m|sh|bash|zsh|fish|ps1|sql|proto|graphql|html|htm|css|scss|sass|less|vue|svelte|xml|gradle|lock|env|tf|hcl|dockerfile|png|jpg|svg|ex|exs|erl|hs|ml|lua|r|dart|zig|nim|tex|ipynb)$`)

// baseTree is the tree the decisive task started from (the run's base when the task recorded
// none); "" when neither is known.
func (f *facts) baseTree() string {
	if f.task != nil && f.task.BaseTree != "" {
		return f.task.BaseTree
	}
	return f.run.BaseTree
}

// missingPromptPaths lists paths the task's prompt names that are not in the tree the task
// started from, when that tree can be read.
func (f *facts) missingPromptPaths() []string {
	if f.def == nil || f.task == nil || f.repo == nil {
		return nil
	}
	base := f.baseTree()
	if base == "" {
		return nil
	}
	return f.missingIn(func(p string) bool {
		has, err := f.repo.HasPath(snapshot.NewHash(base), p)
		return err == nil && !has
	})
}

// missingIn lists the paths the prompt names, not as files to create, that lacks says are not
// in the base tree.
func (f *facts) missingIn(lacks func(string) bool) []string {
	if f.def == nil {
		return nil
	}
	prompt := f.def.Prompt
	var missing []string
	seen := map[string]bool{}
	for _, m := range pathRe.FindAllStringSubmatchIndex(prompt, -1) {
		p := strings.TrimSuffix(strings.TrimPrefix(prompt[m[2]:m[3]], "./"), "/")
		if seen[p] || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") || strings.Contains(p, "://") || p == "" {
			continue
		}
		seen[p] = true
		if !strings.Contains(p, "/") && !fileExtRe.MatchString(p) {
			continue // a dotted identifier (render.JSON), a version (v1.2)
		}
		if strings.Contains(p, "/") && strings.Contains(path.Base(p), ".") && !fileExtRe.MatchString(p) {
			continue // pkg/render.JSON
		}
		if createRe.MatchString(prompt[max(0, m[2]-60):m[2]]) {
			continue // a file the task is to make
		}
		if lacks(p) {
			missing = append(missing, p)
		}
	}
	return missing
}

// suspicious lists successes worth a second look: exit 0 with empty output, nothing changed in
// the tree, no verify command to check the work.
func (f *facts) suspicious() []Suspect {
	var out []Suspect
	for _, t := range f.run.Tasks {
		var def *taskfile.Task
		if f.file != nil {
			def = f.file.Task(t.ID)
		}
		for _, a := range t.Attempts {
			if a.State != store.AttemptSucceeded {
				continue
			}
			if strings.TrimSpace(readTail(a.Log, 4096)) == "" {
				out = append(out, Suspect{t.ID, a.N, "exit 0 with empty output"})
			}
			if a.FilesChanged != nil && *a.FilesChanged == 0 {
				out = append(out, Suspect{t.ID, a.N, "nothing changed in the tree"})
			}
			if def != nil && def.Verify == nil {
				out = append(out, Suspect{t.ID, a.N, "no verify command checked the work"})
			}
			out = append(out, f.verifyDoubts(t.ID, def, a)...)
		}
	}
	return out
}

// verifyDoubts are the reasons to doubt the verify that passed attempt a: a verify passes for
// the change or for a changed verify, and an agent that edits the script the verify runs, or
// deletes the tests that failed, passes without the fix.
func (f *facts) verifyDoubts(task string, def *taskfile.Task, a store.Attempt) []Suspect {
	if def == nil || def.Verify == nil {
		return nil
	}
	d := f.diffOf(a)
	if d == nil {
		return nil
	}
	var out []Suspect
	if ps := verifyFilesChanged(def.Verify.Command, d); len(ps) > 0 {
		out = append(out, Suspect{task, a.N, "it changed what the verify runs (" + strings.Join(ps, ", ") + "): the verify that passed is not the one the task set"})
	}
	if ps := deletedTests(d); len(ps) > 0 {
		out = append(out, Suspect{task, a.N, fmt.Sprintf("it deleted %d test file(s) (%s): the verify no longer runs them", len(ps), clipList(ps, 3))})
	}
	return out
}

// doubtedPass is the first succeeded attempt of the run whose verify is in doubt (verifyDoubts).
func (f *facts) doubtedPass() (Suspect, bool) {
	for _, t := range f.run.Tasks {
		if f.file == nil {
			break
		}
		for _, a := range t.Attempts {
			if a.State != store.AttemptSucceeded {
				continue
			}
			if ds := f.verifyDoubts(t.ID, f.file.Task(t.ID), a); len(ds) > 0 {
				return ds[0], true
			}
		}
	}
	return Suspect{}, false
}

// verifyFilesChanged lists the files of the repository the verify's command names (its
// arguments, and the words of a shell script given with -c) that attempt d changed.
func verifyFilesChanged(command []string, d *DiffStat) []string {
	named := verifyNames(command)
	var out []string
	for _, c := range d.changes {
		if named[c.Path] {
			out = append(out, c.Path)
		}
	}
	return out
}

// verifyNames are the words of the verify's command that may name a file of the repository:
// its arguments, and the words of a shell script given with -c.
func verifyNames(command []string) map[string]bool {
	named := map[string]bool{}
	for i, arg := range command {
		words := []string{arg}
		if i > 0 && command[i-1] == "-c" {
			words = strings.FieldsFunc(arg, func(r rune) bool { return strings.ContainsRune(" \t\n;|&()<>\"'`", r) })
		}
		for _, w := range words {
			if w != "" && w[0] != '-' {
				named[path.Clean(strings.TrimPrefix(w, "./"))] = true
			}
		}
	}
	return named
}

// deletedTests lists the test files (by their paths: tests/, test_x.py, x_test.go, x.spec.ts…)
// that attempt d deleted; one added again under the same name elsewhere was moved, not deleted.
func deletedTests(d *DiffStat) []string {
	added := map[string]bool{}
	for _, c := range d.changes {
		if c.Action == snapshot.Add {
			added[path.Base(c.Path)] = true
		}
	}
	var out []string
	for _, c := range d.changes {
		if c.Action == snapshot.Delete && testPathRe.MatchString(c.Path) && !added[path.Base(c.Path)] {
			out = append(out, c.Path)
		}
	}
	return out
}

// clipList joins the first n of ps, saying how many more there are.
func clipList(ps []string, n int) string {
	if len(ps) <= n {
		return strings.Join(ps, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ps[:n], ", "), len(ps)-n)
}

// unresolvedEffects lists the ledger's non-idempotent effects that may still be out in the
// world: not compensated (an unresolved, failed or interrupted compensation settles nothing).
func unresolvedEffects(effects []store.Effect) []Effect {
	var out []Effect
	for _, e := range effects {
		if !e.Idempotent && e.State != store.EffectCompensated {
			out = append(out, Effect{ID: e.ID, Task: e.TaskID, Attempt: e.Attempt, Name: e.Name, State: e.State, Implicit: e.Implicit})
		}
	}
	return out
}

// failedHooks lists the hook deliveries whose last hook.delivered event says failed, in the order
// they were first delivered.
func failedHooks(events []store.Event) []Hook {
	var order []string
	last := map[string]*Hook{}
	for _, ev := range events {
		if ev.Type != "hook.delivered" {
			continue
		}
		var p struct {
			Hook       string `json:"hook"`
			DeliveryID string `json:"delivery_id"`
			State      string `json:"state"`
			Error      string `json:"error"`
		}
		if json.Unmarshal(ev.Payload, &p) != nil || p.DeliveryID == "" {
			continue
		}
		if _, seen := last[p.DeliveryID]; !seen {
			order = append(order, p.DeliveryID)
		}
		last[p.DeliveryID] = nil
		if p.State == store.HookFailed {
			last[p.DeliveryID] = &Hook{Hook: p.Hook, Task: ev.Task, Attempt: ev.Attempt, DeliveryID: p.DeliveryID, Error: p.Error}
		}
	}
	var out []Hook
	for _, id := range order {
		if h := last[id]; h != nil {
			out = append(out, *h)
		}
	}
	return out
}
