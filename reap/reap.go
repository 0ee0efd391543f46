// Package reap ends every process mulligan started and everything those processes started
// (SPEC §7.2): an agent, a verify command, a hook or a compensation that double-forks or
// `setsid`s a child away is still found and ended when it ends, times out, is cancelled or
// killed. On Linux mulligan becomes the child subreaper, so orphans are re-parented to it
// rather than to init, and every started process carries a marker in its environment, so its
// descendants are found in /proc wherever they went. It knows nothing of runs or tasks; it must
// never signal a process that is not a descendant of one it started.
package reap

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"
)

// MarkerEnv is the environment variable that marks the processes of one started process tree.
const MarkerEnv = "MULLIGAN_PROC"

// registry is what this process started itself: the leaders of live trees, and processes it
// started on purpose to outlive it (a detached run). Orphans re-parented to this process that
// are in neither are escaped descendants of a tree.
var registry struct {
	sync.Mutex
	seq    int
	own    map[int]bool
	active int // trees started and not yet released
}

// Tree is one started process (its leader, which leads its own process group) and everything
// below it.
type Tree struct {
	Leader int    // pid of the process mulligan started, also its process group id
	Marker string // "MULLIGAN_PROC=<pid>.<n>", in the environment of the leader
	// since is the leader's start time (clock ticks since boot; 0: unknown). A process started
	// before it cannot carry the marker, so its environment is not read: reading another
	// process's environment is most of what a look through /proc costs.
	since uint64
}

// Start starts cmd as the leader of a new tree: this process becomes the subreaper, cmd's
// environment (nil: this process's) gets a fresh marker and cmd runs in its own process group.
// Release the tree when it has ended.
func Start(cmd *exec.Cmd) (*Tree, error) {
	Become()
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	registry.Lock()
	registry.seq++
	marker := fmt.Sprintf("%s=%d.%d", MarkerEnv, os.Getpid(), registry.seq)
	registry.Unlock()
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if len(kv) > len(MarkerEnv) && kv[:len(MarkerEnv)+1] == MarkerEnv+"=" {
			continue // an agent that runs mulligan passes its own marker down: replace it
		}
		out = append(out, kv)
	}
	cmd.Env = append(out, marker)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// Registered before it runs, so no other tree's clean-up takes it for an orphan.
	registry.Lock()
	if err := cmd.Start(); err != nil {
		registry.Unlock()
		return nil, err
	}
	if registry.own == nil {
		registry.own = map[int]bool{}
	}
	registry.own[cmd.Process.Pid] = true
	registry.active++
	registry.Unlock()
	return &Tree{Leader: cmd.Process.Pid, Marker: marker, since: startTime(cmd.Process.Pid)}, nil
}

// Release forgets the tree once it has ended (after Terminate or Kill).
func (t *Tree) Release() {
	registry.Lock()
	defer registry.Unlock()
	if registry.own[t.Leader] {
		delete(registry.own, t.Leader)
		registry.active--
	}
}

// Own records a process this one started to outlive it (a detached run): never an orphan.
func Own(pid int) {
	registry.Lock()
	defer registry.Unlock()
	if registry.own == nil {
		registry.own = map[int]bool{}
	}
	registry.own[pid] = true
}

// owned reports whether pid was started by this process, and how many trees are live.
func owned(pid int) (bool, int) {
	registry.Lock()
	defer registry.Unlock()
	return registry.own[pid], registry.active
}

// Signal sends sig to every live process of the tree and to the leader's process group, and
// returns the processes it signalled.
func (t *Tree) Signal(sig syscall.Signal) []int {
	pids := t.Members()
	if t.Leader > 1 {
		syscall.Kill(-t.Leader, sig)
	}
	for _, pid := range pids {
		syscall.Kill(pid, sig)
	}
	return pids
}

// Terminate sends SIGTERM to the tree and, to what is still there after grace, SIGKILL. It
// returns when the tree is gone (a second after SIGKILL at most) and reports the processes it
// signalled.
func (t *Tree) Terminate(grace time.Duration) []int {
	seen := map[int]bool{}
	t.signalSeen(syscall.SIGTERM, seen)
	if len(seen) == 0 {
		// Nothing was alive (the usual end: the leader exited and left nothing behind), and
		// nothing can appear without a live member to start it: no second look at /proc.
		return nil
	}
	if !t.waitGone(grace, seen) {
		t.signalSeen(syscall.SIGKILL, seen)
		t.waitGone(time.Second, seen)
	}
	return t.reapAdopted(seen)
}

// Kill sends SIGKILL to the tree at once, waits (a second at most) until it is gone and reports
// the processes it signalled.
func (t *Tree) Kill() []int {
	seen := map[int]bool{}
	t.signalSeen(syscall.SIGKILL, seen)
	t.waitGone(time.Second, seen)
	return t.reapAdopted(seen)
}

func (t *Tree) signalSeen(sig syscall.Signal, seen map[int]bool) {
	for _, pid := range t.Signal(sig) {
		seen[pid] = true
	}
}

// waitGone polls until no process of the tree is alive, for at most d, adding what it finds to
// seen; a process that appeared meanwhile gets the signal too.
func (t *Tree) waitGone(d time.Duration, seen map[int]bool) bool {
	deadline := time.Now().Add(d)
	for {
		m := t.Members()
		if len(m) == 0 {
			return true
		}
		for _, pid := range m {
			if !seen[pid] {
				seen[pid] = true
				syscall.Kill(pid, syscall.SIGTERM)
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Alive reports whether process pid exists and has not exited (a zombie is gone).
func Alive(pid int) bool {
	return pid > 1 && syscall.Kill(pid, 0) == nil && !zombie(pid)
}
