package taskfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseSpecExample(t *testing.T) {
	f, err := Load("testdata/spec-example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	content, _ := os.ReadFile("testdata/spec-example.yaml")
	sum := sha256.Sum256(content)
	if f.Hash != hex.EncodeToString(sum[:]) || string(f.Content) != string(content) || f.Path != "testdata/spec-example.yaml" {
		t.Errorf("path/content/hash not kept: %q %q", f.Path, f.Hash)
	}
	if f.Version != 1 || !reflect.DeepEqual(f.AgentOrder, []string{"fast", "strong"}) {
		t.Fatalf("version %d, agents %v", f.Version, f.AgentOrder)
	}
	fast := f.Agents["fast"]
	if fast.Preset != PresetClaude || fast.Pos != (Pos{3, 3}) ||
		!reflect.DeepEqual(fast.Command, []string{"claude", "-p", "{{prompt}}", "--model", "haiku", "--output-format", "json"}) ||
		!reflect.DeepEqual(fast.Env, map[string]string{"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "8000"}) {
		t.Errorf("agent fast = %+v", fast)
	}
	if len(f.Tasks) != 2 {
		t.Fatalf("%d tasks", len(f.Tasks))
	}
	ft := f.Tasks[0]
	want := &Task{
		ID:                     "fix-tests",
		Prompt:                 "Make `go test ./...` pass without changing the tests.",
		Agents:                 []string{"fast", "strong"},
		OnFailure:              OnFailureRetry,
		Retries:                3,
		Backoff:                Backoff{Kind: BackoffExponential, Initial: time.Second, Max: 5 * time.Minute, Jitter: JitterFull},
		Timeout:                20 * time.Minute,
		Heartbeat:              5 * time.Minute,
		Deadline:               2 * time.Hour,
		MaxConsecutiveFailures: 3,
		MaxIdenticalFailures:   2,
		Isolation:              IsolationInPlace,
		BestOf:                 1,
		NonRetryable:           []Class{ClassAgentExit},
		RetryOn:                []Class{ClassQualityRejection},
		RetryMode:              RetryCold,
		Verify:                 &Verify{Command: []string{"go", "test", "./..."}, Timeout: 10 * time.Minute},
		OutputSchema:           "schemas/result.json",
		MaxSchemaRetries:       3,
		ResultContract:         &ResultContract{FailureField: "error", MessageField: "error.message"},
		MaxCostUSD:             5,
		SideEffects:            SideEffectsNonIdempotent,
		Git:                    GitRestore,
		Effects:                []EffectDecl{{Name: "push-branch", Compensate: []string{"git", "push", "origin", "--delete", "fix/{{run}}"}}},
		Hooks: Hooks{
			HookOnRetry:  {{"notify-send", "retry {{task}} attempt {{attempt}}"}},
			HookOnFailed: {{"./scripts/page-me.sh"}},
		},
		Pos: Pos{12, 5}, OutputSchemaPos: Pos{28, 20},
	}
	rules := ft.Classify
	ft.Classify = nil
	if !reflect.DeepEqual(ft, want) {
		t.Errorf("task fix-tests:\n got %+v\nwant %+v", ft, want)
	}
	if len(rules) != 2 || rules[0].Pattern != "ECONNRESET" || rules[0].Class != ClassTransport || rules[0].Re == nil ||
		rules[1].Class != ClassQuota || rules[1].RetryAfter != time.Hour || !rules[1].Re.MatchString("your credit balance is too low") {
		t.Errorf("classify rules = %+v", rules)
	}
	docs := f.Tasks[1]
	if docs.ID != "docs" || !reflect.DeepEqual(docs.Needs, []string{"fix-tests"}) || !reflect.DeepEqual(docs.Agents, []string{"fast"}) ||
		docs.OnFailure != OnFailureFail || docs.Backoff != DefaultBackoff() || docs.MaxConsecutiveFailures != 3 ||
		docs.MaxSchemaRetries != 3 || docs.SideEffects != SideEffectsNone || docs.Timeout != 0 || docs.Verify != nil {
		t.Errorf("task docs = %+v", docs)
	}
	if f.Task("docs") != docs || f.Task("nope") != nil {
		t.Error("File.Task lookup")
	}
}

// tfAgentsA is a valid agents section for the error cases below.
const tfAgentsA = "version: 1\nagents: {a: {command: [x]}}\ntasks:\n"

func TestAuthoringErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // every error, in order
		hint string   // hint of the first error, when checked
	}{
		{"invalid yaml", "version: 1\ntasks: [a, b\n",
			[]string{"f.yaml:2:8: invalid YAML: sequence end token ']' not found"}, ""},
		{"tab indent", "version: 1\ntasks:\n\t- id: a\n",
			[]string{"f.yaml:3:1: invalid YAML: found character '\t' that cannot start any token"}, "YAML indents with spaces, not tabs"},
		{"duplicate key", "version: 1\nversion: 1\n",
			[]string{`f.yaml:2:1: invalid YAML: mapping key "version" already defined at [1:1]`}, ""},
		{"empty file", "", []string{"f.yaml:1:1: the task file is empty"}, ""},
		{"only comments", "# nothing\n", []string{"f.yaml:1:1: the task file is empty"}, ""},
		{"two documents", "version: 1\n---\ntasks: []\n",
			[]string{"f.yaml:3:1: the task file must hold a single YAML document"}, ""},
		{"not utf8", "version: 1\n\xff\n", []string{"f.yaml:2:1: the task file is not valid UTF-8"}, ""},
		{"top is a list", "- a\n", []string{"f.yaml:1:1: the task file must be a mapping (key: value lines), not a list"}, ""},
		{"unknown top key", "version: 1\ntaks: []\n",
			[]string{"f.yaml:1:1: missing `tasks`", "f.yaml:2:1: unknown key `taks` at the top level"}, ""},
		{"unknown key hint", "version: 1\ntaks: []\n", nil, "add a `tasks:` list with at least one task"},
		{"missing version", "agents: {}\n",
			[]string{"f.yaml:1:1: missing `version: 1`", "f.yaml:1:1: missing `tasks`"}, ""},
		{"version 2", "version: 2\ntasks: []\n",
			[]string{"f.yaml:1:10: unsupported `version` 2", "f.yaml:2:1: `tasks` is empty"}, "this mulligan reads `version: 1`"},
		{"version string, tasks mapping", "version: \"1\"\ntasks: {}\n",
			[]string{"f.yaml:1:10: `version` must be the number 1, not a string", "f.yaml:2:8: `tasks` must be a list, not a mapping"}, ""},
		{"unknown agent key", "version: 1\nagents:\n  a:\n    comand: [x]\ntasks:\n  - id: t\n    prompt: p\n    agent: a\n    retrys: 2\n",
			[]string{
				"f.yaml:3:3: agent `a` has no `command`",
				"f.yaml:4:5: unknown key `comand` in agent `a`",
				"f.yaml:9:5: unknown key `retrys` in task `t`",
			}, ""},
		{"did you mean retries", tfAgentsA + "  - {id: t, prompt: p, agent: a, retrys: 2}\n",
			[]string{"f.yaml:4:34: unknown key `retrys` in task `t`"}, "did you mean `retries`?"},
		{"unknown key prefix", tfAgentsA + "  - {id: t, prompt: p, agent: a, timeout_seconds: 2}\n",
			[]string{"f.yaml:4:34: unknown key `timeout_seconds` in task `t`"}, "did you mean `timeout`?"},
		{"unknown key, nothing close", tfAgentsA + "  - {id: t, prompt: p, agent: a, zzzzzz: 2}\n",
			[]string{"f.yaml:4:34: unknown key `zzzzzz` in task `t`"}, "known keys: id, needs, prompt, prompt_file, agent, on_failure, retries, backoff, timeout, heartbeat, deadline, max_consecutive_failures, non_retryable, retry_on, carry_over, retry_mode, verify, output_schema, max_schema_retries, result_contract, classify, max_cost_usd, side_effects, git, effects, hooks, allow_fail, needs_approval, approval_schema, silence, max_identical_failures, isolation, worktree, best_of"},
		{"wrong types", "version: 1\nagents:\n  a: {command: claude -p}\ntasks:\n  - {id: t, prompt: p, agent: {x: 1}, needs: b}\n",
			[]string{
				"f.yaml:3:16: `command` must be a list, not a string",
				"f.yaml:5:31: `agent` must be a name or a list of names, not a mapping",
				"f.yaml:5:46: `needs` must be a list, not a string",
			}, "write it as [PROGRAM, ARGS…, \"{{prompt}}\"]"},
		{"empty command", "version: 1\nagents: {a: {command: []}}\ntasks: [{id: t, prompt: p, agent: a}]\n",
			[]string{"f.yaml:2:23: `command` is empty"}, ""},
		{"command item is null", "version: 1\nagents: {a: {command: [x, null]}}\ntasks: [{id: t, prompt: p, agent: a}]\n",
			[]string{"f.yaml:2:27: items of `command` must be strings, not null"}, ""},
		{"command item is a list", "version: 1\nagents: {a: {command: [x, [y]]}}\ntasks: [{id: t, prompt: p, agent: a}]\n",
			[]string{"f.yaml:2:27: items of `command` must be strings, not a list"}, ""},
		{"bad env", "version: 1\nagents: {a: {command: [x], env: {1A: b, C: [d]}}}\ntasks: [{id: t, prompt: p, agent: a}]\n",
			[]string{`f.yaml:2:34: invalid environment variable name "1A"`, "f.yaml:2:44: `C` must be a string, not a list"}, ""},
		{"carry_over type", tfAgentsA + "  - {id: t, prompt: p, agent: a, carry_over: \"yes\"}\n",
			[]string{"f.yaml:4:46: `carry_over` must be true or false, not a string"}, ""},
		{"bad item, then unknown need", tfAgentsA + "  - {id: t, prompt: p, agent: a, needs: [[x], nope]}\n",
			[]string{"f.yaml:4:42: items of `needs` must be strings, not a list", "f.yaml:4:47: `needs` names unknown task `nope`"}, ""},
		{"task is null", tfAgentsA + "  - {id: t, prompt: p, agent: a}\n  - ~\n",
			[]string{"f.yaml:5:5: task 2 must be a mapping (key: value lines), not null"}, ""},
		{"task not a mapping", tfAgentsA + "  - t\n",
			[]string{"f.yaml:4:5: task 1 must be a mapping (key: value lines), not a string"}, ""},
		{"ids and prompts", tfAgentsA + "  - prompt: p\n    agent: a\n  - id: a b\n    prompt: p\n    agent: a\n  - id: t\n    prompt: p\n    prompt_file: f\n    agent: a\n  - id: t\n    agent: a\n",
			[]string{
				"f.yaml:4:5: task 1 has no `id`",
				`f.yaml:6:9: invalid task id "a b"`,
				"f.yaml:11:5: task `t` has both `prompt` and `prompt_file`",
				"f.yaml:13:5: task `t` has no `prompt` or `prompt_file`",
				"f.yaml:13:9: duplicate task id `t` (first at 9:9)",
			}, "add `id: NAME`"},
		{"no agent", tfAgentsA + "  - {id: t, prompt: p}\n",
			[]string{"f.yaml:4:5: task `t` has no `agent`"}, "add `agent: NAME` naming one of `agents:`"},
		{"empty agent list", tfAgentsA + "  - {id: t, prompt: p, agent: []}\n",
			[]string{"f.yaml:4:31: `agent` is empty"}, ""},
		{"retries rules", tfAgentsA +
			"  - {id: t, prompt: p, agent: a, on_failure: retry}\n" +
			"  - {id: u, prompt: p, agent: a, retries: -2}\n" +
			"  - {id: v, prompt: p, agent: a, retries: 2.5}\n" +
			"  - {id: w, prompt: p, agent: a, retries: .inf}\n" +
			"  - {id: x, prompt: p, agent: a, retries: forever}\n" +
			"  - {id: y, prompt: p, agent: a, on_failure: fail, retries: 3}\n" +
			"  - {id: z, prompt: p, agent: a, on_failure: retyr}\n" +
			"  - {id: z2, prompt: p, agent: a, retries: -1}\n" +
			"  - {id: z3, prompt: p, agent: a, retries: \"3\"}\n" +
			"  - {id: z4, prompt: p, agent: a, retries: 9999999999}\n",
			[]string{
				"f.yaml:4:46: task `t`: `on_failure: retry` needs `retries`",
				"f.yaml:5:43: `retries` must be at least 0",
				"f.yaml:6:43: `retries` must be a whole number, not 2.5",
				"f.yaml:7:43: `retries` cannot be unlimited",
				"f.yaml:8:43: `retries` cannot be unlimited",
				"f.yaml:9:52: `retries` only applies with `on_failure: retry`",
				`f.yaml:10:46: unknown ` + "`on_failure`" + ` value "retyr"`,
				"f.yaml:11:44: `retries` cannot be unlimited",
				"f.yaml:12:44: `retries` must be a whole number, not a string",
				"f.yaml:13:44: `retries` is too large",
			}, "there is no unlimited default: add `retries: 3` (or any number)"},
		{"on_failure suggestion", tfAgentsA + "  - {id: z, prompt: p, agent: a, on_failure: retyr}\n",
			[]string{`f.yaml:4:46: unknown ` + "`on_failure`" + ` value "retyr"`}, "did you mean `retry`?"},
		{"unknown agent, preset, needs, cycles", "version: 1\nagents:\n  fast: {command: [x], preset: claud}\ntasks:\n" +
			"  - id: t\n    prompt: p\n    agent: [fast, fsat]\n    needs: [t, nope, tt]\n" +
			"  - id: a\n    prompt: p\n    agent: fast\n    needs: [b]\n" +
			"  - id: b\n    prompt: p\n    agent: fast\n    needs: [a]\n",
			[]string{
				`f.yaml:3:32: unknown ` + "`preset`" + ` value "claud"`,
				"f.yaml:7:19: unknown agent `fsat`",
				"f.yaml:8:13: `needs` forms a cycle: t -> t",
				"f.yaml:8:16: `needs` names unknown task `nope`",
				"f.yaml:8:22: `needs` names unknown task `tt`",
				"f.yaml:16:13: `needs` forms a cycle: a -> b -> a",
			}, "did you mean `claude`?"},
		{"unknown agent hint", "version: 1\nagents: {fast: {command: [x]}, strong: {command: [y]}}\ntasks: [{id: t, prompt: p, agent: fsat}]\n",
			[]string{"f.yaml:3:35: unknown agent `fsat`"}, "did you mean `fast`? defined agents: fast, strong"},
		{"no agents at all", "version: 1\ntasks: [{id: t, prompt: p, agent: claude}]\n",
			[]string{"f.yaml:2:35: unknown agent `claude`"}, "define it under `agents:`"},
		{"longer cycle", tfAgentsA +
			"  - {id: a, prompt: p, agent: a, needs: [c]}\n" +
			"  - {id: b, prompt: p, agent: a, needs: [a]}\n" +
			"  - {id: c, prompt: p, agent: a, needs: [b]}\n",
			[]string{"f.yaml:5:42: `needs` forms a cycle: a -> c -> b -> a"}, ""},
		{"templates", "version: 1\nagents:\n  a: {command: [x, \"{{promt}}\", \"{{ task }}\"]}\ntasks:\n" +
			"  - id: t\n    prompt: \"do {{run\"\n    agent: a\n    verify: {command: [make, \"{{foo}}\"]}\n" +
			"    effects:\n      - {name: e, compensate: [undo, \"{{bar}}\"]}\n    hooks:\n      on_retry: [[echo, \"{{baz}}\"]]\n" +
			"  - {id: u, prompt: \"see {{prompt}}\", agent: a}\n" +
			"hooks:\n  on_failed: [[page, \"{{.Names}}\"]]\n",
			[]string{
				"f.yaml:3:20: unknown template variable {{promt}}",
				"f.yaml:6:13: unterminated {{ (close it with }}, or write {{{{ for a literal {{)",
				"f.yaml:8:30: unknown template variable {{foo}}",
				"f.yaml:10:38: unknown template variable {{bar}}",
				"f.yaml:12:25: unknown template variable {{baz}}",
				"f.yaml:13:21: template variable {{prompt}} cannot be used here",
				"f.yaml:15:22: unknown template variable {{.Names}}",
			}, "did you mean {{prompt}}? known variables: {{prompt}}, {{prompt_file}}, {{run}}, {{task}}, {{attempt}}, {{idempotency_key}}; write {{{{ for a literal {{"},
		{"template hint lists known", "version: 1\nagents: {a: {command: [x, \"{{zzz}}\"]}}\ntasks: [{id: t, prompt: p, agent: a}]\n",
			[]string{"f.yaml:2:27: unknown template variable {{zzz}}"},
			"known variables: {{prompt}}, {{prompt_file}}, {{run}}, {{task}}, {{attempt}}, {{idempotency_key}}; write {{{{ for a literal {{"},
		{"hooks have no prompt", tfAgentsA + "  - {id: t, prompt: p, agent: a, hooks: {on_failed: [[page, \"{{prompt_file}}\"]]}}\n" +
			"hooks: {on_success: [[notify, \"{{run}} {{task}} {{attempt}} {{idempotency_key}}\", \"{{prompt}}\"]]}\n",
			[]string{
				"f.yaml:4:61: template variable {{prompt_file}} cannot be used here",
				"f.yaml:5:83: template variable {{prompt}} cannot be used here",
			}, ""},
		{"durations and backoff", tfAgentsA +
			"  - id: t\n    prompt: p\n    agent: a\n    timeout: 5 minutes\n    heartbeat: 30\n    deadline: -5m\n    backoff: {kind: expo, jitter: half}\n" +
			"  - id: u\n    prompt: p\n    agent: a\n    backoff: {initial: 10m, max: 1m}\n" +
			"  - {id: v, prompt: p, agent: a, backoff: {max: 0}}\n" +
			"  - {id: w, prompt: p, agent: a, backoff: exponential}\n",
			[]string{
				`f.yaml:7:14: ` + "`timeout`" + `: invalid duration "5 minutes": unknown unit " minutes" (ns, us, ms, s, m, h, d, w)`,
				`f.yaml:8:16: ` + "`heartbeat`" + `: invalid duration "30": missing unit (ns, us, ms, s, m, h, d, w)`,
				`f.yaml:9:15: ` + "`deadline`" + `: invalid duration "-5m": negative durations are not allowed`,
				`f.yaml:10:21: unknown ` + "`kind`" + ` value "expo"`,
				`f.yaml:10:35: unknown ` + "`jitter`" + ` value "half"`,
				"f.yaml:14:34: backoff initial 10m0s is above max 1m0s",
				"f.yaml:15:49: backoff max must be above 0 (for no delay set initial to 0)",
				"f.yaml:16:43: `backoff` must be a mapping (key: value lines), not a string",
			}, "write durations like 90s, 20m, 2h or 1d"},
		{"timeout longer than deadline", tfAgentsA + "  - {id: t, prompt: p, agent: a, timeout: 2h, deadline: 30m}\n",
			[]string{"f.yaml:4:43: `timeout` (2h0m0s) is longer than `deadline` (30m0s)"}, "make `timeout` at most the deadline (30m0s), or raise `deadline`"},
		{"run semantics keys", tfAgentsA + "  - {id: t, prompt: p, agent: a, allow_fail: yes, silence: 3, max_identical_failures: 0, approval_schema: s.json}\n",
			[]string{
				"f.yaml:4:46: `allow_fail` must be true or false, not a string",
				"f.yaml:4:60: `silence`: invalid duration \"3\": missing unit (ns, us, ms, s, m, h, d, w)",
				"f.yaml:4:87: `max_identical_failures` must be at least 1",
				"f.yaml:4:90: `approval_schema` without `needs_approval: true` checks nothing",
			}, ""},
		{"backoff kind hint", tfAgentsA + "  - {id: t, prompt: p, agent: a, backoff: {kind: expo}}\n",
			[]string{`f.yaml:4:50: unknown ` + "`kind`" + ` value "expo"`}, "did you mean `exponential`?"},
		{"classes and numbers", tfAgentsA +
			"  - id: t\n    prompt: p\n    agent: a\n" +
			"    retry_on: [transport, quality_rejection, agent_exti]\n" +
			"    non_retryable: [auth, cancelation]\n" +
			"    classify:\n      - {pattern: \"(\", class: transport}\n      - {pattern: x, class: cancellation}\n      - {class: quota}\n      - {pattern: y, class: quota, retry_after: soon}\n" +
			"    max_cost_usd: -1\n    max_schema_retries: -1\n    max_consecutive_failures: 0\n    side_effects: yes\n" +
			"    effects:\n      - {name: e}\n      - {name: e}\n      - {compensate: [x]}\n" +
			"    hooks:\n      on_fail: [[x]]\n      on_failed: [x]\n",
			[]string{
				"f.yaml:7:16: `retry_on` cannot add `transport`",
				`f.yaml:7:46: unknown failure class "agent_exti"`,
				`f.yaml:8:27: unknown failure class "cancelation"`,
				"f.yaml:10:19: invalid classify pattern: error parsing regexp: missing closing ): `(`",
				"f.yaml:11:29: class `cancellation` cannot be assigned by a classify rule",
				"f.yaml:12:9: classify rule 3 has no `pattern`",
				`f.yaml:13:49: ` + "`retry_after`" + `: invalid duration "soon": expected a number with a unit, like 90s, 5m, 2h or 1d`,
				"f.yaml:14:19: `max_cost_usd` must be 0 or more",
				"f.yaml:15:25: `max_schema_retries` must be at least 0",
				"f.yaml:16:31: `max_consecutive_failures` must be at least 1",
				`f.yaml:17:19: unknown ` + "`side_effects`" + ` value "yes"`,
				"f.yaml:20:16: effect `e` is declared twice",
				"f.yaml:21:9: effect 3 has no `name`",
				"f.yaml:23:7: unknown key `on_fail` in `hooks`",
				"f.yaml:24:19: `on_failed` must be a list of commands, each a list",
			}, "`transport` is retried by default; list it in `non_retryable` to stop that"},
		{"git value", tfAgentsA + "  - {id: t, prompt: p, agent: a, git: isolated}\n",
			[]string{`f.yaml:4:39: unknown ` + "`git`" + ` value "isolated"`}, "did you mean `isolate`?"},
		{"retry_mode value", tfAgentsA + "  - {id: t, prompt: p, agent: a, retry_mode: resumed}\n",
			[]string{`f.yaml:4:46: unknown ` + "`retry_mode`" + ` value "resumed"`}, "did you mean `resume`?"},
		{"git type", tfAgentsA + "  - {id: t, prompt: p, agent: a, git: [allow]}\n",
			[]string{"f.yaml:4:39: `git` must be a string, not a list"}, ""},
		{"class hints", tfAgentsA + "  - {id: t, prompt: p, agent: a, non_retryable: [agent_exti]}\n",
			[]string{`f.yaml:4:50: unknown failure class "agent_exti"`}, "did you mean `agent_exit`?"},
		{"retry_on other non-widenable", tfAgentsA + "  - {id: t, prompt: p, agent: a, retry_on: [auth]}\n",
			[]string{"f.yaml:4:45: `retry_on` cannot add `auth`"}, "only quality_rejection, payload_declared and schema_invalid can be added"},
		{"hook name hint", tfAgentsA + "  - {id: t, prompt: p, agent: a, hooks: {on_fail: [[x]]}}\n",
			[]string{"f.yaml:4:42: unknown key `on_fail` in `hooks`"}, "did you mean `on_failed`?"},
		{"verify and result_contract", tfAgentsA + "  - {id: t, prompt: p, agent: a, verify: {timeout: 1m}, result_contract: {message_field: m}, output_schema: \"\"}\n",
			[]string{
				"f.yaml:4:34: `verify` has no `command`",
				"f.yaml:4:57: `result_contract` has no `failure_field`",
				"f.yaml:4:109: `output_schema` is empty",
			}, ""},
		{"unknown alias", tfAgentsA + "  - {id: t, prompt: p, agent: a, timeout: *nope}\n",
			[]string{"f.yaml:4:43: unknown alias *nope"}, "define it first with &nope"},
		{"complex key", tfAgentsA + "  - {id: t, prompt: p, agent: a}\n? [x]\n: y\n",
			[]string{"f.yaml:6:1: invalid YAML: found an invalid key for this map"}, ""},
		{"sorted by position", tfAgentsA + "  - {id: t, prompt: p, agent: a, zz: 1}\nxx: 1\n",
			[]string{"f.yaml:4:34: unknown key `zz` in task `t`", "f.yaml:5:1: unknown key `xx` at the top level"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("f.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("no error; tasks %v", f.Tasks)
			}
			if !IsAuthoring(err) {
				t.Fatalf("not an authoring error: %v", err)
			}
			var es AuthoringErrors
			if !errors.As(err, &es) {
				t.Fatalf("errors.As(AuthoringErrors) failed")
			}
			if tt.want != nil {
				var got []string
				for _, e := range es {
					got = append(got, e.Error())
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("errors:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tt.want, "\n     "))
				}
				if err.Error() != strings.Join(tt.want, "\n") {
					t.Errorf("Error() = %q", err.Error())
				}
			}
			if tt.hint != "" && es[0].Hint != tt.hint {
				t.Errorf("hint = %q, want %q", es[0].Hint, tt.hint)
			}
		})
	}
}

func TestParseBOMAndCRLF(t *testing.T) {
	src := "\ufeffversion: 1\r\nagents: {a: {command: [x]}}\r\ntasks:\r\n  - id: t\r\n    prompt: |\r\n      line1\r\n      line2\r\n    agent: a\r\n"
	f, err := Parse("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if f.Tasks[0].Prompt != "line1\nline2\n" || string(f.Content) != src {
		t.Errorf("prompt %q; content kept: %v", f.Tasks[0].Prompt, string(f.Content) == src)
	}
	_, err = Parse("f.yaml", []byte(strings.ReplaceAll(src, "agent: a", "agent: b")))
	if err == nil || err.Error() != "f.yaml:8:12: unknown agent `b`" {
		t.Errorf("CRLF position: %v", err)
	}
}

func TestManyErrorsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString(tfAgentsA + "  - {id: t, prompt: p, agent: a}\n")
	for i := range 60 {
		fmt.Fprintf(&b, "k%d: 1\n", i)
	}
	_, err := Parse("f.yaml", []byte(b.String()))
	var es AuthoringErrors
	if !errors.As(err, &es) || len(es) != maxReported+1 {
		t.Fatalf("%d errors, want %d", len(es), maxReported+1)
	}
	if es[0].Error() != "f.yaml:5:1: unknown key `k0` at the top level" {
		t.Errorf("first = %q", es[0])
	}
	if last := es[maxReported].Error(); last != "f.yaml:55:1: and 10 more problems" {
		t.Errorf("last = %q", last)
	}
}

func TestParseValidForms(t *testing.T) {
	src := `version: 1
x-cmd: &cmd [claude, -p, "{{prompt}}"]
x-base: &base {preset: claude, env: {A: 1}}
agents:
  fast:
    <<: *base
    command: *cmd
  plain:
    <<: [*base]
    preset: generic
    command: [sleep, 5, true]
hooks:
  on_success: [[notify, "{{run}} done"]]
tasks:
  - id: t
    prompt: ""
    agent: fast
    retries: 2
    backoff: {kind: fixed, initial: 10m, jitter: none}
    timeout: 0
    deadline: 1d
    carry_over: true
    max_cost_usd: 3
    needs:
  - id: u.2_x-y
    prompt_file: prompts/u.md
    agent: [plain, fast]
    needs: [t]
    on_failure: ask
    classify:
      - {pattern: "(?i)rate limit", class: quota}
    effects:
      - {name: e}
    hooks: {on_failed: [[echo, "{{{{.Names}}"]]}
`
	f, err := Parse("ok.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	fast, plain := f.Agents["fast"], f.Agents["plain"]
	if fast.Preset != PresetClaude || !reflect.DeepEqual(fast.Command, []string{"claude", "-p", "{{prompt}}"}) || fast.Env["A"] != "1" {
		t.Errorf("merged agent fast = %+v", fast)
	}
	if plain.Preset != PresetGeneric || !reflect.DeepEqual(plain.Command, []string{"sleep", "5", "true"}) {
		t.Errorf("agent plain = %+v (explicit keys must beat merged ones)", plain)
	}
	if !reflect.DeepEqual(f.Hooks, Hooks{HookOnSuccess: {{"notify", "{{run}} done"}}}) {
		t.Errorf("run hooks = %v", f.Hooks)
	}
	tk := f.Tasks[0]
	if tk.OnFailure != OnFailureRetry || tk.Retries != 2 {
		t.Errorf("retries without on_failure should mean retry: %q %d", tk.OnFailure, tk.Retries)
	}
	// No max given and initial above the default max: the max follows the initial.
	if tk.Backoff != (Backoff{Kind: BackoffFixed, Initial: 10 * time.Minute, Max: 10 * time.Minute, Jitter: JitterNone}) {
		t.Errorf("backoff = %+v", tk.Backoff)
	}
	if tk.Deadline != 24*time.Hour || tk.Timeout != 0 || !tk.CarryOver || tk.MaxCostUSD != 3 || tk.Needs != nil || tk.Prompt != "" {
		t.Errorf("task t = %+v", tk)
	}
	u := f.Tasks[1]
	if u.PromptFile != "prompts/u.md" || u.OnFailure != OnFailureAsk || !reflect.DeepEqual(u.Agents, []string{"plain", "fast"}) ||
		len(u.Classify) != 1 || !u.Classify[0].Re.MatchString("Rate Limit hit") || u.Effects[0].Compensate != nil {
		t.Errorf("task u = %+v", u)
	}
	if got := u.Hooks[HookOnFailed][0][1]; got != "{{{{.Names}}" {
		t.Errorf("hook arg = %q (the escape is kept for Expand)", got)
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mulligan.yaml")
	_, err := Load(path)
	if err == nil || !IsAuthoring(err) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load(missing) = %v", err)
	}
	if want := path + ": no such task file"; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	var e *AuthoringError
	if !errors.As(err, &e) || !strings.Contains(e.Hint, "mulligan run -- CMD") {
		t.Errorf("hint missing: %+v", e)
	}
}

func TestLoadFromDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.yaml")
	if err := os.WriteFile(path, []byte(tfAgentsA+"  - {id: t, prompt: p, agent: b}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	var e *AuthoringError
	if !errors.As(err, &e) || e.File != path || e.Line != 4 || e.Col != 31 || e.Msg != "unknown agent `b`" {
		t.Fatalf("Load = %v (%+v)", err, e)
	}
}

func TestIsAuthoring(t *testing.T) {
	if IsAuthoring(errors.New("x")) || IsAuthoring(nil) {
		t.Error("plain errors are not authoring errors")
	}
	if !IsAuthoring(&AuthoringError{Msg: "x"}) {
		t.Error("a single *AuthoringError is one")
	}
	e := &AuthoringError{File: "f", Line: 0, Msg: "m"}
	if e.Error() != "f: m" || (&AuthoringError{Msg: "m"}).Error() != "m" {
		t.Errorf("position-less forms: %q", e.Error())
	}
}

func TestAdHoc(t *testing.T) {
	three := 3
	f, err := AdHoc(AdHocOptions{
		Command:  []string{"claude", "-p", "{{prompt}}", "quote\" back\\slash\nnewline\ttab\x01ctl é 😀 \u2028 \ufeff"},
		Prompt:   "fix {{task}}: it's \"broken\"",
		Retries:  &three,
		Backoff:  "fixed:2s",
		Timeout:  "20m",
		Deadline: "1d",
		Verify:   "go test './...'",
		Fallback: "codex exec '{{prompt}}'",
		Preset:   PresetClaude,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f.AgentOrder, []string{"main", "fallback"}) {
		t.Fatalf("agents %v", f.AgentOrder)
	}
	m := f.Agents["main"]
	if m.Preset != PresetClaude || m.Command[3] != "quote\" back\\slash\nnewline\ttab\x01ctl é 😀 \u2028 \ufeff" {
		t.Errorf("main agent = %q", m.Command)
	}
	if fb := f.Agents["fallback"]; !reflect.DeepEqual(fb.Command, []string{"codex", "exec", "{{prompt}}"}) {
		t.Errorf("fallback = %q", fb.Command)
	}
	tk := f.Tasks[0]
	if tk.ID != "main" || tk.Prompt != "fix {{task}}: it's \"broken\"" || tk.OnFailure != OnFailureRetry || tk.Retries != 3 ||
		tk.Backoff != (Backoff{Kind: BackoffFixed, Initial: 2 * time.Second, Max: 5 * time.Minute, Jitter: JitterNone}) ||
		tk.Timeout != 20*time.Minute || tk.Deadline != 24*time.Hour ||
		!reflect.DeepEqual(tk.Verify.Command, []string{"go", "test", "./..."}) || !reflect.DeepEqual(tk.Agents, []string{"main", "fallback"}) {
		t.Errorf("task = %+v", tk)
	}
	// The stored content reads back to the same definition, as resume will read it.
	g, err := Parse(f.Path, f.Content)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(f, g) {
		t.Error("Parse(f.Path, f.Content) differs from AdHoc's result")
	}

	// A plain command needs no prompt.
	f, err = AdHoc(AdHocOptions{Command: []string{"go", "test", "./..."}})
	if err != nil {
		t.Fatal(err)
	}
	if tk := f.Tasks[0]; tk.Prompt != "" || tk.OnFailure != OnFailureFail || tk.Agents[0] != "main" || f.Agents["main"].Preset != PresetGeneric {
		t.Errorf("plain ad-hoc task = %+v", tk)
	}
	f, err = AdHoc(AdHocOptions{Command: []string{"agent", "{{prompt_file}}"}, PromptFile: "p.md", OnFailure: "ask", Backoff: "linear"})
	if err != nil {
		t.Fatal(err)
	}
	if tk := f.Tasks[0]; tk.PromptFile != "p.md" || tk.OnFailure != OnFailureAsk || tk.Backoff.Kind != BackoffLinear {
		t.Errorf("prompt-file ad-hoc task = %+v", tk)
	}
}

func TestAdHocErrors(t *testing.T) {
	neg, three := -1, 3
	tests := []struct {
		name string
		o    AdHocOptions
		want []string
	}{
		{"no command", AdHocOptions{}, []string{"no command to run"}},
		{"empty program", AdHocOptions{Command: []string{""}}, []string{"the command's program name is empty"}},
		{"template in command", AdHocOptions{Command: []string{"x", "{{promt}}"}, Prompt: "p"},
			[]string{"command argument 2: unknown template variable {{promt}}"}},
		{"prompt missing", AdHocOptions{Command: []string{"claude", "-p", "{{prompt}}"}},
			[]string{"the command uses {{prompt}} or {{prompt_file}} but no prompt was given"}},
		{"both prompts", AdHocOptions{Command: []string{"x"}, Prompt: "a", PromptFile: "b"},
			[]string{"--prompt and --prompt-file cannot be used together"}},
		{"prompt template", AdHocOptions{Command: []string{"x"}, Prompt: "{{prompt}} and {{x}}"},
			[]string{"--prompt: template variable {{prompt}} cannot be used here"}},
		{"flags", AdHocOptions{Command: []string{"x"}, OnFailure: "retyr", Backoff: "expo:1s", Timeout: "5 minutes", Heartbeat: "-1s", Deadline: "2", Preset: "claud", Verify: "'unterminated", Fallback: " "},
			[]string{
				"--fallback is empty",
				"--verify: EOF found when expecting closing quote",
				"--preset: unknown preset \"claud\"",
				"--on-failure: unknown value \"retyr\"",
				"--backoff: unknown backoff kind \"expo\" (fixed, linear or exponential)",
				"--timeout: invalid duration \"5 minutes\": unknown unit \" minutes\" (ns, us, ms, s, m, h, d, w)",
				"--heartbeat: invalid duration \"-1s\": negative durations are not allowed",
				"--deadline: invalid duration \"2\": missing unit (ns, us, ms, s, m, h, d, w)",
			}},
		{"retry without retries", AdHocOptions{Command: []string{"x"}, OnFailure: "retry"}, []string{"--on-failure retry needs --retries"}},
		{"negative retries", AdHocOptions{Command: []string{"x"}, Retries: &neg}, []string{"--retries must be 0 or more"}},
		{"retries with fail", AdHocOptions{Command: []string{"x"}, Retries: &three, OnFailure: "fail"},
			[]string{"--retries only applies with --on-failure retry"}},
		{"backoff parts", AdHocOptions{Command: []string{"x"}, Backoff: "fixed:1s:2s:none:extra"},
			[]string{`--backoff: "fixed:1s:2s:none:extra" has too many parts: use KIND[:INITIAL[:MAX[:JITTER]]], like exponential:1s:5m`}},
		{"backoff jitter", AdHocOptions{Command: []string{"x"}, Backoff: "exponential:1s:5m:half"},
			[]string{`--backoff: unknown jitter "half" (full, equal or none)`}},
		{"verify template", AdHocOptions{Command: []string{"x"}, Verify: "make {{target}}"},
			[]string{"--verify argument 2: unknown template variable {{target}}"}},
		{"not utf8", AdHocOptions{Command: []string{"x", "\xff"}}, []string{"command argument 2 is not valid UTF-8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := AdHoc(tt.o)
			var es AuthoringErrors
			if !errors.As(err, &es) {
				t.Fatalf("AdHoc = %v, want authoring errors", err)
			}
			var got []string
			for _, e := range es {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"retries", "timeout", "agent", "id"}
	for in, want := range map[string]string{
		"retrys": "retries", "retires": "retries", "timeout_ms": "timeout", "agnet": "agent",
		"ID": "", "x": "", "zzzzzz": "", "time": "timeout",
	} {
		if got := suggest(in, known); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTaskIDRule: every id SPEC §1 refuses is an authoring error at the id's line and column,
// with a hint; the loader accepts the neighbours that are valid.
func TestTaskIDRule(t *testing.T) {
	bad := map[string]string{
		"..":                    `invalid task id "..": it starts with '.'`,
		".":                     `invalid task id ".": it starts with '.'`,
		".git":                  `invalid task id ".git": it starts with '.'`,
		".hidden":               `invalid task id ".hidden": it starts with '.'`,
		"x.lock":                `invalid task id "x.lock": it ends in ".lock"`,
		"a..b":                  `invalid task id "a..b": it contains ".."`,
		"base":                  "task id `base` is reserved (refs/mulligan/runs/<run>/base is the run's base snapshot)",
		"-rf":                   `invalid task id "-rf": it starts with '-'`,
		strings.Repeat("x", 65): "task id is 65 characters long; at most 64",
		"a/b":                   `invalid task id "a/b"`,
	}
	for id, msg := range bad {
		src := tfAgentsA + "  - prompt: p\n    agent: a\n    id: '" + id + "'\n"
		_, err := Parse("f.yaml", []byte(src))
		var es AuthoringErrors
		if !errors.As(err, &es) || len(es) != 1 {
			t.Errorf("id %q: %v", id, err)
			continue
		}
		if got, want := es[0].Error(), "f.yaml:6:9: "+msg; got != want {
			t.Errorf("id %q:\n got %s\nwant %s", id, got, want)
		}
		if es[0].Hint == "" {
			t.Errorf("id %q: no hint", id)
		}
	}
	for _, id := range []string{"fix-tests", "v1.2", strings.Repeat("x", 64), "a.lock.b", "base2", "x.", "_a"} {
		src := tfAgentsA + "  - {id: '" + id + "', prompt: p, agent: a}\n"
		if _, err := Parse("f.yaml", []byte(src)); err != nil {
			t.Errorf("id %q refused: %v", id, err)
		}
	}
}

// isolation and worktree (SPEC §4.1): the top level's values are the tasks' defaults; a task's
// own win; bad values are authoring errors at their position.
func TestIsolationKeys(t *testing.T) {
	src := `version: 1
isolation: worktree
worktree: {copy: [.env, "node_modules"], link: [.venv]}
agents:
  a: {command: [x]}
tasks:
  - {id: one, prompt: p, agent: a}
  - {id: two, prompt: p, agent: a, isolation: in-place, worktree: {copy: [vendor/*]}}
`
	f, err := Parse("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	one, two := f.Task("one"), f.Task("two")
	if one.Isolation != IsolationWorktree || !slices.Equal(one.Worktree.Copy, []string{".env", "node_modules"}) || !slices.Equal(one.Worktree.Link, []string{".venv"}) {
		t.Errorf("one: %q %+v", one.Isolation, one.Worktree)
	}
	if two.Isolation != IsolationInPlace || !slices.Equal(two.Worktree.Copy, []string{"vendor/*"}) || two.Worktree.Link != nil {
		t.Errorf("two: %q %+v", two.Isolation, two.Worktree)
	}
	plain, err := Parse("f.yaml", []byte("version: 1\nagents:\n  a: {command: [x]}\ntasks:\n  - {id: t, prompt: p, agent: a}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Task("t").Isolation != IsolationInPlace || plain.Parallel != DefaultParallel {
		t.Errorf("default isolation %q, parallel %d", plain.Task("t").Isolation, plain.Parallel)
	}
	if f, err := Parse("f.yaml", []byte("version: 1\nparallel: 4\nagents:\n  a: {command: [x]}\ntasks:\n  - {id: t, prompt: p, agent: a}\n")); err != nil || f.Parallel != 4 {
		t.Errorf("parallel: 4 gave %v, %v", f, err)
	}
	for _, tc := range []struct{ src, want string }{
		{"isolation: container\n", "f.yaml:2:12: "},
		{"worktree: {copy: [../secrets]}\n", "is not a path or glob inside the working tree"},
		{"worktree: {copy: [/etc/passwd]}\n", "is not a path or glob inside the working tree"},
		{"worktree: {copy: [\"[\"]}\n", "is not a path or glob inside the working tree"},
		{"worktree: {cpy: [a]}\n", "unknown key `cpy` in `worktree`"},
		{"parallel: 0\n", "f.yaml:2:11: "},
		{"parallel: many\n", "must be a whole number"},
	} {
		_, err := Parse("f.yaml", []byte("version: 1\n"+tc.src+"agents:\n  a: {command: [x]}\ntasks:\n  - {id: t, prompt: p, agent: a}\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one containing %q", tc.src, err, tc.want)
		}
	}
}

// best_of (SPEC §4.1): a task's own, else the top level's, else 1; a race runs in worktrees, so
// it implies isolation: worktree and refuses a task's own in-place; bad values are authoring
// errors at their position.
func TestBestOfKey(t *testing.T) {
	src := `version: 1
best_of: 2
agents:
  a: {command: [x]}
tasks:
  - {id: one, prompt: p, agent: a}
  - {id: two, prompt: p, agent: a, best_of: 3}
  - {id: three, prompt: p, agent: a, best_of: 1, isolation: in-place}
`
	f, err := Parse("f.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id        string
		n         int
		isolation string
	}{{"one", 2, IsolationWorktree}, {"two", 3, IsolationWorktree}, {"three", 1, IsolationInPlace}} {
		if got := f.Task(tc.id); got.BestOf != tc.n || got.Isolation != tc.isolation {
			t.Errorf("%s: best_of %d isolation %q, want %d %q", tc.id, got.BestOf, got.Isolation, tc.n, tc.isolation)
		}
	}
	plain, err := Parse("f.yaml", []byte("version: 1\nagents:\n  a: {command: [x]}\ntasks:\n  - {id: t, prompt: p, agent: a}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Task("t").BestOf != 1 || plain.Task("t").Isolation != IsolationInPlace {
		t.Errorf("default best_of %d isolation %q", plain.Task("t").BestOf, plain.Task("t").Isolation)
	}
	for _, tc := range []struct{ top, task, want string }{
		{"best_of: 0\n", "", "f.yaml:2:10: `best_of` must be at least 1"},
		{"best_of: -2\n", "", "f.yaml:2:10: `best_of` must be at least 1"},
		{"best_of: many\n", "", "f.yaml:2:10: `best_of` must be a whole number"},
		{"best_of: 1.5\n", "", "f.yaml:2:10: `best_of` must be a whole number, not 1.5"},
		{"", ", best_of: 0", "f.yaml:5:43: `best_of` must be at least 1"},
		{"", ", best_of: x", "f.yaml:5:43: `best_of` must be a whole number"},
		{"", ", best_of: 2, isolation: in-place", "f.yaml:5:34: task `t` races 2 lanes (`best_of`) but asks to run in place"},
		{"best_of: 3\n", ", isolation: in-place", "task `t` races 3 lanes (the top level's `best_of`) but asks to run in place"},
	} {
		src := "version: 1\n" + tc.top + "agents:\n  a: {command: [x]}\ntasks:\n  - {id: t, prompt: p, agent: a" + tc.task + "}\n"
		_, err := Parse("f.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %q: error %v, want one containing %q", tc.top, tc.task, err, tc.want)
		}
	}
}
