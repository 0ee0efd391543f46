#!/usr/bin/env bash
# make demo: mulligan on a throw-away repository. No API key, no network.
set -euo pipefail
MULLIGAN=${1:?usage: demo.sh PATH-TO-MULLIGAN}
demo=$(mktemp -d "${TMPDIR:-/tmp}/mulligan-demo.XXXXXX")
export HOME="$demo/.home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$demo/.home/.gitconfig" NO_COLOR=${NO_COLOR:-}
mkdir -p "$HOME"
git config --global user.name "Demo User"
git config --global user.email demo@example.com
git config --global init.defaultBranch main

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run()  { printf '$ %s\n' "$*"; "$@"; }

cd "$demo" && mkdir repo && cd repo
git init -q
printf 'package main\n\nfunc main() {}\n' > main.go
printf '*.log\n' > .gitignore
git add -A && git commit -qm "initial commit"
printf 'work in progress\n' > notes.txt      # uncommitted work of the user's
printf 'build output\n' > build.log          # ignored

step "1. snapshot the working tree (tracked + untracked, not ignored)"
run "$MULLIGAN" snapshot -m "before the agent"
ref=$("$MULLIGAN" snapshot -o json | sed -n 's/.*"ref": "\(.*\)".*/\1/p')

step "2. an 'agent' edits the tree"
printf 'package main\n\nfunc main() { panic("oops") }\n' > main.go
rm notes.txt
printf 'junk\n' > scratch.txt
run git status --short

step "3. restore the snapshot: only differing paths change, ignored files stay"
run "$MULLIGAN" restore "$ref"
run git status --short
run cat notes.txt
run ls build.log

step "4. undo: the tree the restore replaced comes back"
run "$MULLIGAN" undo
run git status --short

step "5. every snapshot is a plain git commit"
run git for-each-ref refs/mulligan
echo
echo "demo repository left in $demo/repo"
