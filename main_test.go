package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"
	_ "github.com/mattn/go-sqlite3"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mulligan-dev/mulligan/cmd"
	"github.com/mulligan-dev/mulligan/testdata/fakeagent"
	"github.com/mulligan-dev/mulligan/testdata/scripttest"
)

// TestMain registers mulligan and the fake agent CLIs as commands of the test binary, so scripts
// in testdata/script run the real program as a subprocess, exactly as a user's shell would.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"mulligan":     func() { os.Exit(cmd.Main()) },
		"fakeagent":    func() { os.Exit(fakeagent.Main(os.Args[1:])) },
		"status":       func() { os.Exit(scripttest.Status(os.Args[1:])) },
		"jget":         func() { os.Exit(scripttest.JSONGet(os.Args[1:])) },
		"gittree":      func() { os.Exit(gitTree(os.Args[1:])) },
		"waitfile":     func() { os.Exit(waitFile(os.Args[1:])) },
		"alive":        func() { os.Exit(alive(os.Args[1:])) },
		"groupsgone":   func() { os.Exit(groupsGone(os.Args[1:])) },
		"dbcheck":      func() { os.Exit(dbCheck(os.Args[1:])) },
		"waitrun":      func() { os.Exit(waitRun(os.Args[1:])) },
		"aligned":      func() { os.Exit(aligned(os.Args[1:])) },
		"scrubcheck":   func() { os.Exit(scrubCheck(os.Args[1:])) },
		"helpexamples": func() { os.Exit(helpExamples(os.Args[1:])) },
		"waitscreen":   func() { os.Exit(waitScreen(os.Args[1:])) },
		"browsercheck": func() { os.Exit(browserCheck(os.Args[1:])) },
	})
}

// TestScripts runs testdata/script/*.txtar. UPDATE_SCRIPTS=1 rewrites cmp golden files in place.
func TestScripts(t *testing.T) {
	t.Parallel() // beside TestDemo and TestRecipes, not after them
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") == "1",
		Setup:               scripttest.HermeticGit,
		Condition:           conditions,
		Cmds:                map[string]func(*testscript.TestScript, bool, []string){"tmuxsession": tmuxSession},
	})
}

func conditions(cond string) (bool, error) {
	switch cond {
	case "git-lfs":
		_, err := exec.LookPath("git-lfs")
		return err == nil, nil
	case "root":
		return os.Geteuid() == 0, nil
	}
	return false, nil
}

// gitTree prints the tree id `git add -A && git write-tree` gives on a temporary copy of the
// index: the id mulligan's snapshot must equal (SPEC §2). The user's index is left alone.
func gitTree(args []string) int {
	gitDir, err := exec.Command("git", "rev-parse", "--git-dir").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gittree: not in a git repository")
		return 1
	}
	tmp, err := os.CreateTemp("", "gittree-index-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	index := filepath.Join(strings.TrimSpace(string(gitDir)), "index")
	if data, err := os.ReadFile(index); err == nil {
		if err := os.WriteFile(tmp.Name(), data, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	} else {
		os.Remove(tmp.Name())
	}
	env := append(os.Environ(), "GIT_INDEX_FILE="+tmp.Name())
	add := exec.Command("git", "add", "-A")
	add.Env, add.Stderr = env, os.Stderr
	if err := add.Run(); err != nil {
		return 1
	}
	wt := exec.Command("git", "write-tree")
	wt.Env, wt.Stdout, wt.Stderr = env, os.Stdout, os.Stderr
	if err := wt.Run(); err != nil {
		return 1
	}
	return 0
}

// waitFile runs `waitfile PATH`: it waits up to a minute for PATH to exist.
func waitFile(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: waitfile PATH")
		return 2
	}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(args[0]); err == nil {
			return 0
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "waitfile: %s did not appear within a minute\n", args[0])
	return 1
}

// alive runs `alive PIDFILE`: it prints "alive" or "gone" for the process whose pid the file holds,
// after giving a dying process a moment to be reaped. A zombie counts as gone.
func alive(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: alive PIDFILE")
		return 2
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pid := strings.TrimSpace(string(data))
	if n, err := strconv.Atoi(pid); err != nil || n <= 0 {
		// (An empty pid would read /proc//stat, the system's, and say "alive".)
		fmt.Fprintf(os.Stderr, "alive: %s holds no pid: %q\n", args[0], pid)
		return 1
	}
	if gone(pid, 100) {
		fmt.Println("gone")
	} else {
		fmt.Println("alive")
	}
	return 0
}

// gone reports whether process pid has exited (a zombie counts as gone), looking tries times,
// 20ms apart.
func gone(pid string, tries int) bool {
	for i := 0; i < tries; i++ {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return true
		}
		if s := string(stat); strings.Contains(s[strings.LastIndexByte(s, ')')+1:], " Z ") {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// groupsGone runs `groupsgone FILE`: it waits (up to a minute) until no process is left in the
// process groups whose ids FILE lists, one a line (a zombie counts as gone), and fails naming
// the survivors. Only these groups are looked at: processes other tests left do not count. A
// SIGKILLed process leaves the table only once it is next scheduled, hence the wait.
func groupsGone(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: groupsgone FILE")
		return 2
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	groups := map[string]bool{}
	for _, g := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(g); err != nil || n <= 1 {
			fmt.Fprintf(os.Stderr, "groupsgone: %s holds no process group: %q\n", args[0], g)
			return 1
		}
		groups[g] = true
	}
	if len(groups) == 0 {
		fmt.Fprintf(os.Stderr, "groupsgone: %s lists no process group\n", args[0])
		return 1
	}
	var left []string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		left = left[:0]
		procs, _ := os.ReadDir("/proc")
		for _, p := range procs {
			stat, err := os.ReadFile("/proc/" + p.Name() + "/stat")
			if err != nil {
				continue // not a process, or gone
			}
			s := string(stat)
			i := strings.LastIndexByte(s, ')')
			name, _, _ := strings.Cut(s[strings.IndexByte(s, '(')+1:], ")")
			// After the name: state, ppid, pgrp.
			if f := strings.Fields(s[i+1:]); len(f) > 2 && f[0] != "Z" && groups[f[2]] {
				left = append(left, p.Name()+" ("+name+")")
			}
		}
		if len(left) == 0 {
			return 0
		}
	}
	fmt.Fprintf(os.Stderr, "groupsgone: still running after a minute: %s\n", strings.Join(left, ", "))
	return 1
}

// dbCheck runs `dbcheck DB`: it prints the result of PRAGMA integrity_check ("ok" when intact).
func dbCheck(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: dbcheck DB")
		return 2
	}
	db, err := sql.Open("sqlite3", "file:"+args[0]+"?mode=ro")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(res)
	return 0
}

// waitRun runs `waitrun STATE [RUN]`: it polls `mulligan show [RUN] -o json` (up to a minute)
// until the run's state is STATE and the process that owned it has exited, for runs a detached
// process finishes (its last output is in its log then). A run that stops in another state fails
// at once, naming it.
func waitRun(args []string) int {
	if len(args) < 1 || len(args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: waitrun STATE [RUN]")
		return 2
	}
	show := append([]string{"show"}, args[1:]...)
	stops := map[string]bool{"succeeded": true, "failed": true, "cancelled": true, "blocked": true, "waiting_quota": true}
	last := ""
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		out, err := exec.Command("mulligan", append(show, "-o", "json")...).Output()
		if err != nil {
			continue
		}
		var run struct {
			State string `json:"state"`
			Owner *struct {
				PID int `json:"pid"`
			} `json:"owner"`
		}
		if err := json.Unmarshal(out, &run); err != nil {
			continue
		}
		last = run.State
		if last == args[0] {
			if run.Owner == nil || gone(strconv.Itoa(run.Owner.PID), 1) {
				return 0
			}
			continue
		}
		if stops[last] {
			break
		}
	}
	fmt.Fprintf(os.Stderr, "waitrun: the run is %s, not %s (or its process did not exit)\n", last, args[0])
	return 1
}

// aligned runs `aligned FILE PREFIX HEADER VALUE`: in a captured screen, the header line (starting
// with PREFIX, holding HEADER) and the next line holding VALUE must have HEADER and VALUE start at the
// same display column. It fails when either is missing or they are misaligned.
func aligned(args []string) int {
	if len(args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: aligned FILE PREFIX HEADER VALUE")
		return 2
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	header := -1
	for _, line := range strings.Split(string(data), "\n") {
		if header < 0 {
			if strings.HasPrefix(line, args[1]) && strings.Contains(line, args[2]) {
				header = runewidth.StringWidth(line[:strings.Index(line, args[2])])
			}
			continue
		}
		if i := strings.Index(line, args[3]); i >= 0 {
			if at := runewidth.StringWidth(line[:i]); at != header {
				fmt.Fprintf(os.Stderr, "aligned: %s at column %d, %s at column %d:\n%s", args[2], header, args[3], at, data)
				return 1
			}
			return 0
		}
	}
	fmt.Fprintf(os.Stderr, "aligned: no header %q or value %q in:\n%s", args[2], args[3], data)
	return 1
}
