package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
)

var self = sync.OnceValue(func() Owner {
	o := Owner{PID: os.Getpid()}
	o.Host, _ = os.Hostname()
	if st, err := readProcStat(o.PID); err == nil {
		o.StartTicks = st.startTicks
	}
	return o
})

// Self is the Owner describing this process.
func Self() Owner { return self() }

type procStat struct {
	state      byte
	startTicks uint64
}

// readProcStat reads the state and start time of a process from /proc/<pid>/stat. The
// command name (field 2) is in parentheses and may itself hold spaces and ')', so the fields
// are counted from the last ')'.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(b)
}

func parseProcStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("malformed /proc stat")
	}
	// fields[0] is field 3 (state), so field 22 (starttime) is fields[19]
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 20 || len(fields[0]) != 1 {
		return procStat{}, errors.New("malformed /proc stat")
	}
	ticks, err := strconv.ParseUint(string(fields[19]), 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("malformed /proc stat: %w", err)
	}
	return procStat{state: fields[0][0], startTicks: ticks}, nil
}

// ProcessAlive reports whether o's process still runs: same pid and, when o records one, the
// same start time, so a pid recycled by an unrelated process does not count. A zombie counts
// as dead: it can no longer write. An owner on another host cannot be checked from here and
// is reported alive, so a lock is never stolen from a run that may be working elsewhere on a
// shared file system; its heartbeat is what tells whether it is stale.
func ProcessAlive(o Owner) bool {
	if o.PID <= 0 {
		return false
	}
	if host := Self().Host; o.Host != "" && host != "" && o.Host != host {
		return true
	}
	st, err := readProcStat(o.PID)
	switch {
	case err == nil:
		if st.state == 'Z' || st.state == 'X' || st.state == 'x' {
			return false
		}
		return o.StartTicks == 0 || st.startTicks == o.StartTicks
	case errors.Is(err, os.ErrNotExist):
		if _, serr := os.Stat("/proc/self/stat"); serr == nil {
			return false // /proc works and has no such pid
		}
	}
	// no /proc (not Linux, or hidden): signal 0 says whether the pid exists, without the
	// start-time check
	err = syscall.Kill(o.PID, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
