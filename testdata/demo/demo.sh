#!/usr/bin/env bash
# make demo: mulligan on a throw-away repository, with a bundled demo agent. No API key, no network.
set -euo pipefail
MULLIGAN=${1:?usage: demo.sh PATH-TO-MULLIGAN PATH-TO-DEMOAGENT}
AGENT=${2:?usage: demo.sh PATH-TO-MULLIGAN PATH-TO-DEMOAGENT}
demo=$(mktemp -d "${TMPDIR:-/tmp}/mulligan-demo.XXXXXX")
export HOME="$demo/.home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$demo/.home/.gitconfig"
mkdir -p "$HOME" "$demo/bin"
cp "$AGENT" "$demo/bin/demoagent"
cp "$MULLIGAN" "$demo/bin/mulligan"   # agents call `mulligan effect record` from PATH
export PATH="$demo/bin:$PATH"
git config --global user.name "Demo User"
git config --global user.email demo@example.com
git config --global init.defaultBranch main

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run()  { printf '$ %s\n' "$*"; "$@"; }

cd "$demo" && mkdir repo && cd repo
git init -q
printf 'package calc\n\nfunc Add(a, b int) int { return a - b }\n' > calc.go
printf '*.log\n' > .gitignore
cat > mulligan.yaml <<'YAML'
version: 1
agents:
  demo:
    # A stand-in for claude/codex/…: attempt 1 leaves a half-finished edit and fails,
    # attempt 2 fixes the bug.
    command: [demoagent, "say:reading calc.go", "write:NOTES.md=attempt {{attempt}} was here\n",
              "fail-until:2",
              "write:calc.go=package calc\n\nfunc Add(a, b int) int { return a + b }\n", "say:fixed Add"]
tasks:
  - id: fix-add
    prompt: Fix the bug in Add.
    agent: demo
    on_failure: retry
    retries: 2
    backoff: {kind: exponential, initial: 200ms, max: 2s, jitter: full}
YAML
git add -A && git commit -qm "initial commit"
printf 'my own notes, not committed\n' > todo.txt      # uncommitted work of the user's
printf 'build output\n' > build.log                   # ignored

step "1. run the task: attempt 1 fails, attempt 2 starts from the base tree and succeeds"
run "$MULLIGAN" run
step "2. the history: every attempt, its class, its refs"
run "$MULLIGAN" show
run "$MULLIGAN" logs fix-add@1
step "3. every attempt's tree is a plain git commit"
run git for-each-ref --format='%(refname) %(subject)' refs/mulligan/runs
run_id=$("$MULLIGAN" show -o json | sed -n 's/^  "id": "\(.*\)",$/\1/p')
step "4. revert the tree to attempt 1's half-finished state, then undo"
run "$MULLIGAN" revert fix-add@1
run cat NOTES.md
run "$MULLIGAN" undo
run cat calc.go
step "5. your uncommitted and ignored files were never touched"
run cat todo.txt build.log
step "6. retry-task: the task again, with a fresh retry budget; attempt numbers go on"
run "$MULLIGAN" retry-task fix-add
step "7. timetravel back to just after attempt 1 and continue from there"
run "$MULLIGAN" timetravel fix-add@1 --resume
run "$MULLIGAN" show
step "8. side effects: a release task publishes outside the tree; revert withdraws it"
cat > "$demo/release.yaml" <<YAML
version: 1
agents:
  demo:
    # "publish:" writes a release file outside the working tree and records the side effect:
    #   mulligan effect record publish --compensate 'rm -f FILE' --data '{"file": FILE}'
    command: [demoagent, "write:VERSION=1.0.0\\n", "publish:$demo/releases/calc-1.0.0.txt", "say:published calc 1.0.0"]
tasks:
  - id: release
    prompt: Release calc 1.0.0.
    agent: demo
    side_effects: non_idempotent
YAML
run "$MULLIGAN" run -f "$demo/release.yaml"
run cat "$demo/releases/calc-1.0.0.txt"
run "$MULLIGAN" effects
run "$MULLIGAN" revert release@1 --pre
run ls "$demo/releases"
echo "(empty: the compensation ran, with MULLIGAN_DELIVERY_ID set for the receiver to deduplicate)"
run "$MULLIGAN" effects
step "9. failover: the first agent of the chain hits a usage limit, the next one takes over"
reset_at=$(( $(date +%s) + 3600 ))
cat > "$demo/failover.yaml" <<YAML
version: 1
agents:
  cheap:
    preset: claude
    command: [demoagent, "err:Claude AI usage limit reached|$reset_at", "exit:1"]
  strong:
    preset: claude
    command: [demoagent, "write:CHANGELOG.md=- fix Add\\n",
              'say:{"type":"result","is_error":false,"result":"wrote CHANGELOG.md","total_cost_usd":0.0042,"usage":{"input_tokens":1200,"output_tokens":80}}']
tasks:
  - id: changelog
    prompt: Write a CHANGELOG entry for the fix.
    agent: [cheap, strong]
YAML
run "$MULLIGAN" run -f "$demo/failover.yaml"
run "$MULLIGAN" show
step "10. a task that cannot pass: the run fails, its on_failed hook pages you, and its autopsy says why and what to run next"
cat > "$demo/broken.yaml" <<'YAML'
version: 1
agents:
  demo:
    command: [demoagent, "say:looking for the tests", "err:open calc_test.go: no such file or directory", "exit:1"]
tasks:
  - id: fix-tests
    prompt: Make the tests in calc_test.go pass.
    agent: demo
    hooks:
      on_failed: [[demoagent, "append:../pager.log=PAGE: {{task}} failed in run {{run}} (attempt {{attempt}})\\n"]]
YAML
run "$MULLIGAN" run -f "$demo/broken.yaml" || true
run "$MULLIGAN" hooks
run cat "$demo/pager.log"
run "$MULLIGAN" autopsy
echo
echo "demo repository left in $demo/repo"
