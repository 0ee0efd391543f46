//go:build unix && !(linux && (amd64 || arm64 || riscv64))

package snapshot

import "golang.org/x/sys/unix"

// fstatat lstat()s name (NUL-terminated) relative to dirfd.
func fstatat(dirfd int, name []byte, st *unix.Stat_t) error {
	n := name
	if len(n) > 0 && n[len(n)-1] == 0 {
		n = n[:len(n)-1]
	}
	for {
		err := unix.Fstatat(dirfd, string(n), st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		return err
	}
}
