//go:build unix

package snapshot

import (
	"fmt"
	"os"
	"syscall"
)

// pathOwner is the uid owning path itself (a symlink is not followed, as git's lstat).
func pathOwner(path string) (int, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return -1, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, fmt.Errorf("%s: no owner", path)
	}
	return int(st.Uid), nil
}
