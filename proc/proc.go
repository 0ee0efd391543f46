// Package proc runs a bounded process: argv directly (never through a shell), in its own
// process group, ended with the whole group (SIGTERM, a grace period, SIGKILL) at its timeout,
// after a silence, on cancellation or on a kill, and never outlived by what it started. Every
// process mulligan starts for a task (agents, verify, hooks, compensations, the autopsy's base
// check) goes through Run.
package proc

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/mulligan-dev/mulligan/reap"
)

// Spec describes one bounded process: an agent, verify, a hook, a compensation.
type Spec struct {
	Argv      []string
	Dir       string
	Env       []string // the complete environment
	Stdin     io.Reader
	Timeout   time.Duration // 0: none
	Heartbeat time.Duration // longest silence on stdout and stderr; 0: none
	Grace     time.Duration // between SIGTERM and SIGKILL; default 5s
	// Output receives stdout and stderr as they arrive (the full log, the terminal).
	Output io.Writer
	// StdoutCap bounds how much of the end of stdout is kept for result parsing (default 4 MiB).
	StdoutCap int
	// TailCap bounds the kept tail of stdout+stderr for classification and prompts (default 64 KiB).
	TailCap int
	// Kill, when it receives, ends the process group at once with SIGKILL (`mulligan kill`).
	Kill <-chan struct{}
	// OnOutput is called (from the reader goroutines, serialised) with each chunk, for liveness.
	OnOutput func([]byte)
	// OnStart is called with the pid (which is also the process group id) once the process runs.
	OnStart func(pid int)
	// Watch is called (serialised, like OnOutput) with each chunk; when it returns true the
	// process group is ended like on a timeout, and Result.Watched says so. Presets use it
	// to end a CLI caught in a loop it never leaves (codex offline: "waiting for network").
	Watch func([]byte) bool
}

// Result is what was seen of a finished process.
type Result struct {
	ExitCode  int   // -1 when it did not exit normally
	StartErr  error // exec failed: not found, not executable
	TimedOut  bool
	Silent    bool // ended for heartbeat silence
	Cancelled bool // ended because ctx was cancelled
	Killed    bool // ended by Kill
	Watched   bool // ended because Watch said so
	Signal    syscall.Signal
	Stdout    []byte // the end of stdout, at most StdoutCap
	Tail      []byte // the end of stdout+stderr interleaved, at most TailCap
	Started   time.Time
	Duration  time.Duration
	Pid       int
}

// Run starts spec in its own process group and waits for it. Timeout, heartbeat silence,
// ctx cancellation and Kill end the whole tree (SIGTERM, grace, SIGKILL), so an agent's children
// never outlive the attempt; so does the leader's exit, for children it left behind. The tree is
// the group and every process below the leader or carrying its marker (reap.Tree), so a child
// that setsid'd or double-forked away goes too (SPEC §7.2).
func Run(ctx context.Context, spec Spec) Result {
	if spec.Grace <= 0 {
		spec.Grace = 5 * time.Second
	}
	if spec.StdoutCap <= 0 {
		spec.StdoutCap = 4 << 20
	}
	if spec.TailCap <= 0 {
		spec.TailCap = 64 << 10
	}
	res := Result{ExitCode: -1, Started: time.Now()}
	if len(spec.Argv) == 0 {
		res.StartErr = &exec.Error{Name: "", Err: exec.ErrNotFound}
		return res
	}

	outR, outW, err := os.Pipe()
	if err != nil {
		res.StartErr = err
		return res
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		res.StartErr = err
		return res
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = spec.Env
	cmd.Stdin = spec.Stdin
	cmd.Stdout = outW
	cmd.Stderr = errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	tree, err := reap.Start(cmd)
	if err != nil {
		outR.Close()
		outW.Close()
		errR.Close()
		errW.Close()
		res.StartErr = err
		return res
	}
	outW.Close()
	errW.Close()
	defer tree.Release()
	res.Pid = cmd.Process.Pid
	pgid := cmd.Process.Pid
	if spec.OnStart != nil {
		spec.OnStart(pgid)
	}

	var mu sync.Mutex // serialises Output, OnOutput and the buffers
	var lastOutput = time.Now()
	stdout := newTailBuffer(spec.StdoutCap)
	tail := newTailBuffer(spec.TailCap)
	var readers sync.WaitGroup
	watched := make(chan struct{})
	watchedOnce := sync.OnceFunc(func() { close(watched) })
	read := func(r *os.File, isStdout bool) {
		defer readers.Done()
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				mu.Lock()
				lastOutput = time.Now()
				chunk := buf[:n]
				if spec.Output != nil {
					spec.Output.Write(chunk)
				}
				if isStdout {
					stdout.Write(chunk)
				}
				tail.Write(chunk)
				if spec.OnOutput != nil {
					spec.OnOutput(chunk)
				}
				if spec.Watch != nil && spec.Watch(chunk) {
					watchedOnce()
				}
				mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}
	readers.Add(2)
	go read(outR, true)
	go read(errR, false)

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var timeout <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var tick <-chan time.Time
	if spec.Heartbeat > 0 {
		interval := min(spec.Heartbeat/4, time.Second)
		if interval <= 0 {
			interval = time.Millisecond
		}
		tk := time.NewTicker(interval)
		defer tk.Stop()
		tick = tk.C
	}

	var watchC <-chan struct{} = watched
	var waitErr error
	leaderDone := make(chan struct{})
	stopping := false
	stop := func() {
		if !stopping {
			stopping = true
			go terminateTree(tree, spec.Grace, leaderDone)
		}
	}
loop:
	for {
		select {
		case waitErr = <-exited:
			break loop
		case <-timeout:
			res.TimedOut = true
			stop()
		case <-watchC:
			watchC = nil // closed: once is enough
			if !stopping {
				res.Watched = true
				stop()
			}
		case <-tick:
			mu.Lock()
			silent := time.Since(lastOutput) >= spec.Heartbeat
			mu.Unlock()
			if silent && !stopping {
				res.Silent = true
				stop()
			}
		case <-ctx.Done():
			if !stopping {
				res.Cancelled = true
				stop()
			}
		case <-spec.Kill:
			res.Killed = true
			stopping = true
			tree.Signal(syscall.SIGKILL)
		}
	}
	close(leaderDone)
	// The leader is gone; whatever it left behind goes too (SIGTERM, grace, SIGKILL), in its group
	// or not, so nothing outlives the attempt or holds the pipes open.
	if res.Killed {
		tree.Kill()
	} else {
		tree.Terminate(spec.Grace)
	}
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(time.Second):
		// A process mulligan could not find (it left the group and cleared its environment on a
		// platform without /proc) still holds a pipe: stop reading.
		outR.SetReadDeadline(time.Now())
		errR.SetReadDeadline(time.Now())
		<-drained
	}
	outR.Close()
	errR.Close()

	res.Duration = time.Since(res.Started)
	res.Stdout = stdout.Bytes()
	res.Tail = tail.Bytes()
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = ws.Signal()
		} else {
			res.ExitCode = ee.ExitCode()
		}
	} else if waitErr == nil {
		res.ExitCode = 0
	}
	return res
}

// terminateTree sends SIGTERM to the tree, and SIGKILL after grace if the leader is still there.
// Once the leader has exited, Run's own clean-up takes over the rest of the tree.
func terminateTree(tree *reap.Tree, grace time.Duration, leaderDone <-chan struct{}) {
	tree.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-t.C:
		tree.Signal(syscall.SIGKILL)
	case <-leaderDone:
	}
}

// tailBuffer keeps the last cap bytes written to it.
type tailBuffer struct {
	buf []byte
	cap int
}

func newTailBuffer(n int) *tailBuffer { return &tailBuffer{cap: n} }

func (t *tailBuffer) Write(p []byte) {
	if len(p) >= t.cap {
		t.buf = append(t.buf[:0], p[len(p)-t.cap:]...)
		return
	}
	if over := len(t.buf) + len(p) - t.cap; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
}

func (t *tailBuffer) Bytes() []byte { return append([]byte(nil), t.buf...) }
