//go:build unix && !linux

package snapshot

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// readDirents lists the directory open as fd into the arena (portable, allocating version).
func readDirents(fd int, s *scratch) error {
	dup, err := unix.Dup(fd) // os.File closes what it wraps; the caller still owns fd
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(dup), "")
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return err
	}
	for _, e := range ents {
		t := dtOther
		switch e.Type() & fs.ModeType {
		case 0:
			t = dtReg
		case fs.ModeDir:
			t = dtDir
		case fs.ModeSymlink:
			t = dtLink
		}
		s.addName([]byte(e.Name()), t)
	}
	return nil
}
