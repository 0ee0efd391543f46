package attr

import (
	"bufio"
	"context"
	"crypto/sha1"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// heapPeak samples HeapInuse in the background until stop is called and
// returns the peak above the starting point. Sampling catches internal
// passes (statistics, spooling) that the caller cannot observe.
func heapPeak() (stop func() uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var mu sync.Mutex
	peak := base
	done := make(chan struct{})
	finished := make(chan struct{})
	sample := func() {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		mu.Lock()
		if m.HeapInuse > peak {
			peak = m.HeapInuse
		}
		mu.Unlock()
	}
	go func() {
		defer close(finished)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	return func() uint64 {
		sample()
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		if peak < base {
			return 0
		}
		return peak - base
	}
}

// TestLargeFileMemoryBounded converts a 100 MB file and checks the heap
// never grows by anything like the file's size.
func TestLargeFileMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and converts 100 MB; skipped with -short")
	}
	const size = 100 << 20
	const bound = 32 << 20
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir) // spool files go here and are checked below
	p := filepath.Join(dir, "big.txt")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	line := strings.Repeat("0123456789abcdef", 4) + "\r\n"
	for n := 0; n < size; n += len(line) {
		w.WriteString(line)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	conv := NewConverter(Config{Filters: map[string]FilterDriver{"cat": {Clean: "cat", Smudge: "cat"}}}, dir)
	defer conv.Close()

	cleanCases := []struct {
		name string
		a    Attrs
	}{
		{"text=auto", Attrs{Text: Auto}},
		{"filter and ident", Attrs{Filter: "cat", Ident: true, Text: Set}},
	}
	for _, tc := range cleanCases {
		src, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		stop := heapPeak()
		rc, n, err := conv.Clean(context.Background(), "big.txt", tc.a, src, nil)
		if err != nil {
			t.Fatal(err)
		}
		h := sha1.New()
		got, err := io.Copy(h, rc)
		rc.Close()
		grew := stop()
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got != n || n >= size {
			t.Fatalf("%s: delivered %d of announced %d bytes (source %d)", tc.name, got, n, size)
		}
		t.Logf("Clean %s: heap grew by at most %d KiB", tc.name, grew>>10)
		if grew > bound {
			t.Errorf("Clean %s: heap grew by %d MiB converting a 100 MiB file", tc.name, grew>>20)
		}
	}

	smudgeCases := []struct {
		name string
		a    Attrs
	}{
		{"eol=crlf", Attrs{EOL: "crlf"}},
		{"text=auto eol=crlf (spooled)", Attrs{Text: Auto, EOL: "crlf"}},
		{"filter", Attrs{Filter: "cat"}},
	}
	for _, tc := range smudgeCases {
		src, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		stop := heapPeak()
		cw := &countWriter{}
		err = conv.Smudge(context.Background(), "big.txt", tc.a, src, cw)
		grew := stop()
		src.Close()
		if err != nil {
			t.Fatal(err)
		}
		if cw.n < size {
			t.Fatalf("%s: wrote %d bytes", tc.name, cw.n)
		}
		t.Logf("Smudge %s: heap grew by at most %d KiB", tc.name, grew>>10)
		if grew > bound {
			t.Errorf("Smudge %s: heap grew by %d MiB for a 100 MiB blob", tc.name, grew>>20)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Errorf("temporary files left behind: %d entries in %s", len(ents), dir)
	}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
