package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// TaskState is a task's state (SPEC §4 States): one of the Task* constants. The constants stay
// untyped so the rows' State fields (plain strings, as the JSON and the SQL read them) compare
// with them; the transition API and the event payloads take this type.
type TaskState string

// RunState is a run's state: one of the Run* constants.
type RunState string

// Valid reports whether s is a task state SPEC §4 names.
func (s TaskState) Valid() bool { return slices.Contains(taskStates, string(s)) }

// Finished reports whether a task in s has ended (TaskFinished).
func (s TaskState) Finished() bool { return TaskFinished(string(s)) }

// Valid reports whether s is a run state SPEC §4 names.
func (s RunState) Valid() bool { return slices.Contains(runStates, string(s)) }

// Finished reports whether a run in s has ended (RunFinished).
func (s RunState) Finished() bool { return RunFinished(string(s)) }

// Event types whose payload is one of the structs below. Writers marshal those structs and every
// reader (timetravel's replay, the hooks, the autopsy, the runner's own reads) decodes the same
// ones, so a key renamed on one side is renamed on the other.
const (
	EventTaskStateChanged = "task.state_changed"
	EventRunStateChanged  = "run.state_changed"
	EventSupervision      = "task.supervision_needed"
	EventAttemptStarted   = "attempt.started"
	EventAttemptFailed    = "attempt.failed"
	EventAttemptSucceeded = "attempt.succeeded"
	EventAttemptProcess   = "attempt.process"
	EventAgentDisabled    = "agent.disabled"
	EventTaskSilent       = "task.silent"
	EventOperatorPrompt   = "task.operator_prompt"
	EventTaskReset        = "task.reset"
	// EventAttemptSuperseded: a racing lane's attempt lost to another lane's (best_of).
	EventAttemptSuperseded = "attempt.superseded"
	// EventLaneParked: a racing lane stopped behind a quota wall while the others race on.
	EventLaneParked = "task.lane_parked"
)

// OptString is a string that is null in JSON when empty (SPEC §9: absent values are null).
type OptString string

// MarshalJSON writes "" as null.
func (s OptString) MarshalJSON() ([]byte, error) {
	if s == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(s))
}

// UnmarshalJSON reads null as "".
func (s *OptString) UnmarshalJSON(b []byte) error {
	var p *string
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = ""
	if p != nil {
		*s = OptString(*p)
	}
	return nil
}

// TaskStateChanged is the payload of task.state_changed. From, To, Reason, ResumeAt and Counters
// are TransitionTask's; the rest says more about the change where a writer has more to say.
type TaskStateChanged struct {
	From TaskState `json:"from"`
	To   TaskState `json:"to"`
	// Reason is why the change happened: the row's reason ("ask", "quota"…) or the decision that
	// made it ("retry" for a backoff, "retry-task", "resume-immediate" for a task made pending).
	Reason   OptString  `json:"reason"`
	ResumeAt *time.Time `json:"resume_at,omitempty"` // backoff, waiting_quota
	DelayMS  *int64     `json:"delay_ms,omitempty"`  // backoff: the delay drawn

	// The failure of a task that failed without an attempt failing (a spent budget, an abort).
	Class   string `json:"class,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"` // the tree could not be put back

	Who           *Operator `json:"who,omitempty"`            // the operator's decision
	BlockedReason string    `json:"blocked_reason,omitempty"` // prompt: why the task was held

	// Counters is the task's row as the change left it: what timetravel restores. Events written
	// before it existed lack it (nil); their replay falls back on the events around them.
	Counters *TaskCounters `json:"counters,omitempty"`
	// TimetravelCounters are the keys a timetravel's own change has always carried at the top
	// level (nil on other changes).
	*TimetravelCounters
}

// TaskCounters is the part of a task's row a state change records, exactly as written.
type TaskCounters struct {
	Reason              OptString  `json:"reason"` // the row's reason (blocked: ask, no-progress…)
	RetriesUsed         int        `json:"retries_used"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	ResumeAt            *time.Time `json:"resume_at"`
	BaseTree            OptString  `json:"base_tree"`
	StartedAt           *time.Time `json:"started_at"`
	FinishedAt          *time.Time `json:"finished_at"`
}

// TimetravelCounters are the top-level keys of a timetravel's task.state_changed, older than
// Counters, which replays of events written before Counters existed still read.
type TimetravelCounters struct {
	TaskReason          *string `json:"task_reason"`
	RetriesUsed         *int    `json:"retries_used"`
	ConsecutiveFailures *int    `json:"consecutive_failures"`
	BaseTree            *string `json:"base_tree"`
}

// RunStateChanged is the payload of run.state_changed. From, To and Reason are TransitionRun's.
type RunStateChanged struct {
	From   RunState  `json:"from"`
	To     RunState  `json:"to"`
	Reason OptString `json:"reason"`

	Message string `json:"message,omitempty"` // an abort's error
	// The process that claimed the run (resume, continue), or that kill ended.
	PID   int    `json:"pid,omitempty"`
	Host  string `json:"host,omitempty"`
	PGIDs []int  `json:"pgids,omitempty"` // kill: the agents' process groups signalled
	// supervise's hold: the resumes that made no progress, or why the tree moved on and the
	// command that resumes anyway.
	ResumesWithoutProgress *int   `json:"resumes_without_progress,omitempty"`
	Why                    string `json:"why,omitempty"`
	Command                string `json:"command,omitempty"`
	// An operator's decision that paused the run: the task it was about, the tasks it reset,
	// the undo ref of the tree it replaced.
	ForTask string    `json:"for_task,omitempty"`
	Reset   []string  `json:"reset,omitempty"`
	UndoRef OptString `json:"undo_ref,omitempty"`
	Who     *Operator `json:"who,omitempty"`
}

// Operator is who took an operator's decision: the `who` of its events.
type Operator struct {
	User string `json:"user"`
	Host string `json:"host"`
	PID  int    `json:"pid"`
}

// SupervisionNeeded is the payload of task.supervision_needed (written by TransitionTask).
type SupervisionNeeded struct {
	State   TaskState    `json:"state"`
	Reason  OptString    `json:"reason"`
	Failure *FailureInfo `json:"failure"`
	Ref     string       `json:"ref,omitempty"`
}

// FailureInfo is the latest failure of a task held for the operator.
type FailureInfo struct {
	Attempt     int       `json:"attempt"`
	Class       string    `json:"class"`
	Code        string    `json:"code"`
	Message     string    `json:"message"`
	Fingerprint OptString `json:"fingerprint"`
}

// AttemptStarted is the payload of attempt.started.
type AttemptStarted struct {
	Agent   string `json:"agent"`
	PreRef  string `json:"pre_ref"`
	PreTree string `json:"pre_tree"`
	Argv0   string `json:"argv0"`
	Lane    int    `json:"lane,omitempty"` // a racing lane (best_of)
}

// AttemptFailedPayload is the payload of attempt.failed: the failure as classified, before the policy
// decided, with the task's consecutive failures this one included. AppendEvent takes it (not a
// map) for this event type: its class decides the on_timeout hook.
type AttemptFailedPayload struct {
	Class               string    `json:"class"`
	Code                string    `json:"code"`
	Message             string    `json:"message"`
	RetryEligible       bool      `json:"retry_eligible"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	Counted             bool      `json:"counted"`
	ExitCode            *int      `json:"exit_code"`
	Ref                 OptString `json:"ref"`
	Fingerprint         OptString `json:"fingerprint"`
}

// AttemptSucceededPayload is the payload of attempt.succeeded.
type AttemptSucceededPayload struct {
	Ref          string `json:"ref"`
	FilesChanged int    `json:"files_changed"`
}

// AttemptSupersededPayload is the payload of attempt.superseded: a racing lane's attempt that
// another lane's attempt beat, with the tree it left in Ref.
type AttemptSupersededPayload struct {
	Lane         int    `json:"lane"`
	WinnerLane   int    `json:"winner_lane"`
	Winner       int    `json:"winner"` // the winning attempt's number
	Ref          string `json:"ref"`
	FilesChanged int    `json:"files_changed"`
}

// LaneParked is the payload of task.lane_parked: the lane, and when its earliest wall lifts.
type LaneParked struct {
	Lane     int       `json:"lane"`
	ResumeAt time.Time `json:"resume_at"`
}

// AttemptProcess is the payload of attempt.process: the agent's process group.
type AttemptProcess struct {
	Pgid int `json:"pgid"`
}

// TaskSilent is the payload of task.silent: the attempt in flight was quiet for quiet_ms, past
// the task's silence.
type TaskSilent struct {
	SilenceMS int64 `json:"silence_ms"`
	QuietMS   int64 `json:"quiet_ms"`
}

// AgentDisabled is the payload of agent.disabled.
type AgentDisabled struct {
	Agent  string `json:"agent"`
	Class  string `json:"class"`
	Reason string `json:"reason"`
}

// OperatorPrompt is the payload of task.operator_prompt (`mulligan prompt`, `reject TEXT`).
type OperatorPrompt struct {
	Text string    `json:"text"`
	Who  *Operator `json:"who"`
}

// TaskReset is the payload of task.reset (retry-task): the task starts again from scratch.
type TaskReset struct {
	From                TaskState `json:"from"`
	Reason              string    `json:"reason"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
}

// Decode reads an event's payload into v (one of the structs above). An event without payload
// leaves v as it is.
func (e Event) Decode(v any) error {
	if len(e.Payload) == 0 {
		return nil
	}
	if err := json.Unmarshal(e.Payload, v); err != nil {
		return fmt.Errorf("event %d (%s): %w", e.Seq, e.Type, err)
	}
	return nil
}

// EventTimetravel is the operator's audit record of a timetravel.
const EventTimetravel = "timetravel"

// TimetravelRecord is the payload of a timetravel event. A later timetravel reads back which
// attempts an earlier one superseded or restored, and the state each had before.
type TimetravelRecord struct {
	Who          *Operator           `json:"who"`
	From         TimetravelFrom      `json:"from"`
	To           TimetravelTo        `json:"to"`
	Superseded   []TimetravelAttempt `json:"superseded"`
	Restored     []TimetravelAttempt `json:"restored"`
	Tasks        []TimetravelTask    `json:"tasks"`
	TreeRestored bool                `json:"tree_restored"`
	UndoRef      OptString           `json:"undo_ref"`
}

// TimetravelFrom is where a timetravel started: the run's state and the tree before.
type TimetravelFrom struct {
	State RunState  `json:"state"`
	Tree  OptString `json:"tree"`
}

// TimetravelTo is the point a timetravel went to: the attempt, its tree and the last event of it.
type TimetravelTo struct {
	Attempt string `json:"attempt"` // TASK@N
	Ref     string `json:"ref"`
	Tree    string `json:"tree"`
	Seq     int64  `json:"seq"`
}

// TimetravelAttempt is an attempt a timetravel superseded or restored, with its state before.
type TimetravelAttempt struct {
	Attempt string `json:"attempt"` // TASK@N
	State   string `json:"state"`
}

// TimetravelTask is a task whose state a timetravel changed.
type TimetravelTask struct {
	Task string    `json:"task"`
	From TaskState `json:"from"`
	To   TaskState `json:"to"`
}

// Event types of the payloads below.
const (
	EventRunStarted        = "run.started"
	EventRunPruned         = "run.pruned"
	EventRunReloaded       = "run.reloaded"
	EventControlRequested  = "run.control_requested"
	EventSnapshotTaken     = "snapshot.taken"
	EventIgnoredRestored   = "ignored.restored"
	EventSubmoduleRestored = "submodule.restored"
	EventGitChanged        = "attempt.git_changed"
	EventGitReset          = "attempt.git_reset"
	EventEffectRecorded    = "effect.recorded"
	EventTaskRejected      = "task.rejected"
	EventQuotaLifted       = "quota.lifted"
	EventAutopsyWritten    = "autopsy.written"
)

// RunStarted is the payload of run.started.
type RunStarted struct {
	Worktree     string   `json:"worktree"`
	TaskFile     string   `json:"task_file"`
	TaskFileHash string   `json:"task_file_hash"`
	Tasks        []string `json:"tasks"`
	PID          int      `json:"pid"`
	Host         string   `json:"host"`
}

// RunPruned is the payload of run.pruned (gc): how many refs went.
type RunPruned struct {
	Refs int       `json:"refs"`
	Who  *Operator `json:"who"`
}

// RunReloaded is the payload of run.reloaded (resume --reload, retry-task --reload).
type RunReloaded struct {
	TaskFile        string    `json:"task_file"`
	OldHash         string    `json:"old_hash"`
	NewHash         string    `json:"new_hash"`
	Added           []string  `json:"added"`
	Removed         []string  `json:"removed"`
	Changed         []string  `json:"changed"`
	AgentsChanged   []string  `json:"agents_changed"`
	RunHooksChanged bool      `json:"run_hooks_changed"`
	By              string    `json:"by"`
	Who             *Operator `json:"who"`
}

// ControlRequested is the payload of run.control_requested: a pause or cancel asked of the
// process that runs the run.
type ControlRequested struct {
	Request string `json:"request"`
	PID     int    `json:"pid"`
}

// SnapshotTaken is the payload of snapshot.taken: a ref mulligan wrote outside an attempt (the
// run's base, the kept ignored files, the tree a reset or a forced resume replaced). Reason is
// why, when it is not the base; Why what a forced resume overrode.
type SnapshotTaken struct {
	Ref    string `json:"ref"`
	Tree   string `json:"tree,omitempty"`
	Commit string `json:"commit"`
	Reason string `json:"reason,omitempty"`
	Why    string `json:"why,omitempty"`
	Files  int    `json:"files,omitempty"`
	Bytes  int64  `json:"bytes,omitempty"`
}

// IgnoredRestored is the payload of ignored.restored: kept ignored files a reset put back.
type IgnoredRestored struct {
	Paths       []string `json:"paths"`
	ReplacedRef string   `json:"replaced_ref"`
}

// SubmoduleRestored is the payload of submodule.restored.
type SubmoduleRestored struct {
	Path    string    `json:"path"`
	Ref     string    `json:"ref"`
	UndoRef OptString `json:"undo_ref"`
	Reason  OptString `json:"reason"` // why it was skipped
}

// GitChanged is the payload of attempt.git_changed: what the attempt did to HEAD, refs, the stash
// and the index (snapshot.GitChange values, as JSON), and the head ref that keeps its commits.
type GitChanged struct {
	Changes json.RawMessage `json:"changes"`
	HeadRef OptString       `json:"head_ref"`
}

// GitKeptPayload is the payload of attempt.git_reset when the attempt's git changes were kept.
type GitKeptPayload struct {
	Kept json.RawMessage `json:"kept"`
	Git  string          `json:"git"`
}

// GitResetPayload is the payload of attempt.git_reset when they were put back: Restored as put back,
// Skipped with why (someone else changed them meanwhile).
type GitResetPayload struct {
	Restored json.RawMessage `json:"restored"`
	Skipped  []GitSkipped    `json:"skipped"`
	Git      string          `json:"git"`
}

// GitSkipped is a git change a reset did not put back.
type GitSkipped struct {
	Change json.RawMessage `json:"change"`
	Reason string          `json:"reason"`
}

// EffectRecordedPayload is the payload of effect.recorded. Implicit: the effect every started attempt of
// a task with non-idempotent side effects may have had.
type EffectRecordedPayload struct {
	Effect     int64  `json:"effect"`
	Name       string `json:"name"`
	Idempotent bool   `json:"idempotent"`
	Implicit   bool   `json:"implicit,omitempty"`
	DeliveryID string `json:"delivery_id"`
}

// TaskRejected is the payload of task.rejected (`mulligan reject`).
type TaskRejected struct {
	Text OptString `json:"text"`
	Who  *Operator `json:"who"`
}

// QuotaLifted is the payload of quota.lifted: the operator lifted a quota wall early.
type QuotaLifted struct {
	By       string `json:"by"`
	ResumeAt string `json:"resume_at"`
}

// AutopsyWritten is the payload of autopsy.written.
type AutopsyWritten struct {
	Path     string `json:"path"`
	Category string `json:"category"`
	Rule     string `json:"rule"`
}

// More event types of the payloads below.
const (
	EventTaskApproved = "task.approved"
	EventRevert       = "revert"
)

// TaskApproved is the payload of task.approved: who approved, and the --payload given (null
// without one).
type TaskApproved struct {
	Who     *Operator       `json:"who"`
	Payload json.RawMessage `json:"payload"`
}

// Revert is the payload of revert: the tree an attempt (or the run's base) left, set as the
// working tree. GitRestored and GitLeft are there when HEAD, refs and the index went back too.
type Revert struct {
	Who         *Operator       `json:"who"`
	Target      string          `json:"target"`
	From        string          `json:"from"`
	To          string          `json:"to"`
	UndoRef     string          `json:"undo_ref"`
	Changed     int             `json:"changed"`
	Complete    bool            `json:"complete"`
	Force       bool            `json:"force"`
	GitRestored json.RawMessage `json:"git_restored,omitempty"`
	GitLeft     *[]GitSkipped   `json:"git_left,omitempty"`
}

// EventHookDelivered is the event of a hook delivery's outcome.
const EventHookDelivered = "hook.delivered"

// HookDeliveredPayload is the payload of hook.delivered: a delivery's outcome (delivered or failed).
type HookDeliveredPayload struct {
	Hook       string `json:"hook"`
	Level      string `json:"level"`
	DeliveryID string `json:"delivery_id"`
	State      string `json:"state"`
	Tries      int    `json:"tries"`
	ExitCode   *int   `json:"exit_code"`
	Error      string `json:"error,omitempty"`
}

// EventEffectCompensated is the event of a compensation's outcome.
const EventEffectCompensated = "effect.compensated"

// EffectCompensatedPayload is the payload of effect.compensated: the effect and its compensation's
// state (compensated, compensation_failed, unresolved), with the error of a failed one.
type EffectCompensatedPayload struct {
	Effect     int64  `json:"effect"`
	Name       string `json:"name"`
	State      string `json:"state"`
	DeliveryID string `json:"delivery_id"`
	Error      string `json:"error,omitempty"`
}
