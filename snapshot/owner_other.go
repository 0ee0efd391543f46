//go:build !unix

package snapshot

import "os"

// pathOwner cannot tell owners apart on this platform (git compares Windows SIDs; mulligan does
// not yet): every existing path counts as the current user's.
func pathOwner(path string) (int, error) {
	if _, err := os.Lstat(path); err != nil {
		return -1, err
	}
	return os.Geteuid(), nil
}
