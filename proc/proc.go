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
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mulligan-dev/mulligan/reap"
)

// Spec describes one bounded process: an agent, verify, a hook, a compensation.
type Spec struct {
	Argv    []string
	Dir     string
	Env     []string // the complete environment; its PWD is set to Dir
	Stdin   io.Reader
	Timeout time.Duration // 0: none
	// Heartbeat is the longest time without a sign of work: no output on stdout or stderr, no CPU
	// time used by the process tree, no Activity. 0: none.
	Heartbeat time.Duration
	// Activity, when set, reports whether the process did something since the last call that
	// Run cannot see itself (an agent's writes in its working tree): a sign of work for Heartbeat.
	Activity func() bool
	Grace    time.Duration // between SIGTERM and SIGKILL; default 5s
	// Output receives stdout and stderr as they arrive (the full log, the terminal).
	Output io.Writer
	// MergeStreams sends stderr down stdout's pipe (as `2>&1` does), for a command whose output is
	// read as one text: two pipes cannot keep the order in which lines of the two were written,
	// so the same output could read differently from one run to the next.
	MergeStreams bool
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
	Silent    bool // ended for heartbeat silence: no output, no CPU time used, no Activity
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
	p, err := start(spec)
	if err != nil {
		res.StartErr = err
		return res
	}
	defer p.tree.Release()
	res.Pid = p.cmd.Process.Pid
	if spec.OnStart != nil {
		spec.OnStart(res.Pid) // the pid is the process group id too
	}
	out := newOutput(spec)
	out.readers.Add(2)
	go out.read(p.outR, true)
	go out.read(p.errR, false)

	waitErr := p.supervise(ctx, spec, out, &res)
	// The leader is gone; whatever it left behind goes too (SIGTERM, grace, SIGKILL), in its group
	// or not, so nothing outlives the attempt or holds the pipes open.
	if res.Killed {
		p.tree.Kill()
	} else {
		p.tree.Terminate(spec.Grace)
	}
	p.drain(out)

	res.Duration = time.Since(res.Started)
	res.Stdout = out.stdout.Bytes()
	res.Tail = out.tail.Bytes()
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

// process is a started leader with the read ends of its stdout and stderr pipes.
type process struct {
	cmd        *exec.Cmd
	tree       *reap.Tree
	outR, errR *os.File
}

// start starts spec's command as the leader of a new process group and tree.
// withPWD sets PWD in env to dir, as a shell does on cd: a process that takes $PWD for its
// directory (opencode does, before getcwd) would otherwise take mulligan's, the user's working
// tree, while it runs in a task's worktree. A nil env (mulligan's own) gets it from os/exec.
func withPWD(env []string, dir string) []string {
	if env == nil || dir == "" {
		return env
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return env
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PWD=") {
			out = append(out, kv)
		}
	}
	return append(out, "PWD="+abs)
}

func start(spec Spec) (*process, error) {
	if len(spec.Argv) == 0 {
		return nil, &exec.Error{Name: "", Err: exec.ErrNotFound}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Dir = spec.Dir
	cmd.Env = withPWD(spec.Env, spec.Dir)
	cmd.Stdin = spec.Stdin
	cmd.Stdout = outW
	cmd.Stderr = errW
	if spec.MergeStreams {
		cmd.Stderr = outW // one pipe, as a terminal has: the lines keep the order they were written in
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	tree, err := reap.Start(cmd)
	outW.Close() // the child has its own copies
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, err
	}
	return &process{cmd: cmd, tree: tree, outR: outR, errR: errR}, nil
}

// supervise waits for the leader to exit, ending the tree on a timeout, a watch, heartbeat
// silence, ctx's cancellation or Kill (and saying which in res). It returns cmd.Wait's error.
func (p *process) supervise(ctx context.Context, spec Spec, out *output, res *Result) error {
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()

	var timeout <-chan time.Time
	if spec.Timeout > 0 {
		t := time.NewTimer(spec.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var tick <-chan time.Time
	var work *liveness
	if spec.Heartbeat > 0 {
		interval := min(spec.Heartbeat/4, time.Second)
		if interval <= 0 {
			interval = time.Millisecond
		}
		tk := time.NewTicker(interval)
		defer tk.Stop()
		tick = tk.C
		work = &liveness{tree: p.tree, activity: spec.Activity, every: max(interval, spec.Heartbeat/10), last: time.Now()}
	}

	var watchC <-chan struct{} = out.watched
	leaderDone := make(chan struct{})
	defer close(leaderDone)
	stopping := false
	// stop ends the tree once; why, when given, records what asked first.
	stop := func(why *bool) {
		if stopping {
			return
		}
		stopping = true
		if why != nil {
			*why = true
		}
		go terminateTree(p.tree, spec.Grace, leaderDone)
	}
	for {
		select {
		case err := <-exited:
			return err
		case <-timeout:
			res.TimedOut = true
			stop(nil)
		case <-watchC:
			watchC = nil // closed: once is enough
			stop(&res.Watched)
		case <-tick:
			now := time.Now()
			work.sample(now)
			if out.silentFor(spec.Heartbeat) && now.Sub(work.last) >= spec.Heartbeat {
				stop(&res.Silent)
			}
		case <-ctx.Done():
			stop(&res.Cancelled)
		case <-spec.Kill:
			res.Killed = true
			stopping = true
			p.tree.Signal(syscall.SIGKILL)
		}
	}
}

// liveness watches the signs of work other than output: CPU time used by the process tree and
// the caller's Activity (writes in the tree). It samples them every `every` (a tenth of the
// heartbeat: reading the tree's stat files costs some microseconds a process).
type liveness struct {
	tree     *reap.Tree
	activity func() bool
	every    time.Duration
	sampled  time.Time
	cpu      uint64
	last     time.Time // the last sign of work seen
}

// sample looks at the signs when it is time: a change since the last look is work.
func (l *liveness) sample(now time.Time) {
	if now.Sub(l.sampled) < l.every {
		return
	}
	first := l.sampled.IsZero()
	l.sampled = now
	if c := l.tree.CPUTicks(); c != l.cpu {
		if !first {
			l.last = now
		}
		l.cpu = c
	}
	if l.activity != nil && l.activity() {
		l.last = now
	}
}

// drain waits for the readers to see the end of both pipes, then closes them.
func (p *process) drain(out *output) {
	drained := make(chan struct{})
	go func() { out.readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(time.Second):
		// A process mulligan could not find (it left the group and cleared its environment on a
		// platform without /proc) still holds a pipe: stop reading.
		p.outR.SetReadDeadline(time.Now())
		p.errR.SetReadDeadline(time.Now())
		<-drained
	}
	p.outR.Close()
	p.errR.Close()
}

// output collects what a process prints: it passes each chunk on (Output, OnOutput, Watch) and
// keeps the ends of stdout and of both streams interleaved.
type output struct {
	spec       Spec
	mu         sync.Mutex // serialises Output, OnOutput, Watch and the buffers
	lastOutput time.Time
	stdout     *tailBuffer
	tail       *tailBuffer
	readers    sync.WaitGroup
	watched    chan struct{} // closed when Watch says so
	watchOnce  func()
	// open is the stream whose last chunk did not end a line (0 none, 1 stdout, 2 stderr): a
	// chunk of the other stream starts on a line of its own, so the merged log never joins a
	// prompt left on stderr ("Username for '…': ") to the next line of stdout.
	open int
}

func newOutput(spec Spec) *output {
	o := &output{spec: spec, lastOutput: time.Now(), stdout: newTailBuffer(spec.StdoutCap),
		tail: newTailBuffer(spec.TailCap), watched: make(chan struct{})}
	o.watchOnce = sync.OnceFunc(func() { close(o.watched) })
	return o
}

func (o *output) read(r *os.File, isStdout bool) {
	defer o.readers.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			o.chunk(buf[:n], isStdout)
		}
		if err != nil {
			return
		}
	}
}

func (o *output) chunk(chunk []byte, isStdout bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lastOutput = time.Now()
	stream := 2
	if isStdout {
		stream = 1
	}
	if o.open != 0 && o.open != stream {
		o.merged([]byte("\n"))
	}
	o.open = 0
	if chunk[len(chunk)-1] != '\n' {
		o.open = stream
	}
	o.merged(chunk)
	if isStdout {
		o.stdout.Write(chunk)
	}
	if o.spec.OnOutput != nil {
		o.spec.OnOutput(chunk)
	}
	if o.spec.Watch != nil && o.spec.Watch(chunk) {
		o.watchOnce()
	}
}

// merged writes to what holds both streams: the log (Output) and the tail.
func (o *output) merged(b []byte) {
	if o.spec.Output != nil {
		o.spec.Output.Write(b)
	}
	o.tail.Write(b)
}

// silentFor reports whether nothing was printed for d.
func (o *output) silentFor(d time.Duration) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return time.Since(o.lastOutput) >= d
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
