package reap

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

var (
	becomeOnce sync.Once
	subreaper  bool
)

// Become makes this process the child subreaper (prctl PR_SET_CHILD_SUBREAPER): a process
// below it whose parent exits is re-parented to it instead of to init. It reports whether
// that worked; it is done once per process.
func Become() bool {
	becomeOnce.Do(func() {
		subreaper = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == nil
	})
	return subreaper
}

// Supported reports whether this platform can find every descendant (Linux: yes).
func Supported() bool { return true }

type procInfo struct {
	pid, ppid, pgid int
	zombie          bool
	start           uint64 // clock ticks after boot
}

// readProcs lists the processes in /proc with their parent, group and state.
func readProcs() []procInfo {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]procInfo, 0, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) S ppid pgrp …": comm may hold spaces and parentheses; it ends at the last ')'.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgid, _ := strconv.Atoi(f[2])
		var start uint64
		if len(f) > 19 {
			start, _ = strconv.ParseUint(f[19], 10, 64)
		}
		out = append(out, procInfo{pid: pid, ppid: ppid, pgid: pgid, zombie: f[0] == "Z" || f[0] == "X", start: start})
	}
	return out
}

// environHas reports whether process pid's environment holds the entry kv exactly.
func environHas(pid int, kv string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	return bytes.HasPrefix(env, []byte(kv+"\x00")) || bytes.Contains(env, []byte("\x00"+kv+"\x00"))
}

// Members lists the live processes of the tree: the leader and its descendants, the members of
// its process group, every process whose environment carries the marker (a setsid'd or
// double-forked one, wherever it went) and their descendants; and the orphans re-parented to
// this process (the subreaper) that it did not start itself and that left its process group —
// a descendant that also cleared its environment — when they were in this tree's group or this
// is the only live tree. This process and init are never members.
func (t *Tree) Members() []int {
	if subreaper && childless() {
		// Every descendant of what this process started is below it (orphans come back to
		// the subreaper): with no child at all, nothing of the tree is alive. One system call
		// where a look through /proc costs ~40 us a process.
		return nil
	}
	self, ownGroup := os.Getpid(), syscall.Getpgrp()
	return members(readProcs(), func(p procInfo) bool {
		if p.pid == t.Leader || (t.Leader > 1 && p.pgid == t.Leader) ||
			(t.Marker != "" && (t.since == 0 || p.start >= t.since) && environHas(p.pid, t.Marker)) {
			return true
		}
		if p.ppid != self || p.pgid == ownGroup || !subreaper {
			return false
		}
		own, active := owned(p.pid)
		return !own && active <= 1
	})
}

// members is the set of live processes that root selects, and all their descendants.
func members(procs []procInfo, root func(procInfo) bool) []int {
	self := os.Getpid()
	children := map[int][]procInfo{}
	var queue []procInfo
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	for _, p := range procs {
		if p.pid > 1 && p.pid != self && !p.zombie && root(p) {
			queue = append(queue, p)
		}
	}
	seen := map[int]bool{}
	var out []int
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p.pid] || p.pid <= 1 || p.pid == self {
			continue
		}
		seen[p.pid] = true
		if !p.zombie {
			out = append(out, p.pid)
		}
		queue = append(queue, children[p.pid]...)
	}
	return out
}

// reapAdopted collects the exit status of the processes in seen (found in the tree while they
// were alive) that were re-parented to this process, the subreaper, and have exited, so they do
// not linger as zombies. The leader is left to whoever started it (exec.Cmd waits for it). It
// returns the sorted pids of seen.
func (t *Tree) reapAdopted(seen map[int]bool) []int {
	self := os.Getpid()
	for _, p := range readProcs() {
		if p.ppid == self && p.zombie && p.pid != t.Leader && seen[p.pid] {
			var ws syscall.WaitStatus
			syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
		}
	}
	return sortedKeys(seen)
}

// WithEnv lists the live processes whose environment holds every entry of kvs (for example the
// MULLIGAN_RUN of a run whose runner died), and their descendants.
func WithEnv(kvs ...string) []int {
	return members(readProcs(), func(p procInfo) bool {
		for _, kv := range kvs {
			if !environHas(p.pid, kv) {
				return false
			}
		}
		return len(kvs) > 0
	})
}

// InGroup lists the live members of process group pgid (zombies are gone) and their descendants.
func InGroup(pgid int) []int {
	if pgid <= 1 {
		return nil
	}
	return members(readProcs(), func(p procInfo) bool { return p.pgid == pgid })
}

// childless reports whether this process has no child at all, running, stopped or exited and not
// yet waited for, whichever of its threads started it (waitid without waiting: ECHILD).
func childless() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WNOHANG|unix.WNOWAIT|unix.WEXITED|unix.WSTOPPED|unix.WCONTINUED, nil)
	return err == unix.ECHILD
}

// statFields are the fields of process pid's stat line after its command name ("S ppid pgrp
// …": the state first); nil when it cannot be read.
func statFields(pid int) []string {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(stat)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// startTime is process pid's start time in clock ticks after boot (field 22 of its stat), 0
// when it cannot be read.
func startTime(pid int) uint64 {
	f := statFields(pid)
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

func zombie(pid int) bool {
	f := statFields(pid)
	if f == nil {
		return true
	}
	return len(f) > 0 && (f[0] == "Z" || f[0] == "X")
}

// CPUTicks is the CPU time the tree's live processes have used, with the children they have
// waited for, in clock ticks (utime, stime, cutime and cstime of their stat): a heartbeat's sign
// that an agent works while it prints nothing. It changes when a member works or ends.
func (t *Tree) CPUTicks() uint64 {
	var sum uint64
	for _, pid := range t.Members() {
		f := statFields(pid)
		if len(f) < 15 {
			continue
		}
		for _, s := range f[11:15] {
			v, _ := strconv.ParseUint(s, 10, 64)
			sum += v
		}
	}
	return sum
}
