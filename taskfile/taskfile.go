package taskfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// File is a loaded, validated task file. Content and Hash are what the run stores, so that
// resume and retry-task use the definition the run started with.
type File struct {
	Path    string
	Content []byte
	Hash    string // sha256 hex of Content
	Version int

	Agents     map[string]*Agent
	AgentOrder []string // file order
	Tasks      []*Task  // file order
	Hooks      Hooks    // run-level hooks
	// Isolation and Worktree are the top level's defaults for the tasks that set none.
	Isolation string
	Worktree  WorktreeFiles
	// Parallel is how many isolated tasks run at once (SPEC §4.1; default DefaultParallel).
	Parallel int
	// BestOf is the top level's default for the tasks that set no `best_of` (1: no race).
	BestOf int
}

// DefaultParallel is how many independent isolated tasks run at once when the file says nothing.
const DefaultParallel = 2

// Task returns the task with the given id, or nil.
func (f *File) Task(id string) *Task {
	for _, t := range f.Tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// Agent is one entry of `agents:`.
type Agent struct {
	Name    string
	Preset  string // one of Presets; "generic" when the file names none
	Command []string
	Env     map[string]string
	Pos     Pos
}

// Task is one entry of `tasks:` with every default filled in.
type Task struct {
	ID         string
	Needs      []string
	Prompt     string
	PromptFile string
	Agents     []string // failover chain, at least one name

	OnFailure string // fail | ask | retry
	Retries   int
	Backoff   Backoff

	Timeout, Heartbeat, Deadline time.Duration // 0 = none
	MaxConsecutiveFailures       int           // default 3

	NonRetryable, RetryOn []Class
	CarryOver             bool
	// RetryMode is how a retry starts: RetryCold (a new conversation, the default) or
	// RetryResume (the previous attempt's conversation continued, where its CLI can).
	RetryMode string

	Verify           *Verify
	OutputSchema     string
	MaxSchemaRetries int // default 3
	ResultContract   *ResultContract
	Classify         []ClassifyRule

	MaxCostUSD  float64 // 0 = no limit
	SideEffects string  // none | non_idempotent
	// Git is what becomes of the agent's changes to HEAD, refs, the stash and the index:
	// restore (default), isolate or allow (SPEC §2.1).
	Git string
	// Isolation is where the attempts run: in-place (the working tree) or worktree (a linked
	// worktree of mulligan's own, its change applied to the working tree on success; SPEC §4.1).
	Isolation string
	// Worktree says which ignored files of the working tree an isolated attempt gets.
	Worktree WorktreeFiles
	// BestOf is how many lanes race for the task at once, each in a worktree of its own; the
	// first whose attempt passes verify wins (SPEC §4.1). 1: no race. More than 1 implies
	// Isolation worktree.
	BestOf  int
	Effects []EffectDecl
	Hooks   Hooks

	// AllowFail: the task may fail; its dependents still run and the run can succeed.
	AllowFail bool
	// NeedsApproval parks a successful attempt in waiting_approval for approve/reject;
	// ApprovalSchema (a JSON Schema path from the working tree root) checks approve's payload.
	NeedsApproval  bool
	ApprovalSchema string
	// Silence: no output this long raises an attention flag; kills nothing (0 = none).
	Silence time.Duration
	// MaxIdenticalFailures: this many identical failures in a row block the task (no-progress).
	MaxIdenticalFailures int // default 2

	Pos Pos
	// Where prompt_file's and output_schema's values are, for CheckFiles.
	PromptFilePos, OutputSchemaPos Pos
}

// Verify is a task's quality gate, run after the agent exits 0.
type Verify struct {
	Command []string
	Timeout time.Duration // 0 = none
}

// ResultContract names the fields of the agent's JSON result that declare a failure.
// Both are dotted paths ("error.message").
type ResultContract struct {
	FailureField, MessageField string
}

// EffectDecl is a declared side effect with the command that undoes it.
type EffectDecl struct {
	Name       string
	Compensate []string // nil: the effect cannot be compensated
}

// Hooks maps a hook name (HookOnRetry, …) to the commands it runs, in order.
type Hooks map[string][][]string

// Hook names, as a task file spells them. The store's names for the same hooks (which it
// queues on a state change) are the same strings; store's tests check that they agree.
const (
	HookOnRetry        = "on_retry"
	HookOnSuccess      = "on_success"
	HookOnFailed       = "on_failed"
	HookOnBlocked      = "on_blocked"
	HookOnWaitingQuota = "on_waiting_quota"
	HookOnCancelled    = "on_cancelled"

	HookOnTimeout         = "on_timeout"
	HookOnPaused          = "on_paused"
	HookOnSilent          = "on_silent"
	HookOnWaitingApproval = "on_waiting_approval"
	HookOnNoProgress      = "on_no_progress"
)

// HookNames lists the hooks in the spec's order.
var HookNames = []string{HookOnRetry, HookOnSuccess, HookOnFailed, HookOnBlocked, HookOnWaitingQuota, HookOnCancelled,
	HookOnTimeout, HookOnPaused, HookOnSilent, HookOnWaitingApproval, HookOnNoProgress}

// on_failure and side_effects values.
const (
	OnFailureFail  = "fail"
	OnFailureAsk   = "ask"
	OnFailureRetry = "retry"

	SideEffectsNone          = "none"
	SideEffectsNonIdempotent = "non_idempotent"

	// GitRestore puts HEAD, refs, the stash and the index back on every reset to the task's
	// base; the attempt that succeeds keeps what it did.
	GitRestore = "restore"
	// GitIsolate puts them back after every attempt, the successful one included (its commits
	// stay in the attempt's head ref).
	GitIsolate = "isolate"
	// GitAllow keeps every attempt's changes (workflows where agents are meant to commit).
	GitAllow = "allow"

	// RetryCold starts every attempt in a new conversation of the agent CLI; RetryResume lets
	// a retry continue the previous attempt's conversation where the preset's CLI can.
	RetryCold   = "cold"
	RetryResume = "resume"
)

// isolation values (SPEC §4.1).
const (
	IsolationInPlace  = "in-place"
	IsolationWorktree = "worktree"
)

// WorktreeFiles are the ignored files of the working tree an isolated attempt's worktree gets:
// Copy globs are copied (reflinks where the filesystem has them), Link globs symlinked. Globs are
// relative to the working tree root (path.Match syntax per component).
type WorktreeFiles struct {
	Copy []string
	Link []string
}

// RetryModes lists the values `retry_mode` takes.
var RetryModes = []string{RetryCold, RetryResume}

// Preset names. The presets' rules live elsewhere; the loader only checks the name.
const (
	PresetClaude   = "claude"
	PresetCodex    = "codex"
	PresetGemini   = "gemini"
	PresetAider    = "aider"
	PresetOpencode = "opencode"
	PresetGeneric  = "generic"
)

// Presets lists the known preset names.
var Presets = []string{PresetClaude, PresetCodex, PresetGemini, PresetAider, PresetOpencode, PresetGeneric}

// PresetCommands is each preset's documented headless command: an agent that names a preset and
// no command runs it (`mulligan presets` lists them and what each permits). Each edits the tree
// without a question, in the permission mode its CLI's documentation recommends for headless use,
// and streams its progress; the flags are checked against the CLIs pinned in testdata/clis.
var PresetCommands = map[string][]string{
	PresetClaude:   {"claude", "-p", "{{prompt}}", "--output-format", "stream-json", "--verbose", "--permission-mode", "acceptEdits"},
	PresetCodex:    {"codex", "exec", "--json", "--sandbox", "workspace-write", "{{prompt}}"},
	PresetGemini:   {"gemini", "-p", "{{prompt}}", "--output-format", "stream-json", "--approval-mode", "auto_edit"},
	PresetAider:    {"aider", "--message", "{{prompt}}", "--yes-always", "--no-pretty", "--no-auto-commits"},
	PresetOpencode: {"opencode", "run", "--format", "json", "{{prompt}}"},
}

// Defaults the spec gives.
const (
	DefaultMaxConsecutiveFailures = 3
	DefaultMaxSchemaRetries       = 3
	DefaultMaxIdenticalFailures   = 2
)

// Pos is a 1-based position in the task file.
type Pos struct{ Line, Col int }

// AuthoringError is one problem in a task file (or in the flags of an ad-hoc run). Its
// Error is "FILE:LINE:COL: message"; Hint, when set, is a line for the user to act on.
type AuthoringError struct {
	File      string
	Line, Col int
	Msg, Hint string

	err error // the cause, when the problem came from the system (a missing file)
}

func (e *AuthoringError) Error() string {
	switch {
	case e.File == "" && e.Line == 0:
		return e.Msg
	case e.Line == 0:
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

func (e *AuthoringError) Unwrap() error { return e.err }

// AuthoringErrors is every problem found in one task file, sorted by position. The loader
// reports them all at once: fixing a file one error per run is a slow way to write YAML.
type AuthoringErrors []*AuthoringError

func (es AuthoringErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find a single *AuthoringError too.
func (es AuthoringErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// IsAuthoring reports whether err is an authoring error (exit 2, class authoring).
func IsAuthoring(err error) bool {
	var es AuthoringErrors
	var e *AuthoringError
	return errors.As(err, &es) || errors.As(err, &e)
}

// Load reads and parses a task file.
func Load(path string) (*File, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		msg := "cannot read the task file: " + err.Error()
		hint := ""
		if errors.Is(err, os.ErrNotExist) {
			msg = "no such task file"
			hint = "write a mulligan.yaml, pass -f FILE, or run a command ad hoc: mulligan run -- CMD…"
		}
		return nil, AuthoringErrors{{File: path, Msg: msg, Hint: hint, err: err}}
	}
	return Parse(path, content)
}

// idPattern is the syntax of task, agent and effect names: they end up in refs, paths
// and addresses (RUN/TASK@N), so no slashes, blanks or @.
var idPattern = lazyre.New(`^[A-Za-z0-9._-]+$`)

// MaxTaskIDLen is the longest task id (SPEC §1).
const MaxTaskIDLen = 64

// CheckTaskID says what is wrong with id as a task id, with a hint, or returns "" when it is
// valid (SPEC §1): [A-Za-z0-9._-]+, at most 64 characters, and one component of a git ref name
// (refs/mulligan/runs/<run>/<task>/<n>/pre) and of a path (logs/<run>/<task>/<n>.log) that
// stays where it is put: not starting with '.' or '-', no "..", not ending in ".lock", and not
// `base` (the run's base ref).
func CheckTaskID(id string) (problem, hint string) {
	const chars = "use letters, digits, '.', '_' and '-'"
	switch {
	case id == "":
		return "empty task id", "give the task a name, e.g. `id: build`"
	case len(id) > MaxTaskIDLen:
		return fmt.Sprintf("task id is %d characters long; at most %d", len(id), MaxTaskIDLen), "use a shorter name"
	case !idPattern.MatchString(id):
		return fmt.Sprintf("invalid task id %q", id), chars
	case id == "base":
		return "task id `base` is reserved (refs/mulligan/runs/<run>/base is the run's base snapshot)", "rename the task"
	case id[0] == '.':
		return fmt.Sprintf("invalid task id %q: it starts with '.'", id), "start it with a letter or a digit (git refuses a ref component starting with '.', and it would be a hidden file)"
	case id[0] == '-':
		return fmt.Sprintf("invalid task id %q: it starts with '-'", id), "start it with a letter or a digit (it would read as an option)"
	case strings.Contains(id, ".."):
		return fmt.Sprintf("invalid task id %q: it contains \"..\"", id), "git refuses \"..\" in a ref name; use one '.'"
	case strings.HasSuffix(id, ".lock"):
		return fmt.Sprintf("invalid task id %q: it ends in \".lock\"", id), "git refuses a ref component ending in .lock; rename the task"
	}
	return "", ""
}

// Keys of each mapping, in the order the docs list them.
var (
	topKeys            = []string{"version", "agents", "tasks", "hooks", "isolation", "worktree", "parallel", "best_of"}
	agentKeys          = []string{"preset", "command", "env"}
	taskKeys           = []string{"id", "needs", "prompt", "prompt_file", "agent", "on_failure", "retries", "backoff", "timeout", "heartbeat", "deadline", "max_consecutive_failures", "non_retryable", "retry_on", "carry_over", "retry_mode", "verify", "output_schema", "max_schema_retries", "result_contract", "classify", "max_cost_usd", "side_effects", "git", "effects", "hooks", "allow_fail", "needs_approval", "approval_schema", "silence", "max_identical_failures", "isolation", "worktree", "best_of"}
	backoffKeys        = []string{"kind", "initial", "max", "jitter"}
	verifyKeys         = []string{"command", "timeout"}
	resultContractKeys = []string{"failure_field", "message_field"}
	classifyKeys       = []string{"pattern", "class", "retry_after"}
	effectKeys         = []string{"name", "compensate"}
	worktreeKeys       = []string{"copy", "link"}
)

// promptVars are the variables a prompt may use: not {{prompt}}, which would be itself.
var promptVars = []string{VarPromptFile, VarRun, VarTask, VarAttempt, VarIdempotencyKey}

// Parse parses and validates a task file's content; name is used in error positions.
func Parse(name string, content []byte) (*File, error) {
	l := &loader{name: name, src: content}
	f := l.file()
	if len(l.errs) > 0 {
		return nil, l.sorted()
	}
	f.Path = name
	f.Content = content
	sum := sha256.Sum256(content)
	f.Hash = hex.EncodeToString(sum[:])
	return f, nil
}
