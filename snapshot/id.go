package snapshot

import (
	"crypto/rand"
	"sync"
	"time"
)

const idAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

// idEpoch keeps ids short: eight base-36 digits of milliseconds since 2020 last until 2109.
var idEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

var idMu sync.Mutex
var lastID struct {
	ms   int64
	tail uint32
}

// NewID returns a short lowercase [0-9a-z] id that sorts by creation time: eight base-36 digits of
// milliseconds, then two random digits. Ids made in the same millisecond by one process still sort
// in creation order (the tail counts up from a random start).
func NewID(now time.Time) string {
	ms := now.Sub(idEpoch).Milliseconds()
	if ms < 0 {
		ms = 0
	}
	idMu.Lock()
	var tail uint32
	if ms <= lastID.ms && lastID.ms-ms < 1000 {
		// The same millisecond (or a clock stepped back a little): keep creation order by
		// counting up from the last id.
		ms, tail = lastID.ms, lastID.tail+1
		if tail >= 36*36 {
			ms, tail = ms+1, 0
		}
	} else {
		var b [2]byte
		rand.Read(b[:])
		tail = (uint32(b[0])<<8 | uint32(b[1])) % (36 * 18) // leave room to count up
	}
	lastID.ms, lastID.tail = ms, tail
	idMu.Unlock()

	var out [10]byte
	for i := 7; i >= 0; i-- {
		out[i] = idAlphabet[ms%36]
		ms /= 36
	}
	out[8] = idAlphabet[tail/36]
	out[9] = idAlphabet[tail%36]
	return string(out[:])
}

// NewRunID returns a run id: ten random lowercase [0-9a-z] characters. Unlike NewID it does not
// sort by time, on purpose: runs started close together must differ in their first characters, so
// that any 4-character prefix names one run, as a git hash prefix does. The database keeps the
// order of runs (started_at, then insertion order).
func NewRunID() string {
	var b [10]byte
	rand.Read(b[:])
	for i := range b {
		// 252 = 7·36: bytes at or above it would bias the draw; draw them again.
		for b[i] >= 252 {
			var one [1]byte
			rand.Read(one[:])
			b[i] = one[0]
		}
		b[i] = idAlphabet[b[i]%36]
	}
	return string(b[:])
}
