package snapshot

import "testing"

// prefault changes nothing a program can see: fresh memory stays zero and writable, and any
// slice (empty, small, unaligned, of structs) is accepted.
func TestPrefaultKeepsMemory(t *testing.T) {
	b := make([]byte, 1<<20+123)
	prefault(b[7:])
	for i, c := range b {
		if c != 0 {
			t.Fatalf("byte %d is %d after prefault", i, c)
		}
	}
	for i := range b {
		b[i] = byte(i)
	}
	prefault(b) // memory already written: left as it is
	for i, c := range b {
		if c != byte(i) {
			t.Fatalf("byte %d changed by prefault", i)
		}
	}
	prefaultSlice([]entry(nil))
	prefaultSlice(make([]entry, 0, 3))
	es := make([]entry, 20_000)
	prefaultSlice(es)
	if es[19_999] != (entry{}) {
		t.Fatal("a prefaulted slice of entries is not zero")
	}
}
