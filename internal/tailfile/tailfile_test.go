package tailfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(path, []byte("first line\nsecond\nthird\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		limit int64
		want  string
	}{
		{100, "first line\nsecond\nthird\n"},
		{24, "first line\nsecond\nthird\n"},
		{12, "third\n"},         // "econd\nthird\n": the line the limit cuts is left out
		{13, "second\nthird\n"}, // it starts a line
		{3, ""},                 // no line starts within the limit
		{0, ""},
	} {
		got, size, err := Read(path, c.limit)
		if err != nil || string(got) != c.want || size != 24 {
			t.Errorf("Read(%d) = %q, %d, %v; want %q, 24", c.limit, got, size, err, c.want)
		}
	}
	if _, _, err := Read(filepath.Join(t.TempDir(), "none"), 10); !os.IsNotExist(err) {
		t.Errorf("a missing file: %v", err)
	}
}
