// Package fakeagent is a scriptable stand-in for an agent CLI, compiled into the test binary (and
// into the demo agent). Each argument is one step, run in order:
//
//	write:PATH=TEXT     write TEXT (with \n escapes) to PATH
//	append:PATH=TEXT    append TEXT to PATH
//	rm:PATH             remove PATH
//	say:TEXT            print TEXT on stdout
//	err:TEXT            print TEXT on stderr
//	sleep:DURATION      sleep
//	burn:DURATION       use the CPU for DURATION, printing nothing
//	touch:DURATION:PATH append a line to PATH every 50ms for DURATION, printing nothing
//	exit:N              exit with status N
//	fail-until:N        exit 1 (saying so on stderr) while MULLIGAN_ATTEMPT < N
//	spam:N              print N numbered lines
//	child:PIDFILE       start a child that sleeps an hour, write its pid to PIDFILE
//	ignore-term         ignore SIGTERM from now on (tests the SIGKILL after the grace)
//	copy-prompt:PATH    copy the composed prompt ($MULLIGAN_PROMPT_FILE) to PATH
//	env:PATH            write the MULLIGAN_* environment to PATH, sorted
//	attempt-file:DIR    write a file DIR/attempt-N.txt (N from MULLIGAN_ATTEMPT)
//	waitfile:PATH       wait (up to a minute) until PATH exists
//	attempt:N:STEP      run STEP only in attempt N
//	signal-parent:SIG   send SIGTERM, SIGINT or SIGHUP to the parent process (mulligan)
//	cat:PATH            copy the file at PATH to stdout (replays a captured agent CLI output)
//	caterr:PATH         copy the file at PATH to stderr
//	output:TEXT         write TEXT (with \n escapes) to $MULLIGAN_OUTPUT_FILE, the structured result
//	calls:PATH          count this call in PATH (a number), for call:N:STEP
//	call:N:STEP         run STEP only when calls: counted this as call N (schema corrections share
//	                    an attempt number, so attempt:N cannot tell them apart)
//
// It never touches the network and has no state of its own.
package fakeagent

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// burnSink keeps burn's arithmetic from being optimised away.
var burnSink uint64

// Main runs the steps in args and returns the exit status.
func Main(args []string) int {
	for _, a := range args {
		if code, stop := step(a); stop {
			return code
		}
	}
	return 0
}

// Step runs one step (one argument of Main); stop is true when the agent must exit with code.
// The demo agent runs its own steps between these.
func Step(a string) (code int, stop bool) { return step(a) }

// step runs one step; stop is true when the agent must exit with code.
func step(a string) (code int, stop bool) {
	verb, arg, _ := strings.Cut(a, ":")
	switch verb {
	case "write", "append":
		path, text, ok := strings.Cut(arg, "=")
		if !ok {
			return fail("%s needs PATH=TEXT", verb), true
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fail("%v", err), true
		}
		flag := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
		if verb == "append" {
			flag = os.O_CREATE | os.O_WRONLY | os.O_APPEND
		}
		f, err := os.OpenFile(path, flag, 0o644)
		if err != nil {
			return fail("%v", err), true
		}
		_, err = f.WriteString(unescape(text))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fail("%v", err), true
		}
	case "rm":
		if err := os.RemoveAll(arg); err != nil {
			return fail("%v", err), true
		}
	case "say":
		fmt.Println(unescape(arg))
	case "err":
		fmt.Fprintln(os.Stderr, unescape(arg))
	case "sleep":
		d, err := time.ParseDuration(arg)
		if err != nil {
			return fail("%v", err), true
		}
		time.Sleep(d)
	case "burn":
		d, err := time.ParseDuration(arg)
		if err != nil {
			return fail("%v", err), true
		}
		for end, x := time.Now().Add(d), uint64(1); time.Now().Before(end); {
			for i := 0; i < 1e6; i++ {
				x = x*6364136223846793005 + 1442695040888963407
			}
			burnSink = x
		}
	case "touch":
		ds, path, ok := strings.Cut(arg, ":")
		d, err := time.ParseDuration(ds)
		if !ok || err != nil {
			return fail("touch needs DURATION:PATH"), true
		}
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				return fail("%v", err), true
			}
			f.WriteString("x\n")
			f.Close()
		}
	case "exit":
		n, err := strconv.Atoi(arg)
		if err != nil {
			return fail("%v", err), true
		}
		return n, true
	case "fail-until":
		n, err := strconv.Atoi(arg)
		if err != nil {
			return fail("%v", err), true
		}
		if cur, _ := strconv.Atoi(os.Getenv("MULLIGAN_ATTEMPT")); cur < n {
			fmt.Fprintf(os.Stderr, "%s: failing on purpose (attempt %d < %d)\n", filepath.Base(os.Args[0]), cur, n)
			return 1, true
		}
	case "spam":
		n, err := strconv.Atoi(arg)
		if err != nil {
			return fail("%v", err), true
		}
		w := bufio.NewWriter(os.Stdout)
		for i := 1; i <= n; i++ {
			fmt.Fprintf(w, "line %d of %d: the quick brown fox jumps over the lazy dog\n", i, n)
		}
		w.Flush()
	case "child":
		c := exec.Command(os.Args[0], "sleep:1h")
		if err := c.Start(); err != nil {
			return fail("%v", err), true
		}
		// Written whole before it appears (a rename): a test waits for the file and then kills
		// this process's parent, and with it this process, before it could write a created file.
		if err := os.WriteFile(arg+".tmp", []byte(strconv.Itoa(c.Process.Pid)), 0o644); err != nil {
			return fail("%v", err), true
		}
		if err := os.Rename(arg+".tmp", arg); err != nil {
			return fail("%v", err), true
		}
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	case "copy-prompt":
		data, err := os.ReadFile(os.Getenv("MULLIGAN_PROMPT_FILE"))
		if err != nil {
			return fail("%v", err), true
		}
		if err := os.WriteFile(arg, data, 0o644); err != nil {
			return fail("%v", err), true
		}
	case "env":
		var lines []string
		for _, kv := range os.Environ() {
			if strings.HasPrefix(kv, "MULLIGAN_") {
				lines = append(lines, kv)
			}
		}
		sort.Strings(lines)
		if err := os.WriteFile(arg, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			return fail("%v", err), true
		}
	case "attempt-file":
		p := filepath.Join(arg, "attempt-"+os.Getenv("MULLIGAN_ATTEMPT")+".txt")
		if err := os.MkdirAll(arg, 0o755); err != nil {
			return fail("%v", err), true
		}
		if err := os.WriteFile(p, []byte("written by attempt "+os.Getenv("MULLIGAN_ATTEMPT")+"\n"), 0o644); err != nil {
			return fail("%v", err), true
		}
	case "waitfile":
		for i := 0; ; i++ {
			if _, err := os.Stat(arg); err == nil {
				break
			}
			if i > 6000 {
				return fail("%s did not appear", arg), true
			}
			time.Sleep(10 * time.Millisecond)
		}
	case "signal-parent":
		sig := map[string]syscall.Signal{"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP}[arg]
		if sig == 0 {
			return fail("signal-parent takes TERM, INT or HUP"), true
		}
		if err := syscall.Kill(os.Getppid(), sig); err != nil {
			return fail("%v", err), true
		}
	case "cat", "caterr":
		data, err := os.ReadFile(arg)
		if err != nil {
			return fail("%v", err), true
		}
		if verb == "cat" {
			os.Stdout.Write(data)
		} else {
			os.Stderr.Write(data)
		}
	case "output":
		if err := os.WriteFile(os.Getenv("MULLIGAN_OUTPUT_FILE"), []byte(unescape(arg)), 0o644); err != nil {
			return fail("%v", err), true
		}
	case "calls":
		b, _ := os.ReadFile(arg)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		callN = n + 1
		if err := os.WriteFile(arg, []byte(strconv.Itoa(callN)), 0o644); err != nil {
			return fail("%v", err), true
		}
	case "call":
		n, inner, ok := strings.Cut(arg, ":")
		if !ok {
			return fail("call needs N:STEP"), true
		}
		if strconv.Itoa(callN) == n {
			return step(inner)
		}
	case "attempt":
		n, inner, ok := strings.Cut(arg, ":")
		if !ok {
			return fail("attempt needs N:STEP"), true
		}
		if os.Getenv("MULLIGAN_ATTEMPT") == n {
			return step(inner)
		}
	default:
		return fail("unknown step %q", a), true
	}
	return 0, false
}

// callN is this process's call number, counted by a calls: step.
var callN int

func unescape(s string) string {
	return strings.NewReplacer(`\n`, "\n", `\t`, "\t").Replace(s)
}

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "fakeagent: "+format+"\n", args...)
	return 99
}
