package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// Run states (SPEC §4 States).
const (
	RunRunning      = "running"
	RunPaused       = "paused"
	RunBlocked      = "blocked"
	RunWaitingQuota = "waiting_quota"
	// RunWaitingApproval: a task waits for approve/reject and nothing else can proceed.
	RunWaitingApproval = "waiting_approval"
	RunSucceeded       = "succeeded"
	RunFailed          = "failed"
	RunCancelled       = "cancelled"
)

// Task states.
const (
	TaskPending      = "pending"
	TaskRunning      = "running"
	TaskBackoff      = "backoff"
	TaskBlocked      = "blocked"
	TaskWaitingQuota = "waiting_quota"
	// TaskWaitingApproval: a successful attempt (needs_approval) waits for approve or reject.
	TaskWaitingApproval = "waiting_approval"
	TaskPaused          = "paused"
	TaskSucceeded       = "succeeded"
	TaskFailed          = "failed"
	TaskSkipped         = "skipped"
	TaskCancelled       = "cancelled"
)

// Attempt states.
const (
	AttemptRunning    = "running"
	AttemptSucceeded  = "succeeded"
	AttemptFailed     = "failed"
	AttemptCancelled  = "cancelled"
	AttemptSuperseded = "superseded"
)

var (
	runStates     = []string{RunRunning, RunPaused, RunBlocked, RunWaitingQuota, RunWaitingApproval, RunSucceeded, RunFailed, RunCancelled}
	taskStates    = []string{TaskPending, TaskRunning, TaskBackoff, TaskBlocked, TaskWaitingQuota, TaskWaitingApproval, TaskPaused, TaskSucceeded, TaskFailed, TaskSkipped, TaskCancelled}
	attemptStates = []string{AttemptRunning, AttemptSucceeded, AttemptFailed, AttemptCancelled, AttemptSuperseded}
)

// RunFinished reports whether a run in this state has ended: nothing will continue it except
// an explicit retry-task or timetravel.
func RunFinished(state string) bool {
	return state == RunSucceeded || state == RunFailed || state == RunCancelled
}

// TaskHeld reports whether a task in this state is held: it waits for a decision, a quota reset
// or an approval, and does not stop the tasks that do not depend on it.
func TaskHeld(state string) bool {
	return state == TaskBlocked || state == TaskWaitingQuota || state == TaskWaitingApproval
}

// RunParked reports whether a run in this state can be resumed without a decision (exit 4).
func RunParked(state string) bool {
	return state == RunPaused || state == RunWaitingQuota || state == RunWaitingApproval
}

// TaskFinished reports whether a task in this state has ended.
func TaskFinished(state string) bool {
	return state == TaskSucceeded || state == TaskFailed || state == TaskSkipped || state == TaskCancelled
}

func checkState(kind, state string, valid []string) error {
	if !slices.Contains(valid, state) {
		return fmt.Errorf("unknown %s state %q", kind, state)
	}
	return nil
}

var (
	runIDRe  = lazyre.New(`^[0-9a-z]+$`)
	taskIDRe = lazyre.New(`^[A-Za-z0-9._-]+$`)
)

// Errors callers branch on. They are wrapped with the name that was looked up.
var (
	ErrNotFound = errors.New("not found")
	// ErrAmbiguous: a run prefix matches several runs; the error is an *AmbiguousError.
	ErrAmbiguous = errors.New("ambiguous")
	// ErrShortPrefix: a run prefix shorter than MinPrefix.
	ErrShortPrefix = errors.New("run prefix too short")
	// ErrFenced: the caller no longer owns the run (another process claimed it, or it was
	// killed). The caller must stop writing and exit.
	ErrFenced = errors.New("run is owned by another process")
	// ErrLocked: the worktree is in use by another live run; the error is a *LockedError.
	ErrLocked = errors.New("worktree is in use")
	// ErrStateChange: UpdateTask or UpdateRun was asked to change a state, which only
	// TransitionTask and TransitionRun do.
	ErrStateChange = errors.New("a state changes through its transition")
	// ErrHasAttempts: a task with recorded attempts cannot be deleted.
	ErrHasAttempts = errors.New("the task has recorded attempts")
)

// Owner identifies the process allowed to write a run: pid and host, plus the process start
// time (in clock ticks since boot, /proc/<pid>/stat field 22) so that a recycled pid is not
// mistaken for the owner.
type Owner struct {
	PID        int    `json:"pid"`
	Host       string `json:"host"`
	StartTicks uint64 `json:"start_ticks"`
}

// Run is one row of runs. GetRun fills Tasks (in task-file order, each with its attempts in
// number order) and the spend sums; ListRuns returns RunSummary instead.
type Run struct {
	ID              string
	Worktree        string
	GitDir          string
	TaskFile        string
	TaskFileHash    string
	TaskFileContent []byte // never in JSON: it is the file itself
	BaseRef         string
	BaseTree        string
	State           string
	Reason          string
	StartedAt       time.Time
	FinishedAt      *time.Time
	MaxCostUSD      *float64
	Options         []byte // options_json: the runner's own JSON, opaque here; never in JSON output

	// Owner and Epoch are written by InsertRun, ClaimRun and FenceRun only.
	Owner       *Owner
	Epoch       int64
	HeartbeatAt *time.Time

	ResumesWithoutProgress int
	Pruned                 bool

	// Sums over the run's attempts; nil when no attempt reported the figure. Read-only.
	TokensIn  *int64
	TokensOut *int64
	CostUSD   *float64

	Tasks []Task
}

// Task is one row of tasks.
type Task struct {
	RunID               string
	ID                  string
	Ord                 int // position in the task file; GetRun orders tasks by it
	State               string
	Reason              string
	Needs               []string
	ResumeAt            *time.Time
	ConsecutiveFailures int
	RetriesUsed         int
	BaseTree            string
	StartedAt           *time.Time
	FinishedAt          *time.Time
	// ParkedMS is the time the task spent parked (pause, quota, approval): not counted against
	// its deadline. ParkedAt is when the current parking began (nil: not parked).
	ParkedMS int64
	ParkedAt *time.Time
	// SilentAt is when the attempt in flight raised its silence flag (nil: not silent).
	SilentAt *time.Time

	Attempts []Attempt
}

// Attempt is one row of attempts. Empty strings are absent values (null in JSON).
type Attempt struct {
	RunID  string
	TaskID string
	N      int
	Agent  string
	State  string

	Class         string
	Code          string
	Message       string
	Hint          string
	RetryAfterMS  *int64
	RetryEligible *bool
	// Counted is false for attempts that do not use up the retry budget (quota, runner_died,
	// cancellation by pause).
	Counted bool

	ExitCode   *int
	StartedAt  time.Time
	FinishedAt *time.Time
	// DurationMS is computed from StartedAt and FinishedAt by UpdateAttempt when left nil.
	DurationMS *int64

	PreRef       string
	PreTree      string
	Ref          string
	Tree         string
	FilesChanged *int

	SchemaRetries int
	TokensIn      *int64
	TokensOut     *int64
	CostUSD       *float64

	Prompt string // the exact prompt sent
	Log    string // path of the full output log
	// Fingerprint identifies a failure for the no-progress rule ("" for successes and for the
	// classes that are not fingerprinted).
	Fingerprint string

	// AgentSession is the agent CLI's own id of the conversation (claude's session_id, codex's
	// thread_id); AgentResume the shell command that continues it by hand, in the attempt's
	// tree. Empty where the CLI reported none or cannot resume.
	AgentSession string
	AgentResume  string

	// Lane is the lane (1…N) of an attempt that raced the others of its task (`best_of: N`),
	// 0 for one that raced no one.
	Lane int

	// GitChanges is what the attempt changed outside the working tree (HEAD, refs, stash,
	// index), as JSON; read-only here (attempt_git), nil meaning none.
	GitChanges json.RawMessage
	// GitReset is what became of them: GitPutBack, GitPartial, GitKept, or "" (not yet decided).
	GitReset string
}

// RunSummary is one line of ls.
type RunSummary struct {
	ID         string
	State      string
	Reason     string
	Worktree   string
	StartedAt  time.Time
	FinishedAt *time.Time
	Tasks      int
	Attempts   int
	TokensIn   *int64
	TokensOut  *int64
	CostUSD    *float64
	Pruned     bool
}

// Event is one row of the event stream. Payload is a JSON object (or nil) whose keys are
// flattened into the event's JSON next to seq, time, run, task, attempt and type.
type Event struct {
	Seq     int64
	Time    time.Time
	Run     string
	Task    string
	Attempt int // 0: not about one attempt
	Type    string
	Payload []byte
}

// AgentHealth records an agent disabled for the rest of a run (auth, agent_missing).
type AgentHealth struct {
	Agent    string    `json:"agent"`
	Disabled bool      `json:"disabled"`
	Class    string    `json:"class"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
}

// Lock is a worktree lock row.
type Lock struct {
	Worktree   string    `json:"worktree"`
	RunID      string    `json:"run"`
	Owner      Owner     `json:"owner"`
	AcquiredAt time.Time `json:"acquired_at"`
}

// Ptr returns a pointer to v, for the optional fields of the row types.
func Ptr[T any](v T) *T { return &v }
