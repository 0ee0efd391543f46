package taskfile

import (
	"fmt"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

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
