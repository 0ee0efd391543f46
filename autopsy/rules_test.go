package autopsy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/scrub"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// att is a failed attempt of task fix with class, code and message; out is its output tail.
type att struct {
	class, code, msg, out, verify string
	ok                            bool // succeeded instead
	files                         int
	exitCode                      int // 0: none recorded
}

const taskFile = `version: 1
agents:
  fast: {preset: claude, command: [claude, -p, "{{prompt}}"]}
  gen: {command: [my-agent, "{{prompt}}"]}
  gem: {preset: gemini, command: [gemini, -p, "{{prompt}}"]}
  cx: {preset: codex}
  oc: {preset: opencode}
  cxnet: {preset: codex, command: [codex, exec, --json, --sandbox, workspace-write, -c, sandbox_workspace_write.network_access=true, "{{prompt}}"]}
  plain: {command: [go, test, ./...]}
tasks:
  - id: fix
    prompt: Fix the tests.
    agent: [fast, gen]
    timeout: 10m
    heartbeat: 2m
    verify: {command: [go, test, ./...]}
`

// mkFacts builds the facts of run k3f9abcd whose task fix had the given attempts, as gather
// would from the store.
func mkFacts(t *testing.T, reason string, atts ...att) *facts {
	t.Helper()
	file, err := taskfile.Parse("mulligan.yaml", []byte(taskFile))
	if err != nil {
		t.Fatal(err)
	}
	run := &store.Run{ID: "k3f9abcd", Worktree: "/src/proj", TaskFile: "mulligan.yaml", State: store.RunFailed, StartedAt: time.Unix(1e9, 0)}
	task := store.Task{RunID: run.ID, ID: "fix", State: store.TaskFailed, Reason: reason}
	f := &facts{run: run, file: file, def: file.Task("fix"), commands: map[string]bool{}, output: map[string]string{}, verifyOutput: map[string]string{}, scrub: scrub.New()}
	for i, a := range atts {
		sa := store.Attempt{RunID: run.ID, TaskID: "fix", N: i + 1, Agent: "fast", State: store.AttemptFailed,
			Class: a.class, Code: a.code, Message: a.msg, FilesChanged: store.Ptr(a.files), Prompt: "Fix the tests.\n",
			Ref: "refs/mulligan/runs/k3f9abcd/fix/" + string(rune('1'+i)) + "/post"}
		if a.ok {
			sa.State, sa.Class = store.AttemptSucceeded, ""
			f.passes++
		} else {
			f.failed = append(f.failed, sa)
		}
		task.Attempts = append(task.Attempts, sa)
		f.attempts = append(f.attempts, sa)
		f.output[key("fix", i+1)] = a.out
		f.verifyOutput[key("fix", i+1)] = a.verify
		if a.exitCode != 0 {
			sa := &f.failed[len(f.failed)-1]
			sa.ExitCode = store.Ptr(a.exitCode)
		}
	}
	f.setAsideDeaths()
	run.Tasks = []store.Task{task}
	if len(atts) > 0 {
		f.task = &run.Tasks[0]
	}
	return f
}

func TestRules(t *testing.T) {
	exit := func(msg string) att { return att{class: cAgentExit, code: "nonzero_exit", msg: msg} }
	rt := func(f *facts) *facts { f.commands["retry-task"] = true; return f }
	withBase := func(f *facts, exit int, out string) *facts {
		f.base = &baseVerify{ExitCode: exit, Output: out}
		return f
	}
	withExit := func(f *facts, codes ...int) *facts {
		for i := range f.failed {
			f.failed[i].ExitCode = store.Ptr(codes[i])
		}
		return f
	}
	verify := func(out string, files int) att {
		return att{class: cQuality, code: "verify_failed", msg: "verify `go test ./...` exited with status 1", verify: out, files: files}
	}
	const two = "--- FAIL: TestA (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL\n"
	const one = "--- FAIL: TestB (0.00s)\nFAIL\n"
	cases := []struct {
		rule   string
		facts  func(t *testing.T) *facts
		want   string   // category
		cmds   []string // the suggestion's commands, exactly
		inText string   // a phrase of the suggestion's text
	}{
		{"no-failure", func(t *testing.T) *facts { return mkFacts(t, "") }, NoFailure,
			[]string{"mulligan show k3f9abcd"}, "nothing to fix"},
		{"no-failure", func(t *testing.T) *facts {
			// The verify passed because the agent rewrote the script it runs and deleted a test.
			repo, pre, post := twoTrees(t,
				map[string]string{"verify.sh": "go test ./...\n", "calc/calc_test.go": "package calc\n", "calc/calc.go": "package calc\n"},
				map[string]string{"verify.sh": "exit 0\n", "calc/calc.go": "package calc // fixed\n"})
			os.Remove(filepath.Join(repo.Root(), "calc/calc_test.go"))
			post = writeTree(t, repo)
			f := mkFacts(t, "", att{ok: true, files: 2})
			f.def.Verify.Command = []string{"sh", "-c", "./verify.sh && echo ok"}
			f.repo, f.task, f.run.State = repo, nil, store.RunSucceeded
			f.run.Tasks[0].State = store.TaskSucceeded
			f.run.Tasks[0].Attempts[0].PreTree, f.run.Tasks[0].Attempts[0].Tree = pre, post
			return f
		}, NoFailure, []string{"mulligan diff --stat k3f9abcd/fix@1", "mulligan diff k3f9abcd/fix@1", "mulligan revert --pre k3f9abcd/fix@1"}, "weakening the check"},
		{"no-failure", func(t *testing.T) *facts {
			// A test file moved to another directory is not a deleted test: no doubt.
			repo, pre, post := twoTrees(t, map[string]string{"calc/calc_test.go": "package calc\n", "calc/calc.go": "package calc\n"}, map[string]string{"calc/v2/calc_test.go": "package calc\n"})
			os.Remove(filepath.Join(repo.Root(), "calc/calc_test.go"))
			post = writeTree(t, repo)
			f := mkFacts(t, "", att{ok: true, files: 2})
			f.repo, f.task, f.run.State = repo, nil, store.RunSucceeded
			f.run.Tasks[0].State = store.TaskSucceeded
			f.run.Tasks[0].Attempts[0].PreTree, f.run.Tasks[0].Attempts[0].Tree = pre, post
			return f
		}, NoFailure, []string{"mulligan show k3f9abcd"}, "nothing to fix"},
		{"internal-error", func(t *testing.T) *facts {
			f := mkFacts(t, "", exit("agent exited with status 1"), att{class: cInternal, code: "start_failed", msg: "could not start the agent: too many open files"})
			f.commands["bug"] = true
			return f
		}, ToolBug, []string{"mulligan bug k3f9abcd", "mulligan run fix"}, "mulligan bug"},
		{"apply-conflict", func(t *testing.T) *facts {
			f := mkFacts(t, reasonApply, att{class: cAgentExit, msg: "exit 1"}, att{ok: true, files: 2})
			f.task.State = store.TaskBlocked
			return f
		}, NoFailure, []string{"mulligan apply k3f9abcd/fix@2 --dry-run", "mulligan apply k3f9abcd/fix@2 --merge", "mulligan resume k3f9abcd"}, "merge the change with your version"},
		{"parallel-tasks-overlap", func(t *testing.T) *facts {
			// Two parallel worktree tasks edit the same line; docs was applied first.
			repo, pre, post := twoTrees(t, map[string]string{"src/limits.go": "const Max = 10\n"}, map[string]string{"src/limits.go": "const Max = 20\n"})
			f := mkFacts(t, reasonApply, att{ok: true, files: 1})
			f.repo = repo
			f.task.State = store.TaskBlocked
			f.task.Attempts[0].PreTree, f.task.Attempts[0].Tree = pre, post
			other := store.Task{RunID: f.run.ID, ID: "docs", State: store.TaskSucceeded,
				Attempts: []store.Attempt{{RunID: f.run.ID, TaskID: "docs", N: 1, State: store.AttemptSucceeded, PreTree: pre, Tree: post}}}
			f.run.Tasks = append(f.run.Tasks, other)
			f.task = &f.run.Tasks[0]
			return f
		}, WorkflowBug, []string{"mulligan apply k3f9abcd/fix@1 --dry-run", "mulligan apply k3f9abcd/fix@1 --merge", "mulligan resume k3f9abcd"}, "needs: [docs]"},
		{"verify-needs-missing-ref", func(t *testing.T) *facts {
			v := att{class: cQuality, code: "verify_failed", msg: "verify `sh scripts/check-changelog.sh` exited with status 128", files: 1,
				verify: "fatal: ambiguous argument 'origin/main...HEAD': unknown revision or path not in the working tree.\nUse '--' to separate paths from revisions\n"}
			return mkFacts(t, "", v, v)
		}, WorkflowBug, []string{"mulligan run fix"}, "a ref this clone has"},
		{"run-aborted-lacks-program", func(t *testing.T) *facts {
			// A git-crypt clean filter the machine cannot run: no snapshot, no attempt.
			f := mkFacts(t, "")
			f.run.Reason = "internal"
			f.events = []store.Event{{Type: store.EventRunStateChanged, Payload: []byte(`{"to":"failed","message":"base snapshot: clean filter 'git-crypt' failed: exit status 127: sh: 1: git-crypt: not found"}`)}}
			return f
		}, Environment, []string{"sudo apt-get install -y git-crypt", "mulligan run"}, "install git-crypt"},
		{"run-aborted", func(t *testing.T) *facts {
			f := mkFacts(t, "")
			f.events = []store.Event{{Type: store.EventRunStateChanged, Payload: []byte(`{"to":"failed","message":"store: database is locked"}`)}}
			return f
		}, ToolBug, []string{"mulligan run"}, "mulligan's own error"},
		{"submodule-not-checked-out", func(t *testing.T) *facts {
			// rust-lang/cargo: a path dependency in a submodule never initialised.
			repo, pre, post := twoTrees(t, map[string]string{".gitmodules": "[submodule \"third_party/proj-sys\"]\n\tpath = third_party/proj-sys\n\turl = https://github.com/georust/proj-sys.git\n", "src/lib.rs": "\n"},
				map[string]string{".gitmodules": "[submodule \"third_party/proj-sys\"]\n\tpath = third_party/proj-sys\n\turl = https://github.com/georust/proj-sys.git\n", "src/lib.rs": "fn a() {}\n"})
			out := "error: failed to get `proj-sys` as a dependency of package `tilekit v0.4.2`\n\nCaused by:\n  failed to read `/home/dev/src/tilekit/third_party/proj-sys/Cargo.toml`\n\nCaused by:\n  No such file or directory (os error 2)\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `cargo test` exited with status 101", files: 1, verify: out}
			return onTrees(mkFacts(t, "", v, v), repo, pre, post)
		}, Environment, []string{"git submodule update --init --recursive", "mulligan run fix"}, "check the submodules out"},
		{"agent-lacks-program", func(t *testing.T) *facts {
			// The agent's go generate needs mockgen, which the machine lacks; it says so.
			out := `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"internal/store/store.go:3: running \"mockgen\": exec: \"mockgen\": executable file not found in $PATH","is_error":true}]}}` + "\n" +
				`{"type":"result","subtype":"success","is_error":false,"result":"I couldn't regenerate the mock: mockgen isn't installed. Install it with ` + "`go install go.uber.org/mock/mockgen@v0.5.0`" + ` and run go generate."}` + "\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `go vet ./...` exited with status 1", files: 1, out: out, verify: "vet: internal/janitor/janitor_test.go:24:18: cannot use m (variable of type *store.MockStore) as store.Store value\n"}
			return mkFacts(t, "", v, v)
		}, Environment, []string{"go install go.uber.org/mock/mockgen@v0.5.0", "mulligan run fix"}, "install mockgen"},
		{"verify-misses-new-file", func(t *testing.T) *facts {
			// NixOS/nix: a flake sees only the files git tracks; the attempt's new module is not.
			repo, pre, post := twoTrees(t, map[string]string{"flake.nix": "{}\n"}, map[string]string{"flake.nix": "{ imports = [ ./modules/metrics.nix ]; }\n", "modules/metrics.nix": "{}\n"})
			out := "error: getting status of '/nix/store/qk3v0l8r1b6m2yz5c9xw4fhd7ajn0s2p-source/modules/metrics.nix': No such file or directory\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `nix flake check` exited with status 1", files: 2, verify: out}
			f := mkFacts(t, "", v, v)
			f.base = &baseVerify{ExitCode: 0, Output: "all checks passed\n"}
			return onTrees(f, repo, pre, post)
		}, WorkflowBug, []string{"mulligan run fix"}, "git add -A"},
		{"prompt-forbids-the-fix", func(t *testing.T) *facts {
			out := `{"type":"result","subtype":"success","is_error":false,"result":"I added the archived scope.\n\nNote: db/schema.rb has no archived_at column, and the task says not to touch db/ (schema changes go through DBA review), so I did not create a migration."}` + "\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `bin/rails test` exited with status 1", files: 1, out: out, verify: "PG::UndefinedColumn: ERROR:  column projects.archived_at does not exist\n"}
			f := mkFacts(t, "", v, v)
			f.def.Prompt = "Add soft archiving to projects. Only edit app/models/project.rb; do not touch anything under db/ (schema changes go through DBA review)."
			return f
		}, WorkflowBug, []string{"mulligan run fix"}, "allow the change in db/"},
		{"prompt-forbids-the-fix", func(t *testing.T) *facts {
			// kubebuilder's `make manifests && git diff --exit-code config/`: the new field makes
			// the generated CRD out of date, and the prompt forbids touching config/.
			repo, pre, post := twoTrees(t, map[string]string{"api/v1/cache_types.go": "type CacheSpec struct{}\n"}, map[string]string{"api/v1/cache_types.go": "type CacheSpec struct{ MaxConnections int32 }\n"})
			out := "diff --git a/config/crd/bases/cache.example.io_caches.yaml b/config/crd/bases/cache.example.io_caches.yaml\n+              maxConnections:\nmake: *** [Makefile:57: verify-manifests] Error 1\n"
			f := mkFacts(t, "", verify(out, 1), verify(out, 1))
			f.def.Prompt = "Add an optional maxConnections field to CacheSpec in api/v1. Only edit api/; do not touch config/ (generated files)."
			return onTrees(f, repo, pre, post)
		}, WorkflowBug, []string{"mulligan run fix"}, "allow the change in config/"},
		{"prompt-forbids-the-fix", func(t *testing.T) *facts {
			// `alembic check` wants the revision the prompt leaves to the DBAs; the agent says so.
			out := `{"type":"result","subtype":"success","is_error":false,"result":"I added last_login to User. As instructed I did not create an Alembic revision under migrations/, so alembic check will report the new column."}` + "\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `alembic check` exited with status 255", files: 1, out: out, verify: "FAILED: New upgrade operations detected: [('add_column', None, 'users', Column('last_login', DateTime()))]\n"}
			f := mkFacts(t, "", v, v)
			f.def.Prompt = "Add a nullable last_login column to the User model. Do not add or edit anything under migrations/ — the DBA team writes all migrations."
			return f
		}, WorkflowBug, []string{"mulligan run fix"}, "allow the change in migrations/"},
		{"prompt-forbids-the-fix", func(t *testing.T) *facts {
			// The forbidden thing is a phrase, its last word what the agent names.
			out := `{"type":"message","role":"assistant","content":"I added TrackingNumber. has-pending-model-changes now needs a new migration, but you told me not to add or change migrations, so I stopped there."}` + "\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `sh verify.sh` exited with status 1", files: 1, out: out, verify: "Build succeeded.\nChanges have been made to the model since the last migration. Add a new migration.\n"}
			f := mkFacts(t, "", v, v)
			f.def.Prompt = "Add a required TrackingNumber (string, max 32) to Shipment. Do not add or change EF Core migrations."
			return f
		}, WorkflowBug, []string{"mulligan run fix"}, "allow the change in EF Core migrations"},
		{"prompt-forbids-the-fix", func(t *testing.T) *facts {
			// "any file under invoicing/migrations/", and the agent names the migration it left out.
			out := `{"type":"result","subtype":"success","is_error":false,"result":"I added Invoice.currency. As instructed I did not create a migration file, so makemigrations --check will report the pending migration."}` + "\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `python manage.py makemigrations --check` exited with status 1", files: 1, out: out, verify: "Migrations for 'invoicing':\n  invoicing/migrations/0014_invoice_currency.py\n    - Add field currency to invoice\n"}
			f := mkFacts(t, "", v, v)
			f.def.Prompt = "Add a currency CharField to invoicing.models.Invoice. Only edit invoicing/models.py; do not add or change any file under invoicing/migrations/."
			return f
		}, WorkflowBug, []string{"mulligan run fix"}, "allow the change in invoicing/migrations/"},
		{"verify-script-crlf", func(t *testing.T) *facts {
			// A verify script committed with CRLF endings, run as ./ci/test.sh (microsoft/WSL#2318).
			v := att{class: cQuality, code: "verify_failed", msg: "verify `./ci/test.sh` exited with status 127", files: 1, verify: "/usr/bin/env: 'bash\\r': No such file or directory\n"}
			f := mkFacts(t, "", v, v)
			f.def.Verify.Command = []string{"./ci/test.sh"}
			return f
		}, WorkflowBug, []string{`sed -i 's/\r$//' ci/test.sh`, "mulligan run fix"}, "eol=lf"},
		{"verify-refuses-the-ask", func(t *testing.T) *facts {
			// buf breaking refuses the rename the prompt asks for, on every attempt.
			v := att{class: cQuality, code: "verify_failed", msg: "verify `buf breaking` exited with status 100", files: 2,
				verify: "proto/shipment/v1/shipment.proto:14:29:Field \"4\" on message \"Shipment\" changed name from \"eta\" to \"estimated_arrival\".\n"}
			f := rt(mkFacts(t, "", v, v))
			f.def.Prompt = "Rename the field `eta` of message Shipment to `estimated_arrival` and regenerate the Go code."
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "make the task and its verify agree"},
		{"verify-asks-a-step", func(t *testing.T) *facts {
			// lit/lit#2544: the tests pass, `changeset status` wants a changeset the prompt never
			// asks for; the untouched tree has nothing to record and passes.
			out := " Test Files  2 passed (2)\n      Tests  11 passed (11)\n\n> changeset \"status\" \"--since=main\"\n\n🦋  error Some packages have been changed but no changesets were found. Run `changeset add` to resolve this error.\n🦋  error If this change doesn't need a release, run `changeset add --empty`.\n"
			f := rt(mkFacts(t, "no-progress", verify(out, 1), verify(out, 1)))
			f.def.Prompt = "withRetry in packages/http-retry retries one time too many; fix it so the package tests pass."
			return withBase(f, 0, " Test Files  2 passed (2)\n")
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "changeset add"},
		{"verify-lacks-flag", func(t *testing.T) *facts {
			// Deno 2's NotCapable: the verify's `deno test` grants no read access.
			out := "running 3 tests from ./src/config_test.ts\nloadConfig reads port ... FAILED (4ms)\n\nerror: NotCapable: Requires read access to \"./fixtures/config.json\", run again with the --allow-read flag\n"
			return withBase(rt(mkFacts(t, "", verify(out, 1), verify(out, 1))), 1, out)
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "add --allow-read"},
		{"verify-lacks-flag", func(t *testing.T) *facts {
			// pytest-django without a settings module: every test errors at collection.
			out := "E   django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but settings are not configured. You must either define the environment variable DJANGO_SETTINGS_MODULE or call settings.configure() before accessing settings.\n"
			return withBase(rt(mkFacts(t, "", verify(out, 1), verify(out, 1))), 2, out)
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "DJANGO_SETTINGS_MODULE"},
		{"runner-died-repeatedly", func(t *testing.T) *facts {
			return mkFacts(t, reasonResume, att{class: cRunnerDied, msg: "the mulligan process died during the attempt"})
		}, ToolBug, []string{"mulligan events k3f9abcd"}, "what killed mulligan"},
		{"authoring-error", func(t *testing.T) *facts {
			return rt(mkFacts(t, "", att{class: cAuthoring, msg: "mulligan.yaml:3:5: unknown key"}))
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "fix the task file"},
		{"authoring-error", func(t *testing.T) *facts {
			// failed before any attempt: the runner recorded it on the task
			f := rt(mkFacts(t, ""))
			f.run.Tasks = []store.Task{{RunID: f.run.ID, ID: "fix", State: store.TaskFailed, Reason: "authoring"}}
			f.task = &f.run.Tasks[0]
			f.before = store.Attempt{TaskID: "fix", Class: cAuthoring, Code: "prompt_file", Message: "task fix: prompt_file p.md is empty"}
			f.def.PromptFile = "p.md"
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix"}, "write the task's instructions into p.md"},
		{"empty-prompt", func(t *testing.T) *facts {
			f := rt(mkFacts(t, "", att{class: cPayload, code: "is_error", msg: "claude: what should I do?"}))
			f.failed[0].Prompt, f.attempts[0].Prompt = "\n", "\n"
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "give task fix a prompt"},
		{"auth", func(t *testing.T) *facts {
			return rt(mkFacts(t, "", att{class: cAuth, code: "not_logged_in", msg: "Invalid API key · Please run /login"}))
		}, Environment, []string{"claude /login", "mulligan retry-task k3f9abcd fix"}, "log claude in"},
		{"agent-missing", func(t *testing.T) *facts {
			f := mkFacts(t, "", att{class: cMissing, code: "not_found", msg: "agent command not found"})
			f.failed[0].Agent = "gen"
			return f
		}, Environment, []string{"command -v my-agent", "mulligan run fix"}, "install my-agent"},
		{"agent-runtime-missing", func(t *testing.T) *facts {
			return withExit(rt(mkFacts(t, "", exit("agent exited with status 127: /usr/bin/env: 'node': No such file or directory"))), 127)
		}, Environment, []string{"command -v node", "mulligan retry-task k3f9abcd fix"}, "install node"},
		{"provider-failed-quietly", func(t *testing.T) *facts {
			out := "litellm.InternalServerError: AnthropicException - Overloaded\nThe API provider's servers are down or overloaded.\n"
			return rt(mkFacts(t, "", att{class: cQuality, code: "verify_failed", msg: "verify exited with status 1", out: out}, att{class: cQuality, code: "verify_failed", msg: "verify exited with status 1", out: out}))
		}, AgentFlake, []string{"mulligan retry-task k3f9abcd fix"}, "transient"},
		{"hung-in-command", func(t *testing.T) *facts {
			hb := func(cmd string) att {
				return att{class: cHeartbeat, code: "silent", msg: "the agent printed nothing for longer than the heartbeat", files: 1,
					out: `{"type":"item.completed","item":{"type":"file_change"}}` + "\n" + `{"type":"item.started","item":{"id":"item_5","type":"command_execution","command":"` + cmd + `","status":"in_progress"}}` + "\n"}
			}
			return rt(mkFacts(t, "", hb("bash -lc 'git commit -am wip'"), hb("bash -lc 'git push'")))
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload", "mulligan logs k3f9abcd/fix@2"}, "unattended"},
		{"waits-for-login", func(t *testing.T) *facts {
			out := "Code Assist login required.\nAttempting to open authentication page in your browser.\nWaiting for authentication...\n"
			f := rt(mkFacts(t, "", att{class: cHeartbeat, code: "silent", msg: "the agent printed nothing for longer than the heartbeat", out: out}))
			f.failed[0].Agent = "gem"
			return f
		}, Environment, []string{"gemini", "mulligan retry-task k3f9abcd fix"}, "sign-in method"},
		{"agent-needs-terminal", func(t *testing.T) *facts {
			out := "Error: Raw mode is not supported on the current process.stdin, which Ink uses as input stream by default.\n    at handleSetRawMode (file:///usr/lib/node_modules/@anthropic-ai/claude-code/cli.js:1:1)\n"
			m := "agent exited with status 1: at handleSetRawMode (file:///usr/lib/node_modules/@anthropic-ai/claude-code/cli.js:1:1)"
			return rt(mkFacts(t, "", att{class: cAgentExit, msg: m, out: out}, att{class: cAgentExit, msg: m, out: out}))
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "headless"},
		{"verify-blames-machine", func(t *testing.T) *facts {
			out := "error: the PHP extension intl is not installed on this machine\nhint: run `sudo apt-get install php8.3-intl`\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `composer test` exited with status 1", verify: out}
			return rt(mkFacts(t, "", v, v))
		}, Environment, []string{"sudo apt-get install php8.3-intl", "mulligan retry-task k3f9abcd fix"}, "tool's own advice"},
		{"verify-blames-machine", func(t *testing.T) *facts {
			// hashicorp/terraform#27046: no AWS credentials on the machine, on the base tree too.
			out := "Error: No valid credential sources found\n\n  with provider[\"registry.terraform.io/hashicorp/aws\"],\n  on main.tf line 10, in provider \"aws\":\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `terraform plan` exited with status 1", verify: out}
			f := rt(mkFacts(t, "", v, v))
			f.base = &baseVerify{ExitCode: 1, Output: out}
			return f
		}, Environment, []string{"aws configure", "mulligan retry-task k3f9abcd fix"}, "tool's own advice"},
		{"verify-terminated", func(t *testing.T) *facts {
			v := att{class: cQuality, code: "verify_failed", msg: "verify `go test ./...` exited with status 143", verify: "=== RUN   TestSync\nTerminated\n"}
			return rt(mkFacts(t, "", v, v))
		}, Unknown, []string{"mulligan logs k3f9abcd/fix@2", "mulligan retry-task k3f9abcd fix"}, "sent the signal"},
		{"verify-segfault", func(t *testing.T) *facts {
			v := att{class: cQuality, code: "verify_failed", msg: "verify `pytest -q` exited with status 139", verify: "tests/test_io.py Fatal Python error: Segmentation fault\n"}
			return rt(mkFacts(t, "", v, v))
		}, Unknown, []string{"mulligan show k3f9abcd", "mulligan logs k3f9abcd/fix@2"}, "native stack"},
		{"prompt-asks-missing-version", func(t *testing.T) *facts {
			v := att{class: cQuality, code: "verify_failed", msg: "verify `pytest` exited with status 1", verify: "ERROR: Could not find a version that satisfies the requirement sqlalchemy==9.0.0\nERROR: No matching distribution found for sqlalchemy==9.0.0\n"}
			f := rt(mkFacts(t, "", v, v))
			f.def.Prompt = "Pin sqlalchemy==9.0.0 and port the models."
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "version that exists"},
		{"prompt-asks-conflicting-versions", func(t *testing.T) *facts {
			v := att{class: cQuality, code: "verify_failed", msg: "verify `uv lock` exited with status 1", verify: "  × No solution found when resolving dependencies:\n  ╰─▶ Because pandas==2.2.2 depends on numpy>=1.26.0 and your project\n      depends on numpy>=1.23,<1.25, we can conclude that your project's requirements are unsatisfiable.\n"}
			f := rt(mkFacts(t, "", v, v))
			f.def.Prompt = "Upgrade pandas to 2.2.2. Keep numpy below 1.25."
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "pandas and numpy"},
		{"worktree-lacks-setup", func(t *testing.T) *facts {
			v := att{class: cQuality, code: "verify_failed", msg: "verify `cargo test` exited with status 101", verify: "error: the environment variable DATABASE_URL is not set\n"}
			f := rt(mkFacts(t, "", v, v))
			f.def.Isolation = taskfile.IsolationWorktree
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "worktree"},
		{"credit-exhausted", func(t *testing.T) *facts {
			return rt(mkFacts(t, "quota", att{class: cQuota, code: "credit", msg: "claude: Credit balance is too low"}))
		}, Environment, []string{"xdg-open https://console.anthropic.com/settings/billing", "mulligan retry-task k3f9abcd fix"}, "console.anthropic.com"},
		{"auth", func(t *testing.T) *facts {
			// gemini's key expired: a sign-in does not replace a key the environment sets.
			f := rt(mkFacts(t, "", att{class: cAuth, code: "invalid_key", msg: "gemini: API key expired. Please renew the API key."}))
			f.failed[0].Agent = "gem"
			return f
		}, Environment, []string{"xdg-open https://aistudio.google.com/apikey", "mulligan retry-task k3f9abcd fix"}, "GEMINI_API_KEY"},
		{"quota", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cQuota, msg: "usage limit reached, resets at 3pm"})
		}, Environment, []string{"mulligan resume k3f9abcd"}, "wait for the limit"},
		{"quota", func(t *testing.T) *facts {
			f := mkFacts(t, "quota", att{class: cQuota, msg: "usage limit reached"})
			f.commands["supervise"] = true
			f.clock = func() time.Time { return time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) }
			f.task.ResumeAt = store.Ptr(time.Date(2026, 1, 1, 15, 0, 0, 0, time.UTC))
			return f
		}, Environment, []string{"mulligan supervise -r k3f9abcd  # waits for the quota's reset (2026-01-01 15:00 UTC), then resumes the run", "mulligan resume k3f9abcd --now"}, "resets at 2026-01-01T15:00:00Z"},
		{"untrusted-folder", func(t *testing.T) *facts {
			f := rt(mkFacts(t, "", exit("gemini: Gemini CLI is not running in a trusted directory.")))
			f.failed[0].Code = "untrusted_folder"
			f.failed[0].Agent = "gem"
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "--skip-trust"},
		{"heartbeat-too-short", func(t *testing.T) *facts {
			// A heartbeat of seconds: every attempt stopped while its model thought.
			f := rt(mkFacts(t, "", att{class: cHeartbeat, msg: "silent", out: "Reading a.go\n"}, att{class: cHeartbeat, msg: "silent", out: "Running tests\n"}))
			f.def.Heartbeat = time.Second
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "raise `heartbeat`"},
		{"tests-pull-apart", func(t *testing.T) *facts {
			// Two tests pin one call to two outputs; the attempts take turns, the agent says so.
			en := "--- FAIL: TestThousandsEN (0.00s)\n    format_test.go:9: got \"1.234,50\", want \"1,234.50\"\nFAIL\n"
			de := "--- FAIL: TestThousandsDE (0.00s)\n    format_test.go:15: got \"1,234.50\", want \"1.234,50\"\nFAIL\n"
			a, b := verify(de, 1), verify(en, 1)
			b.out = "The two tests contradict each other: no implementation without a locale parameter can satisfy both.\n"
			return withBase(rt(mkFacts(t, "", a, b)), 1, en+de)
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "which behaviour"},
		{"agent-sandbox", func(t *testing.T) *facts {
			f := withExit(rt(mkFacts(t, "", exit("gemini: Sandbox image missing"))), 44)
			f.failed[0].Agent = "gem"
			return f
		}, Environment, []string{"docker info", "mulligan retry-task k3f9abcd fix"}, "container runtime"},
		{"agent-config", func(t *testing.T) *facts {
			f := withExit(rt(mkFacts(t, "", exit("gemini: Reached max session turns"))), 53)
			f.failed[0].Agent = "gem"
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "maxSessionTurns"},
		{"context-window", func(t *testing.T) *facts {
			return rt(mkFacts(t, "", exit("agent exited with status 1: Prompt is too long")))
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "split task fix"},
		{"disk-full", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cAgentExit, msg: "agent exited with status 1", out: "write x: no space left on device\n"})
		}, Environment, []string{"df -h /src/proj", "mulligan run fix"}, "free space"},
		{"verify-tool-missing", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cQuality, code: "verify_failed", msg: "verify exited with status 127", verify: "sh: 1: go: not found\n", files: 1})
		}, Environment, []string{"sudo apt-get install -y golang-go", "mulligan run fix"}, "install go"},
		{"tls", func(t *testing.T) *facts {
			m := "claude: API Error: Unable to connect to API: Self-signed certificate detected"
			return mkFacts(t, "", att{class: cTransport, msg: m}, att{class: cTransport, msg: m})
		}, Environment, []string{"NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt mulligan run fix"}, "system's CA store"},
		{"service-down", func(t *testing.T) *facts {
			out := "--- FAIL: TestDB (0.00s)\n    db_test.go:9: dial tcp 127.0.0.1:5432: connect: connection refused\n"
			return withBase(mkFacts(t, "", verify(out, 2)), 1, out)
		}, Environment, []string{"sudo systemctl start postgresql", "mulligan run fix"}, "start PostgreSQL"},
		{"service-down", func(t *testing.T) *facts {
			// curl 7.88 and later say "Couldn't connect to server" for a refused connection.
			out := "curl: (7) Failed to connect to localhost port 8080 after 0 ms: Couldn't connect to server\n"
			return withBase(mkFacts(t, "", verify(out, 2), verify(out, 2)), 7, out)
		}, Environment, []string{"ss -ltnp 'sport = :8080'", "mulligan run fix"}, "8080"},
		{"service-down", func(t *testing.T) *facts {
			// grpc-go's dial of a service on a port of the ephemeral range (gRPC's 50051), the
			// same port refused on the base and after the attempts.
			out := "--- FAIL: TestGetStock (0.00s)\n    stock_test.go:21: rpc error: code = Unavailable desc = connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:50051: connect: connection refused\"\n"
			return withBase(mkFacts(t, "", verify(out, 2)), 1, out)
		}, Environment, []string{"ss -ltnp 'sport = :50051'", "mulligan run fix"}, "start the service on port 50051"},
		{"service-down", func(t *testing.T) *facts {
			// The base fails the type check the task is to fix; the last two attempts get past it
			// and find no Docker for testcontainers (testcontainers-python#830).
			mypy := "app/quota.py:9: error: Item \"None\" of \"Tenant | None\" has no attribute \"seat_limit\"  [union-attr]\nFound 1 error in 1 file\n"
			docker := "E   docker.errors.DockerException: Error while fetching server API version: ('Connection aborted.', FileNotFoundError(2, 'No such file or directory'))\nERROR tests/test_seats.py::test_add - docker.errors.DockerException: Error while fetching server API version\n"
			return withBase(mkFacts(t, "", verify(mypy, 1), verify(docker, 1), verify(docker, 1)), 1, mypy)
		}, Environment, []string{"sudo systemctl start docker", "mulligan run fix"}, "the Docker daemon"},
		{"service-down", func(t *testing.T) *facts {
			// sqlx's macros check their queries against DATABASE_URL as they compile; the
			// database refuses on the base as after the attempts.
			out := "   Compiling orders-api v0.3.1 (/src/orders-api)\nerror: error communicating with database: Connection refused (os error 111)\n  --> src/db/orders.rs:27:17\nerror: could not compile `orders-api` (lib) due to 2 previous errors\n"
			return withBase(mkFacts(t, "", verify(out, 1), verify(out, 1)), 101, out)
		}, Environment, []string{`pg_isready -d "$DATABASE_URL"  # start the database it names, or build offline with SQLX_OFFLINE=true and cargo sqlx prepare`, "mulligan run fix"}, "DATABASE_URL"},
		{"build-file-fails-here", func(t *testing.T) *facts {
			// tonybanters/oxwm#149: a build.zig for Zig 0.14 under 0.13.
			out := "/home/kr/src/ringz/build.zig:13:10: error: no field named 'root_module' in struct 'Build.TestOptions'\n        .root_module = ring_mod,\n/usr/lib/zig/std/Build.zig:843:25: note: struct declared here\n"
			return withBase(mkFacts(t, "", verify(out, 1), verify(out, 2)), 1, out)
		}, Environment, []string{"zig version  # the version the project's build file is written for?", "mulligan run fix"}, "version of the build tool"},
		{"failover-target-logged-out", func(t *testing.T) *facts {
			// openai/codex#6498: the strong rung's login lapsed; the cheap one kept failing.
			const jest = "  ● parseDate › keeps the wall-clock time\n\n    expect(received).toBe(expected)\n"
			f := mkFacts(t, "no-progress", verify(jest, 1), att{class: cAuth, code: "auth", msg: "codex: Your access token could not be refreshed because your refresh token was already used. Please log out and sign in again."}, verify(jest, 1))
			f.def.Agents = []string{"fast", "cx"}
			f.failed[1].Agent, f.attempts[1].Agent = "cx", "cx"
			return f
		}, Environment, []string{"codex login", "mulligan run fix"}, "then run the task again"},
		{"agent-sandbox-cannot-start", func(t *testing.T) *facts {
			// openai/codex#17539: bubblewrap on Ubuntu 24.04.
			out := `{"type":"item.completed","item":{"type":"command_execution","command":"bash -lc 'cat billing/invoice.py'","aggregated_output":"bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted\n","exit_code":1,"status":"failed"}}`
			a := verify("--- FAIL: TestTotal (0.00s)\n    invoice_test.go:33: got 0.25, want 0.26\n", 0)
			a.out = out
			return mkFacts(t, "", a, a)
		}, Environment, []string{"sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0  # bwrap's user namespaces", "mulligan run fix"}, "namespaces"},
		{"agent-killed", func(t *testing.T) *facts {
			return withExit(mkFacts(t, "", exit("agent exited with status 137"), exit("agent exited with status 137")), 137, 137)
		}, Unknown, []string{"journalctl -k --since -1d | grep -iE 'out of memory|killed process'", "mulligan run fix"}, "kernel's log"},
		{"lock-held", func(t *testing.T) *facts {
			// hashicorp/terraform#22410: the state lock another run holds.
			out := "╷\n│ Error: Error acquiring the state lock\n│ \n│ Error message: operation error DynamoDB: PutItem, https response error StatusCode: 400, ConditionalCheckFailedException: The conditional request failed\n│ Lock Info:\n│   ID:        9db3bc2c-8ef4-2a0c-3a67-21c1bb5e4b55\n│   Who:       ci@ci-runner-07\n╵\n"
			return withBase(mkFacts(t, "", verify(out, 2), verify(out, 2)), 1, out)
		}, Environment, []string{"terraform force-unlock 9db3bc2c-8ef4-2a0c-3a67-21c1bb5e4b55  # only once the run it names (Who:) has ended", "mulligan run fix"}, "holds the lock"},
		{"lock-held", func(t *testing.T) *facts {
			// DuckDB's single-writer lock, held by another process it names (duckdb/duckdb#8040).
			out := "Runtime Error in model stg_orders (models/staging/stg_orders.sql)\n  IO Error: Could not set lock on file \"/src/wh/warehouse.duckdb\": Conflicting lock is held in /usr/bin/python3.12 (PID 48213) by user ana. See also https://duckdb.org/docs/stable/connect/concurrency\n"
			return withBase(mkFacts(t, "", verify(out, 2), verify(out, 2)), 1, out)
		}, Environment, []string{"ps -o pid,args -p 48213  # the process holding the lock (DuckDB names it)", "mulligan run fix"}, "holds the lock"},
		{"permission-denied", func(t *testing.T) *facts {
			return mkFacts(t, "", exit("agent exited with status 1: Permission denied (os error 13)"), exit("agent exited with status 1: Permission denied (os error 13)"))
		}, Environment, []string{"ls -ld /src/proj", "mulligan run fix"}, "writable"},
		{"network", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cTransport, msg: "curl: (6) Could not resolve host: api.example.com"}, att{class: cTransport, msg: "fetch failed"})
		}, Environment, []string{"curl -sSI https://api.example.com", "mulligan run fix"}, "then DNS"},
		{"network", func(t *testing.T) *facts {
			// pypa/pip behind a proxy that refuses: the proxy is what to check, not a host.
			out := "WARNING: Retrying (Retry(total=0, connect=None, read=None, redirect=None, status=None)) after connection broken by 'ProxyError('Cannot connect to proxy.', NewConnectionError('<pip._vendor.urllib3.connection.HTTPSConnection object at 0x7f3a2c1d7880>: Failed to establish a new connection: [Errno 111] Connection refused'))': /simple/hl7apy/\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `pip install -r requirements.txt` exited with status 1", verify: out}
			return mkFacts(t, "", v, v)
		}, Environment, []string{"env | grep -i _proxy  # the proxy this machine's tools go through, which refused them", "mulligan run fix"}, "the proxy"},
		{"network", func(t *testing.T) *facts {
			// The first attempt got through and failed the verify; the run stopped on the
			// agent's connection, refused twice.
			refused := att{class: cTransport, msg: "claude: API Error: Unable to connect to API (ConnectionRefused)"}
			return mkFacts(t, "", verify(one, 1), refused, refused)
		}, Environment, []string{"curl -sSI https://api.anthropic.com", "mulligan run fix"}, "then DNS"},
		{"network", func(t *testing.T) *facts {
			// go test whose modules could not be fetched: its "[setup failed]" mark names no
			// build error of the code; the lookup above it is why, on the base as after the attempts.
			out := "cmd/snapctl/main.go:9:2: github.com/spf13/cobra@v1.8.1: Get \"https://proxy.golang.org/github.com/spf13/cobra/@v/v1.8.1.zip\": dial tcp: lookup proxy.golang.org on 127.0.0.53:53: server misbehaving\nFAIL\tgithub.com/tidewell/snapctl/cmd/snapctl [setup failed]\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `go test ./...` exited with status 1", verify: out}
			return withBase(mkFacts(t, "", v, v), 1, out)
		}, Environment, []string{"curl -sSI https://proxy.golang.org", "mulligan run fix"}, "network"},
		{"provider-flake", func(t *testing.T) *facts {
			// A refused connection once, on the way: not the network the run stopped on.
			return mkFacts(t, "", verify(one, 1), att{class: cTransport, msg: "claude: API Error: Unable to connect to API (ConnectionRefused)"}, att{class: cTransport, msg: "overloaded"})
		}, AgentFlake, []string{"mulligan run fix"}, "transient"},
		{"provider-flake", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cTransport, msg: "overloaded"}, att{class: cTransport, msg: "502 bad gateway"})
		}, AgentFlake, []string{"mulligan run fix"}, "transient"},
		{"timeout-too-short", func(t *testing.T) *facts {
			f := rt(mkFacts(t, "", att{class: cTimeout, msg: "ran past its timeout", files: 7}, att{class: cTimeout, msg: "ran past its timeout", files: 7}))
			for i := range f.failed {
				f.failed[i].DurationMS = store.Ptr(int64(10*60*1000 + 500))
			}
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "raise `timeout` of task fix in mulligan.yaml (now 10m0s)"},
		{"stuck-on-input", func(t *testing.T) *facts {
			return rt(mkFacts(t, "", att{class: cHeartbeat, msg: "silent", out: "Thinking about the parser\n"}, att{class: cHeartbeat, msg: "silent", out: "Thinking about the parser\n"}))
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "non-interactively"},
		{"worktree-lacks-dependencies", func(t *testing.T) *facts {
			f := rt(mkFacts(t, "", verify("sh: 1: vitest: not found\n", 1), verify("sh: 1: vitest: not found\n", 1)))
			f.def.Isolation = "worktree"
			return withBase(f, 127, "sh: 1: vitest: not found\n")
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "link: [node_modules]"},
		{"verify-says-nothing", func(t *testing.T) *facts {
			return mkFacts(t, "", verify("make: *** [Makefile:12: test] Error 2\n", 1), verify("make: *** [Makefile:12: test] Error 2\n", 2))
		}, Unknown, []string{"mulligan logs k3f9abcd/fix@2", "mulligan diff k3f9abcd/fix@2"}, "by hand"},
		{"machine-lacks", func(t *testing.T) *facts {
			out := "go: go.mod requires go >= 1.24 (running go 1.22.5; GOTOOLCHAIN=local)\n"
			return rt(withBase(mkFacts(t, "", verify(out, 1), verify(out, 2)), 1, out))
		}, Environment, []string{"go env -w GOTOOLCHAIN=go1.24+auto", "mulligan retry-task k3f9abcd fix"}, "Go 1.24 or later"},
		{"tool-not-logged-in", func(t *testing.T) *facts {
			m := "claude: the PR could not be opened: gh is not authenticated (gh auth login)"
			return rt(mkFacts(t, "", att{class: cPayload, code: "is_error", msg: m, files: 1}, att{class: cPayload, code: "is_error", msg: m + ".", files: 1}))
		}, Environment, []string{"gh auth login", "mulligan retry-task k3f9abcd fix"}, "log in"},
		{"paused", func(t *testing.T) *facts {
			f := mkFacts(t, "", att{class: cCancel, msg: "the attempt was cancelled"})
			f.run.State = "paused"
			return f
		}, NoFailure, []string{"mulligan resume k3f9abcd"}, "resume"},
		{"still-running", func(t *testing.T) *facts {
			f := rt(mkFacts(t, "", verify(one, 2)))
			f.run.State = store.RunRunning
			return f
		}, NoFailure, []string{"mulligan show k3f9abcd", "mulligan events k3f9abcd"}, "watch it"},
		{"cancelled-by-you", func(t *testing.T) *facts {
			f := rt(mkFacts(t, "", verify(one, 2), att{class: cCancel, msg: "the attempt was cancelled"}))
			f.run.State = store.RunCancelled
			return f
		}, NoFailure, []string{"mulligan retry-task k3f9abcd fix", "mulligan show k3f9abcd"}, "does not resume"},
		{"account-refused", func(t *testing.T) *facts {
			return rt(mkFacts(t, "", exit("agent exited with status 1: unexpected status 400: Your organization must be verified to stream this model.")))
		}, Environment, []string{"mulligan retry-task k3f9abcd fix"}, "provider"},
		{"worktree-lacks-file", func(t *testing.T) *facts {
			out := "FAILED tests/test_a.py::test_b - FileNotFoundError: [Errno 2] No such file or directory: 'data/local.csv'\n"
			f := rt(mkFacts(t, "", verify(out, 1), verify(out, 2)))
			f.def.Isolation = "worktree"
			return withBase(f, 1, out)
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "copy: [data/local.csv]"},
		{"worktree-lacks-file", func(t *testing.T) *facts {
			// The tests open the file by its absolute path; its end names an ignored file of your
			// tree (DVC's data) that the task's worktree does not hold.
			repo, pre, post := twoTrees(t, map[string]string{"src/score.py": "T = 0.7\n"}, map[string]string{"src/score.py": "T = 0.72\n", "data/raw/tx.csv": "a,b\n"})
			out := "E       FileNotFoundError: [Errno 2] No such file or directory: '/home/dev/fraud-model/data/raw/tx.csv'\nERROR tests/test_score.py::test_flags - FileNotFoundError\n"
			f := onTrees(rt(mkFacts(t, "", verify(out, 1), verify(out, 1))), repo, pre, post)
			f.def.Isolation = "worktree"
			return withBase(f, 1, out)
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "copy: [data]"}, // (the folder the tree lacks: the rest of it is needed too)
		{"model-not-found", func(t *testing.T) *facts {
			m := `agent exited with status 1: API Error: 404 {"type":"error","error":{"type":"not_found_error","message":"model: claude-opus-9"}}`
			return rt(mkFacts(t, "", exit(m)))
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "--model"},
		{"model-not-found", func(t *testing.T) *facts {
			// claude on a retired model: its 404 in words.
			m := "agent exited with status 1: claude: There's an issue with the selected model (claude-3-7-sonnet-20250219). It may not exist or you may not have access to it. Run /model to pick a different model."
			return rt(mkFacts(t, "", exit(m), exit(m)))
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "--model"},
		{"model-not-found", func(t *testing.T) *facts {
			// openai/codex#26053: the task file pins a model the account may no longer use.
			m := `agent exited with status 1: codex: {"type":"error","status":400,"error":{"type":"invalid_request_error","message":"The 'gpt-5.3-codex' model is not supported when using Codex with a ChatGPT account."}}`
			f := rt(mkFacts(t, "", exit(m)))
			a := f.agent(f.last().Agent)
			a.Command = append(a.Command, "-m", "gpt-5.3-codex")
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "--model"},
		{"agent-says-nothing", func(t *testing.T) *facts {
			out := `{"type":"result","subtype":"error_during_execution","is_error":true,"result":"Execution error"}`
			return mkFacts(t, "", att{class: cPayload, code: "is_error", msg: "claude: Execution error", out: out}, att{class: cPayload, code: "is_error", msg: "claude: Execution error", out: out})
		}, Unknown, []string{"mulligan logs k3f9abcd/fix@2", "mulligan show k3f9abcd"}, "by hand"},
		{"agent-broke-tests", func(t *testing.T) *facts {
			return rt(withBase(mkFacts(t, "", verify("--- FAIL: TestA (0.00s)\n    a_test.go:3: bad\nFAIL\tex/a\t0.1s\n", 1)), 0, "ok  \tex/a\t0.1s\n"))
		}, AgentFlake, []string{"mulligan retry-task k3f9abcd fix", "mulligan restore refs/mulligan/runs/k3f9abcd/fix/1/post"}, "failures in its prompt"},
		{"agent-cli-outdated", func(t *testing.T) *facts {
			return rt(mkFacts(t, "", exit("agent exited with status 1: error: unknown option '--permission-mode'")))
		}, Environment, []string{"npm install -g @anthropic-ai/claude-code", "mulligan retry-task k3f9abcd fix"}, "update"},
		{"agent-command-bad-flag", func(t *testing.T) *facts {
			f := rt(mkFacts(t, "", exit("agent exited with status 2: flag provided but not defined: -quiet")))
			f.failed[0].Agent = "gen"
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "fix `command` of agent gen"},
		{"verify-not-executable", func(t *testing.T) *facts {
			m := "verify `go test ./...` could not start: fork/exec go: permission denied"
			return rt(mkFacts(t, "", att{class: cQuality, code: "verify_failed", msg: m}, att{class: cQuality, code: "verify_failed", msg: m}))
		}, WorkflowBug, []string{"chmod +x go", "mulligan retry-task k3f9abcd fix"}, "execute bit"},
		{"no-prompt-received", func(t *testing.T) *facts {
			return rt(mkFacts(t, "", exit("agent exited with status 1: Error: Input must be provided either through stdin or as a prompt argument when using --print")))
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "{{prompt}}"},
		{"turn-limit", func(t *testing.T) *facts {
			return rt(mkFacts(t, "", att{class: cPayload, code: "is_error", msg: "claude: error_max_turns"}, att{class: cPayload, code: "is_error", msg: "claude: error_max_turns"}))
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "--max-turns"},
		{"waits-for-answer", func(t *testing.T) *facts {
			f := rt(mkFacts(t, "", att{class: cHeartbeat, msg: "silent", out: "Need to install the following packages:\ncreate-vite@5.2.3\nOk to proceed? (y) "}))
			f.commands["prompt"] = true
			f.task.State = "blocked"
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload", "mulligan prompt k3f9abcd/fix 'Run every command non-interactively (npm init -y, npx --yes, apt-get -y, CI=true): nobody answers questions.'"}, "yes/no"},
		{"waits-for-credentials", func(t *testing.T) *facts {
			return rt(mkFacts(t, "", att{class: cHeartbeat, msg: "silent", out: "$ git push origin main\nUsername for 'https://github.com': "}))
		}, WorkflowBug, []string{"gh auth setup-git", "GIT_TERMINAL_PROMPT=0 mulligan retry-task k3f9abcd fix"}, "credential helper"},
		{"verify-killed", func(t *testing.T) *facts {
			return rt(mkFacts(t, "", verify("=== RUN   TestIndexLarge\nsignal: killed\nFAIL\texample.com/idx\t41.2s\n", 2), verify("signal: killed\nFAIL\texample.com/idx\t40.9s\n", 2)))
		}, Environment, []string{"mulligan retry-task k3f9abcd fix --reload", "free -h"}, "more memory"},
		{"verify-killed", func(t *testing.T) *facts {
			// PyTorch on a shared GPU another process fills: its memory, not the machine's.
			oom := "E       torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 301.56 MiB is free. Process 48211 has 21.93 GiB memory in use.\nFAILED tests/test_model.py::test_forward - torch.OutOfMemoryError: CUDA out of memory.\n"
			return mkFacts(t, "", verify(oom, 1), verify(oom, 1))
		}, Environment, []string{"nvidia-smi", "mulligan run fix"}, "GPU ran out of memory"},
		{"agent-out-of-memory", func(t *testing.T) *facts {
			return withExit(mkFacts(t, "", exit("agent exited with status 134: FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory")), 134)
		}, Environment, []string{"NODE_OPTIONS=--max-old-space-size=8192 mulligan run fix"}, "more memory"},
		{"tool-calls-refused", func(t *testing.T) *facts {
			return rt(mkFacts(t, "", att{class: cPayload, code: "permission_denied", msg: "claude: permission denied for Write",
				out: `{"type":"result","num_turns":3,"result":"I need permission to write src/a.ts.","permission_denials":[{"tool_name":"Write","tool_input":{"file_path":"src/a.ts"}}]}`}))
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "--permission-mode acceptEdits"},
		{"tool-calls-refused", func(t *testing.T) *facts {
			// The real claude under its preset edits but refuses `make gen`, the step the prompt
			// asks for, and the generated file stays stale (clis/claude_refused_asked_command).
			v := att{class: cQuality, code: "verify_failed", msg: "verify `grep -q \"2.0.0\" version.go` exited with status 1", files: 1,
				out: `{"type":"result","subtype":"success","is_error":false,"result":"I set version.txt to 2.0.0; make gen did not run.","permission_denials":[{"tool_name":"Bash","tool_input":{"command":"make gen"}}]}`}
			f := rt(mkFacts(t, "", v, v))
			f.def.Prompt = "Bump the version in version.txt to 2.0.0, then run `make gen` to regenerate version.go from it."
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "claude: --allowedTools 'Bash(make gen)'"},
		{"tool-calls-refused", func(t *testing.T) *facts {
			// opencode run rejects the bash call its settings ask about and ends the session
			// (clis/opencode_refused_asked_command).
			v := att{class: cQuality, code: "verify_failed", msg: "verify `grep -q \"2.0.0\" version.go` exited with status 1", files: 1,
				out: `{"type":"tool_use","part":{"type":"tool","tool":"bash","state":{"status":"error","input":{"command":"make gen"},"error":"The user rejected permission to use this specific tool call."}}}` + "\n" + `{"type":"step_finish","part":{"type":"step-finish","tokens":{"input":85,"output":20}}}`}
			f := rt(mkFacts(t, "", v, v))
			f.failed[0].Agent, f.failed[1].Agent = "oc", "oc"
			f.def.Prompt = "Bump the version in version.txt to 2.0.0, then run `make gen` to regenerate version.go from it."
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, `opencode: --auto, or "permission": {"bash": {"make gen": "allow"}}`},
		{"agent-commands-offline", func(t *testing.T) *facts {
			f := rt(mkFacts(t, "", att{class: cQuality, code: "verify_failed", msg: "verify `npm test` exited with status 1", files: 1,
				out: `{"type":"item.completed","item":{"type":"command_execution","command":"npm install","aggregated_output":"npm error request to https://registry.npmjs.org/x failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org","exit_code":1,"status":"failed"}}` + "\n" + `{"type":"turn.completed","usage":{"output_tokens":9}}`}))
			f.failed[0].Agent = "gen"
			return f
		}, Environment, []string{"curl -sSI https://registry.npmjs.org", "mulligan retry-task k3f9abcd fix --reload"}, "HTTPS_PROXY"},
		{"agent-sandbox-network", func(t *testing.T) *facts {
			// openai/codex#10612: npm inside codex's workspace-write sandbox.
			f := rt(mkFacts(t, "", att{class: cQuality, code: "verify_failed", msg: "verify `npm test` exited with status 1", files: 1,
				out: `{"type":"item.completed","item":{"type":"command_execution","command":"npm install","aggregated_output":"npm error request to https://registry.npmjs.org/x failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org","exit_code":1,"status":"failed"}}` + "\n" + `{"type":"turn.completed","usage":{"output_tokens":9}}`}))
			f.failed[0].Agent = "cx"
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "network_access=true"},
		{"agent-sandbox-network", func(t *testing.T) *facts {
			// The real codex's Linux sandbox refuses npm's connect with EPERM, to a registry on
			// this machine too (clis/codex_sandbox_network).
			f := rt(mkFacts(t, "", att{class: cQuality, code: "verify_failed", msg: "verify `node index.js` exited with status 1: Error: Cannot find module 'left-pad'", files: 1,
				verify: "Error: Cannot find module 'left-pad'\n",
				out:    `{"type":"item.completed","item":{"type":"command_execution","command":"/bin/bash -lc 'npm install left-pad'","aggregated_output":"npm error code EPERM\nnpm error FetchError: request to http://127.0.0.1:46365/npm/left-pad failed, reason: connect EPERM 127.0.0.1:46365 - Local (undefined:undefined)\n","exit_code":1,"status":"failed"}}` + "\n" + `{"type":"turn.completed","usage":{"output_tokens":9}}`}))
			f.failed[0].Agent = "cx"
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "network_access=true"},
		{"agent-sandbox-network", func(t *testing.T) *facts {
			// curl in the real codex's sandbox, to this machine: it does not say who refused
			// (clis/codex_sandbox_loopback); the file it was to fetch is missing, on the base too.
			v := att{class: cQuality, code: "verify_failed", msg: "verify `grep -q fake-model models.json` exited with status 2", files: 0,
				verify: "grep: models.json: No such file or directory\n", out: `{"type":"item.completed","item":{"type":"command_execution","command":"/bin/bash -lc 'curl -sS -o models.json \"$API/v1/models\"'","aggregated_output":"curl: (7) Failed to connect to 127.0.0.1 port 43489 after 0 ms: Couldn't connect to server\n","exit_code":7,"status":"failed"}}` + "\n" + `{"type":"turn.completed","usage":{"output_tokens":9}}`}
			f := withBase(rt(mkFacts(t, "", v, v)), 2, "grep: models.json: No such file or directory\n")
			f.failed[0].Agent, f.failed[1].Agent = "cx", "cx"
			return f
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "network_access=true"},
		{"verify-never-ends", func(t *testing.T) *facts {
			v := att{class: cQuality, code: "verify_timeout", msg: "verify `npx jest --watch` ran past its timeout (10m0s)", verify: "Tests: 2 passed, 2 total\n\nWatch Usage: Press w to show more.\n", files: 1}
			return rt(mkFacts(t, "", v, v))
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "run once and exit"},
		{"flaky-test", func(t *testing.T) *facts {
			a := verify("--- FAIL: TestTicker (0.21s)\n    ticker_test.go:30: tick took 210ms, want < 100ms\n--- FAIL: TestParse (0.00s)\n    parse_test.go:9: bad\nFAIL\tex/p\t0.3s\n", 2)
			b := verify("--- FAIL: TestParse (0.00s)\n    parse_test.go:9: bad\nFAIL\tex/p\t0.1s\n", 2)
			f := rt(mkFacts(t, "", b, a))
			f.failed[0].Tree, f.failed[1].Tree = "t1", "t1"
			f.attempts[0].Tree, f.attempts[1].Tree = "t1", "t1"
			return f
		}, AgentFlake, []string{"mulligan retry-task k3f9abcd fix"}, "deterministic"},
		{"preexisting-failures", func(t *testing.T) *facts {
			out := "--- FAIL: TestLegacy (0.00s)\n    legacy_test.go:4: no fixture\nFAIL\tex/legacy\t0.1s\n"
			f := rt(mkFacts(t, "", verify(out, 2), verify(out, 3)))
			f.def.Prompt = "Add a --json flag to export."
			return withBase(f, 1, out)
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "narrow `verify.command`"},
		{"waiting-approval", func(t *testing.T) *facts {
			f := mkFacts(t, "", att{ok: true, files: 2})
			f.run.State, f.run.Tasks[0].State = "waiting_approval", "waiting_approval"
			f.task = nil
			return f
		}, NoFailure, []string{"mulligan diff k3f9abcd/fix@1", "mulligan approve k3f9abcd/fix@1", "mulligan reject k3f9abcd/fix@1 'TEXT'"}, "waiting for your decision"},
		{"timeouts", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cTimeout, msg: "ran past its timeout"}, att{class: cHeartbeat, msg: "silent"})
		}, AgentFlake, []string{"mulligan run fix"}, "raise `heartbeat` of task fix in mulligan.yaml (now 2m0s)"},
		{"verify-fails-on-base", func(t *testing.T) *facts {
			f := mkFacts(t, "", att{class: cQuality, code: "verify_failed", msg: "verify exited 1", verify: "no Go files in /src\n"}, att{class: cQuality, code: "verify_failed", msg: "verify exited 1", verify: "no Go files in /src\n"})
			return withBase(f, 1, "no Go files in /src\n")
		}, WorkflowBug, []string{"mulligan run fix"}, "fix `verify.command` of task fix"},
		{"agent-broke-build", func(t *testing.T) *facts {
			return withBase(rt(mkFacts(t, "", verify("./a.go:3:1: syntax error: unexpected }\nFAIL\tp [build failed]\n", 1))), 1, one)
		}, AgentFlake, []string{"mulligan retry-task k3f9abcd fix"}, "build or syntax error"},
		{"agent-cli-crashed", func(t *testing.T) *facts {
			// google-gemini/gemini-cli: a TypeError in the CLI's own code, before any model call.
			out := "TypeError: Cannot read properties of undefined (reading 'getFunctionDeclarations')\n" +
				"    at GeminiClient.startChat (file:///usr/local/lib/node_modules/@google/gemini-cli/node_modules/@google/gemini-cli-core/dist/src/core/client.js:181:47)\n"
			a := att{class: cAgentExit, code: "nonzero_exit", msg: "agent exited with status 1: TypeError: Cannot read properties of undefined (reading 'getFunctionDeclarations')", out: out}
			f := rt(mkFacts(t, "", a, a))
			for i := range f.failed {
				f.failed[i].Agent = "gem"
			}
			return f
		}, Environment, []string{"npm install -g --force @google/gemini-cli@latest", "mulligan retry-task k3f9abcd fix"}, "update the agent's CLI"},
		{"verify-rejects-the-change", func(t *testing.T) *facts {
			// `npx prettier --write . && git diff --exit-code`: prettier changes nothing, git
			// prints the attempt's own edit.
			repo, pre, post := twoTrees(t, map[string]string{"src/discount.ts": "return total * 0.9\n"}, map[string]string{"src/discount.ts": "return Math.round(total * 90) / 100\n"})
			out := "src/discount.ts 6ms (unchanged)\ndiff --git a/src/discount.ts b/src/discount.ts\nindex 3b18e51..5d1c2a0 100644\n--- a/src/discount.ts\n+++ b/src/discount.ts\n@@ -1 +1 @@\n-return total * 0.9\n+return Math.round(total * 90) / 100\n"
			f := mkFacts(t, "", verify(out, 1), verify(out, 1))
			return onTrees(f, repo, pre, post)
		}, WorkflowBug, []string{"mulligan run fix"}, "clean-tree check"},
		{"verify-fails-outside-scope", func(t *testing.T) *facts {
			// apache/maven-enforcer#937: the enforcer stops the reactor in a module the prompt
			// keeps the agent out of, after the agent fixed its own.
			repo, pre, post := twoTrees(t, map[string]string{"billing-core/src/Proration.java": "RoundingMode.DOWN\n"}, map[string]string{"billing-core/src/Proration.java": "RoundingMode.HALF_EVEN\n"})
			out := "[INFO] billing-core ....... SUCCESS [ 10.2 s]\n[INFO] billing-web ....... FAILURE [  1.3 s]\n[ERROR] Failed to execute goal org.apache.maven.plugins:maven-enforcer-plugin:3.4.1:enforce (enforce) on project billing-web: \n[ERROR] Rule 0: org.apache.maven.enforcer.rules.dependency.RequireUpperBoundDeps failed with message:\n"
			f := mkFacts(t, "", verify(out, 1), verify(out, 1))
			f.def.Prompt = "Fix ProrationCalculator so that ProrationCalculatorTest passes. Only change billing-core."
			return onTrees(f, repo, pre, post)
		}, WorkflowBug, []string{"mulligan run fix"}, "mvn -pl billing-core -am verify"},
		{"verify-fails-outside-scope", func(t *testing.T) *facts {
			// A reactor whose coverage gate fails in a module beside the one the prompt is about
			// (no "only"): the module is a directory of its own, untouched.
			files := map[string]string{"payments-core/src/Money.java": "HALF_UP\n", "legacy-ledger/pom.xml": "<a/>\n"}
			repo, pre, post := twoTrees(t, files, map[string]string{"payments-core/src/Money.java": "HALF_EVEN\n"})
			out := "[WARNING] Rule violated for bundle legacy-ledger: lines covered ratio is 0.61, but expected minimum is 0.80\n[ERROR] Failed to execute goal org.jacoco:jacoco-maven-plugin:0.8.11:check (check) on project legacy-ledger: Coverage checks have not been met. See log for details. -> [Help 1]\n"
			f := mkFacts(t, "", verify(out, 1), verify(out, 1))
			f.def.Prompt = "Money.round in payments-core must use banker's rounding (HALF_EVEN). Fix it and keep MoneyTest green."
			return onTrees(f, repo, pre, post)
		}, WorkflowBug, []string{"mulligan run fix"}, "mvn -pl payments-core -am verify"},
		{"agent-config-invalid", func(t *testing.T) *facts {
			// atomantic/PortOS#4457: codex refusing a user's ~/.codex/config.toml, every attempt.
			out := "Error loading config.toml: unknown variant `max`, expected one of `none`, `minimal`, `low`, `medium`, `high`, `xhigh`\nin `model_reasoning_effort`\n"
			a := att{class: cAgentExit, code: "nonzero_exit", msg: "agent exited with status 1: in `model_reasoning_effort`", out: out}
			f := mkFacts(t, "", a, a)
			for i := range f.failed {
				f.failed[i].Agent = "cx"
			}
			return f
		}, Environment, []string{"${EDITOR:-vi} ~/.codex/config.toml", "mulligan run fix"}, "configuration"},
		{"agent-did-nothing", func(t *testing.T) *facts {
			// google-gemini/gemini-cli#5764: the CLI starts, echoes the prompt and quits, exit 0.
			quiet := verify(one, 0)
			quiet.out = "Ripgrep is not available. Falling back to GrepTool.\n" +
				`{"type":"init","session_id":"6a2d","model":"auto"}` + "\n" +
				`{"type":"message","role":"user","content":"Fix the tests."}`
			return rt(withBase(mkFacts(t, "", quiet, quiet), 1, one))
		}, Unknown, []string{"mulligan logs k3f9abcd/fix@2", "mulligan retry-task k3f9abcd fix"}, "by hand"},
		{"agent-claims-done", func(t *testing.T) *facts {
			said := verify(one, 0)
			said.out = `{"type":"result","is_error":false,"result":"Fixed the rounding in TestB's helper; all tests pass now."}`
			return rt(mkFacts(t, "", said, said))
		}, AgentFlake, []string{"mulligan retry-task k3f9abcd fix"}, "claim was false"},
		{"agent-changed-nothing", func(t *testing.T) *facts {
			asked := verify(one, 0)
			asked.out = `{"type":"result","is_error":false,"result":"Should TestB round half up or half to even? Tell me and I'll make the change."}`
			return rt(mkFacts(t, "", asked, asked))
		}, WorkflowBug, []string{"mulligan retry-task k3f9abcd fix --reload"}, "acceptEdits"},
		{"verify-progress", func(t *testing.T) *facts {
			f := withBase(rt(mkFacts(t, "", verify(two, 2), verify(one, 3))), 1, two)
			f.commands["revert"] = true
			return f
		}, AgentFlake, []string{"mulligan retry-task k3f9abcd fix", "mulligan revert k3f9abcd/fix@2"}, "getting closer"},
		{"verify-same-tests-as-base", func(t *testing.T) *facts {
			return withBase(rt(mkFacts(t, "", verify(two, 2), verify(two, 1))), 1, two)
		}, AgentFlake, []string{"mulligan retry-task k3f9abcd fix", "mulligan restore refs/mulligan/runs/k3f9abcd/fix/2/post"}, "not found the fix"},
		{"verify-intermittent", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cQuality, msg: "verify failed: FAIL TestA", files: 2}, att{ok: true}, att{class: cQuality, msg: "verify failed: FAIL TestB"})
		}, AgentFlake, []string{"mulligan run fix", "mulligan restore refs/mulligan/runs/k3f9abcd/fix/1/post"}, "keep the edits of attempt 1"},
		{"verify-same-failure", func(t *testing.T) *facts {
			f := mkFacts(t, "", att{class: cQuality, code: "verify_failed", msg: "verify exited 1: --- FAIL: TestX (0.01s)", files: 1}, att{class: cQuality, code: "verify_failed", msg: "verify exited 1: --- FAIL: TestX (0.02s)", files: 1})
			f.def.Prompt = "Make Parse accept empty input instead of returning an error, without changing the tests."
			return withBase(f, 0, "ok\n")
		}, WorkflowBug, []string{"mulligan run fix", "mulligan logs k3f9abcd/fix@2"}, "can pass with the change"},
		{"agent-same-mistake", func(t *testing.T) *facts {
			// The base passes; three rewrites fail the same jest test the same way (jest#9239: Intl's
			// no-break space before the currency sign).
			out := "  ● formatPrice › renders EUR in de-DE\n\n    expect(received).toBe(expected) // Object.is equality\n\n    Expected: \"1.234,50 €\"\n    Received: \"1.234,50 €\"\n"
			return withBase(mkFacts(t, "", verify(out, 1), verify(out, 1)), 0, "Tests: 12 passed, 12 total\n")
		}, AgentFlake, []string{"mulligan diff k3f9abcd/fix@2", "mulligan run fix"}, "what it misses"},
		{"schema-never-satisfied", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cSchema, msg: "missing property summary"})
		}, WorkflowBug, []string{"mulligan run fix", "mulligan logs k3f9abcd/fix@1"}, "output_schema"},
		{"prompt-names-missing-files", func(t *testing.T) *facts {
			f := mkFacts(t, "", att{class: cAgentExit, msg: "agent exited with status 1", out: "open src/gone.go: no such file or directory\n"})
			f.missing = []string{"src/gone.go", "src/new.go"}
			return f
		}, WorkflowBug, []string{"mulligan run fix"}, "src/gone.go"},
		{"payload-declared-same", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cPayload, code: "is_error", msg: "result: I cannot"}, att{class: cPayload, code: "is_error", msg: "result: I cannot"})
		}, WorkflowBug, []string{"mulligan run fix", "mulligan logs k3f9abcd/fix@2"}, "gives up the same way"},
		{"payload-declared", func(t *testing.T) *facts {
			return mkFacts(t, "", exit("agent exited with status 1"), att{class: cPayload, code: "is_error", msg: "result: gave up"})
		}, AgentFlake, []string{"mulligan run fix"}, "gave up"},
		{"budget-exhausted", func(t *testing.T) *facts {
			return mkFacts(t, "", exit("agent exited with status 1"), att{class: cBudget, code: "deadline", msg: "deadline passed"})
		}, AgentFlake, []string{"mulligan run fix"}, "raise `deadline`"},
		{"budget-below-one-attempt", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cBudget, code: "max_cost", msg: "the task's reported spend $0.4127 reached its max_cost_usd $0.25 (after quality_rejection: verify `mypy .` exited with status 1)"})
		}, WorkflowBug, []string{"mulligan run fix"}, "above what one attempt costs"},
		{"rate-limited", func(t *testing.T) *facts {
			r := att{class: cTransport, code: "rate_limit", msg: "codex: exceeded retry limit, last status: 429 Too Many Requests"}
			return mkFacts(t, "", r, r)
		}, Environment, []string{"sleep 900 && mulligan run fix"}, "rate limit"},
		{"verify-hangs-on-network", func(t *testing.T) *facts {
			// pytest-timeout's faulthandler dump of a requests.get() with no timeout.
			out := "tests/test_rates.py Timeout (0:00:01)!\nThread 0x00007f4c1e2b7740 (most recent call first):\n  File \"/usr/lib/python3.11/socket.py\", line 836 in create_connection\n  File \"/app/.venv/lib/python3.11/site-packages/requests/api.py\", line 73 in get\n  File \"/app/fx/rates.py\", line 18 in fetch_rates\n"
			v := att{class: cQuality, code: "verify_timeout", msg: "verify `pytest` ran out of time after 60s (its verify.timeout)", verify: out}
			return mkFacts(t, "", v, v)
		}, Environment, []string{"grep -n -E 'https?://|_URL|host' /app/fx/rates.py  # the host it calls, to check with curl", "mulligan run fix"}, "give the call a timeout"},
		{"verify-state-outlives-attempts", func(t *testing.T) *facts {
			// hmcts/document-management-store-app#1909: Flyway refusing a migration an earlier
			// attempt applied with other contents.
			first := att{class: cQuality, code: "verify_failed", msg: "verify `sh ci.sh` exited with status 1", verify: "FAILED tests/test_refunds.py::test_reason - assert False\n"}
			later := att{class: cQuality, code: "verify_failed", msg: "verify `sh ci.sh` exited with status 1", verify: "ERROR: Validate failed: Migrations have failed validation\nMigration checksum mismatch for migration version 7\n"}
			return mkFacts(t, "", first, later, later)
		}, WorkflowBug, []string{"mulligan run fix"}, "fresh database"},
		{"verify-does-not-build-the-change", func(t *testing.T) *facts {
			// astronomer/astronomer-cosmos#521: `dbt test` on a model nobody built.
			repo, pre, post := twoTrees(t, map[string]string{"models/stg_orders.sql": "select 1\n"}, map[string]string{"models/stg_orders.sql": "select 1\n", "models/marts/fct_refunds.sql": "select 2\n"})
			out := "Database Error in test not_null_fct_refunds_id (models/marts/schema.yml)\n  relation \"analytics.dbt_ci.fct_refunds\" does not exist\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `dbt test` exited with status 1", verify: out}
			f := mkFacts(t, "", v, v)
			f.base = &baseVerify{ExitCode: 0, Output: "Done. PASS=4\n"}
			return onTrees(f, repo, pre, post)
		}, WorkflowBug, []string{"mulligan run fix"}, "dbt build"},
		{"preexisting-step-failure", func(t *testing.T) *facts {
			// wntrblm/nox: the docs session failed before the task; the tests the task is about
			// pass now.
			docs := "nox > sphinx-build -W -b html docs docs/_build/html\nWarning, treated as error:\ndocs/api.rst:18: WARNING: autodoc: failed to import module 'legacy' from module 'pagerlib'\nnox > Session docs failed.\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `nox` exited with status 1", files: 1, verify: docs + "tests/test_paginate.py ............ [100%]\n31 passed in 0.34s\nnox > * docs: failed\n"}
			f := mkFacts(t, "", v, v)
			f.base = &baseVerify{ExitCode: 1, Output: docs + "FAILED tests/test_paginate.py::test_first_page - AssertionError: assert [11] == [1]\n1 failed, 30 passed in 0.41s\nnox > * docs: failed\n"}
			return f
		}, WorkflowBug, []string{"mulligan run fix"}, "narrow `verify.command`"},
		{"screenshots-differ-here", func(t *testing.T) *facts {
			// microsoft/playwright#20097: baselines made on another machine's fonts.
			out := "  1) [chromium] › tests/visual/header.spec.ts:8:7 › header › desktop nav\n\n    Error: expect(page).toHaveScreenshot(expected) failed\n\n      2417 pixels (ratio 0.01 of all image pixels) are different.\n\n  1 failed\n  8 passed (21.4s)\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `npx playwright test` exited with status 1", files: 1, verify: out}
			f := mkFacts(t, "", v, v)
			f.base = &baseVerify{ExitCode: 1, Output: out}
			return f
		}, Environment, []string{"npx playwright install-deps  # the fonts and libraries the browsers render with", "mulligan run fix"}, "baselines"},
		{"verify-will-not-write-snapshots", func(t *testing.T) *facts {
			// jestjs/jest: --ci does not write snapshots a new test asks for.
			out := " FAIL  src/components/__tests__/StatusBadge.test.tsx\n  ● StatusBadge › renders paid\n\n    New snapshot was not written. The update flag must be explicitly passed to write a new snapshot.\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `npx jest --ci` exited with status 1", files: 2, verify: out}
			return mkFacts(t, "", v, v)
		}, WorkflowBug, []string{"mulligan run fix"}, "without --ci"},
		{"verify-names-missing-database", func(t *testing.T) *facts {
			out := "--- FAIL: TestReserveStock (0.01s)\n    reserve_test.go:22: open: Error 1049 (42000): Unknown database 'inventory_tests'\n"
			v := att{class: cQuality, code: "verify_failed", msg: "verify `go test ./...` exited with status 1", files: 1, verify: out}
			f := mkFacts(t, "", v, v)
			f.def.Verify.Command = []string{"env", "TEST_DSN=inventory:inventory@tcp(127.0.0.1:3306)/inventory_tests", "go", "test", "./..."}
			return f
		}, WorkflowBug, []string{"mulligan run fix"}, "the project creates"},
		{"cancelled", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cCancel, msg: "the attempt was cancelled"})
		}, Unknown, []string{"mulligan run fix"}, "again"},
		{"different-failures", func(t *testing.T) *facts {
			return mkFacts(t, "", exit("agent exited with status 1: boom"), att{class: cTimeout, msg: "timeout"})
		}, AgentFlake, []string{"mulligan run fix"}, "failures differ"},
		{"silent-failures", func(t *testing.T) *facts {
			return withExit(mkFacts(t, "", exit("agent exited with status 1"), exit("agent exited with status 1")), 1, 1)
		}, Unknown, []string{"mulligan logs k3f9abcd/fix@2", "mulligan show k3f9abcd"}, "by hand"},
		{"same-failure-repeated", func(t *testing.T) *facts {
			return mkFacts(t, "", exit("agent exited with status 1: panic: boom at line 3"), exit("agent exited with status 1: panic: boom at line 4"))
		}, WorkflowBug, []string{"mulligan run fix", "mulligan logs k3f9abcd/fix@2"}, "points at the task"},
		{"single-failure", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cAgentExit, msg: "agent exited with status 2: error: cannot write the cache", files: 3})
		}, Unknown, []string{"mulligan logs k3f9abcd/fix@1", "mulligan run fix", "mulligan restore refs/mulligan/runs/k3f9abcd/fix/1/post"}, "not a pattern"},
		{"fallback", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: "something_new", msg: "?"})
		}, Unknown, []string{"mulligan show k3f9abcd", "mulligan logs k3f9abcd/fix@1"}, "output"},
	}
	tested := map[string]bool{}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			f := c.facts(t)
			r := decide(f)
			if r.Name != c.rule {
				t.Fatalf("rule %s decided, want %s", r.Name, c.rule)
			}
			if r.Category != c.want {
				t.Errorf("category %s, want %s", r.Category, c.want)
			}
			if r.Confidence <= 0 || r.Confidence > 1 {
				t.Errorf("confidence %v out of (0, 1]", r.Confidence)
			}
			if why := r.Why(f); why == "" {
				t.Error("empty why")
			}
			s := r.Suggest(f)
			if strings.Join(s.Commands, "\n") != strings.Join(c.cmds, "\n") {
				t.Errorf("commands\n%q\nwant\n%q", s.Commands, c.cmds)
			}
			if !strings.Contains(s.Text, c.inText) {
				t.Errorf("suggestion %q does not say %q", s.Text, c.inText)
			}
		})
		tested[c.rule] = true
	}
	for _, r := range Rules {
		if !tested[r.Name] {
			t.Errorf("rule %s has no test case", r.Name)
		}
	}
}

// With revert in this build, keeping an attempt is suggested as revert; without, as restore.
func TestSuggestionUsesExistingCommands(t *testing.T) {
	f := mkFacts(t, "", att{class: cAgentExit, msg: "agent exited with status 2: it broke", files: 1}, att{class: cTimeout, msg: "timeout"})
	if got := decide(f).Suggest(f).Commands; got[1] != "mulligan restore refs/mulligan/runs/k3f9abcd/fix/1/post" {
		t.Errorf("without revert: %q", got)
	}
	f.commands["revert"], f.commands["retry-task"] = true, true
	if got := decide(f).Suggest(f).Commands; got[0] != "mulligan retry-task k3f9abcd fix" || got[1] != "mulligan revert k3f9abcd/fix@1" {
		t.Errorf("with revert and retry-task: %q", got)
	}
}

func TestRerunAdHoc(t *testing.T) {
	retries := 2
	file, err := taskfile.AdHoc(taskfile.AdHocOptions{Command: []string{"my agent", "--flag", "{{prompt}}"}, Prompt: "p", OnFailure: "retry", Retries: &retries, Timeout: "5m"})
	if err != nil {
		t.Fatal(err)
	}
	f := mkFacts(t, "", att{class: cAgentExit, msg: "x"})
	f.file, f.def, f.run.TaskFile = file, file.Task("main"), file.Path
	f.task.ID = "main"
	// Every flag the run had, so that pasting it runs the same thing (with the one to change).
	want := "mulligan run --prompt p --on-failure retry --retries 2 --backoff exponential:1s:5m0s:full --timeout 5m0s -- 'my agent' --flag '{{prompt}}'"
	if got := f.rerun(); got != want {
		t.Errorf("rerun = %q (task file %q), want %q", got, file.Path, want)
	}
	// What helps first is retry-task, which keeps all of it.
	f.commands["retry-task"] = true
	if got := f.retry(); got != "mulligan retry-task k3f9abcd main" {
		t.Errorf("retry = %q", got)
	}
}

func TestDecisiveLines(t *testing.T) {
	out := "building\nok pkg/a\n--- FAIL: TestX (0.00s)\n    x_test.go:9: got 1, want 2\nFAIL\nexit status 1\n"
	got := decisiveLines(out)
	want := []string{"--- FAIL: TestX (0.00s)", "FAIL"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("decisive lines %q, want %q", got, want)
	}
	if got := decisiveLines("one\ntwo\n"); strings.Join(got, "|") != "one|two" {
		t.Errorf("without a decisive line, the last lines: %q", got)
	}
	long := strings.Repeat("é", 300)
	if got := decisiveLines("error: " + long); len(got[0]) > maxLineLength+len("…") {
		t.Errorf("line not clipped: %d bytes", len(got[0]))
	}
}

func TestLineDelta(t *testing.T) {
	a, d := lineDelta([]string{"a", "b", "c", "c"}, []string{"a", "c", "d", "e"})
	if a != 2 || d != 2 {
		t.Errorf("lineDelta = +%d -%d, want +2 -2", a, d)
	}
}

func TestUnresolvedEffects(t *testing.T) {
	es := []store.Effect{
		{ID: 1, TaskID: "fix", Attempt: 1, Name: "push", State: store.EffectRecorded},
		{ID: 2, TaskID: "fix", Attempt: 1, Name: "push", State: store.EffectCompensated},
		{ID: 3, TaskID: "fix", Attempt: 1, Name: "comment", Idempotent: true, State: store.EffectRecorded},
		{ID: 4, TaskID: "fix", Attempt: 1, Name: "mail", State: store.EffectUnresolved},
		{ID: 5, TaskID: "fix", Attempt: 2, Name: "deploy", State: store.EffectCompensationFailed},
		{ID: 6, TaskID: "fix", Attempt: 2, Name: "tag", State: store.EffectCompensating},
		{ID: 7, TaskID: "fix", Attempt: 3, Name: store.ImplicitEffect, Implicit: true, State: store.EffectRecorded},
	}
	var got []int64
	for _, e := range unresolvedEffects(es) {
		got = append(got, e.ID)
	}
	// Settled only by a compensation that succeeded; idempotent effects are never listed.
	if want := []int64{1, 4, 5, 6, 7}; !slices.Equal(got, want) {
		t.Errorf("unresolved = %v, want %v", got, want)
	}
	if e := unresolvedEffects(es)[4]; !e.Implicit || e.State != store.EffectRecorded {
		t.Errorf("implicit effect = %+v", e)
	}
}

// A prompt that names a file to create is not a workflow bug when the failure does not
// mention it.
func TestMissingPathNotMentioned(t *testing.T) {
	f := mkFacts(t, "", att{class: cAgentExit, msg: "agent exited with status 1", out: "compile error\n"})
	f.missing = []string{"src/new.go"}
	if r := decide(f); r.Name == "prompt-names-missing-files" {
		t.Errorf("decided %s", r.Name)
	}
}

// A runner_died attempt among other failures is set aside: the task's own failures decide.
func TestRunnerDiedSetAside(t *testing.T) {
	exit := att{class: cAgentExit, code: "nonzero_exit", msg: "agent exited with status 1: panic: boom"}
	f := mkFacts(t, "", exit, att{class: cRunnerDied, msg: "the mulligan process died during the attempt"}, exit)
	if r := decide(f); r.Name != "same-failure-repeated" {
		t.Errorf("decided %s, want same-failure-repeated", r.Name)
	}
	if f.died != 1 || len(f.failed) != 2 {
		t.Errorf("died %d, failed %d", f.died, len(f.failed))
	}
}

// Negative evidence: for each rule that reads the evidence beyond the classes, a run that looks
// alike but must not be taken for it.
func TestRulesNegative(t *testing.T) {
	exit := func(msg string, code int) att {
		return att{class: cAgentExit, code: "nonzero_exit", msg: msg, exitCode: code}
	}
	verify := func(out string, files int) att {
		return att{class: cQuality, code: "verify_failed", msg: "verify `go test ./...` exited with status 1", verify: out, files: files}
	}
	cases := []struct {
		not   string
		why   string
		facts func(t *testing.T) *facts
	}{
		{"service-down", "a high port refused that changes from run to run: a test's own listener", func(t *testing.T) *facts {
			dial := func(port string) string {
				return "--- FAIL: TestProxy (0.00s)\n    proxy_test.go:40: dial tcp 127.0.0.1:" + port + ": connect: connection refused\n"
			}
			f := mkFacts(t, "", verify(dial("41877"), 2))
			f.base = &baseVerify{ExitCode: 1, Output: dial("39412")}
			return f
		}},
		{"machine-lacks", "perl cannot find the project's own module: prove without -l, nothing to install", func(t *testing.T) *facts {
			repo, pre, post := twoTrees(t, map[string]string{"lib/Ledger/Parser.pm": "package Ledger::Parser;\n1;\n"}, map[string]string{"lib/Ledger/Parser.pm": "package Ledger::Parser;\n# fixed\n1;\n"})
			out := "t/parser.t .. Can't locate Ledger/Parser.pm in @INC (you may need to install the Ledger::Parser module) (@INC contains: /etc/perl) at t/parser.t line 3.\n"
			f := onTrees(mkFacts(t, "", verify(out, 1), verify(out, 1)), repo, pre, post)
			f.run.BaseTree = pre
			f.base = &baseVerify{ExitCode: 1, Output: out}
			return f
		}},
		{"machine-lacks", "the verify turns cgo off itself: CGO_ENABLED=0 go test -race", func(t *testing.T) *facts {
			out := "go: -race requires cgo; enable cgo by setting CGO_ENABLED=1\n"
			f := mkFacts(t, "", verify(out, 1), verify(out, 1))
			f.def.Verify.Command = []string{"env", "CGO_ENABLED=0", "go", "test", "-race", "./..."}
			f.base = &baseVerify{ExitCode: 2, Output: out}
			return f
		}},
		{"verify-asks-a-step", "the prompt names the step: not doing it is the agent's mistake", func(t *testing.T) *facts {
			out := " Test Files  2 passed (2)\n🦋  error Some packages have been changed but no changesets were found. Run `changeset add` to resolve this error.\n"
			f := mkFacts(t, "no-progress", verify(out, 1), verify(out, 1))
			f.def.Prompt = "Fix withRetry's off-by-one and add a changeset for @quill/http-retry."
			f.base = &baseVerify{ExitCode: 0, Output: " Test Files  2 passed (2)\n"}
			return f
		}},
		{"verify-asks-a-step", "a failing test besides: the change is not done", func(t *testing.T) *facts {
			out := "--- FAIL: TestRetry (0.00s)\n    retry_test.go:9: got 4\nRun `changeset add` to resolve this error.\n"
			f := mkFacts(t, "no-progress", verify(out, 1), verify(out, 1))
			f.base = &baseVerify{ExitCode: 0, Output: "ok\n"}
			return f
		}},
		{"verify-fails-on-base", "the base names failing tests: the task is to fix them", func(t *testing.T) *facts {
			f := mkFacts(t, "", verify("--- FAIL: TestA (0.00s)\n", 2), verify("--- FAIL: TestA (0.00s)\n", 2))
			f.base = &baseVerify{ExitCode: 1, Output: "--- FAIL: TestA (0.00s)\n"}
			return f
		}},
		{"verify-fails-on-base", "the base ends on a dependency's bare exit status: nothing says why", func(t *testing.T) *facts {
			out := " Container app-init-1  Started\n Container app-init-1  Waiting\nservice \"airflow-init\" didn't complete successfully: exit 1\n"
			f := mkFacts(t, "", verify(out, 2), verify(out, 2))
			f.base = &baseVerify{ExitCode: 1, Output: out}
			return f
		}},
		{"machine-lacks", "the verify pins the toolchain it runs: an MSRV check the lockfile outgrew", func(t *testing.T) *facts {
			out := "error: package `clap_lex v0.7.2` cannot be built because it requires rustc 1.74 or newer, while the currently active rustc version is 1.70.0\n"
			f := mkFacts(t, "", verify(out, 1), verify(out, 1))
			f.def.Verify.Command = []string{"cargo", "+1.70.0", "check", "--locked"}
			f.base = &baseVerify{ExitCode: 101, Output: out}
			return f
		}},
		{"machine-lacks", "the port was free for the attempt before: a port race of the suite, not a held port", func(t *testing.T) *facts {
			timeout := " FAIL  test/ws.test.js (6.2 s)\n    thrown: \"Exceeded timeout of 5000 ms for a test.\n"
			port := " FAIL  test/ws.test.js\n  ● Test suite failed to run\n    listen EADDRINUSE: address already in use :::4010\n"
			f := mkFacts(t, "", verify(timeout, 1), verify(port, 1))
			f.base = &baseVerify{ExitCode: 1, Output: port}
			return f
		}},
		{"prompt-asks-conflicting-versions", "the prompt names one side of the conflict: the other pin is the agent's", func(t *testing.T) *facts {
			out := "  × No solution found when resolving dependencies:\n  ╰─▶ Because pandas==2.2.2 depends on numpy>=1.26.0 and your project depends on numpy<1.25, we can conclude that your project's requirements are unsatisfiable.\n"
			f := mkFacts(t, "", verify(out, 1), verify(out, 1))
			f.def.Prompt = "Upgrade pandas to 2.2.2 and make uv lock pass."
			return f
		}},
		{"verify-fails-outside-scope", "the prompt names a file, and the failing crate is the repository itself", func(t *testing.T) *facts {
			repo, pre, post := twoTrees(t, map[string]string{"src/parse.rs": "a\n", "Cargo.toml": "[package]\n"}, map[string]string{"src/parse.rs": "b\n"})
			out := "error[E0382]: borrow of moved value: `cur`\nerror: could not compile `csvlite` (lib) due to 1 previous error\n"
			f := mkFacts(t, "", verify(out, 1), verify(out, 1))
			f.def.Prompt = "Make the CSV reader in src/parse.rs accept quoted newlines."
			return onTrees(f, repo, pre, post)
		}},
		{"verify-fails-outside-scope", "the failing module is the one the attempt changed", func(t *testing.T) *facts {
			repo, pre, post := twoTrees(t, map[string]string{"billing-web/pom.xml": "<a/>\n"}, map[string]string{"billing-web/pom.xml": "<b/>\n"})
			out := "[ERROR] Failed to execute goal org.apache.maven.plugins:maven-enforcer-plugin:3.4.1:enforce (enforce) on project billing-web: \n"
			f := mkFacts(t, "", verify(out, 1), verify(out, 1))
			f.def.Prompt = "Only change billing-core."
			return onTrees(f, repo, pre, post)
		}},
		{"machine-lacks", "a variable not set, and the program went on with a default", func(t *testing.T) *facts {
			out := "[client] VITE_API_URL not set, using http://localhost:8080\n--- FAIL: TestA (0.00s)\n"
			f := mkFacts(t, "", verify(out, 2), verify("[client] VITE_API_URL not set, using http://localhost:8080\n--- FAIL: TestB (0.00s)\n", 2))
			f.base = &baseVerify{ExitCode: 0, Output: "ok\n"}
			return f
		}},
		{"verify-fails-on-base", "the base prints nothing: nothing says it is the command", func(t *testing.T) *facts {
			f := mkFacts(t, "", verify("", 2), verify("", 2))
			f.base = &baseVerify{ExitCode: 1, Output: ""}
			return f
		}},
		{"preexisting-failures", "an earlier attempt made the test pass: it can", func(t *testing.T) *facts {
			f := mkFacts(t, "", verify("--- FAIL: TestA (0.00s)\n", 2), verify("--- FAIL: TestB (0.00s)\n", 2))
			f.base = &baseVerify{ExitCode: 1, Output: "--- FAIL: TestB (0.00s)\n"}
			f.def.Prompt = "Add a --json flag to the report command."
			return f
		}},
		{"preexisting-failures", "the base's assertion became the attempt's crash", func(t *testing.T) *facts {
			crash := "--- FAIL: TestParse (0.00s)\npanic: runtime error: index out of range [9] with length 9 [recovered]\n"
			f := mkFacts(t, "", verify(crash, 2), verify(crash, 2))
			f.base = &baseVerify{ExitCode: 1, Output: "--- FAIL: TestParse (0.00s)\n    parse_test.go:12: got 3, want 4\n"}
			f.def.Prompt = "Add a --json flag to the report command."
			return f
		}},
		{"verify-fails-on-base", "the attempts fail differently from the base", func(t *testing.T) *facts {
			f := mkFacts(t, "", verify("cannot find package\n", 2), verify("cannot find package x\n", 2))
			f.base = &baseVerify{ExitCode: 1, Output: "no Go files\n"}
			return f
		}},
		{"network", "a sibling task failed on the network and recovered", func(t *testing.T) *facts {
			f := mkFacts(t, "", att{class: cTransport, msg: "ECONNRESET"}, att{class: cTransport, msg: "ECONNRESET"})
			f.run.Tasks = append(f.run.Tasks, store.Task{ID: "docs", State: store.TaskSucceeded, Attempts: []store.Attempt{
				{TaskID: "docs", N: 1, State: store.AttemptFailed, Class: cTransport}, {TaskID: "docs", N: 2, State: store.AttemptSucceeded}}})
			f.task = &f.run.Tasks[0]
			return f
		}},
		{"network", "one attempt shows no network failure", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cTransport, msg: "ECONNRESET"}, att{class: cTransport, msg: "529 overloaded"})
		}},
		{"agent-runtime-missing", "a missing source file, exit 1", func(t *testing.T) *facts {
			return mkFacts(t, "", exit("agent exited with status 1: open src/x.go: No such file or directory", 1))
		}},
		{"permission-denied", "the agent changed files: the denial was on something else", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cAgentExit, msg: "agent exited with status 1: Permission denied (os error 13)", files: 3})
		}},
		{"timeout-too-short", "an attempt went round in circles on a failing test", func(t *testing.T) *facts {
			loop := "--- FAIL: TestMerge (0.00s)\nRunning go test ./...\n--- FAIL: TestMerge (0.00s)\n"
			f := mkFacts(t, "", att{class: cTimeout, msg: "ran past its timeout", files: 2, out: loop}, att{class: cTimeout, msg: "ran past its timeout", files: 9})
			for i := range f.failed {
				f.failed[i].DurationMS = store.Ptr(int64(10 * 60 * 1000))
			}
			return f
		}},
		{"stuck-on-input", "the attempts went silent at different points", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cHeartbeat, msg: "silent", out: "Reading a.go\n"}, att{class: cHeartbeat, msg: "silent", out: "Running tests\n"})
		}},
		{"credit-exhausted", "a usage limit with a reset time is a clock, not money", func(t *testing.T) *facts {
			return mkFacts(t, "quota", att{class: cQuota, code: "usage_limit", msg: "codex: You've hit your usage limit. Try again at 3:28 PM."})
		}},
		{"verify-intermittent", "the run stopped on an attempt that printed nothing, after varying rejections", func(t *testing.T) *facts {
			return mkFacts(t, "", verify("--- FAIL: TestA (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL\n", 2), verify("--- FAIL: TestC (0.00s)\nFAIL\n", 1), att{class: cPayload, code: "empty_output", msg: "claude: the agent exited 0 with no output"})
		}},
		{"payload-declared", "an empty output says nothing of why", func(t *testing.T) *facts {
			return mkFacts(t, "", verify("--- FAIL: TestA (0.00s)\nFAIL\n", 2), att{class: cPayload, code: "empty_output", msg: "claude: the agent exited 0 with no output"})
		}},
		{"tool-calls-refused", "it edited; only its own run of the tests was refused", func(t *testing.T) *facts {
			v := verify("--- FAIL: TestInvoiceRepositoryIT (0.00s)\n    Could not find a valid Docker environment\nFAIL\n", 3)
			v.out = `{"type":"result","subtype":"success","is_error":false,"result":"Added InvoiceService.overdue(); I could not run the tests here.","permission_denials":[{"tool_name":"Bash","tool_input":{"command":"./gradlew test --tests '*InvoiceRepositoryIT'"}}]}`
			return mkFacts(t, "", v)
		}},
		{"tool-calls-refused", "it edited; only the prompt's `make check` was refused, which the verify runs", func(t *testing.T) *facts {
			v := verify("--- FAIL: TestBump (0.00s)\nFAIL\n", 1)
			v.out = `{"type":"result","subtype":"success","is_error":false,"result":"Bumped the version; make check did not run.","permission_denials":[{"tool_name":"Bash","tool_input":{"command":"make -C src check"}}]}`
			f := mkFacts(t, "", v, v)
			f.def.Prompt = "Bump the version, then run `make -C src check`."
			return f
		}},
		{"agent-sandbox-network", "codex's command met a service of this machine that refused it", func(t *testing.T) *facts {
			f := mkFacts(t, "", att{class: cQuality, code: "verify_failed", msg: "verify `node index.js` exited with status 1: Error: Cannot find module 'left-pad'", files: 1,
				verify: "Error: Cannot find module 'left-pad'\n",
				out:    `{"type":"item.completed","item":{"type":"command_execution","command":"npm install left-pad","aggregated_output":"npm error request to http://127.0.0.1:4873/left-pad failed, reason: connect ECONNREFUSED 127.0.0.1:4873\n","exit_code":1,"status":"failed"}}` + "\n" + `{"type":"turn.completed","usage":{"output_tokens":9}}`})
			f.failed[0].Agent = "cx"
			return f
		}},
		{"agent-sandbox-network", "curl cannot reach this machine, and codex's command gives its sandbox network", func(t *testing.T) *facts {
			v := att{class: cQuality, code: "verify_failed", msg: "verify `grep -q fake-model models.json` exited with status 2", files: 0,
				verify: "grep: models.json: No such file or directory\n", out: `{"type":"item.completed","item":{"type":"command_execution","command":"/bin/bash -lc 'curl -sS -o models.json \"$API/v1/models\"'","aggregated_output":"curl: (7) Failed to connect to 127.0.0.1 port 43489 after 0 ms: Couldn't connect to server\n","exit_code":7,"status":"failed"}}` + "\n" + `{"type":"turn.completed","usage":{"output_tokens":9}}`}
			f := mkFacts(t, "", v, v)
			f.failed[0].Agent, f.failed[1].Agent = "cxnet", "cxnet"
			return f
		}},
		{"service-down", "a test's own listener on an ephemeral port, dialled on purpose", func(t *testing.T) *facts {
			out := "--- FAIL: TestDialTimeoutBackoff (0.30s)\n    dialer_test.go:31: dial attempt 3: dial tcp 127.0.0.1:39217: connect: connection refused\n    dialer_test.go:44: backoff = 300ms, want 400ms\nFAIL\n"
			f := mkFacts(t, "", verify(out, 1), verify(out, 1))
			f.base = &baseVerify{ExitCode: 1, Output: out}
			return f
		}},
		{"credit-exhausted", "Google's daily quota quotes 'check your plan and billing' but resets", func(t *testing.T) *facts {
			return mkFacts(t, "quota", att{class: cQuota, code: "usage_limit", msg: "gemini: [API Error: You have exhausted your daily quota on this model.] (resets 2026-12-05T08:00:00Z)",
				out: `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED"}}`})
		}},
		{"untrusted-folder", "gemini exiting 1", func(t *testing.T) *facts {
			f := mkFacts(t, "", exit("agent exited with status 1: oops", 1))
			f.failed[0].Agent = "gem"
			return f
		}},
		{"empty-prompt", "an ad-hoc command that takes no prompt", func(t *testing.T) *facts {
			f := mkFacts(t, "", exit("agent exited with status 1: FAIL", 1))
			f.failed[0].Agent, f.attempts[0].Agent, f.attempts[0].Prompt = "plain", "plain", ""
			return f
		}},
		{"verify-tool-missing", "the tests open a file that is not there", func(t *testing.T) *facts {
			return mkFacts(t, "", verify("--- FAIL: TestLoad (0.00s)\n    open testdata/config.yaml: no such file or directory\n", 1))
		}},
		{"service-down", "a passing test's log refuses a connection; the failing test fails on a value", func(t *testing.T) *facts {
			out := "=== RUN   TestDeliver_ConnectionRefusedIsRetryable\n    deliver_test.go:66: attempt 1: Post \"http://127.0.0.1:1/hook\": dial tcp 127.0.0.1:1: connect: connection refused\n--- PASS: TestDeliver_ConnectionRefusedIsRetryable (0.00s)\n=== RUN   TestBudget_StopsAtDeadline\n    budget_test.go:58: Allow(deadline+1ms) = true, want false\n--- FAIL: TestBudget_StopsAtDeadline (0.00s)\nFAIL\n"
			f := mkFacts(t, "", verify(out, 1), verify(out, 2))
			f.base = &baseVerify{ExitCode: 1, Output: out}
			return f
		}},
		{"service-down", "the base passes: the attempts broke the connection", func(t *testing.T) *facts {
			f := mkFacts(t, "", verify("dial tcp 127.0.0.1:8080: connect: connection refused\n", 2))
			f.base = &baseVerify{ExitCode: 0, Output: "ok\n"}
			return f
		}},
		{"agent-broke-build", "the base did not build either", func(t *testing.T) *facts {
			f := mkFacts(t, "", verify("./a.go:3:1: syntax error: unexpected }\n", 1))
			f.base = &baseVerify{ExitCode: 1, Output: "./a.go:3:1: syntax error: unexpected }\n"}
			return f
		}},
		{"silent-failures", "the agent said something", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cAgentExit, msg: "agent exited with status 1", out: "panic: nil map\n", exitCode: 1}, att{class: cAgentExit, msg: "agent exited with status 1", out: "panic: nil map\n", exitCode: 1})
		}},
		{"context-window", "verify output that mentions a context window", func(t *testing.T) *facts {
			return mkFacts(t, "", verify("--- FAIL: TestContextWindow (0.00s)\n", 1))
		}},
		{"provider-flake", "a usage limit is not a flake", func(t *testing.T) *facts {
			return mkFacts(t, "", att{class: cQuota, msg: "429 rate limited"})
		}},
	}
	for _, c := range cases {
		t.Run(c.not+"/"+c.why, func(t *testing.T) {
			if r := decide(c.facts(t)); r.Name == c.not {
				t.Errorf("decided %s", r.Name)
			}
		})
	}
}

// The prompt's paths that the missing-file rule may name: not a file the prompt asks to create,
// not a dotted identifier.
func TestMissingInSkipsCreatedAndIdentifiers(t *testing.T) {
	f := mkFacts(t, "", att{class: cAgentExit, msg: "x"})
	f.def.Prompt = "Create docs/ARCHITECTURE.md describing render.JSON, then update internal/cache/lru.go and add a test in internal/cache/lru_test.go. See os.Exit and v1.2."
	got := f.missingIn(func(string) bool { return true })
	if strings.Join(got, " ") != "internal/cache/lru.go" {
		t.Errorf("missing %q, want only internal/cache/lru.go", got)
	}
}

// The table is ranked by the strength of its evidence.
func TestRulesRanked(t *testing.T) {
	for i := 1; i < len(Rules); i++ {
		if Rules[i].Confidence > Rules[i-1].Confidence {
			t.Errorf("rule %s (%.2f) after %s (%.2f)", Rules[i].Name, Rules[i].Confidence, Rules[i-1].Name, Rules[i-1].Confidence)
		}
	}
	if last := Rules[len(Rules)-1]; last.Name != "fallback" || last.Category != Unknown {
		t.Errorf("the last rule is %s, want the unknown fallback", last.Name)
	}
}

// TestRefusedWhyQuotesText: the why of tool-calls-refused quotes the refused tool and the CLI's
// reason as text, never the raw claude stream-json event that carried the reason.
func TestRefusedWhyQuotesText(t *testing.T) {
	out := `{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"Claude requested permissions to write to src/a.ts, but you haven't granted it yet.","is_error":true}]}}` + "\n" +
		`{"type":"result","num_turns":3,"result":"I need permission to write src/a.ts.","permission_denials":[{"tool_name":"Write","tool_input":{"file_path":"src/a.ts"}}]}`
	f := mkFacts(t, "", att{class: cPayload, code: "permission_denied", msg: "claude: permission denied for Write", out: out})
	r := decide(f)
	if r.Name != "tool-calls-refused" {
		t.Fatalf("rule %s decided, want tool-calls-refused", r.Name)
	}
	why := r.Why(f)
	if strings.Contains(why, `{"type"`) || strings.Contains(why, "tool_use_id") {
		t.Errorf("why quotes the raw JSON event: %s", why)
	}
	for _, want := range []string{"Write src/a.ts", "you haven't granted it yet"} {
		if !strings.Contains(why, want) {
			t.Errorf("why does not say %q: %s", want, why)
		}
	}
}

// TestWithoutMarkers: the runner's own lines in an attempt's log are not the agent's last words.
func TestWithoutMarkers(t *testing.T) {
	log := "Ripgrep is not available. Falling back to GrepTool.\n{\"type\":\"init\"}\n\n--- mulligan: verify `sh verify.sh` exited with status 1: 1 failed: x (its output: /r/.git/mulligan/logs/k/fix/2.verify.log) ---\n"
	if got := withoutMarkers(log); strings.Contains(got, "mulligan:") || !strings.Contains(got, "Ripgrep") {
		t.Errorf("withoutMarkers = %q", got)
	}
	if agentcli.LastWords([]byte(withoutMarkers(log))) == agentcli.LastWords([]byte(log)) {
		t.Errorf("the marker is still the last words: %q", agentcli.LastWords([]byte(log)))
	}
}

// TestLackIn: a tool's own install command is what the machine lacks; a command it names for
// something else (jest's "run `npm test -- -u` to update them", for snapshots) is not.
func TestLackIn(t *testing.T) {
	if k, ok := lackIn("Your lockfile is out of date. Please run `bundle install` to install missing gems.", true); !ok || k.fix != "bundle install" {
		t.Errorf("bundle: %+v %v", k, ok)
	}
	// ASan looping on DEADLYSIGNAL without a report: the kernel's ASLR, not the code.
	deadly := strings.Repeat("AddressSanitizer:DEADLYSIGNAL\n", 5)
	if k, ok := lackIn(" 1/18 Test  #1: HeaderParser.Splits ....***Timeout  60.01 sec\n"+deadly, false); !ok || k.fix != "sudo sysctl vm.mmap_rnd_bits=28" {
		t.Errorf("ASan's DEADLYSIGNAL loop: %+v %v", k, ok)
	}
	if k, ok := lackIn(deadly+"==4242==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000\n", false); ok {
		t.Errorf("a SEGV ASan reports is the code's: %+v", k)
	}
	// The project's dependencies, read on the base tree only (an attempt may import what it did
	// not add): Perl's require.
	for text, fix := range map[string]string{
		"Can't locate Test/Deep.pm in @INC (you may need to install the Test::Deep module) (@INC contains: /etc/perl) at t/parse.t line 6.": "cpanm --installdeps . || cpanm Test::Deep",
	} {
		if k, ok := lackIn(text, true); !ok || k.fix != fix {
			t.Errorf("lackIn(%q, deps) = %+v %v, want %s", text, k, ok, fix)
		}
		if k, ok := lackIn(text, false); ok {
			t.Errorf("lackIn(%q) without deps = %+v", text, k)
		}
	}
	// apache/fory#2232: ts-jest on Node 14.
	if k, ok := lackIn("    SyntaxError: Unexpected token '??='\n        at wrapSafe (internal/modules/cjs/loader.js:1029:16)", false); !ok || k.fix != "nvm install --lts" {
		t.Errorf("node 14: %+v %v", k, ok)
	}
	for text, fix := range map[string]string{
		"error: package `clap_builder v4.5.2` cannot be built because it requires rustc 1.74 or newer, while the currently active rustc version is 1.72.0": "rustup update stable",
		"error: Environment variable not found: DATABASE_URL.":                                                                                                      "${EDITOR:-vi} .env  # set DATABASE_URL",
		"Got an error creating the test database: permission denied to create database":                                                                             `sudo -u postgres psql -c "ALTER USER $USER CREATEDB"`,
		"  The source directory\n  /src/ring/third_party/googletest\n  does not contain a CMakeLists.txt file.":                                                     "git submodule update --init --recursive",
		"A module that was compiled using NumPy 1.x cannot be run in":                                                                                               "python3 -m pip install 'numpy<2'",
		"E   ValueError: numpy.dtype size changed, may indicate binary incompatibility. Expected 96 from C header, got 88 from PyObject":                            "python3 -m pip install --upgrade numpy",
		"You are using Node.js 18.17.1. For Next.js, Node.js version \"^18.18.0 || ^19.8.0 || >= 20.0.0\" is required.":                                             "nvm install 20",
		"Error: The module '/app/node_modules/bcrypt/lib/binding/bcrypt_lib.node'\nwas compiled against a different Node.js version using\nNODE_MODULE_VERSION 93.": "npm rebuild",
		"verify.sh: 2: Illegal instruction (core dumped)":                                                                                                           "grep -o -w -m1 -E 'avx2|avx512f|sse4_2' /proc/cpuinfo",
		"E   locale.Error: unsupported locale setting":                                                                                                              "sudo dpkg-reconfigure locales",
		"failed to initialize build cache at /home/ci/.cache/go-build: mkdir /home/ci/.cache: read-only file system":                                                "export GOCACHE=/tmp/go-build",
		"browserType.launch: Host system is missing dependencies to run browsers.":                                                                                  "sudo npx playwright install-deps",
		"../../meson.build:1:0: ERROR: Unknown compiler(s): [['cc'], ['gcc'], ['clang'], ['nvc'], ['pgcc'], ['icc'], ['icx']]":                                      "sudo apt-get install -y build-essential",
		"gyp ERR! stack Error: Could not find any Python installation to use":                                                                                       "sudo apt-get install -y python3 build-essential",
		"E   wand.exceptions.PolicyError: attempt to perform an operation not allowed by the security policy `PDF' @ error/constitute.c/IsCoderAuthorized/421":      `sudo sed -i 's/rights="none" pattern="PDF"/rights="read|write" pattern="PDF"/' /etc/ImageMagick-*/policy.xml`,
		"No compiler found, expected minor version match with ghc-9.4.8 (x86_64-tinfo6) (based on resolver setting in /src/toml-lite/stack.yaml).":                  "stack setup",
		"[ERROR] No switch is currently set. Please use 'opam switch' to set or install a switch":                                                                   "opam switch create . --deps-only --with-test -y && eval $(opam env)",
		"jupyter_client.kernelspec.NoSuchKernel: No such kernel named python3":                                                                                      "python3 -m pip install ipykernel && python3 -m ipykernel install --user --name python3",
		"ERROR TOCSS: failed to transform \"/scss/main.scss\" (text/x-scss). Check your Hugo installation; you need the extended version to build SCSS/SASS with transpiler set to 'libsass'.: this feature is not available in your current Hugo version": "CGO_ENABLED=1 go install -tags extended github.com/gohugoio/hugo@latest  # or hugo_extended from its releases",
		"/src/docs/architecture.rst:14: WARNING: dot command 'dot' cannot be run (needed for graphviz output), check the graphviz_dot setting":                                                                                                             "sudo apt-get install -y graphviz",
		"[ERROR] Error updating the NVD Data; the NVD returned a 403 or 404 error":                                                                                                                                                                         `dependency-check --nvdApiKey "$NVD_API_KEY"  # with the key requested at https://nvd.nist.gov/developers/request-an-api-key in NVD_API_KEY`,
		"  pdflatex is not available": "sudo apt-get install -y texlive-latex-base texlive-fonts-recommended  # or R CMD check --no-manual",
		`  Could not find a package configuration file provided by "ament_cmake" with any of the following names:`:         "source /opt/ros/$ROS_DISTRO/setup.bash  # (humble, jazzy…) in the verify's shell, before colcon",
		`PHPUnit requires the "dom", "json", "mbstring", "xml" extensions, but the "mbstring" extension is not available.`: "sudo apt-get install -y php-mbstring",
		"Error: No connected probes were found.":                                                                                                               "probe-rs list",
		"> com.android.builder.testing.api.DeviceException: No connected devices!":                                                                             `emulator -avd "$(emulator -list-avds | head -n 1)" -no-window &`,
		`  Could not find a package configuration file provided by "Zephyr-sdk"`:                                                                               "west sdk install",
		`  Could not find a package configuration file provided by "yaml-cpp"`:                                                                                 "sudo apt-get install -y libyaml-cpp-dev",
		"CMake Error at CMakeLists.txt:14 (project):\n  The CMAKE_C_COMPILER:\n\n    arm-none-eabi-gcc\n\n  is not a full path and was not found in the PATH.": "sudo apt-get install -y gcc-arm-none-eabi",
		"index [products_v7] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];":            "df -h  # free disk where Elasticsearch keeps its data; then clear the read-only block",
		`unable to start the controlplane	{"tries": 0, "error": "fork/exec /usr/local/kubebuilder/bin/etcd: no such file or directory"}`:                       "export KUBEBUILDER_ASSETS=$(go run sigs.k8s.io/controller-runtime/tools/setup-envtest@latest use -p path)",
		"fatal: No names found, cannot describe anything.":                                                                                                     "git fetch --tags --unshallow",
		"Selenium::WebDriver::Error::WebDriverError: Unable to find chromedriver. Please download the server from":                                             "npx @puppeteer/browsers install chromedriver@stable",
		"[4817:1204/031522.118466:ERROR:ozone_platform_x11.cc(240)] Missing X server or $DISPLAY":                                                              "sudo apt-get install -y xvfb  # then run the verify under xvfb-run",
		"Error during build: Platform 'arduino:avr' not found: platform not installed":                                                                         "arduino-cli core update-index && arduino-cli core install arduino:avr",
		"ERROR   -  Config value 'theme': Unrecognised theme name: 'material'. The available installed themes are: mkdocs":                                     "python3 -m pip install mkdocs-material",
		"  The system library `webkit2gtk-4.1` required by crate `webkit2gtk-sys` was not found.":                                                              "sudo apt-get install -y pkg-config libwebkit2gtk-4.1-dev",
		"    Fixed in: net/http@go1.22.12":                                                     "go env -w GOTOOLCHAIN=go1.22.12+auto",
		"Error: cabal: The program 'ghc-9.6.6' is required but it could not be found.":         "ghcup install ghc 9.6.6",
		"The cypress npm package is installed, but the Cypress binary is missing.":             "npx cypress install",
		"E   RuntimeError: operator torchvision::nms does not exist":                           "python3 -m pip install --upgrade torch torchvision",
		"   > Android Gradle plugin requires Java 17 to run. You are currently using Java 11.": "sudo apt-get install -y openjdk-17-jdk",
		"/usr/lib/ruby/3.2.0/rubygems.rb:264:in `find_spec_for_exe': Could not find 'bundler' (2.5.11) required by your /src/press/Gemfile.lock. (Gem::GemNotFoundException)": "gem install bundler:2.5.11",
	} {
		if k, ok := lackIn(text, false); !ok || k.fix != fix {
			t.Errorf("lackIn(%q) = %+v %v, want %s", text, k, ok, fix)
		}
	}
	for _, noise := range []string{"bash: warning: setlocale: LC_ALL: cannot change locale (en_US.UTF-8)", `error: script "test" was terminated by signal SIGILL (Illegal instruction)`} {
		if k, ok := lackIn(noise, false); ok {
			t.Errorf("lackIn(%q) = %+v", noise, k)
		}
	}
	if k, ok := lackIn("› 1 snapshot failed from 1 test suite. Inspect your code changes or run `npm test -- -u` to update them.", true); ok {
		t.Errorf("a snapshot update taken for a missing dependency: %+v", k)
	}
}

// TestLooping: the same tool call with the same answer over and over is a loop; a tool working
// through numbered files is progress, however alike its lines look.
func TestLooping(t *testing.T) {
	var loop, work strings.Builder
	for i := range 12 {
		fmt.Fprintf(&loop, `{"type":"item.completed","item":{"id":"item_%d","type":"reasoning","text":"**Verifying the change**"}}`+"\n", 2*i)
		fmt.Fprintf(&loop, `{"type":"item.completed","item":{"id":"item_%d","type":"command_execution","command":"bash -lc 'git status -sb'","aggregated_output":"## main\n M src/orders.rs\n","exit_code":0,"status":"completed"}}`+"\n", 2*i+1)
		fmt.Fprintf(&work, "RefactoringTool: Refactored legacy/mod%02d.py\n[porter] %d/40 legacy/mod%02d.py: print statements -> print()\n", i, i+1, i)
	}
	if !looping(loop.String()) {
		t.Error("codex checking git status again and again: not a loop")
	}
	if looping(work.String()) {
		t.Error("a codemod working through numbered files taken for a loop")
	}
}

// TestOnlyExits: a verify output that says only that something exited non-zero, with its
// tallies, is no evidence of why; one line that says more is.
func TestOnlyExits(t *testing.T) {
	turbo := "@harbor/api#test: command (/srv/harbor/apps/api) /usr/local/bin/pnpm run test exited (1)\n\n Tasks:    7 successful, 8 total\nCached:    6 cached, 8 total\n  Time:    19.552s \nFailed:    @harbor/api#test\n\n ERROR  run failed: command  exited (1)\n"
	if !onlyExits(turbo) || !onlyExits("make: *** [Makefile:31: check] Error 1\n") {
		t.Error("turbo's or make's bare exit taken for a cause")
	}
	if onlyExits("make: *** No rule to make target 'test'.  Stop.\n") {
		t.Error("make's missing target taken for a bare exit")
	}
}

func TestOnlyChecks(t *testing.T) {
	for cmd, want := range map[string]bool{
		"go test ./...":                       true,
		"make":                                true,
		"make -j4 test lint":                  true,
		"make -C src check":                   true,
		"cd web && make build-prod":           true,
		"bash -lc 'make test'":                true,
		"make gen":                            false,
		"make install PREFIX=/usr":            false,
		"make -f build/Makefile migrate":      false,
		"ninja":                               true,
		"ninja docs":                          false,
		"make lint-fix":                       false,
		"make test-update-snapshots":          false,
		"make test-unit":                      true,
		"npx prisma generate":                 false,
		"./gradlew test --tests '*InvoiceIT'": true,
	} {
		if got := onlyChecks(cmd); got != want {
			t.Errorf("onlyChecks(%q) = %v, want %v", cmd, got, want)
		}
	}
}
