//go:build !linux

package proc

import "syscall"

// dieWithParent has no kernel support here: a killed runner's agent is ended by the next
// supervise or resume, through its recorded process group.
func dieWithParent(*syscall.SysProcAttr) {}
