//go:build linux && (amd64 || arm64 || riscv64)

package snapshot

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// fstatat lstat()s name (NUL-terminated) relative to dirfd, without the allocation
// unix.Fstatat makes to convert its string argument: one call per file in the walk.
func fstatat(dirfd int, name []byte, st *unix.Stat_t) error {
	for {
		_, _, e := unix.Syscall6(unix.SYS_NEWFSTATAT, uintptr(dirfd), uintptr(unsafe.Pointer(&name[0])),
			uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}
