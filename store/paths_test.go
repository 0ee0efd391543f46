package store

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestUnder(t *testing.T) {
	dir := "/r/.git/mulligan/logs"
	for _, names := range [][]string{{"..", "1.prompt"}, {"."}, {""}, {"a/../../x"}, {"a", "../b"}, {`a\b`}, {"a\x00"}, {"run", "..", ".."}} {
		if p, err := Under(dir, names...); err == nil {
			t.Errorf("Under(%q) = %s, want a refusal", names, p)
		}
	}
	for _, names := range [][]string{{"k3f9", "fix-tests", "1.prompt"}, {"..a"}, {"a.."}, {".hidden"}} {
		p, err := Under(dir, names...)
		if err != nil || !strings.HasPrefix(p, dir+"/") || p != filepath.Join(append([]string{dir}, names...)...) {
			t.Errorf("Under(%q) = %q, %v", names, p, err)
		}
	}
}

// FuzzUnder: whatever the names, an accepted path lies strictly inside dir, one component per
// name.
func FuzzUnder(f *testing.F) {
	for _, s := range []string{"..", ".", "a", "a/b", "../x", "x/..", "\x00", "...", "a\\b"} {
		f.Add(s, "1.log")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		dir := "/base/dir"
		p, err := Under(dir, a, b)
		if err != nil {
			return
		}
		rel, rerr := filepath.Rel(dir, p)
		if rerr != nil || rel == ".." || strings.HasPrefix(rel, "../") || len(strings.Split(rel, "/")) != 2 {
			t.Fatalf("Under(%q, %q) = %s: not two components inside %s", a, b, p, dir)
		}
	})
}
