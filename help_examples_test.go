package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"
)

// helpExamples runs `helpexamples`, from a testscript whose working directory holds a run (the
// template): every example that `mulligan CMD --help` prints is run, each in a fresh copy of the
// template (put back in place: a run belongs to its worktree's path), with the run id k3f9 of the
// examples replaced by the template's newest run. An example fails when it is a usage error (exit
// 2) or its address resolves to nothing. A command that follows (supervise without --once, -f) is
// interrupted after a while, as a user would; `effect record` runs as an attempt's agent, where it
// belongs.
func helpExamples(args []string) int {
	if len(args) != 0 {
		fmt.Fprintln(os.Stderr, "usage: helpexamples")
		return 2
	}
	template, _ := os.Getwd()
	out, err := exec.Command("mulligan", "ls", "-o", "json").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "helpexamples: mulligan ls:", err)
		return 1
	}
	var runs []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &runs); err != nil || len(runs) == 0 {
		fmt.Fprintln(os.Stderr, "helpexamples: no run in the template")
		return 1
	}
	examples, err := printedExamples()
	if err != nil {
		fmt.Fprintln(os.Stderr, "helpexamples:", err)
		return 1
	}
	work, _ := os.MkdirTemp(filepath.Dir(template), "examples")
	saved := filepath.Join(work, "template")
	if out, err := exec.Command("cp", "-a", template, saved).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "helpexamples: copy the template: %v\n%s", err, out)
		return 1
	}
	failed := 0
	for _, ex := range examples {
		line := strings.ReplaceAll(ex, "k3f9", runs[0].ID)
		line = strings.ReplaceAll(line, "/tmp/", work+"/")
		dir := template
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintln(os.Stderr, "helpexamples:", err)
			return 1
		}
		if out, err := exec.Command("cp", "-a", saved, dir).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "helpexamples: put the template back: %v\n%s", err, out)
			return 1
		}
		if strings.HasPrefix(line, "mulligan effect record") {
			if err := os.WriteFile(filepath.Join(dir, "example.sh"), []byte(line+"\n"), 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "helpexamples:", err)
				return 1
			}
			line = "mulligan run --no-autopsy -- sh example.sh"
		}
		code, stdout, stderr := runExample(dir, line)
		fmt.Printf("%s → exit %d\n", line, code)
		if strings.HasSuffix(line, "-- sh example.sh") && code != 0 {
			code = 2 // the example failed inside its attempt
		}
		bad := code == 2
		for _, s := range []string{"unknown revision", "bad address", "no task \"", "has no attempt"} {
			bad = bad || strings.Contains(stderr, s)
		}
		if bad {
			failed++
			fmt.Fprintf(os.Stderr, "FAIL %s (exit %d):\n%s\n", line, code, stderr)
		}
		if m := detachedPid.FindStringSubmatch(stdout); m != nil {
			waitGone(m[1])
		}
	}
	if failed > 0 {
		fmt.Fprintf(os.Stderr, "%d of %d examples failed\n", failed, len(examples))
		return 1
	}
	return 0
}

// printedExamples reads every command's examples from `mulligan CMD --help`, the commands from
// `mulligan --help`. Comments after an example (two spaces or more) are left out, and so is a
// pipe into another program; lines that do not start with mulligan are not mulligan's to run.
func printedExamples() ([]string, error) {
	top, err := exec.Command("mulligan", "--help").Output()
	if err != nil {
		return nil, err
	}
	_, cmds, _ := strings.Cut(string(top), "COMMANDS:\n")
	cmds, _, _ = strings.Cut(cmds, "\n\n")
	comment := regexp.MustCompile(`\s{2,}.*$`)
	var out []string
	for _, l := range strings.Split(cmds, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "help") {
			continue
		}
		name := strings.TrimSuffix(f[0], ",")
		help, err := exec.Command("mulligan", name, "--help").Output()
		if err != nil {
			return nil, fmt.Errorf("mulligan %s --help: %v", name, err)
		}
		_, ex, ok := strings.Cut(string(help), "Examples:\n")
		if !ok {
			return nil, fmt.Errorf("mulligan %s --help prints no examples", name)
		}
		ex, _, _ = strings.Cut(ex, "\n\n")
		for _, e := range strings.Split(ex, "\n") {
			e = strings.TrimSpace(comment.ReplaceAllString(strings.TrimSpace(e), ""))
			e, _, _ = strings.Cut(e, " | ")
			if strings.HasPrefix(e, "mulligan ") {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// runExample runs one example line through the shell in dir, as typed; a command still running
// after a while gets Ctrl-C.
func runExample(dir, line string) (int, string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := exec.Command("sh", "-c", line)
	c.Dir = dir
	c.Env = append(os.Environ(), "PWD="+dir)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Start(); err != nil {
		return -1, "", err.Error()
	}
	follow := strings.HasSuffix(line, " -f") || strings.HasPrefix(line, "mulligan supervise") && !strings.Contains(line, "--once")
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-ctx.Done():
			syscall.Kill(-c.Process.Pid, syscall.SIGINT)
		}
	}()
	if follow {
		// A follower runs until the user stops it: Ctrl-C once it has started.
		go func() {
			select {
			case <-done:
			case <-time.After(2 * time.Second):
				syscall.Kill(-c.Process.Pid, syscall.SIGINT)
			}
		}()
	}
	err := c.Wait()
	close(done)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

// detachedPid is the process a --detach example started, as it says.
var detachedPid = regexp.MustCompile(`\(pid ([0-9]+)\)`)

// waitGone waits (a minute at most) until the process pid has exited, so a detached run is done
// before its directory is replaced.
func waitGone(pid string) {
	for end := time.Now().Add(time.Minute); time.Now().Before(end) && !gone(pid, 1); {
	}
}
