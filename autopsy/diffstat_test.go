package autopsy

import (
	"bufio"
	"bytes"
	"slices"
	"testing"
)

// FuzzSplitLines: splitLines gives the lines bufio.Scanner's ScanLines gives.
func FuzzSplitLines(f *testing.F) {
	for _, s := range []string{"", "a", "a\n", "a\nb", "a\r\nb\r\n", "\n\n", "\r", "x\r\r\n", "no newline\r"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want []string
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 0, 64), len(b)+64)
		for sc.Scan() {
			want = append(want, sc.Text())
		}
		if got := splitLines(b); !slices.Equal(got, want) {
			t.Fatalf("splitLines(%q) = %q, bufio.ScanLines %q", b, got, want)
		}
	})
}
