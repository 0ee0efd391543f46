package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

func TestRunProcessExitAndOutput(t *testing.T) {
	var log bytes.Buffer
	res := Run(context.Background(), Spec{Argv: sh("echo out; echo err >&2; exit 3"), Output: &log})
	if res.StartErr != nil || res.ExitCode != 3 {
		t.Fatalf("exit=%d err=%v, want 3", res.ExitCode, res.StartErr)
	}
	if !strings.Contains(log.String(), "out\n") || !strings.Contains(log.String(), "err\n") {
		t.Fatalf("log %q lacks output", log.String())
	}
	if string(res.Stdout) != "out\n" {
		t.Fatalf("stdout %q, want only stdout", res.Stdout)
	}
}

// A prompt left unfinished on stderr and a line of stdout that arrives next are two lines of the
// log, not one: git's "Username for '…': " stays a line of its own for the autopsy to quote.
func TestRunProcessStreamsDoNotShareALine(t *testing.T) {
	seen := filepath.Join(t.TempDir(), "seen")
	var log bytes.Buffer
	res := Run(context.Background(), Spec{
		Argv:   sh("printf \"Username for 'https://github.com': \" >&2; while [ ! -e " + seen + " ]; do sleep 0.01; done; echo '[git] branch fix-1'"),
		Output: &log,
		OnOutput: func(b []byte) {
			if bytes.Contains(b, []byte("Username")) {
				os.WriteFile(seen, nil, 0o600)
			}
		},
	})
	want := "Username for 'https://github.com': \n[git] branch fix-1\n"
	if log.String() != want || string(res.Tail) != want {
		t.Fatalf("log %q, tail %q, want %q", log.String(), res.Tail, want)
	}
	if string(res.Stdout) != "[git] branch fix-1\n" {
		t.Fatalf("stdout %q", res.Stdout)
	}
}

// A process started in a directory sees PWD name it, not the directory mulligan runs in: opencode
// takes $PWD for its project, and in a task's worktree it would edit the user's tree.
func TestRunProcessPWDIsDir(t *testing.T) {
	dir := t.TempDir()
	res := Run(context.Background(), Spec{Argv: []string{"env"}, Dir: dir, Env: []string{"PWD=/elsewhere", "KEEP=1"}})
	if res.StartErr != nil || res.ExitCode != 0 {
		t.Fatalf("exit=%d err=%v", res.ExitCode, res.StartErr)
	}
	var pwd []string
	for _, kv := range strings.Split(strings.TrimSpace(string(res.Stdout)), "\n") {
		if strings.HasPrefix(kv, "PWD=") {
			pwd = append(pwd, kv)
		}
	}
	if len(pwd) != 1 || pwd[0] != "PWD="+dir {
		t.Fatalf("PWD entries %q, want only PWD=%s", pwd, dir)
	}
	if !strings.Contains(string(res.Stdout), "KEEP=1\n") {
		t.Fatalf("env %q lost KEEP=1", res.Stdout)
	}
}

func TestRunProcessNotFound(t *testing.T) {
	res := Run(context.Background(), Spec{Argv: []string{"/no/such/agent"}})
	if res.StartErr == nil || !errors.Is(res.StartErr, os.ErrNotExist) {
		t.Fatalf("StartErr = %v, want not-exist", res.StartErr)
	}
	res = Run(context.Background(), Spec{Argv: []string{"no-such-agent-on-path"}})
	if !errors.Is(res.StartErr, exec.ErrNotFound) {
		t.Fatalf("StartErr = %v, want exec.ErrNotFound", res.StartErr)
	}
}

func TestRunProcessTimeoutKillsGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	res := Run(context.Background(), Spec{
		Argv:    sh("sleep 60 & echo $! > " + pidfile + "; wait"),
		Timeout: 200 * time.Millisecond, Grace: 200 * time.Millisecond,
	})
	if !res.TimedOut {
		t.Fatalf("TimedOut = false: %+v", res)
	}
	assertGone(t, pidfile)
}

func TestRunProcessHeartbeat(t *testing.T) {
	res := Run(context.Background(), Spec{
		Argv: sh("echo started; sleep 60"), Heartbeat: 300 * time.Millisecond, Grace: 200 * time.Millisecond,
	})
	if !res.Silent || res.TimedOut {
		t.Fatalf("Silent=%v TimedOut=%v, want silence", res.Silent, res.TimedOut)
	}
	if !strings.Contains(string(res.Tail), "started") {
		t.Fatalf("tail %q", res.Tail)
	}
}

// A process that prints nothing but works — uses CPU time, or writes (Activity) — is not ended
// by the heartbeat; it ends by itself once it has been silent for two heartbeats. Activity
// doubles as the test's clock: it is called at each sample. (A second: on a loaded machine a
// busy process may get no clock tick of CPU time in a few hundred milliseconds.)
func TestRunProcessWorkingSilentlyIsNotSilent(t *testing.T) {
	const hb = time.Second
	dir := t.TempDir()
	stop := filepath.Join(dir, "stop")
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		argv   []string
		writes bool // Activity reports writes in the tree
		end    func()
	}{
		// a busy loop: CPU time and nothing else (no output, no child, no write)
		{"cpu", sh("while [ ! -e " + stop + " ]; do :; done"), false, func() { os.WriteFile(stop, nil, 0o600) }},
		// blocked on a fifo, using no CPU: only the writes Activity reports
		{"writes", sh("read x < " + fifo), true, func() {
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err == nil {
				f.WriteString("go\n")
				f.Close()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			ended := false
			res := Run(context.Background(), Spec{Argv: tc.argv, Heartbeat: hb, Grace: 200 * time.Millisecond,
				Activity: func() bool {
					if !ended && time.Since(start) > 2*hb {
						ended = true
						go tc.end()
					}
					return tc.writes
				}})
			if res.Silent || res.ExitCode != 0 {
				t.Fatalf("Silent=%v exit=%d: a process that works silently was ended", res.Silent, res.ExitCode)
			}
			if !ended {
				t.Fatal("the process ended before two heartbeats")
			}
		})
	}
}

func TestRunProcessChattyIsNotSilent(t *testing.T) {
	res := Run(context.Background(), Spec{
		Argv: sh("for i in 1 2 3 4 5 6; do echo $i; sleep 0.1; done"), Heartbeat: 2 * time.Second,
	})
	if res.Silent || res.ExitCode != 0 {
		t.Fatalf("Silent=%v exit=%d", res.Silent, res.ExitCode)
	}
}

func TestRunProcessSigkillAfterGrace(t *testing.T) {
	res := Run(context.Background(), Spec{
		Argv: sh("trap '' TERM; echo ready; while :; do sleep 0.05; done"), Timeout: 300 * time.Millisecond, Grace: 300 * time.Millisecond,
	})
	if !res.TimedOut || res.Signal != syscall.SIGKILL {
		t.Fatalf("TimedOut=%v signal=%v, want SIGKILL after the grace", res.TimedOut, res.Signal)
	}
}

func TestRunProcessCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	res := Run(ctx, Spec{Argv: sh("sleep 60"), Grace: 200 * time.Millisecond})
	if !res.Cancelled {
		t.Fatalf("Cancelled = false: %+v", res)
	}
}

func TestRunProcessKill(t *testing.T) {
	kill := make(chan struct{})
	go func() { time.Sleep(200 * time.Millisecond); close(kill) }()
	res := Run(context.Background(), Spec{Argv: sh("trap '' TERM; sleep 60"), Kill: kill})
	if !res.Killed || res.Signal != syscall.SIGKILL {
		t.Fatalf("Killed=%v signal=%v", res.Killed, res.Signal)
	}
}

// A child left running after the leader exits is ended too: no orphan keeps editing the tree.
func TestRunProcessNoOrphans(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	res := Run(context.Background(), Spec{
		Argv: sh("sleep 60 > /dev/null 2>&1 & echo $! > " + pidfile + "; exit 0"), Grace: 300 * time.Millisecond,
	})
	if res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	assertGone(t, pidfile)
}

func TestTailBuffer(t *testing.T) {
	tb := newTailBuffer(5)
	tb.Write([]byte("abc"))
	tb.Write([]byte("defg"))
	if got := string(tb.Bytes()); got != "cdefg" {
		t.Fatalf("got %q", got)
	}
	tb.Write([]byte("0123456789"))
	if got := string(tb.Bytes()); got != "56789" {
		t.Fatalf("got %q", got)
	}
}

// assertGone waits briefly for the process in pidfile to be reaped, then fails if it still runs.
func assertGone(t *testing.T, pidfile string) {
	t.Helper()
	data, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("child pid: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	for i := 0; i < 100; i++ {
		if !processRunning(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Fatalf("child %d outlived the attempt", pid)
}

// processRunning is true for a live process; a zombie (exited, not yet reaped) does not count.
func processRunning(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// MergeStreams keeps the order in which a command wrote to stdout and stderr: the same output
// reads the same every time (a verify's output is compared from attempt to attempt).
func TestRunProcessMergeStreamsKeepsOrder(t *testing.T) {
	for range 20 {
		res := Run(context.Background(), Spec{Argv: sh("echo one; echo two >&2; echo three; echo four >&2"), MergeStreams: true})
		if got := string(res.Tail); got != "one\ntwo\nthree\nfour\n" {
			t.Fatalf("tail %q, want the order written", got)
		}
	}
}
