//go:build !linux

package reap

import "syscall"

// Become reports false: only Linux has a child subreaper (see the README). A process that
// leaves the process group of what mulligan started (setsid) is not found on this platform.
func Become() bool { return false }

// Supported reports whether this platform can find every descendant.
func Supported() bool { return false }

// Members is the leader alone here; Signal also signals its process group.
func (t *Tree) Members() []int {
	if t.Leader <= 1 || syscall.Kill(t.Leader, 0) != nil {
		return nil
	}
	return []int{t.Leader}
}

func (t *Tree) reapAdopted(seen map[int]bool) []int { return sortedKeys(seen) }

// WithEnv finds nothing on this platform.
func WithEnv(kvs ...string) []int { return nil }

// InGroup is the group's id while any process of it exists (zombies included) on this platform.
func InGroup(pgid int) []int {
	if pgid <= 1 || syscall.Kill(-pgid, 0) != nil {
		return nil
	}
	return []int{pgid}
}

func zombie(pid int) bool { return false }

func startTime(pid int) uint64 { return 0 }

// CPUTicks is not read on this platform (0): the heartbeat watches output and the tree.
func (t *Tree) CPUTicks() uint64 { return 0 }
