package taskfile

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/google/shlex"
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
// no command runs it (`mulligan presets` lists them).
var PresetCommands = map[string][]string{
	PresetClaude:   {"claude", "-p", "{{prompt}}", "--output-format", "json"},
	PresetCodex:    {"codex", "exec", "--json", "{{prompt}}"},
	PresetGemini:   {"gemini", "-p", "{{prompt}}", "-o", "json"},
	PresetAider:    {"aider", "--message", "{{prompt}}", "--yes-always", "--no-pretty"},
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

// loader walks the YAML AST. It is schema-driven rather than decoding into structs: only
// the AST knows where each key and value sits, and every error needs that position.
type loader struct {
	name    string
	src     []byte
	errs    AuthoringErrors
	anchors []anchorDef
	budget  int      // merge expansions left; bounds "billion laughs" built from << merges
	lines   []string // src split into lines, once, for clamping positions
}

type anchorDef struct {
	name   string
	offset int
	value  ast.Node
}

// yamlEntry is one key of a mapping after merges are applied.
type yamlEntry struct {
	key   string
	keyN  ast.Node
	value ast.Node // resolved (anchors, aliases and tags removed); nil for null
}

func (l *loader) sorted() AuthoringErrors {
	slices.SortStableFunc(l.errs, func(a, b *AuthoringError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	// An error inside an anchored value is found once per alias that uses it.
	errs := slices.CompactFunc(l.errs, func(a, b *AuthoringError) bool {
		return a.Line == b.Line && a.Col == b.Col && a.Msg == b.Msg
	})
	// Past a screenful, more errors hide the first ones rather than help.
	if len(errs) > maxReported {
		more := *errs[maxReported]
		more.Msg = fmt.Sprintf("and %d more problems", len(errs)-maxReported)
		more.Hint = ""
		errs = append(errs[:maxReported:maxReported], &more)
	}
	return errs
}

// maxReported bounds the authoring errors reported for one file.
const maxReported = 50

func (l *loader) errAt(p Pos, hint, format string, args ...any) {
	l.errs = append(l.errs, &AuthoringError{File: l.name, Line: p.Line, Col: p.Col, Msg: fmt.Sprintf(format, args...), Hint: hint})
}

func (l *loader) errorf(n ast.Node, hint, format string, args ...any) {
	l.errAt(l.pos(n), hint, format, args...)
}

// pos is where a node starts, clamped into the file: a block mapping's own token is the
// first colon, so its first key stands for it.
func (l *loader) pos(n ast.Node) Pos {
	for range 64 {
		switch m := n.(type) {
		case *ast.MappingNode:
			if !m.IsFlowStyle && len(m.Values) > 0 {
				n = m.Values[0]
				continue
			}
		case *ast.MappingValueNode:
			if m.Key != nil {
				n = m.Key
				continue
			}
		}
		break
	}
	p := Pos{1, 1}
	if n != nil {
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			p = Pos{tk.Position.Line, tk.Position.Column}
		}
	}
	return l.clamp(p)
}

func (l *loader) clamp(p Pos) Pos {
	if l.lines == nil {
		l.lines = yamlLines(string(l.src))
	}
	p.Line = min(max(p.Line, 1), len(l.lines))
	p.Col = min(max(p.Col, 1), len(l.lines[p.Line-1])+1)
	return p
}

// yamlLines splits s at YAML's line breaks (\r\n, \r, \n), which is how the parser
// counts the lines it reports.
func yamlLines(s string) []string {
	var lines []string
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			return append(lines, s)
		}
		lines = append(lines, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
}

func (l *loader) file() *File {
	if !utf8.Valid(l.src) {
		l.errAt(l.offsetPos(firstInvalidUTF8(l.src)), "", "the task file is not valid UTF-8")
		return nil
	}
	// Editors on Windows start files with a byte order mark; YAML allows it, the parser
	// would take it as part of the first key.
	if bytes.HasPrefix(l.src, []byte("\ufeff")) {
		l.src = l.src[3:]
	}
	doc, ok := l.parseYAML()
	if !ok {
		return nil
	}
	if doc == nil {
		l.errAt(Pos{1, 1}, "start with `version: 1` and a `tasks:` list", "the task file is empty")
		return nil
	}
	l.collectAnchors(doc, 0)
	l.budget = 10000

	f := &File{Agents: map[string]*Agent{}}
	top, ok := l.mapping(doc, "the task file")
	if !ok {
		return nil
	}
	fields := l.fields(top, topKeys, "at the top level", true)
	topPos := l.pos(doc)

	if e, ok := fields["version"]; !ok {
		l.errAt(topPos, "", "missing `version: 1`")
	} else if n, isInt := e.value.(*ast.IntegerNode); !isInt {
		l.errorf(e.value, "write `version: 1`", "`version` must be the number 1, not %s", nodeKind(e.value))
	} else if intValue(n) != 1 {
		l.errorf(e.value, "this mulligan reads `version: 1`", "unsupported `version` %s", l.text(e.value))
	} else {
		f.Version = 1
	}

	if e, ok := fields["agents"]; ok {
		if entries, ok := l.mapping(e.value, "`agents`"); ok {
			for _, ae := range entries {
				// A broken agent is still defined: its tasks should not also
				// report "unknown agent" (the File is not returned anyway).
				a := l.agent(ae)
				f.Agents[a.Name] = a
				f.AgentOrder = append(f.AgentOrder, a.Name)
			}
		}
	}
	if e, ok := fields["hooks"]; ok {
		f.Hooks = l.hooks(e)
	}
	f.Isolation = IsolationInPlace
	f.Parallel = DefaultParallel
	if e, ok := fields["parallel"]; ok {
		f.Parallel, _ = l.integer(e, 1)
	}
	if e, ok := fields["isolation"]; ok {
		f.Isolation, _ = l.oneOf(e, []string{IsolationInPlace, IsolationWorktree})
	}
	if e, ok := fields["worktree"]; ok {
		f.Worktree = l.worktreeFiles(e)
	}
	f.BestOf = 1
	if e, ok := fields["best_of"]; ok {
		f.BestOf, _ = l.integer(e, 1)
	}

	var srcs []*taskSrc
	if e, ok := fields["tasks"]; !ok {
		l.errAt(topPos, "add a `tasks:` list with at least one task", "missing `tasks`")
	} else if items, ok := l.sequence(e, "`tasks`", "a list of tasks, each with an `id`"); ok {
		if len(items) == 0 {
			l.errorf(e.keyN, "add at least one task with an `id`", "`tasks` is empty")
		}
		for i, it := range items {
			if s := l.task(i, it); s != nil {
				srcs = append(srcs, s)
				f.Tasks = append(f.Tasks, s.t)
			}
		}
	}
	for _, t := range f.Tasks {
		if t.Isolation == "" {
			t.Isolation = f.Isolation
		}
		if t.Worktree.Copy == nil && t.Worktree.Link == nil {
			t.Worktree = f.Worktree
		}
	}
	for _, s := range srcs {
		l.bestOf(f, s)
	}
	l.crossCheck(f, srcs)
	return f
}

// worktreeFiles reads `worktree: {copy: [GLOB…], link: [GLOB…]}`.
func (l *loader) worktreeFiles(e yamlEntry) WorktreeFiles {
	var w WorktreeFiles
	entries, ok := l.mapping(e.value, "`worktree`")
	if !ok {
		return w
	}
	fs := l.fields(entries, []string{"copy", "link"}, "in `worktree`", false)
	for _, k := range []struct {
		key string
		dst *[]string
	}{{"copy", &w.Copy}, {"link", &w.Link}} {
		ke, has := fs[k.key]
		if !has {
			continue
		}
		globs, nodes, _ := l.strList(ke, true, "a list of paths or globs from the working tree root, like [node_modules, .env]")
		for j, g := range globs {
			if _, err := path.Match(g, ""); err != nil || g == "" || strings.HasPrefix(g, "/") || slices.Contains(strings.Split(g, "/"), "..") {
				l.errorf(nodes[j], "write a path or glob inside the working tree, like node_modules or .env*", "`%s`: %q is not a path or glob inside the working tree", k.key, g)
				continue
			}
			*k.dst = append(*k.dst, g)
		}
	}
	return w
}

// parseYAML returns the single document's body (nil when empty).
func (l *loader) parseYAML() (body ast.Node, ok bool) {
	astFile, err := safeParse(l.src)
	if err != nil {
		msg, p := err.Error(), Pos{1, 1}
		var ye yaml.Error
		if errors.As(err, &ye) {
			msg = ye.GetMessage()
			if tk := ye.GetToken(); tk != nil && tk.Position != nil {
				p = Pos{tk.Position.Line, tk.Position.Column}
			}
		}
		hint := ""
		if strings.Contains(msg, "'\t'") {
			hint = "YAML indents with spaces, not tabs"
		}
		l.errAt(l.clamp(p), hint, "invalid YAML: %s", msg)
		return nil, false
	}
	for _, d := range astFile.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if body != nil {
			l.errorf(d.Body, "put every task in one `tasks:` list", "the task file must hold a single YAML document")
			return nil, false
		}
		body = d.Body
	}
	return body, true
}

// safeParse runs the YAML parser, turning a panic inside it into an error: the loader
// reads files that agents may have written, and a crash is a worse answer than "invalid".
func safeParse(src []byte) (f *ast.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, err = nil, fmt.Errorf("the YAML parser failed: %v", r)
		}
	}()
	f, err = parser.ParseBytes(src, 0)
	if err == nil && f == nil {
		err = errors.New("the YAML parser returned nothing")
	}
	return f, err
}

func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// offsetPos converts a byte offset into a line and a column counted in bytes.
func (l *loader) offsetPos(off int) Pos {
	before := yamlLines(string(l.src[:off]))
	return Pos{len(before), len(before[len(before)-1]) + 1}
}

// collectAnchors records every &anchor in document order, for aliases to find.
func (l *loader) collectAnchors(n ast.Node, depth int) {
	if n == nil || depth > 1000 {
		return
	}
	switch m := n.(type) {
	case *ast.AnchorNode:
		name := tokenValue(m.Name)
		off := 0
		if tk := m.GetToken(); tk != nil && tk.Position != nil {
			off = tk.Position.Offset
		}
		l.anchors = append(l.anchors, anchorDef{name: name, offset: off, value: m.Value})
		l.collectAnchors(m.Value, depth+1)
	case *ast.TagNode:
		l.collectAnchors(m.Value, depth+1)
	case *ast.MappingNode:
		for _, v := range m.Values {
			l.collectAnchors(v, depth+1)
		}
	case *ast.MappingValueNode:
		l.collectAnchors(m.Key, depth+1)
		l.collectAnchors(m.Value, depth+1)
	case *ast.MappingKeyNode:
		l.collectAnchors(m.Value, depth+1)
	case *ast.SequenceNode:
		for _, v := range m.Values {
			l.collectAnchors(v, depth+1)
		}
	}
}

// resolve strips anchors, tags and aliases. An alias takes the nearest anchor of its
// name defined before it, as YAML says; nil stands for null (or an alias in error).
func (l *loader) resolve(n ast.Node) ast.Node {
	for range 64 {
		switch m := n.(type) {
		case nil:
			return nil
		case *ast.NullNode:
			return nil
		case *ast.AnchorNode:
			n = m.Value
		case *ast.TagNode:
			n = m.Value
		case *ast.AliasNode:
			name, off := tokenValue(m.Value), 0
			if tk := m.GetToken(); tk != nil && tk.Position != nil {
				off = tk.Position.Offset
			}
			var target ast.Node
			found := false
			for _, a := range l.anchors {
				if a.name == name && a.offset < off {
					target, found = a.value, true
				}
			}
			if !found {
				l.errorf(m, "define it first with &"+name, "unknown alias *%s", name)
				return nil
			}
			n = target
		default:
			return n
		}
	}
	l.errorf(n, "", "aliases nested too deeply")
	return nil
}

func tokenValue(n ast.Node) string {
	if n == nil {
		return ""
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return ""
}

// nodeKind names a node's type for "must be …, not …" messages.
func nodeKind(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode, *ast.AliasNode, *ast.AnchorNode, *ast.TagNode:
		return "null" // the last three only stay unresolved when they stand for null
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "true/false"
	}
	return "a string"
}

// text is a scalar's text: strings unquoted, other scalars as written.
func (l *loader) text(n ast.Node) string {
	switch m := n.(type) {
	case *ast.StringNode:
		return m.Value
	case *ast.LiteralNode:
		if m.Value != nil {
			return m.Value.Value
		}
		return ""
	case nil:
		return ""
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return ""
}

func isSequence(n ast.Node) bool {
	_, ok := n.(*ast.SequenceNode)
	return ok
}

func isScalar(n ast.Node) bool {
	switch n.(type) {
	case *ast.StringNode, *ast.LiteralNode, *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return true
	}
	return false
}

// mapping returns a mapping's entries with << merges applied (explicit keys win, then
// earlier merge sources). what names the value in errors.
func (l *loader) mapping(n ast.Node, what string) ([]yamlEntry, bool) {
	orig := n
	n = l.resolve(n)
	var values []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		values = m.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{m}
	case nil:
		l.errorf(orig, "", "%s must be a mapping (key: value lines), not null", what)
		return nil, false
	default:
		l.errorf(n, "", "%s must be a mapping (key: value lines), not %s", what, nodeKind(n))
		return nil, false
	}
	var explicit, merged []yamlEntry
	for _, mv := range values {
		if _, isMerge := mv.Key.(*ast.MergeKeyNode); isMerge {
			merged = append(merged, l.merge(mv.Value, what)...)
			continue
		}
		k := l.resolve(mv.Key)
		if mk, ok := k.(*ast.MappingKeyNode); ok {
			l.errorf(mk, "", "complex mapping keys (?) are not supported")
			continue
		}
		if !isScalar(k) {
			l.errorf(mv, "", "a key in %s must be a plain name", what)
			continue
		}
		explicit = append(explicit, yamlEntry{key: l.text(k), keyN: mv.Key, value: l.resolve(mv.Value)})
	}
	out := explicit
	for _, e := range merged {
		if !slices.ContainsFunc(out, func(x yamlEntry) bool { return x.key == e.key }) {
			out = append(out, e)
		}
	}
	return out, true
}

func (l *loader) merge(v ast.Node, what string) []yamlEntry {
	l.budget--
	if l.budget < 0 {
		if l.budget == -1 {
			l.errorf(v, "", "too many << merges")
		}
		return nil
	}
	v = l.resolve(v)
	if seq, ok := v.(*ast.SequenceNode); ok {
		var out []yamlEntry
		for _, s := range seq.Values {
			out = append(out, l.merge(s, what)...)
		}
		return out
	}
	entries, _ := l.mapping(v, "a << merge in "+what)
	return entries
}

// fields indexes entries by key, reporting unknown keys with a suggestion. Null values
// count as absent, so `needs:` with nothing after it means no needs. allowExt lets the
// top level carry x-… keys, the usual home of anchors.
func (l *loader) fields(entries []yamlEntry, known []string, where string, allowExt bool) map[string]yamlEntry {
	out := make(map[string]yamlEntry, len(entries))
	for _, e := range entries {
		if !slices.Contains(known, e.key) {
			if allowExt && strings.HasPrefix(e.key, "x-") {
				continue
			}
			hint := ""
			if s := suggest(e.key, known); s != "" {
				hint = "did you mean `" + s + "`?"
			} else {
				hint = "known keys: " + strings.Join(known, ", ")
			}
			l.errorf(e.keyN, hint, "unknown key `%s` %s", e.key, where)
			continue
		}
		if e.value == nil {
			continue
		}
		out[e.key] = e
	}
	return out
}

// str reads a scalar as text. Numbers and booleans are accepted as written, since a
// command line or an env value is text whatever YAML thinks ("8000", "true").
func (l *loader) str(e yamlEntry) (string, bool) {
	if !isScalar(e.value) {
		l.errorf(e.value, "", "`%s` must be a string, not %s", e.key, nodeKind(e.value))
		return "", false
	}
	return l.text(e.value), true
}

func (l *loader) nonEmptyStr(e yamlEntry) (string, bool) {
	s, ok := l.str(e)
	if ok && strings.TrimSpace(s) == "" {
		l.errorf(e.value, "", "`%s` is empty", e.key)
		return "", false
	}
	return s, ok
}

// sequence returns a list's items (resolved). hint says what the list should look like.
func (l *loader) sequence(e yamlEntry, what, shape string) ([]ast.Node, bool) {
	seq, ok := e.value.(*ast.SequenceNode)
	if !ok {
		l.errorf(e.value, "write it as "+shape, "%s must be a list, not %s", what, nodeKind(e.value))
		return nil, false
	}
	items := make([]ast.Node, len(seq.Values))
	for i, v := range seq.Values {
		// A null item keeps its unresolved node, for its position.
		if items[i] = l.resolve(v); items[i] == nil {
			items[i] = v
		}
	}
	return items, true
}

// strList reads a list of scalars; single allows one bare string for a one-item list.
func (l *loader) strList(e yamlEntry, single bool, shape string) ([]string, []ast.Node, bool) {
	if single && isScalar(e.value) {
		s, ok := l.nonEmptyStr(e)
		return []string{s}, []ast.Node{e.value}, ok
	}
	if single && !isSequence(e.value) {
		l.errorf(e.value, "write it as "+shape, "`%s` must be a name or a list of names, not %s", e.key, nodeKind(e.value))
		return nil, nil, false
	}
	items, ok := l.sequence(e, "`"+e.key+"`", shape)
	if !ok {
		return nil, nil, false
	}
	out := make([]string, 0, len(items))
	nodes := make([]ast.Node, 0, len(items)) // kept parallel to out
	for _, it := range items {
		if !isScalar(it) {
			l.errorf(it, "write it as "+shape, "items of `%s` must be strings, not %s", e.key, nodeKind(it))
			ok = false
			continue
		}
		out = append(out, l.text(it))
		nodes = append(nodes, it)
	}
	return out, nodes, ok
}

// command reads an argv list and checks its templates.
func (l *loader) command(e yamlEntry, shape string) ([]string, bool) {
	return l.commandWith(e, shape, TemplateVars)
}

// commandWith reads an argv list whose templates may use the variables allowed.
func (l *loader) commandWith(e yamlEntry, shape string, allowed []string) ([]string, bool) {
	argv, nodes, ok := l.strList(e, false, shape)
	if !ok {
		return nil, false
	}
	if len(argv) == 0 {
		l.errorf(e.value, "write it as "+shape, "`%s` is empty", e.key)
		return nil, false
	}
	if argv[0] == "" {
		l.errorf(nodes[0], "", "the program name in `%s` is empty", e.key)
		ok = false
	}
	for i, a := range argv {
		ok = l.template(nodes[i], a, allowed) && ok
	}
	return argv, ok
}

func (l *loader) template(n ast.Node, s string, allowed []string) bool {
	if te := checkTemplate(s, allowed); te != nil {
		l.errorf(n, te.hint(), "%s", te.Error())
		return false
	}
	return true
}

func (l *loader) integer(e yamlEntry, minimum int) (int, bool) {
	var v int64
	switch n := e.value.(type) {
	case *ast.IntegerNode:
		v = intValue(n)
	case *ast.FloatNode:
		l.errorf(e.value, "", "`%s` must be a whole number, not %s", e.key, l.text(e.value))
		return 0, false
	case *ast.InfinityNode:
		l.errorf(e.value, "give a number", "`%s` cannot be infinite", e.key)
		return 0, false
	default:
		l.errorf(e.value, "", "`%s` must be a whole number, not %s", e.key, nodeKind(e.value))
		return 0, false
	}
	if v < int64(minimum) {
		l.errorf(e.value, "", "`%s` must be at least %d", e.key, minimum)
		return 0, false
	}
	if v > math.MaxInt32 {
		l.errorf(e.value, "", "`%s` is too large", e.key)
		return 0, false
	}
	return int(v), true
}

// intValue is an integer node's value, saturated at MaxInt64 (the parser gives uint64
// for large positive numbers).
func intValue(n *ast.IntegerNode) int64 {
	switch x := n.Value.(type) {
	case int64:
		return x
	case uint64:
		if x > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(x)
	case int:
		return int64(x)
	}
	return 0
}

func (l *loader) boolean(e yamlEntry) (bool, bool) {
	b, ok := e.value.(*ast.BoolNode)
	if !ok {
		l.errorf(e.value, "", "`%s` must be true or false, not %s", e.key, nodeKind(e.value))
		return false, false
	}
	return b.Value, true
}

func (l *loader) duration(e yamlEntry) (time.Duration, bool) {
	if !isScalar(e.value) {
		l.errorf(e.value, "", "`%s` must be a duration like 90s, 20m, 2h or 1d, not %s", e.key, nodeKind(e.value))
		return 0, false
	}
	d, err := ParseDuration(l.text(e.value))
	if err != nil {
		l.errorf(e.value, "write durations like 90s, 20m, 2h or 1d", "`%s`: %s", e.key, err)
		return 0, false
	}
	return d, true
}

// oneOf reads a string that must be one of values.
func (l *loader) oneOf(e yamlEntry, values []string) (string, bool) {
	s, ok := l.str(e)
	if !ok {
		return "", false
	}
	if !slices.Contains(values, s) {
		hint := "use one of: " + strings.Join(values, ", ")
		if g := suggest(s, values); g != "" {
			hint = "did you mean `" + g + "`?"
		}
		l.errorf(e.value, hint, "unknown `%s` value %q", e.key, s)
		return "", false
	}
	return s, true
}

func (l *loader) classList(e yamlEntry) ([]Class, []ast.Node, bool) {
	names, nodes, ok := l.strList(e, false, "a list of failure classes, like [agent_exit]")
	if !ok {
		return nil, nil, false
	}
	var out []Class
	for i, s := range names {
		c, ok := l.class(nodes[i], s)
		if ok {
			out = append(out, c)
		}
	}
	return out, nodes, true
}

func (l *loader) class(n ast.Node, s string) (Class, bool) {
	c, err := ParseClass(s)
	if err != nil {
		names := make([]string, len(Classes))
		for i, c := range Classes {
			names[i] = string(c)
		}
		hint := "classes: " + strings.Join(names, ", ")
		if g := suggest(s, names); g != "" {
			hint = "did you mean `" + g + "`?"
		}
		l.errorf(n, hint, "%s", err)
		return "", false
	}
	return c, true
}

func (l *loader) agent(ae yamlEntry) *Agent {
	a := &Agent{Name: ae.key, Preset: PresetGeneric, Pos: l.pos(ae.keyN)}
	if !idPattern.MatchString(a.Name) {
		l.errorf(ae.keyN, "use letters, digits, '.', '_' and '-'", "invalid agent name %q", a.Name)
	}
	if ae.value == nil {
		l.errorf(ae.keyN, `add command: [PROGRAM, ARGS…, "{{prompt}}"]`, "agent `%s` has no `command`", a.Name)
		return a
	}
	entries, isMap := l.mapping(ae.value, "agent `"+a.Name+"`")
	if !isMap {
		return a
	}
	fs := l.fields(entries, agentKeys, "in agent `"+a.Name+"`", false)
	if e, has := fs["preset"]; has {
		a.Preset, _ = l.oneOf(e, Presets)
	}
	if e, has := fs["command"]; has {
		a.Command, _ = l.command(e, `[PROGRAM, ARGS…, "{{prompt}}"]`)
	} else if cmd, ok := PresetCommands[a.Preset]; ok {
		// A preset implies its documented headless command (`mulligan presets`).
		a.Command = append([]string{}, cmd...)
	} else {
		l.errorf(ae.keyN, `add command: [PROGRAM, ARGS…, "{{prompt}}"], or a preset (mulligan presets)`, "agent `%s` has no `command`", a.Name)
	}
	if e, has := fs["env"]; has {
		if envs, isMap := l.mapping(e.value, "`env`"); isMap {
			a.Env = map[string]string{}
			for _, ee := range envs {
				if !envNamePattern.MatchString(ee.key) {
					l.errorf(ee.keyN, "", "invalid environment variable name %q", ee.key)
					continue
				}
				if ee.value == nil {
					a.Env[ee.key] = ""
					continue
				}
				a.Env[ee.key], _ = l.str(ee)
			}
		}
	}
	return a
}

var envNamePattern = lazyre.New(`^[A-Za-z_][A-Za-z0-9_]*$`)

// taskSrc keeps the positions the cross-file checks need.
type taskSrc struct {
	t        *Task
	idPos    Pos
	needsPos []Pos
	agentPos []Pos
	// bestOf is the task's own `best_of` entry (nil: the top level's); inPlace says the task
	// itself asked for `isolation: in-place`, which a race cannot keep.
	bestOf  *yamlEntry
	inPlace bool
}

func (l *loader) task(i int, n ast.Node) *taskSrc {
	entries, ok := l.mapping(n, fmt.Sprintf("task %d", i+1))
	if !ok {
		return nil
	}
	t := &Task{
		OnFailure:              OnFailureFail,
		Backoff:                DefaultBackoff(),
		MaxConsecutiveFailures: DefaultMaxConsecutiveFailures,
		MaxSchemaRetries:       DefaultMaxSchemaRetries,
		MaxIdenticalFailures:   DefaultMaxIdenticalFailures,
		SideEffects:            SideEffectsNone,
		Git:                    GitRestore,
		RetryMode:              RetryCold,
		Pos:                    l.pos(n),
	}
	s := &taskSrc{t: t, idPos: t.Pos}
	label := fmt.Sprintf("task %d", i+1)
	// The id first, so the other messages can name the task.
	for _, e := range entries {
		if e.key == "id" && e.value != nil {
			if id, good := l.nonEmptyStr(e); good {
				s.idPos = l.pos(e.value)
				if problem, hint := CheckTaskID(id); problem != "" {
					l.errorf(e.value, hint, "%s", problem)
				} else {
					t.ID = id
					label = "task `" + id + "`"
				}
			}
		}
	}
	fs := l.fields(entries, taskKeys, "in "+label, false)
	if _, has := fs["id"]; !has {
		l.errAt(t.Pos, "add `id: NAME`", "%s has no `id`", label)
	}

	if e, has := fs["needs"]; has {
		needs, nodes, _ := l.strList(e, false, "a list of task ids, like [build]")
		for j, id := range needs {
			t.Needs = append(t.Needs, id)
			s.needsPos = append(s.needsPos, l.pos(nodes[j]))
		}
	}

	l.taskPrompt(t, fs, label)
	l.taskAgent(s, fs, label)
	l.policy(t, fs, label)
	l.taskLimits(t, fs)
	l.taskChecks(t, fs)
	if e, has := fs["best_of"]; has {
		t.BestOf, _ = l.integer(e, 1)
		s.bestOf = &e
	}
	s.inPlace = t.Isolation == IsolationInPlace // the task's own key: the top level's comes later
	return s
}

// bestOf gives s's task the top level's best_of when it sets none, and a race its worktrees:
// each lane runs in one of its own, so a task that asks to run in place cannot race.
func (l *loader) bestOf(f *File, s *taskSrc) {
	t := s.t
	if t.BestOf == 0 {
		t.BestOf = max(f.BestOf, 1)
	}
	if t.BestOf < 2 {
		return
	}
	if s.inPlace {
		if s.bestOf != nil {
			l.errorf(s.bestOf.keyN, "remove `isolation: in-place`: each lane runs in a worktree of its own",
				"task `%s` races %d lanes (`best_of`) but asks to run in place", t.ID, t.BestOf)
		} else {
			l.errAt(t.Pos, "remove `isolation: in-place`, or set `best_of: 1` in the task",
				"task `%s` races %d lanes (the top level's `best_of`) but asks to run in place", t.ID, t.BestOf)
		}
		return
	}
	t.Isolation = IsolationWorktree
}

// taskPrompt reads `prompt` or `prompt_file` (exactly one).
func (l *loader) taskPrompt(t *Task, fs map[string]yamlEntry, label string) {
	prompt, hasPrompt := fs["prompt"]
	promptFile, hasPromptFile := fs["prompt_file"]
	switch {
	case hasPrompt && hasPromptFile:
		l.errorf(promptFile.keyN, "keep one of them", "%s has both `prompt` and `prompt_file`", label)
	case hasPrompt:
		// An empty prompt is allowed when written out: some agents (a test command) need none.
		if p, good := l.str(prompt); good {
			t.Prompt = p
			l.template(prompt.value, p, promptVars)
		}
	case hasPromptFile:
		if p, good := l.nonEmptyStr(promptFile); good {
			t.PromptFile = p
			t.PromptFilePos = l.pos(promptFile.value)
		}
	default:
		l.errAt(t.Pos, "add `prompt: TEXT` or `prompt_file: PATH` (prompt: \"\" for none)", "%s has no `prompt` or `prompt_file`", label)
	}
}

// taskAgent reads `agent`: one name or a failover chain.
func (l *loader) taskAgent(s *taskSrc, fs map[string]yamlEntry, label string) {
	t := s.t
	if e, has := fs["agent"]; has {
		names, nodes, good := l.strList(e, true, "an agent name, or a failover chain like [fast, strong]")
		if good && len(names) == 0 {
			l.errorf(e.value, "name an agent from `agents:`", "`agent` is empty")
		}
		for j, a := range names {
			t.Agents = append(t.Agents, a)
			s.agentPos = append(s.agentPos, l.pos(nodes[j]))
		}
	} else {
		l.errAt(t.Pos, "add `agent: NAME` naming one of `agents:`", "%s has no `agent`", label)
	}
}

// taskLimits reads the attempt's limits and the retry policy's other keys.
func (l *loader) taskLimits(t *Task, fs map[string]yamlEntry) {
	if e, has := fs["timeout"]; has {
		t.Timeout, _ = l.duration(e)
	}
	if e, has := fs["heartbeat"]; has {
		t.Heartbeat, _ = l.duration(e)
	}
	if e, has := fs["deadline"]; has {
		t.Deadline, _ = l.duration(e)
		if t.Timeout > t.Deadline && t.Deadline > 0 {
			// One attempt could never use its timeout: the deadline bounds all attempts together.
			l.errorf(fs["timeout"].value, fmt.Sprintf("make `timeout` at most the deadline (%s), or raise `deadline`", t.Deadline),
				"`timeout` (%s) is longer than `deadline` (%s)", t.Timeout, t.Deadline)
		}
	}
	if e, has := fs["max_consecutive_failures"]; has {
		t.MaxConsecutiveFailures, _ = l.integer(e, 1)
	}
	if e, has := fs["non_retryable"]; has {
		t.NonRetryable, _, _ = l.classList(e)
	}
	if e, has := fs["retry_on"]; has {
		classes, nodes, _ := l.classList(e)
		for j, c := range classes {
			if !slices.Contains(widenable, c) {
				hint := "only quality_rejection, payload_declared and schema_invalid can be added"
				if slices.Contains(retriedByDefault, c) {
					hint = "`" + string(c) + "` is retried by default; list it in `non_retryable` to stop that"
				}
				l.errorf(nodes[j], hint, "`retry_on` cannot add `%s`", c)
			}
		}
		t.RetryOn = classes
	}
	if e, has := fs["carry_over"]; has {
		t.CarryOver, _ = l.boolean(e)
	}
	if e, has := fs["retry_mode"]; has {
		t.RetryMode, _ = l.oneOf(e, RetryModes)
	}
}

// taskChecks reads what judges and surrounds an attempt: verify, output checks, classify rules,
// spend, side effects, git, effects, hooks and approval.
func (l *loader) taskChecks(t *Task, fs map[string]yamlEntry) {
	if e, has := fs["verify"]; has {
		t.Verify = l.verify(e)
	}
	if e, has := fs["output_schema"]; has {
		t.OutputSchema, _ = l.nonEmptyStr(e)
		t.OutputSchemaPos = l.pos(e.value)
	}
	if e, has := fs["max_schema_retries"]; has {
		t.MaxSchemaRetries, _ = l.integer(e, 0)
	}
	if e, has := fs["result_contract"]; has {
		t.ResultContract = l.resultContract(e)
	}
	if e, has := fs["classify"]; has {
		t.Classify = l.classify(e)
	}
	if e, has := fs["max_cost_usd"]; has {
		t.MaxCostUSD, _ = l.cost(e)
	}
	if e, has := fs["side_effects"]; has {
		t.SideEffects, _ = l.oneOf(e, []string{SideEffectsNone, SideEffectsNonIdempotent})
	}
	if e, has := fs["git"]; has {
		t.Git, _ = l.oneOf(e, []string{GitRestore, GitIsolate, GitAllow})
	}
	if e, has := fs["effects"]; has {
		t.Effects = l.effects(e)
	}
	if e, has := fs["hooks"]; has {
		t.Hooks = l.hooks(e)
	}
	if e, has := fs["allow_fail"]; has {
		t.AllowFail, _ = l.boolean(e)
	}
	if e, has := fs["needs_approval"]; has {
		t.NeedsApproval, _ = l.boolean(e)
	}
	if e, has := fs["approval_schema"]; has {
		t.ApprovalSchema, _ = l.nonEmptyStr(e)
		if !t.NeedsApproval {
			l.errorf(e.keyN, "add `needs_approval: true`, or remove `approval_schema`", "`approval_schema` without `needs_approval: true` checks nothing")
		}
	}
	if e, has := fs["silence"]; has {
		t.Silence, _ = l.duration(e)
	}
	if e, has := fs["max_identical_failures"]; has {
		t.MaxIdenticalFailures, _ = l.integer(e, 1)
	}
	if e, has := fs["isolation"]; has {
		t.Isolation, _ = l.oneOf(e, []string{IsolationInPlace, IsolationWorktree})
	}
	if e, has := fs["worktree"]; has {
		t.Worktree = l.worktreeFiles(e)
	}
}

// retryForever are the words people try for "retry without end"; the spec has no such
// setting on purpose, and the error should say so rather than "must be a number".
var retryForever = []string{"inf", "infinite", "infinity", "forever", "unlimited", "always", "-1"}

// policy reads on_failure, retries and backoff together, since each constrains the others.
func (l *loader) policy(t *Task, fs map[string]yamlEntry, label string) {
	onFailure, hasOnFailure := fs["on_failure"]
	onFailureOK := true
	if hasOnFailure {
		var v string
		if v, onFailureOK = l.oneOf(onFailure, []string{OnFailureFail, OnFailureAsk, OnFailureRetry}); onFailureOK {
			t.OnFailure = v
		}
	}
	retries, hasRetries := fs["retries"]
	if hasRetries {
		if isScalar(retries.value) && slices.Contains(retryForever, strings.ToLower(strings.TrimPrefix(l.text(retries.value), "."))) {
			l.errorf(retries.value, "give the number of retries, like `retries: 3`", "`retries` cannot be unlimited")
		} else if n, ok := l.integer(retries, 0); ok {
			t.Retries = n
		}
	}
	switch {
	case !onFailureOK:
	case hasRetries && !hasOnFailure:
		// `retries: 3` alone can only mean "retry three times".
		t.OnFailure = OnFailureRetry
	case hasRetries && t.OnFailure != OnFailureRetry:
		l.errorf(retries.keyN, "set `on_failure: retry`, or remove `retries`", "`retries` only applies with `on_failure: retry`")
	case !hasRetries && t.OnFailure == OnFailureRetry:
		l.errorf(onFailure.value, "there is no unlimited default: add `retries: 3` (or any number)", "%s: `on_failure: retry` needs `retries`", label)
	}
	if e, has := fs["backoff"]; has {
		if b, ok := l.backoff(e); ok {
			t.Backoff = b
		}
	}
}

func (l *loader) backoff(e yamlEntry) (Backoff, bool) {
	b := DefaultBackoff()
	entries, ok := l.mapping(e.value, "`backoff`")
	if !ok {
		return b, false
	}
	fs := l.fields(entries, backoffKeys, "in `backoff`", false)
	if k, has := fs["kind"]; has {
		v, good := l.oneOf(k, []string{BackoffFixed, BackoffLinear, BackoffExponential})
		ok = ok && good
		b.Kind = v
		if v == BackoffFixed {
			b.Jitter = JitterNone // a fixed delay is fixed unless a jitter is given
		}
	}
	if j, has := fs["jitter"]; has {
		v, good := l.oneOf(j, []string{JitterFull, JitterEqual, JitterNone})
		ok = ok && good
		b.Jitter = v
	}
	if i, has := fs["initial"]; has {
		d, good := l.duration(i)
		ok = ok && good
		b.Initial = d
	}
	m, maxSet := fs["max"]
	if maxSet {
		d, good := l.duration(m)
		ok = ok && good
		b.Max = d
	}
	if !ok {
		return b, false
	}
	if err := finishBackoff(&b, maxSet); err != nil {
		l.errorf(m.value, "", "%s", err)
		return b, false
	}
	return b, true
}

func (l *loader) verify(e yamlEntry) *Verify {
	entries, ok := l.mapping(e.value, "`verify`")
	if !ok {
		return nil
	}
	v := &Verify{}
	fs := l.fields(entries, verifyKeys, "in `verify`", false)
	if c, has := fs["command"]; has {
		v.Command, _ = l.command(c, "[go, test, ./...]")
	} else {
		l.errorf(e.keyN, "add command: [go, test, ./...]", "`verify` has no `command`")
	}
	if t, has := fs["timeout"]; has {
		v.Timeout, _ = l.duration(t)
	}
	return v
}

func (l *loader) resultContract(e yamlEntry) *ResultContract {
	entries, ok := l.mapping(e.value, "`result_contract`")
	if !ok {
		return nil
	}
	rc := &ResultContract{}
	fs := l.fields(entries, resultContractKeys, "in `result_contract`", false)
	if f, has := fs["failure_field"]; has {
		rc.FailureField, _ = l.nonEmptyStr(f)
	} else {
		l.errorf(e.keyN, "add failure_field: FIELD (a dotted path like error or result.failed)", "`result_contract` has no `failure_field`")
	}
	if m, has := fs["message_field"]; has {
		rc.MessageField, _ = l.nonEmptyStr(m)
	}
	return rc
}

func (l *loader) classify(e yamlEntry) []ClassifyRule {
	items, ok := l.sequence(e, "`classify`", `a list like [{pattern: "ECONNRESET", class: transport}]`)
	if !ok {
		return nil
	}
	var rules []ClassifyRule
	for i, it := range items {
		entries, ok := l.mapping(it, fmt.Sprintf("classify rule %d", i+1))
		if !ok {
			continue
		}
		fs := l.fields(entries, classifyKeys, fmt.Sprintf("in classify rule %d", i+1), false)
		var r ClassifyRule
		good := true
		if p, has := fs["pattern"]; has {
			if s, ok := l.nonEmptyStr(p); ok {
				re, err := regexp.Compile(s)
				if err != nil {
					l.errorf(p.value, "patterns use Go's RE2 syntax; quote special characters with \\", "invalid classify pattern: %s", err)
					good = false
				}
				r.Pattern, r.Re = s, re
			} else {
				good = false
			}
		} else {
			l.errAt(l.pos(it), "add pattern: REGEXP", "classify rule %d has no `pattern`", i+1)
			good = false
		}
		if c, has := fs["class"]; has {
			if s, ok := l.str(c); ok {
				if cl, ok := l.class(c.value, s); ok {
					if !slices.Contains(userClassifiable, cl) {
						names := make([]string, len(userClassifiable))
						for i, c := range userClassifiable {
							names[i] = string(c)
						}
						l.errorf(c.value, "a rule can assign: "+strings.Join(names, ", "), "class `%s` cannot be assigned by a classify rule", cl)
						good = false
					}
					r.Class = cl
				} else {
					good = false
				}
			} else {
				good = false
			}
		} else {
			l.errAt(l.pos(it), "add class: CLASS, like class: transport", "classify rule %d has no `class`", i+1)
			good = false
		}
		if ra, has := fs["retry_after"]; has {
			d, ok := l.duration(ra)
			good = good && ok
			r.RetryAfter = d
		}
		if good {
			rules = append(rules, r)
		}
	}
	return rules
}

func (l *loader) cost(e yamlEntry) (float64, bool) {
	var v float64
	switch n := e.value.(type) {
	case *ast.IntegerNode, *ast.FloatNode:
		f, err := strconv.ParseFloat(strings.ReplaceAll(l.text(n), "_", ""), 64)
		if err != nil {
			if fn, ok := n.(*ast.FloatNode); ok {
				f = fn.Value
			} else if in, ok := n.(*ast.IntegerNode); ok {
				switch x := in.Value.(type) {
				case int64:
					f = float64(x)
				case uint64:
					f = float64(x)
				}
			}
		}
		v = f
	default:
		l.errorf(e.value, "", "`%s` must be a number of US dollars, like 5.00, not %s", e.key, nodeKind(e.value))
		return 0, false
	}
	if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		l.errorf(e.value, "", "`%s` must be 0 or more", e.key)
		return 0, false
	}
	return v, true
}

func (l *loader) effects(e yamlEntry) []EffectDecl {
	items, ok := l.sequence(e, "`effects`", "a list like [{name: push-branch, compensate: [git, push, origin, --delete, BRANCH]}]")
	if !ok {
		return nil
	}
	var out []EffectDecl
	seen := map[string]bool{}
	for i, it := range items {
		entries, ok := l.mapping(it, fmt.Sprintf("effect %d", i+1))
		if !ok {
			continue
		}
		fs := l.fields(entries, effectKeys, fmt.Sprintf("in effect %d", i+1), false)
		var d EffectDecl
		good := true
		if n, has := fs["name"]; has {
			name, ok := l.nonEmptyStr(n)
			switch {
			case !ok:
				good = false
			case !idPattern.MatchString(name):
				l.errorf(n.value, "use letters, digits, '.', '_' and '-'", "invalid effect name %q", name)
				good = false
			case seen[name]:
				l.errorf(n.value, "", "effect `%s` is declared twice", name)
				good = false
			}
			seen[name] = true
			d.Name = name
		} else {
			l.errAt(l.pos(it), "add name: NAME", "effect %d has no `name`", i+1)
			good = false
		}
		if c, has := fs["compensate"]; has {
			argv, ok := l.command(c, "[PROGRAM, ARGS…]")
			good = good && ok
			d.Compensate = argv
		}
		if good {
			out = append(out, d)
		}
	}
	return out
}

func (l *loader) hooks(e yamlEntry) Hooks {
	entries, ok := l.mapping(e.value, "`hooks`")
	if !ok {
		return nil
	}
	fs := l.fields(entries, HookNames, "in `hooks`", false)
	h := Hooks{}
	shape := "a list of commands, like [[notify-send, \"{{task}} failed\"]]"
	for _, name := range HookNames {
		he, has := fs[name]
		if !has {
			continue
		}
		items, ok := l.sequence(he, "`"+name+"`", shape)
		if !ok {
			continue
		}
		for _, it := range items {
			if isScalar(it) {
				l.errorf(it, "write it as "+shape, "`%s` must be a list of commands, each a list", name)
				break
			}
			argv, ok := l.commandWith(yamlEntry{key: name, keyN: he.keyN, value: it}, "[PROGRAM, ARGS…]", HookVars)
			if ok {
				h[name] = append(h[name], argv)
			}
		}
	}
	return h
}

// crossCheck validates what spans tasks and agents: unique ids, known agents, known needs,
// no cycles.
func (l *loader) crossCheck(f *File, srcs []*taskSrc) {
	byID := map[string]int{}
	for i, s := range srcs {
		id := s.t.ID
		if id == "" {
			continue
		}
		if j, dup := byID[id]; dup {
			first := srcs[j].idPos
			l.errAt(s.idPos, "", "duplicate task id `%s` (first at %d:%d)", id, first.Line, first.Col)
			continue
		}
		byID[id] = i
	}
	agentNames := f.AgentOrder
	for _, s := range srcs {
		for j, a := range s.t.Agents {
			if _, ok := f.Agents[a]; ok {
				continue
			}
			hint := "define it under `agents:`"
			if len(agentNames) > 0 {
				hint = "defined agents: " + strings.Join(agentNames, ", ")
				if g := suggest(a, agentNames); g != "" {
					hint = "did you mean `" + g + "`? " + hint
				}
			}
			l.errAt(s.agentPos[j], hint, "unknown agent `%s`", a)
		}
		for j, n := range s.t.Needs {
			if _, ok := byID[n]; ok {
				continue
			}
			ids := slices.Collect(func(yield func(string) bool) {
				for _, s := range srcs {
					if s.t.ID != "" && !yield(s.t.ID) {
						return
					}
				}
			})
			hint := ""
			if g := suggest(n, ids); g != "" {
				hint = "did you mean `" + g + "`?"
			}
			l.errAt(s.needsPos[j], hint, "`needs` names unknown task `%s`", n)
		}
	}
	l.cycles(srcs, byID)
}

// cycles reports each cycle in `needs` once, at the edge that closes it, with its path.
func (l *loader) cycles(srcs []*taskSrc, byID map[string]int) {
	const (
		unseen = iota
		active
		done
	)
	state := make([]int, len(srcs))
	var stack []int
	var visit func(i int)
	visit = func(i int) {
		state[i] = active
		stack = append(stack, i)
		for j, n := range srcs[i].t.Needs {
			k, ok := byID[n]
			if !ok {
				continue
			}
			switch state[k] {
			case unseen:
				visit(k)
			case active:
				from := slices.Index(stack, k)
				var path []string
				for _, x := range stack[from:] {
					path = append(path, srcs[x].t.ID)
				}
				path = append(path, srcs[k].t.ID)
				l.errAt(srcs[i].needsPos[j], "", "`needs` forms a cycle: %s", strings.Join(path, " -> "))
			}
		}
		stack = stack[:len(stack)-1]
		state[i] = done
	}
	for i, s := range srcs {
		if state[i] == unseen && s.t.ID != "" {
			if byID[s.t.ID] == i {
				visit(i)
			}
		}
	}
}

// suggest returns the candidate closest to s: within two edits, or sharing a prefix of
// three characters or more. Empty when nothing is close enough to be a likely typo.
func suggest(s string, candidates []string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		d := levenshtein(s, c)
		if d < bestD && d < max(len(c), len(s)) {
			best, bestD = c, d
		}
	}
	if best != "" {
		return best
	}
	for _, c := range candidates {
		short, long := s, c
		if len(short) > len(long) {
			short, long = long, short
		}
		if len(short) >= 3 && strings.HasPrefix(long, short) {
			return c
		}
	}
	return ""
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// AdHocOptions are the flags of `mulligan run [flags] -- CMD…`.
type AdHocOptions struct {
	Command                      []string
	Prompt, PromptFile           string
	OnFailure                    string
	Backoff                      string // KIND[:INITIAL[:MAX[:JITTER]]], like "exponential:1s:5m" or "fixed:2s"
	Retries                      *int
	Timeout, Heartbeat, Deadline string
	Verify                       string // split like a shell would (github.com/google/shlex), never run by one
	Preset                       string
	Fallback                     string // a second agent, split like Verify
}

// AdHoc builds the one-task file of an ad-hoc run: task `main` on agent `main` (and
// `fallback`, second in the chain, with --fallback). --preset applies to both agents.
//
// The flags are checked first so that errors name them; the task is then written out as
// YAML and read back with Parse, so Content is a task file like any other: the run stores
// it, and resume reads it with Parse(f.Path, f.Content) like any stored definition. Unlike
// a file task, an ad-hoc task needs no prompt (`mulligan run --retries 3 -- go test ./...`),
// unless its command asks for {{prompt}} or {{prompt_file}}.
func AdHoc(o AdHocOptions) (*File, error) {
	c := &adHocCheck{o: o}
	c.check()
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	f, err := Parse("", []byte(c.yaml()))
	if err != nil {
		// The flags were all checked: this is our bug, not the user's.
		return nil, fmt.Errorf("internal error: the ad-hoc task does not read back: %v", err)
	}
	return f, nil
}

// adHocCheck checks the flags of an ad-hoc run, collecting every authoring error, and keeps what
// they give for the task file it writes.
type adHocCheck struct {
	o    AdHocOptions
	errs AuthoringErrors

	fallback, verify []string
	preset           string
	onFailure        string
	backoff          *Backoff
}

func (c *adHocCheck) fail(hint, format string, args ...any) {
	c.errs = append(c.errs, &AuthoringError{Msg: fmt.Sprintf(format, args...), Hint: hint})
}

func (c *adHocCheck) check() {
	o := c.o
	if len(o.Command) == 0 {
		c.fail(`put the agent command after --, like: mulligan run --prompt "fix it" -- claude -p "{{prompt}}"`, "no command to run")
	} else if o.Command[0] == "" {
		c.fail("", "the command's program name is empty")
	}
	c.checkArgv("command", o.Command, TemplateVars)
	c.fallback = c.splitFlag("--fallback", o.Fallback)
	c.verify = c.splitFlag("--verify", o.Verify)

	c.preset = PresetGeneric
	if o.Preset != "" {
		if !slices.Contains(Presets, o.Preset) {
			hint := "presets: " + strings.Join(Presets, ", ")
			if g := suggest(o.Preset, Presets); g != "" {
				hint = "did you mean `" + g + "`?"
			}
			c.fail(hint, "--preset: unknown preset %q", o.Preset)
		} else {
			c.preset = o.Preset
		}
	}
	c.checkPrompt()
	c.checkRetries()
	c.checkTimes()
}

func (c *adHocCheck) checkArgv(what string, argv []string, allowed []string) {
	for i, a := range argv {
		if !utf8.ValidString(a) {
			c.fail("", "%s argument %d is not valid UTF-8", what, i+1)
			continue
		}
		if te := checkTemplate(a, allowed); te != nil {
			c.fail(te.hint(), "%s argument %d: %s", what, i+1, te)
		}
	}
}

// splitFlag splits a command given as one flag value the way a shell would.
func (c *adHocCheck) splitFlag(flag, value string) []string {
	if value == "" {
		return nil
	}
	argv, err := shlex.Split(value)
	if err != nil {
		c.fail("", "%s: %s", flag, err)
		return nil
	}
	if len(argv) == 0 {
		c.fail("", "%s is empty", flag)
		return nil
	}
	c.checkArgv(flag, argv, TemplateVars)
	return argv
}

func (c *adHocCheck) checkPrompt() {
	o := c.o
	switch {
	case o.Prompt != "" && o.PromptFile != "":
		c.fail("keep one of them", "--prompt and --prompt-file cannot be used together")
	case o.Prompt != "":
		if !utf8.ValidString(o.Prompt) {
			c.fail("", "--prompt is not valid UTF-8")
		} else if te := checkTemplate(o.Prompt, promptVars); te != nil {
			c.fail(te.hint(), "--prompt: %s", te)
		}
	case o.PromptFile != "":
		if !utf8.ValidString(o.PromptFile) {
			c.fail("", "--prompt-file is not valid UTF-8")
		}
	default:
		for _, argv := range [][]string{o.Command, c.fallback} {
			if slices.ContainsFunc(argv, func(a string) bool { return usesVar(a, VarPrompt, VarPromptFile) }) {
				c.fail("add --prompt TEXT or --prompt-file PATH", "the command uses {{prompt}} or {{prompt_file}} but no prompt was given")
				break
			}
		}
	}
}

// checkRetries checks --on-failure, --retries and --backoff: --retries alone means retry.
func (c *adHocCheck) checkRetries() {
	o := c.o
	c.onFailure = o.OnFailure
	switch c.onFailure {
	case "", OnFailureFail, OnFailureAsk, OnFailureRetry:
	default:
		c.fail("use fail, ask or retry", "--on-failure: unknown value %q", c.onFailure)
	}
	if o.Retries != nil {
		switch {
		case *o.Retries < 0:
			c.fail("", "--retries must be 0 or more")
		case *o.Retries > math.MaxInt32:
			c.fail("", "--retries is too large")
		}
		switch c.onFailure {
		case "":
			c.onFailure = OnFailureRetry
		case OnFailureFail, OnFailureAsk:
			c.fail("use --on-failure retry, or drop --retries", "--retries only applies with --on-failure retry")
		}
	} else if c.onFailure == OnFailureRetry {
		c.fail("there is no unlimited default: add --retries 3 (or any number)", "--on-failure retry needs --retries")
	}
	if o.Backoff != "" {
		b, err := parseBackoffSpec(o.Backoff)
		if err != nil {
			c.fail("write it as KIND[:INITIAL[:MAX[:JITTER]]], like exponential:1s:5m or fixed:2s", "--backoff: %s", err)
		} else {
			c.backoff = &b
		}
	}
}

// checkTimes checks --timeout, --heartbeat and --deadline, and that a timeout fits the deadline.
func (c *adHocCheck) checkTimes() {
	o := c.o
	for _, d := range []struct{ flag, value string }{{"--timeout", o.Timeout}, {"--heartbeat", o.Heartbeat}, {"--deadline", o.Deadline}} {
		if d.value == "" {
			continue
		}
		if _, err := ParseDuration(d.value); err != nil {
			c.fail("write durations like 90s, 20m, 2h or 1d", "%s: %s", d.flag, err)
		}
	}
	if o.Timeout != "" && o.Deadline != "" {
		timeout, err1 := ParseDuration(o.Timeout)
		deadline, err2 := ParseDuration(o.Deadline)
		if err1 == nil && err2 == nil && deadline > 0 && timeout > deadline {
			c.fail(fmt.Sprintf("make --timeout at most the deadline (%s), or raise --deadline", deadline),
				"--timeout (%s) is longer than --deadline (%s)", timeout, deadline)
		}
	}
}

// yaml writes the checked flags as the task file of the ad-hoc run.
func (c *adHocCheck) yaml() string {
	o := c.o
	var y strings.Builder
	y.WriteString("# the ad-hoc task of `mulligan run [flags] -- CMD…`\nversion: 1\nagents:\n")
	// Each rung has its own preset: --preset names main's; a command that runs a known CLI
	// (--fallback 'gemini …' under --preset claude) is that CLI's.
	mainPreset := c.preset
	if o.Preset == "" {
		mainPreset = presetForCommand(o.Command, c.preset)
	}
	fmt.Fprintf(&y, "  main:\n    preset: %s\n    command: %s\n", mainPreset, yamlList(o.Command))
	chain := "[main]"
	if c.fallback != nil {
		fmt.Fprintf(&y, "  fallback:\n    preset: %s\n    command: %s\n", presetForCommand(c.fallback, c.preset), yamlList(c.fallback))
		chain = "[main, fallback]"
	}
	fmt.Fprintf(&y, "tasks:\n  - id: main\n    agent: %s\n", chain)
	if o.PromptFile != "" {
		fmt.Fprintf(&y, "    prompt_file: %s\n", yamlQuote(o.PromptFile))
	} else {
		fmt.Fprintf(&y, "    prompt: %s\n", yamlQuote(o.Prompt))
	}
	if c.onFailure != "" {
		fmt.Fprintf(&y, "    on_failure: %s\n", c.onFailure)
	}
	if o.Retries != nil {
		fmt.Fprintf(&y, "    retries: %d\n", *o.Retries)
	}
	if b := c.backoff; b != nil {
		fmt.Fprintf(&y, "    backoff: {kind: %s, initial: %s, max: %s, jitter: %s}\n",
			b.Kind, yamlQuote(b.Initial.String()), yamlQuote(b.Max.String()), b.Jitter)
	}
	for _, d := range []struct{ key, value string }{{"timeout", o.Timeout}, {"heartbeat", o.Heartbeat}, {"deadline", o.Deadline}} {
		if d.value != "" {
			fmt.Fprintf(&y, "    %s: %s\n", d.key, yamlQuote(strings.TrimSpace(d.value)))
		}
	}
	if c.verify != nil {
		fmt.Fprintf(&y, "    verify:\n      command: %s\n", yamlList(c.verify))
	}
	return y.String()
}

func yamlList(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = yamlQuote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// yamlQuote writes s as a YAML double-quoted scalar on one line. Everything outside
// printable text is escaped, so any valid UTF-8 string reads back byte for byte.
func yamlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r >= 0x20 && r < 0x7f:
			b.WriteRune(r)
		case r < 0x80 || !unicode.IsPrint(r) || r == 0xFEFF:
			if r > 0xFFFF {
				fmt.Fprintf(&b, `\U%08X`, r)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// presetForCommand is the preset of the CLI argv runs (claude, codex, gemini, aider, opencode, by
// the program's name), else def.
func presetForCommand(argv []string, def string) string {
	if len(argv) > 0 {
		name := argv[0]
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		for _, p := range Presets {
			if p == name && p != PresetGeneric {
				return p
			}
		}
	}
	return def
}
