package snapshot

import "unsafe"

// prefaultSlice is prefault over the memory of s (all of its capacity).
func prefaultSlice[T any](s []T) {
	s = s[:cap(s)]
	if len(s) == 0 {
		return
	}
	prefault(unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), uintptr(len(s))*unsafe.Sizeof(s[0])))
}
