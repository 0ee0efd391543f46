package proc

import "syscall"

// dieWithParent has the kernel send the leader SIGKILL when the runner that started it dies (a
// runner killed with -9 does not leave its agent running on; what the agent started is found by
// the next supervise or resume through the tree's marker).
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
