package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// The JSON shapes of SPEC §9 live here, as separate structs, so that the Go row types can
// use plain strings and time.Time (the zero value meaning absent) while the JSON says null for
// every absent value, keeps a stable field order, and prints times as RFC 3339 UTC.

// timeLayout is RFC 3339 in UTC at the millisecond precision the database stores.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func jtime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(timeLayout)
	return &s
}

func jtimep(t *time.Time) *string {
	if t == nil {
		return nil
	}
	return jtime(*t)
}

func jstr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func unjtime(s *string) (time.Time, error) {
	if s == nil {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

func unjtimep(s *string) (*time.Time, error) {
	if s == nil {
		return nil, nil
	}
	t, err := unjtime(s)
	return &t, err
}

func unjstr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

type runJSON struct {
	ID                     string     `json:"id"`
	State                  string     `json:"state"`
	Reason                 *string    `json:"reason"`
	Worktree               string     `json:"worktree"`
	TaskFile               *string    `json:"task_file"`
	BaseRef                *string    `json:"base_ref"`
	StartedAt              *string    `json:"started_at"`
	FinishedAt             *string    `json:"finished_at"`
	GitDir                 *string    `json:"git_dir"`
	TaskFileHash           *string    `json:"task_file_hash"`
	BaseTree               *string    `json:"base_tree"`
	MaxCostUSD             *float64   `json:"max_cost_usd"`
	Owner                  *Owner     `json:"owner"`
	Epoch                  int64      `json:"epoch"`
	HeartbeatAt            *string    `json:"heartbeat_at"`
	ResumesWithoutProgress int        `json:"resumes_without_progress"`
	Pruned                 bool       `json:"pruned"`
	TokensIn               *int64     `json:"tokens_in"`
	TokensOut              *int64     `json:"tokens_out"`
	CostUSD                *float64   `json:"cost_usd"`
	Tasks                  []taskJSON `json:"tasks"`
}

type taskJSON struct {
	ID                  string        `json:"id"`
	State               string        `json:"state"`
	Reason              *string       `json:"reason"`
	Needs               []string      `json:"needs"`
	ResumeAt            *string       `json:"resume_at"`
	ConsecutiveFailures int           `json:"consecutive_failures"`
	RetriesUsed         int           `json:"retries_used"`
	BaseTree            *string       `json:"base_tree"`
	StartedAt           *string       `json:"started_at"`
	FinishedAt          *string       `json:"finished_at"`
	ParkedMS            int64         `json:"parked_ms"`
	SilentAt            *string       `json:"silent_at"`
	Attempts            []attemptJSON `json:"attempts"`
}

type attemptJSON struct {
	N             int      `json:"n"`
	Agent         *string  `json:"agent"`
	State         string   `json:"state"`
	Class         *string  `json:"class"`
	Code          *string  `json:"code"`
	Message       *string  `json:"message"`
	Hint          *string  `json:"hint"`
	RetryAfterMS  *int64   `json:"retry_after_ms"`
	RetryEligible *bool    `json:"retry_eligible"`
	Counted       bool     `json:"counted"`
	ExitCode      *int     `json:"exit_code"`
	StartedAt     *string  `json:"started_at"`
	FinishedAt    *string  `json:"finished_at"`
	DurationMS    *int64   `json:"duration_ms"`
	PreRef        *string  `json:"pre_ref"`
	PreTree       *string  `json:"pre_tree"`
	Ref           *string  `json:"ref"`
	Tree          *string  `json:"tree"`
	FilesChanged  *int     `json:"files_changed"`
	SchemaRetries int      `json:"schema_retries"`
	TokensIn      *int64   `json:"tokens_in"`
	TokensOut     *int64   `json:"tokens_out"`
	CostUSD       *float64 `json:"cost_usd"`
	Prompt        *string  `json:"prompt"`
	Log           *string  `json:"log"`
	AgentSession  *string  `json:"agent_session"`
	ResumeCommand *string  `json:"resume_command"`
	Fingerprint   *string  `json:"fingerprint"`
	// Lane is the racing lane (best_of), null for an attempt that raced no one.
	Lane *int `json:"lane"`
	// GitChanges is always a list: [] when the attempt changed nothing outside the tree.
	GitChanges json.RawMessage `json:"git_changes"`
	GitReset   *string         `json:"git_reset"`
}

type summaryJSON struct {
	ID         string   `json:"id"`
	State      string   `json:"state"`
	StartedAt  *string  `json:"started_at"`
	FinishedAt *string  `json:"finished_at"`
	Tasks      int      `json:"tasks"`
	Attempts   int      `json:"attempts"`
	Reason     *string  `json:"reason"`
	Worktree   string   `json:"worktree"`
	TokensIn   *int64   `json:"tokens_in"`
	TokensOut  *int64   `json:"tokens_out"`
	CostUSD    *float64 `json:"cost_usd"`
	Pruned     bool     `json:"pruned"`
}

func (a Attempt) toJSON() attemptJSON {
	return attemptJSON{
		N: a.N, Agent: jstr(a.Agent), State: a.State,
		Class: jstr(a.Class), Code: jstr(a.Code), Message: jstr(a.Message), Hint: jstr(a.Hint),
		RetryAfterMS: a.RetryAfterMS, RetryEligible: a.RetryEligible, Counted: a.Counted,
		ExitCode: a.ExitCode, StartedAt: jtime(a.StartedAt), FinishedAt: jtimep(a.FinishedAt),
		DurationMS: a.DurationMS,
		PreRef:     jstr(a.PreRef), PreTree: jstr(a.PreTree), Ref: jstr(a.Ref), Tree: jstr(a.Tree),
		FilesChanged: a.FilesChanged, SchemaRetries: a.SchemaRetries,
		TokensIn: a.TokensIn, TokensOut: a.TokensOut, CostUSD: a.CostUSD,
		Prompt: jstr(a.Prompt), Log: jstr(a.Log), Fingerprint: jstr(a.Fingerprint),
		AgentSession: jstr(a.AgentSession), ResumeCommand: jstr(a.AgentResume),
		GitChanges: gitChangesJSON(a.GitChanges), GitReset: jstr(a.GitReset), Lane: jlane(a.Lane),
	}
}

func jlane(l int) *int {
	if l == 0 {
		return nil
	}
	return &l
}

func gitChangesJSON(c json.RawMessage) json.RawMessage {
	if len(c) == 0 {
		return json.RawMessage("[]")
	}
	return c
}

func (j attemptJSON) fromJSON() (Attempt, error) {
	a := Attempt{
		N: j.N, Agent: unjstr(j.Agent), State: j.State,
		Class: unjstr(j.Class), Code: unjstr(j.Code), Message: unjstr(j.Message), Hint: unjstr(j.Hint),
		RetryAfterMS: j.RetryAfterMS, RetryEligible: j.RetryEligible, Counted: j.Counted,
		ExitCode: j.ExitCode, DurationMS: j.DurationMS,
		PreRef: unjstr(j.PreRef), PreTree: unjstr(j.PreTree), Ref: unjstr(j.Ref), Tree: unjstr(j.Tree),
		FilesChanged: j.FilesChanged, SchemaRetries: j.SchemaRetries,
		TokensIn: j.TokensIn, TokensOut: j.TokensOut, CostUSD: j.CostUSD,
		Prompt: unjstr(j.Prompt), Log: unjstr(j.Log), Fingerprint: unjstr(j.Fingerprint),
		AgentSession: unjstr(j.AgentSession), AgentResume: unjstr(j.ResumeCommand),
	}
	if j.Lane != nil {
		a.Lane = *j.Lane
	}
	if len(j.GitChanges) > 0 && string(j.GitChanges) != "[]" && string(j.GitChanges) != "null" {
		a.GitChanges = j.GitChanges
	}
	a.GitReset = unjstr(j.GitReset)
	var err1, err2 error
	a.StartedAt, err1 = unjtime(j.StartedAt)
	a.FinishedAt, err2 = unjtimep(j.FinishedAt)
	return a, firstErr(err1, err2)
}

func (t Task) toJSON() taskJSON {
	j := taskJSON{
		ID: t.ID, State: t.State, Reason: jstr(t.Reason), Needs: t.Needs,
		ResumeAt: jtimep(t.ResumeAt), ConsecutiveFailures: t.ConsecutiveFailures,
		RetriesUsed: t.RetriesUsed, BaseTree: jstr(t.BaseTree),
		StartedAt: jtimep(t.StartedAt), FinishedAt: jtimep(t.FinishedAt),
		ParkedMS: t.ParkedMS, SilentAt: jtimep(t.SilentAt),
		Attempts: make([]attemptJSON, len(t.Attempts)),
	}
	// an empty list is a value, not an absent one
	if j.Needs == nil {
		j.Needs = []string{}
	}
	for i, a := range t.Attempts {
		j.Attempts[i] = a.toJSON()
	}
	return j
}

func (j taskJSON) fromJSON() (Task, error) {
	t := Task{
		ID: j.ID, State: j.State, Reason: unjstr(j.Reason), Needs: j.Needs,
		ConsecutiveFailures: j.ConsecutiveFailures, RetriesUsed: j.RetriesUsed,
		BaseTree: unjstr(j.BaseTree), ParkedMS: j.ParkedMS,
	}
	var errs [4]error
	t.ResumeAt, errs[0] = unjtimep(j.ResumeAt)
	t.StartedAt, errs[1] = unjtimep(j.StartedAt)
	t.FinishedAt, errs[2] = unjtimep(j.FinishedAt)
	t.SilentAt, errs[3] = unjtimep(j.SilentAt)
	if err := firstErr(errs[:]...); err != nil {
		return t, err
	}
	for _, aj := range j.Attempts {
		a, err := aj.fromJSON()
		if err != nil {
			return t, err
		}
		t.Attempts = append(t.Attempts, a)
	}
	return t, nil
}

// MarshalJSON writes the attempt as in `show -o json`.
func (a Attempt) MarshalJSON() ([]byte, error) { return json.Marshal(a.toJSON()) }

// UnmarshalJSON reads what MarshalJSON wrote (RunID and TaskID are not part of it).
func (a *Attempt) UnmarshalJSON(b []byte) error {
	var j attemptJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	v, err := j.fromJSON()
	*a = v
	return err
}

// MarshalJSON writes the task as in `show -o json`.
func (t Task) MarshalJSON() ([]byte, error) { return json.Marshal(t.toJSON()) }

// UnmarshalJSON reads what MarshalJSON wrote.
func (t *Task) UnmarshalJSON(b []byte) error {
	var j taskJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	v, err := j.fromJSON()
	*t = v
	return err
}

// MarshalJSON writes the run as `show -o json` prints it.
func (r Run) MarshalJSON() ([]byte, error) {
	j := runJSON{
		ID: r.ID, State: r.State, Reason: jstr(r.Reason), Worktree: r.Worktree,
		TaskFile: jstr(r.TaskFile), BaseRef: jstr(r.BaseRef),
		StartedAt: jtime(r.StartedAt), FinishedAt: jtimep(r.FinishedAt),
		GitDir: jstr(r.GitDir), TaskFileHash: jstr(r.TaskFileHash), BaseTree: jstr(r.BaseTree),
		MaxCostUSD: r.MaxCostUSD, Owner: r.Owner, Epoch: r.Epoch, HeartbeatAt: jtimep(r.HeartbeatAt),
		ResumesWithoutProgress: r.ResumesWithoutProgress, Pruned: r.Pruned,
		TokensIn: r.TokensIn, TokensOut: r.TokensOut, CostUSD: r.CostUSD,
		Tasks: make([]taskJSON, len(r.Tasks)),
	}
	for i, t := range r.Tasks {
		j.Tasks[i] = t.toJSON()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote (the task file content and options are not in it).
func (r *Run) UnmarshalJSON(b []byte) error {
	var j runJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	v := Run{
		ID: j.ID, State: j.State, Reason: unjstr(j.Reason), Worktree: j.Worktree,
		TaskFile: unjstr(j.TaskFile), BaseRef: unjstr(j.BaseRef),
		GitDir: unjstr(j.GitDir), TaskFileHash: unjstr(j.TaskFileHash), BaseTree: unjstr(j.BaseTree),
		MaxCostUSD: j.MaxCostUSD, Owner: j.Owner, Epoch: j.Epoch,
		ResumesWithoutProgress: j.ResumesWithoutProgress, Pruned: j.Pruned,
		TokensIn: j.TokensIn, TokensOut: j.TokensOut, CostUSD: j.CostUSD,
	}
	var errs [3]error
	v.StartedAt, errs[0] = unjtime(j.StartedAt)
	v.FinishedAt, errs[1] = unjtimep(j.FinishedAt)
	v.HeartbeatAt, errs[2] = unjtimep(j.HeartbeatAt)
	if err := firstErr(errs[:]...); err != nil {
		return err
	}
	for _, tj := range j.Tasks {
		t, err := tj.fromJSON()
		if err != nil {
			return err
		}
		t.RunID = v.ID
		for i := range t.Attempts {
			t.Attempts[i].RunID, t.Attempts[i].TaskID = v.ID, t.ID
		}
		v.Tasks = append(v.Tasks, t)
	}
	*r = v
	return nil
}

// MarshalJSON writes the summary as one element of `ls -o json`.
func (s RunSummary) MarshalJSON() ([]byte, error) {
	return json.Marshal(summaryJSON{
		ID: s.ID, State: s.State, StartedAt: jtime(s.StartedAt), FinishedAt: jtimep(s.FinishedAt),
		Tasks: s.Tasks, Attempts: s.Attempts, Reason: jstr(s.Reason), Worktree: s.Worktree,
		TokensIn: s.TokensIn, TokensOut: s.TokensOut, CostUSD: s.CostUSD, Pruned: s.Pruned,
	})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (s *RunSummary) UnmarshalJSON(b []byte) error {
	var j summaryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	v := RunSummary{
		ID: j.ID, State: j.State, Tasks: j.Tasks, Attempts: j.Attempts, Reason: unjstr(j.Reason),
		Worktree: j.Worktree, TokensIn: j.TokensIn, TokensOut: j.TokensOut, CostUSD: j.CostUSD,
		Pruned: j.Pruned,
	}
	var err1, err2 error
	v.StartedAt, err1 = unjtime(j.StartedAt)
	v.FinishedAt, err2 = unjtimep(j.FinishedAt)
	*s = v
	return firstErr(err1, err2)
}

// eventKeys are the event fields the payload may not use: they would be shadowed when the
// payload is flattened into the event object.
var eventKeys = map[string]bool{"seq": true, "time": true, "run": true, "task": true, "attempt": true, "type": true}

type eventHead struct {
	Seq     int64   `json:"seq"`
	Time    *string `json:"time"`
	Run     *string `json:"run"`
	Task    *string `json:"task"`
	Attempt *int    `json:"attempt"`
	Type    string  `json:"type"`
}

// MarshalJSON writes one line of `events -o json`: {"seq", "time", "run", "task", "attempt",
// "type", …payload}, the payload's keys in the order they were recorded.
func (e Event) MarshalJSON() ([]byte, error) {
	h := eventHead{Seq: e.Seq, Time: jtime(e.Time), Run: jstr(e.Run), Task: jstr(e.Task), Type: e.Type}
	if e.Attempt != 0 {
		h.Attempt = &e.Attempt
	}
	head, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	p := bytes.TrimSpace(e.Payload)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return head, nil
	}
	if p[0] != '{' || p[len(p)-1] != '}' {
		return nil, fmt.Errorf("event %d: payload is not a JSON object", e.Seq)
	}
	inner := bytes.TrimSpace(p[1 : len(p)-1])
	if len(inner) == 0 {
		return head, nil
	}
	out := make([]byte, 0, len(head)+len(inner)+1)
	out = append(out, head[:len(head)-1]...)
	out = append(out, ',')
	out = append(out, inner...)
	out = append(out, '}')
	return out, nil
}

// UnmarshalJSON reads what MarshalJSON wrote; keys other than the six named ones become the
// payload (re-encoded, so in sorted key order).
func (e *Event) UnmarshalJSON(b []byte) error {
	var h eventHead
	if err := json.Unmarshal(b, &h); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for k := range eventKeys {
		delete(all, k)
	}
	v := Event{Seq: h.Seq, Run: unjstr(h.Run), Task: unjstr(h.Task), Type: h.Type}
	if h.Attempt != nil {
		v.Attempt = *h.Attempt
	}
	var err error
	if v.Time, err = unjtime(h.Time); err != nil {
		return err
	}
	if len(all) > 0 {
		if v.Payload, err = json.Marshal(all); err != nil {
			return err
		}
	}
	*e = v
	return nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
