#!/usr/bin/env bash
# make demo: mulligan's story on a throw-away repository, with a bundled demo agent (demoagent). No
# API key, no network. The repository is deleted at the end unless --keep is given (make demo KEEP=1).
set -euo pipefail
usage='usage: demo.sh PATH-TO-MULLIGAN PATH-TO-DEMOAGENT [--keep]'
MULLIGAN=${1:?$usage}
AGENT=${2:?$usage}
keep=${MULLIGAN_DEMO_KEEP:-}
case ${3:-} in
  --keep) keep=1 ;;
  '') ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
demo=$(mktemp -d "${TMPDIR:-/tmp}/mulligan-demo.XXXXXX")
if [[ $keep == 1 ]]; then
  trap 'printf "\nThe demo repository is kept in %s/repo (the other task files in %s).\nTo look around: cd %s/repo && export PATH=%s/bin:\$PATH && mulligan ls\n" "$demo" "$demo" "$demo" "$demo"' EXIT
else
  trap 'rm -rf "$demo"' EXIT
fi
export HOME="$demo/.home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$demo/.home/.gitconfig"
mkdir -p "$HOME" "$demo/bin"
cp "$AGENT" "$demo/bin/demoagent"
cp "$MULLIGAN" "$demo/bin/mulligan"   # agents call `mulligan effect record` from PATH
export PATH="$demo/bin:$PATH"
git config --global user.name "Demo User"
git config --global user.email demo@example.com
git config --global init.defaultBranch main

# Bold headings on a terminal only: piped or logged, the output is plain text.
if [[ -t 1 && -z ${NO_COLOR:-} ]]; then bold=$'\033[1m' plain=$'\033[0m'; else bold='' plain=''; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
run()  { printf '$ %s\n' "$*"; "$@"; }

cd "$demo" && mkdir repo && cd repo
git init -q
printf 'package calc\n\nfunc Add(a, b int) int { return a - b }\n' > calc.go
printf '*.log\n' > .gitignore
cat > mulligan.yaml <<'YAML'
version: 1
agents:
  demo:   # stands in for claude, codex…: attempt 1 leaves a half-finished edit and fails, attempt 2 fixes Add
    command: [demoagent, "write:NOTES.md=attempt {{attempt}} was here\n", "fail-until:2",
              "write:calc.go=package calc\n\nfunc Add(a, b int) int { return a + b }\n", "say:fixed Add"]
tasks:
  - id: fix-add
    prompt: Fix the bug in Add.
    agent: demo
    on_failure: retry
    retries: 2
    backoff: {kind: fixed, initial: 200ms}
YAML
git add -A && git commit -qm "initial commit"
printf 'my own notes, not committed\n' > todo.txt      # the user's uncommitted work
printf 'build output\n' > build.log                   # ignored

step "1. A task with retries: attempt 1 fails, attempt 2 starts from a clean base and succeeds"
run cat mulligan.yaml
run mulligan run
run mulligan show
step "2. Every attempt is a git commit: revert to attempt 1's half-finished tree, then undo"
run mulligan revert fix-add@1
run cat NOTES.md
run mulligan undo
run cat todo.txt build.log
echo "(your uncommitted and ignored files were never touched)"

step "3. Failover: the cheap agent hits its usage limit, the strong one takes over"
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
run mulligan run -f "$demo/failover.yaml"

step "4. Side effects: a release publishes outside the tree; reverting it runs the compensation"
cat > "$demo/release.yaml" <<YAML
version: 1
agents:
  demo:
    # publish: writes a file outside the tree and records the effect with its compensation
    # (mulligan effect record publish --compensate 'rm -f FILE')
    command: [demoagent, "write:VERSION=1.0.0\\n", "publish:$demo/releases/calc-1.0.0.txt", "say:published calc 1.0.0"]
tasks:
  - id: release
    prompt: Release calc 1.0.0.
    agent: demo
    side_effects: non_idempotent
YAML
run mulligan run -f "$demo/release.yaml"
run mulligan revert release@1 --pre
run ls "$demo/releases"
echo "(empty: the release was withdrawn)"

step "5. An approval gate: the run parks (exit 4) until you approve what the agent did"
cat > "$demo/deploy.yaml" <<'YAML'
version: 1
agents:
  demo: {command: [demoagent, "write:DEPLOY.md=deployed calc 1.0.0\n"]}
tasks:
  - {id: deploy, prompt: Deploy calc 1.0.0., agent: demo, needs_approval: true}
YAML
run mulligan run -f "$demo/deploy.yaml" || echo "(exit $?: parked, waiting for you)"
run mulligan approve deploy

step "6. A task that cannot pass: the run fails and its autopsy says why and what to run next"
cat > "$demo/broken.yaml" <<'YAML'
version: 1
agents:
  demo:
    command: [demoagent, "err:open calc_test.go: no such file or directory", "exit:1"]
tasks:
  - id: fix-tests
    prompt: Make the tests in calc_test.go pass.
    agent: demo
YAML
run mulligan run -f "$demo/broken.yaml" || true

step "More, one command away"
cat <<'TXT'
  mulligan ls                      every run, newest first
  mulligan tasks --state attention what waits for you, across runs
  mulligan logs fix-add@1          an attempt's full output
  mulligan autopsy                 the whole report of the last failed run
  mulligan retry-task fix-add      run a task again with a fresh retry budget
  mulligan timetravel fix-add@1    go back to just after attempt 1 (--resume continues from there)
  mulligan effects                 side effects and their compensations
TXT
