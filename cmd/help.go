package cmd

import (
	"strings"

	"github.com/urfave/cli/v2"
)

// runExits are the exit codes of the commands that run (or continue) a run in the foreground.
const runExits = "0 succeeded, 1 failed, 2 usage or task-file error, 3 blocked (a decision is needed), " +
	"4 parked (quota, pause, approval), 5 cancelled or killed, 6 refused without --force, 130 interrupted"

// commandHelp holds each command's examples and exit codes, shown under its --help. They live in one
// table so the whole CLI's help reads alike.
var commandHelp = map[string]struct{ examples, exits string }{
	"run": {`mulligan run                                   the tasks of mulligan.yaml
  mulligan run -f ci.yaml fix-tests              one task (and what it needs) of another file
  mulligan run --dry-run                         validate mulligan.yaml and print the plan; run nothing
  mulligan run --preset claude --prompt 'Make the tests pass' --retries 2 --on-failure retry --verify 'go test ./...'
  mulligan run --prompt 'Make the tests pass' -- ./my-agent.sh '{{prompt}}'
  mulligan run --detach                          in the background; follow with mulligan show`, runExits},
	"init": {`mulligan init                  write mulligan.yaml for the agent CLIs on PATH
  mulligan init -f -             print it instead`, "0, 2 not in a git working tree, 6 refused (the file exists)"},
	"ls": {`mulligan ls -n 10`, "0, 2 usage error"},
	"show": {`mulligan show            the last run
  mulligan show k3f9 -o json`, "0, 2 no such run"},
	"logs": {`mulligan logs fix-tests@2
  mulligan logs k3f9/fix-tests -f          follow a running attempt`, "0, 1 the log is gone (gc), 2 no such attempt, 130 interrupted (-f)"},
	"events": {`mulligan events -f
  mulligan events k3f9 -o json`, "0, 2 no such run"},
	"diff": {`mulligan diff fix-tests@2              what attempt 2 changed
  mulligan diff fix-tests@1 fix-tests@2 --stat`, "0, 1 a tree is gone (gc), 2 no such attempt"},
	"snapshot": {`mulligan snapshot -m 'before the refactor'`, "0, 1 the snapshot failed"},
	"restore": {`mulligan restore refs/mulligan/runs/k3f9/fix-tests/2/post
  mulligan restore k3f9/fix-tests@2`, "0, 1 failed, 2 usage, 6 refused (the tree changed under the restore)"},
	"undo": {`mulligan undo`, "0, 1 failed, 2 nothing to undo, 6 refused"},
	"retry-task": {`mulligan retry-task fix-tests
  mulligan retry-task k3f9 fix-tests --from-base --no-deps`, runExits},
	"revert": {`mulligan revert fix-tests@2            the tree attempt 2 left
  mulligan revert fix-tests@2 --pre      the tree it started from
  mulligan revert k3f9 --base --dry-run`, "0, 1 failed, 2 usage, 6 refused (side effects crossed; --force)"},
	"timetravel": {`mulligan timetravel fix-tests@1 --resume`, runExits},
	"supervise": {`mulligan supervise --all --once
  mulligan supervise -r k3f9 --interval 30s`, "0, 1 failed, 2 usage"},
	"resume": {`mulligan resume
  mulligan resume k3f9 --mode immediate`, runExits},
	"pause": {`mulligan pause k3f9                     let the attempt in flight finish
  mulligan pause k3f9 --mode cancel`, "0, 2 no such run, 6 the run is not running"},
	"cancel": {`mulligan cancel k3f9`, "0, 2 no such run"},
	"kill":   {`mulligan kill k3f9`, "0, 2 no such run"},
	"prompt": {`mulligan prompt fix-tests 'The tests need the fixtures in testdata/; use them'`, runExits},
	"stop":   {`mulligan stop fix-tests`, runExits},
	"approve": {`mulligan approve deploy
  mulligan approve k3f9/deploy --payload '{"ticket": "OPS-12"}'`, runExits + "; 6 refused (a path of the change was changed otherwise since, or the run is live)"},
	"reject": {`mulligan reject deploy 'use the staging database'`, runExits},
	"apply": {`mulligan apply fix-tests@2 --dry-run        what it would change, and what conflicts
  mulligan apply k3f9/fix-tests@2`, "0, 1 error (the attempt is still running), 2 usage, 6 refused (a path of the change was changed otherwise since, or a live run owns the working tree)"},
	"tasks": {`mulligan tasks --state attention         what waits for you, across runs
  mulligan tasks --state blocked --run k3f9 -o json`, "0, 2 usage (unknown state, --limit outside 1..200, a bad cursor)"},
	"effect": {`mulligan effect record publish --compensate 'rm -f /srv/releases/1.0.txt' --data '{"file": "1.0.txt"}'`,
		"0, 2 usage or not inside an attempt"},
	"hooks":      {`mulligan hooks k3f9 -o json`, "0, 2 no such run"},
	"effects":    {`mulligan effects k3f9 -o json`, "0, 2 no such run"},
	"compensate": {`mulligan compensate k3f9`, "0, 1 a compensation failed, 2 no such run"},
	"autopsy": {`mulligan autopsy            the report written when the last run stopped
  mulligan autopsy k3f9 -o json`, "0, 1 no report, 2 no such run"},
	"top": {`mulligan top                       follow the runs; keys: ? lists them, q quits`, "0, 1 not a terminal, 130 interrupted"},
	"report": {`mulligan report                    the last run, to .git/mulligan/reports/<run>.html
  mulligan report k3f9 -o k3f9.html`, "0, 1 could not write, 2 no such run"},
	"bug": {`mulligan bug k3f9 --bundle /tmp/k3f9.tar.gz`, "0, 1 could not write, 2 no such run"},
	"gc":  {`mulligan gc --older-than 14d --dry-run`, "0, 2 usage"},
	"completion": {`source <(mulligan completion bash)
  mulligan completion fish | source`, "0, 2 unknown shell"},
	"presets": {`mulligan presets -o json`, "0"},
	"version": {`mulligan --version`, "0"},
}

// addCommandHelp puts each command's examples and exit codes in its description (shown by --help).
func addCommandHelp(cmds []*cli.Command) {
	for _, c := range cmds {
		h, ok := commandHelp[c.Name]
		if !ok {
			continue
		}
		var b strings.Builder
		if c.Description != "" {
			b.WriteString(strings.TrimRight(c.Description, "\n"))
			b.WriteString("\n\n")
		}
		b.WriteString("Examples:\n  ")
		b.WriteString(h.examples)
		b.WriteString("\n\nExit codes: ")
		b.WriteString(h.exits)
		c.Description = b.String()
	}
}
