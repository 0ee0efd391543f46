//go:build linux

package snapshot

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// readDirents lists the directory open as fd into the arena (names NUL-terminated, so fstatat can
// use them in place) without allocating per entry: the walk's hot path.
func readDirents(fd int, s *scratch) error {
	for {
		n, err := unix.Getdents(fd, s.dents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n <= 0 {
			return nil
		}
		buf := s.dents[:n]
		for len(buf) >= 19 {
			reclen := int(*(*uint16)(unsafe.Pointer(&buf[16])))
			if reclen == 0 || reclen > len(buf) {
				break
			}
			typ := buf[18]
			name := buf[19:reclen]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			buf = buf[reclen:]
			if len(name) == 1 && name[0] == '.' || len(name) == 2 && name[0] == '.' && name[1] == '.' {
				continue
			}
			s.addName(name, direntType(typ))
		}
	}
}

func direntType(t uint8) uint8 {
	switch t {
	case unix.DT_REG:
		return dtReg
	case unix.DT_DIR:
		return dtDir
	case unix.DT_LNK:
		return dtLink
	case unix.DT_UNKNOWN:
		return dtUnknown
	}
	return dtOther
}

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): the pages of a range are faulted in,
// writable, by one call.
const madvPopulateWrite = 23

// prefault maps in, by one madvise, the whole pages of memory b is about to be written all
// over: fresh memory the process would otherwise fault in a page at a time (on the VMs mulligan
// was measured on a fault costs ~16 us, a page populated ~7 us, its first touch included). Where
// the kernel has no MADV_POPULATE_WRITE nothing happens.
func prefault(b []byte) {
	const page = 4096
	if len(b) < 4*page {
		return
	}
	start := (uintptr(unsafe.Pointer(&b[0])) + page - 1) &^ (page - 1)
	end := (uintptr(unsafe.Pointer(&b[0])) + uintptr(len(b))) &^ (page - 1)
	if end <= start {
		return
	}
	unix.Syscall(unix.SYS_MADVISE, start, end-start, madvPopulateWrite)
}
