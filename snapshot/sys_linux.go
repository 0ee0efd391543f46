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
