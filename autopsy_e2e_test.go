package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mulligan-dev/mulligan/testdata/scripttest"
)

// TestAutopsyE2E runs whole runs end to end and checks the autopsy they leave: each script in
// testdata/autopsy-e2e sets up a real repository, an agent CLI that prints what the real one
// prints (a shell script named claude, codex, … on PATH, or any command) and a verify that prints
// what the real tool prints, runs the real binary, and ends with
//
//	verdict CATEGORY CMD_RE [NOT_RE]
//
// which reads `mulligan autopsy -o json` of the newest run: its category must be CATEGORY, its
// first suggested command must match CMD_RE and must not match NOT_RE. Unlike the scenario files
// of autopsy/testdata, nothing here is written the way the runner would record it: the runner
// records it, so a difference between what a CLI prints and what the autopsy expects shows.
//
// MULLIGAN_E2E_DIR runs another folder of such scripts (the blind rounds of docs/autopsy.md), and
// MULLIGAN_E2E_BLIND=1 runs them without looking: no autopsy is written or printed, and `verdict`
// prints the run as `mulligan show` records it instead of judging it.
func TestAutopsyE2E(t *testing.T) {
	t.Parallel()
	dir := os.Getenv("MULLIGAN_E2E_DIR")
	if dir == "" {
		dir = filepath.Join("testdata", "autopsy-e2e")
	}
	blind := os.Getenv("MULLIGAN_E2E_BLIND") == "1"
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			if blind {
				env.Setenv("MULLIGAN_AUTOPSY", "0")
			}
			return scripttest.HermeticGit(env)
		},
		Condition: conditions,
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"verdict": func(ts *testscript.TestScript, neg bool, args []string) {
				verdictCmd(ts, neg, args, blind)
			},
		},
	})
}

func verdictCmd(ts *testscript.TestScript, neg bool, args []string, blind bool) {
	if neg {
		ts.Fatalf("usage: verdict CATEGORY CMD_RE [NOT_RE] (no !)")
	}
	if len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: verdict CATEGORY CMD_RE [NOT_RE]")
	}
	compile := func(expr string) *regexp.Regexp {
		re, err := regexp.Compile(expr)
		if err != nil {
			ts.Fatalf("verdict: %v", err)
		}
		return re
	}
	want, cmdRe := args[0], compile(args[1])
	var notRe *regexp.Regexp
	if len(args) == 3 && args[2] != "" {
		notRe = compile(args[2])
	}
	if blind {
		ts.Check(ts.Exec("mulligan", "show"))
		ts.Logf("the run as recorded (blind: no verdict read):\n%s", ts.ReadFile("stdout"))
		return
	}
	ts.Check(ts.Exec("mulligan", "autopsy", "-o", "json"))
	var rep struct {
		Run     string `json:"run"`
		Verdict struct {
			Category string `json:"category"`
			Rule     string `json:"rule"`
			Why      string `json:"why"`
		} `json:"verdict"`
		Suggestion struct {
			Commands []string `json:"commands"`
		} `json:"suggestion"`
	}
	if err := json.Unmarshal([]byte(ts.ReadFile("stdout")), &rep); err != nil {
		ts.Fatalf("autopsy -o json: %v", err)
	}
	first := ""
	if len(rep.Suggestion.Commands) > 0 {
		// The script's directory, as the script names it, and the run's random ID as one
		// that spells nothing: a pattern cannot match the temporary path (it holds the
		// script's name) or the ID ("nvm6aacrrl" against a NOT_RE of nvm) by accident.
		first = strings.ReplaceAll(rep.Suggestion.Commands[0], ts.Getenv("WORK"), "$WORK")
		if rep.Run != "" {
			first = strings.ReplaceAll(first, rep.Run, strings.Repeat("0", len(rep.Run)))
		}
	}
	ts.Logf("verdict: %s (rule %s): %s\nfirst command: %s", rep.Verdict.Category, rep.Verdict.Rule, rep.Verdict.Why, first)
	switch {
	case rep.Verdict.Category != want:
		ts.Fatalf("E2E-VERDICT wrong: want %s, got %s (rule %s)", want, rep.Verdict.Category, rep.Verdict.Rule)
	case !cmdRe.MatchString(first):
		ts.Fatalf("E2E-COMMAND wrong: first command %q does not match %s", first, cmdRe)
	case notRe != nil && notRe.MatchString(first):
		ts.Fatalf("E2E-COMMAND wrong: first command %q matches %s", first, notRe)
	}
}
