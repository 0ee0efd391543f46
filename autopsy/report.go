// Package autopsy owns the post-failure report of a run (SPEC §7): the timeline of attempts, the
// evidence (decisive output lines, diff stats), one verdict decided by a table of rules, one
// suggestion with commands that work for that run, suspicious successes, and the scrubbed bug
// bundle. It reads the store, the logs and the refs, and it must never change any of them: an
// autopsy of a run is safe to take at any time, any number of times.
package autopsy

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/scrub"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Verdict categories (SPEC §7).
const (
	WorkflowBug = "workflow-bug"
	Environment = "environment"
	AgentFlake  = "agent-flake"
	ToolBug     = "tool-bug"
	Unknown     = "unknown"
	// NoFailure: the run did not fail (it succeeded, or waits for a decision): no failure verdict.
	NoFailure = "no-failure"
)

// Report is one autopsy. Its JSON form is `mulligan autopsy -o json` (SPEC §9).
type Report struct {
	Run         string     `json:"run"`
	State       string     `json:"state"`
	Reason      *string    `json:"reason"`
	Repository  string     `json:"repository"`
	Head        *string    `json:"head"` // HEAD when the run started (the base commit's parent)
	TaskFile    *string    `json:"task_file"`
	TaskFileSHA *string    `json:"task_file_hash"`
	StartedAt   string     `json:"started_at"`
	FinishedAt  *string    `json:"finished_at"`
	DurationMS  int64      `json:"duration_ms"`
	CostUSD     *float64   `json:"cost_usd"`
	Task        *string    `json:"task"` // the task the verdict is about; null for a run with no failure
	Verdict     Verdict    `json:"verdict"`
	Suggestion  Suggestion `json:"suggestion"`
	Timeline    []Step     `json:"timeline"`
	Evidence    []Evidence `json:"evidence"`
	Suspicious  []Suspect  `json:"suspicious"`
	Effects     []Effect   `json:"unresolved_effects"`
	FailedHooks []Hook     `json:"failed_hooks"`
	GeneratedAt string     `json:"generated_at"`
}

// Verdict is the category of the failure, with the rule of the table that decided it.
type Verdict struct {
	Category   string  `json:"category"`
	Confidence float64 `json:"confidence"`
	Rule       string  `json:"rule"`
	Why        string  `json:"why"`
	// Lines are the lines of output that decided the rule, quoted.
	Lines []string `json:"lines"`
}

// Suggestion is the one next step: a sentence and the exact commands, in order.
type Suggestion struct {
	Text     string   `json:"text"`
	Commands []string `json:"commands"`
	// Change, for a fix in the task file, is what to change there, in a few words: the command
	// that opens the file carries it as a comment, so the first command says what it is for.
	Change string `json:"-"`
}

// Step is one attempt in the timeline.
type Step struct {
	Task         string    `json:"task"`
	N            int       `json:"n"`
	Agent        string    `json:"agent"`
	State        string    `json:"state"`
	Class        *string   `json:"class"`
	Code         *string   `json:"code"`
	Message      *string   `json:"message"`
	ExitCode     *int      `json:"exit_code"`
	StartedAt    string    `json:"started_at"`
	DurationMS   *int64    `json:"duration_ms"`
	FilesChanged *int      `json:"files_changed"`
	TokensIn     *int64    `json:"tokens_in"`
	TokensOut    *int64    `json:"tokens_out"`
	CostUSD      *float64  `json:"cost_usd"`
	Ref          *string   `json:"ref"`
	Diff         *DiffStat `json:"diff"`
	// AgentSession is the agent CLI's conversation id; ResumeCommand continues it by hand in
	// the attempt's tree (after `mulligan restore` of Ref).
	AgentSession  *string `json:"agent_session"`
	ResumeCommand *string `json:"resume_command"`
	// Lane is the racing lane of the attempt (best_of), null outside a race.
	Lane *int `json:"lane"`
}

// Evidence is a bounded excerpt that supports the verdict.
type Evidence struct {
	Task    string `json:"task"`
	Attempt int    `json:"attempt"`
	// Kind is "message" (the recorded failure), "output" (the agent's log), "verify" (its verify
	// log) or "verify-on-base" (the verify command run again on the task's base tree).
	Kind  string   `json:"kind"`
	Lines []string `json:"lines"`
}

// Suspect is a success that deserves a second look.
type Suspect struct {
	Task    string `json:"task"`
	Attempt int    `json:"attempt"`
	Reason  string `json:"reason"`
}

// Effect is a recorded non-idempotent side effect that was never compensated.
type Effect struct {
	ID      int64  `json:"id"`
	Task    string `json:"task"`
	Attempt int    `json:"attempt"`
	Name    string `json:"name"`
	State   string `json:"state"`
	// Implicit: the attempt of a task marked side_effects: non_idempotent recorded nothing
	// finer, so whatever it did may be out in the world.
	Implicit bool `json:"implicit"`
}

// Hook is a hook delivery whose last try failed (a hook never changes the outcome, but the
// operator may be waiting for the page it did not send).
type Hook struct {
	Hook       string `json:"hook"`
	Task       string `json:"task"` // "" for a run-level hook
	Attempt    int    `json:"attempt"`
	DeliveryID string `json:"delivery_id"`
	Error      string `json:"error"`
}

// Input is what an autopsy reads.
type Input struct {
	Repo  *snapshot.Repo
	DB    *store.DB
	RunID string
	// Run, when set, is run RunID as the caller has just read it, ended (a run's own process,
	// after it): the autopsy then reads only its events and effects. It is not changed.
	Run *store.Run
	// Commands are mulligan's registered command names: a suggestion only names commands
	// that exist in this build.
	Commands []string
	// Scrub removes secrets from every text the report quotes; nil builds one from the
	// process environment and the agents' env.
	Scrub *scrub.Scrubber
	Now   func() time.Time
	// Progress, when set, is told about slow steps (the verify command run on the base tree).
	Progress io.Writer
	// NoBaseCheck leaves the verify command alone: the report says what the records and logs
	// say, and runs nothing (a report printed on demand when none was written).
	NoBaseCheck bool
}

// Build takes the autopsy of a run. It only reads.
func Build(ctx context.Context, in Input) (*Report, error) {
	var run *store.Run
	var events []store.Event
	var effects []store.Effect
	err := in.DB.View(ctx, func(tx *store.Tx) error {
		var err error
		if run = in.Run; run == nil || run.ID != in.RunID {
			if run, err = tx.GetRun(in.RunID); err != nil {
				return err
			}
		}
		if events, err = allEvents(tx, run.ID); err != nil {
			return err
		}
		effects, err = tx.Effects(run.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	f := gather(in, run, events)
	f.effects = effects
	if !in.NoBaseCheck {
		f.checkBase(ctx, in.Progress)
	}
	return f.report(in), nil
}

// Refresh brings a written report's ledgers up to date: the side effects still unresolved and the
// hook deliveries still failed, as the store says now (a compensation or a redelivery since the
// report was written settles them). The verdict, the evidence and the rest stay as written.
func Refresh(ctx context.Context, in Input, r *Report) error {
	var events []store.Event
	var effects []store.Effect
	err := in.DB.View(ctx, func(tx *store.Tx) error {
		var err error
		if events, err = allEvents(tx, r.Run); err != nil {
			return err
		}
		effects, err = tx.Effects(r.Run)
		return err
	})
	if err != nil {
		return err
	}
	sc := in.Scrub
	if sc == nil {
		sc = scrub.New(os.Environ())
	}
	r.Effects = append([]Effect{}, unresolvedEffects(effects)...)
	r.FailedHooks = []Hook{}
	for _, h := range failedHooks(events) {
		h.Error = sc.String(h.Error)
		r.FailedHooks = append(r.FailedHooks, h)
	}
	return nil
}

// allEvents reads a run's events, in pages.
func allEvents(tx *store.Tx, run string) ([]store.Event, error) {
	var all []store.Event
	var after int64
	for {
		evs, err := tx.Events(run, after, 1000)
		if err != nil {
			return nil, err
		}
		all = append(all, evs...)
		if len(evs) < 1000 {
			return all, nil
		}
		after = evs[len(evs)-1].Seq
	}
}

// gather collects the facts the rules read.
func gather(in Input, run *store.Run, events []store.Event) *facts {
	f := &facts{run: run, commands: map[string]bool{}, output: map[string]string{}, verifyOutput: map[string]string{}, events: events,
		tests: map[string]evidence.Tests{}, agents: map[string]evidence.Agent{}}
	f.clock = in.Now
	for _, c := range in.Commands {
		f.commands[c] = true
	}
	if file, err := taskfile.Parse(run.TaskFile, run.TaskFileContent); err == nil {
		f.file = file
	}
	sc := in.Scrub
	if sc == nil {
		envs := [][]string{os.Environ()}
		if f.file != nil {
			for _, a := range f.file.Agents {
				for k, v := range a.Env {
					envs = append(envs, []string{k + "=" + v})
				}
			}
		}
		sc = scrub.New(envs...)
	}
	f.scrub = sc
	f.repo = in.Repo
	if run.State != store.RunSucceeded { // (a succeeded run's failed task was allowed to fail)
		f.task = decisiveTask(run)
	}
	if f.task != nil {
		if f.file != nil {
			f.def = f.file.Task(f.task.ID)
		}
		for _, a := range f.task.Attempts {
			if a.State == store.AttemptSuperseded {
				continue
			}
			f.attempts = append(f.attempts, a)
			if a.State == store.AttemptSucceeded {
				f.passes++
			} else if a.Class != "" {
				f.failed = append(f.failed, a)
			}
			f.output[key(a.TaskID, a.N)] = withoutMarkers(readTail(a.Log, tailBytes))
			f.verifyOutput[key(a.TaskID, a.N)] = readTail(verifyLog(a.Log), tailBytes)
		}
		f.setAsideDeaths()
		f.focusOnStop()
		f.missing = f.missingPromptPaths()
		f.before = taskFailure(events, f.task.ID)
	}
	return f
}

// taskFailure is the failure the runner recorded on the task itself (task.state_changed with a
// class), for a task that failed before any attempt did.
func taskFailure(events []store.Event, task string) storeAttempt {
	var out storeAttempt
	for _, ev := range events {
		if ev.Type != store.EventTaskStateChanged || ev.Task != task {
			continue
		}
		var p store.TaskStateChanged
		if ev.Decode(&p) == nil && p.Class != "" {
			out = storeAttempt{TaskID: task, Class: p.Class, Code: p.Code, Message: p.Message}
		}
	}
	return out
}

// setAsideDeaths moves runner_died attempts out of the failures when others remain: the
// attempt was run again after the resume, so its death says nothing about the task.
func (f *facts) setAsideDeaths() {
	var kept []store.Attempt
	for _, a := range f.failed {
		if a.Class == cRunnerDied {
			f.died++
		} else {
			kept = append(kept, a)
		}
	}
	if len(kept) > 0 {
		f.failed = kept
	} else {
		f.died = 0
	}
}

// decisiveTask is the task a failed or blocked run stopped on: the blocked one, else the first
// failed one with attempts, else the first task with a failed attempt.
func decisiveTask(run *store.Run) *store.Task {
	for _, want := range []string{store.TaskBlocked, store.TaskFailed, store.TaskWaitingQuota, store.TaskCancelled} {
		for i := range run.Tasks {
			if run.Tasks[i].State == want && len(run.Tasks[i].Attempts) > 0 {
				return &run.Tasks[i]
			}
		}
	}
	// A task that failed before any attempt (its prompt_file, an error of mulligan's).
	for i := range run.Tasks {
		if run.Tasks[i].State == store.TaskFailed && len(run.Tasks[i].Attempts) == 0 {
			return &run.Tasks[i]
		}
	}
	// A task that succeeded in the end (a retry got through) is no failure to explain.
	for i := range run.Tasks {
		if run.Tasks[i].State == store.TaskSucceeded {
			continue
		}
		for _, a := range run.Tasks[i].Attempts {
			if a.State == store.AttemptFailed {
				return &run.Tasks[i]
			}
		}
	}
	return nil
}

func key(task string, n int) string { return fmt.Sprintf("%s@%d", task, n) }

func (f *facts) report(in Input) *Report {
	run := f.run
	now := time.Now
	if in.Now != nil {
		now = in.Now
	}
	r := &Report{
		Run:         run.ID,
		State:       run.State,
		Reason:      nullable(run.Reason),
		Repository:  run.Worktree,
		TaskFile:    nullable(run.TaskFile),
		TaskFileSHA: nullable(run.TaskFileHash),
		StartedAt:   rfc3339(run.StartedAt),
		CostUSD:     run.CostUSD,
		GeneratedAt: rfc3339(now()),
		Timeline:    []Step{},
		Evidence:    []Evidence{},
		Suspicious:  []Suspect{},
		Effects:     []Effect{},
		FailedHooks: []Hook{},
	}
	if h := f.startHead(); !h.IsZero() {
		r.Head = nullable(h.String())
	}
	end := now()
	if run.FinishedAt != nil {
		end = *run.FinishedAt
		r.FinishedAt = nullable(rfc3339(*run.FinishedAt))
	}
	r.DurationMS = end.Sub(run.StartedAt).Milliseconds()
	for _, t := range run.Tasks {
		for _, a := range t.Attempts {
			r.Timeline = append(r.Timeline, f.step(a))
		}
	}
	if f.task != nil {
		r.Task = nullable(f.task.ID)
		r.Evidence = f.evidence()
		if f.base != nil {
			r.Evidence = append(r.Evidence, Evidence{Task: f.task.ID, Kind: "verify-on-base",
				Lines: f.scrub.Strings(append([]string{fmt.Sprintf("exit status %d", f.base.ExitCode)}, decisiveLines(f.scrub.String(f.base.Output))...))})
		}
	}
	rule := decide(f)
	r.Verdict = Verdict{Category: rule.Category, Confidence: rule.Confidence, Rule: rule.Name, Why: f.scrub.String(rule.Why(f) + f.lanesNote()),
		Lines: f.scrub.Strings(f.decidingLines(rule))}
	sg := f.editFirst(rule.Suggest(f))
	f.notePassed(&r.Verdict)
	sg.Text = f.scrub.String(sg.Text)
	sg.Commands = f.scrub.Strings(sg.Commands)
	if sg.Commands == nil {
		sg.Commands = []string{}
	}
	r.Suggestion = sg
	r.Suspicious = append(r.Suspicious, f.suspicious()...)
	r.Effects = append(r.Effects, unresolvedEffects(f.effects)...)
	for _, h := range failedHooks(f.events) {
		h.Error = f.scrub.String(h.Error)
		r.FailedHooks = append(r.FailedHooks, h)
	}
	return r
}

func (f *facts) step(a store.Attempt) Step {
	s := Step{
		Task: a.TaskID, N: a.N, Agent: a.Agent, State: a.State,
		Class: nullable(a.Class), Code: nullable(a.Code), Message: nullable(f.scrub.String(a.Message)),
		ExitCode: a.ExitCode, StartedAt: rfc3339(a.StartedAt), DurationMS: a.DurationMS,
		FilesChanged: a.FilesChanged, TokensIn: a.TokensIn, TokensOut: a.TokensOut, CostUSD: a.CostUSD,
		Ref: nullable(a.Ref), AgentSession: nullable(a.AgentSession), ResumeCommand: nullable(a.AgentResume),
	}
	if a.Lane > 0 {
		s.Lane = &a.Lane
	}
	s.Diff = f.diffOf(a)
	return s
}

// lanesNote names the lanes of the decisive task's failed attempts when they raced (best_of):
// a rule that counts attempts counts them across the lanes, which each ran on their own.
func (f *facts) lanesNote() string {
	if f.task == nil {
		return ""
	}
	var parts []string
	for _, a := range f.failed {
		if a.Lane > 0 && a.TaskID == f.task.ID {
			parts = append(parts, fmt.Sprintf("%s@%d lane %d", a.TaskID, a.N, a.Lane))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (the attempts raced in lanes: " + strings.Join(parts, ", ") + ")"
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
