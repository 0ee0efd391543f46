package snapshot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The streamed entries hash must be the one the decoded entries give, in the format runs recorded.
func TestIndexStateStreamedMatchesDecoded(t *testing.T) {
	for _, v := range []string{"2", "3", "4"} {
		dir := t.TempDir()
		env := append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_CONFIG_GLOBAL=/dev/null")
		run := func(args ...string) {
			c := exec.Command("git", args...)
			c.Dir, c.Env = dir, env
			if out, err := c.CombinedOutput(); err != nil {
				t.Fatalf("git %v: %v %s", args, err, out)
			}
		}
		run("init", "-q")
		for i := 0; i < 50; i++ {
			os.MkdirAll(filepath.Join(dir, fmt.Sprintf("d%d", i%7)), 0o755)
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("d%d/file-%03d.txt", i%7, i)), []byte(fmt.Sprint(i)), 0o644)
		}
		run("-c", "index.version="+v, "add", ".")
		run("update-index", "--index-version", v)
		run("update-index", "--skip-worktree", "d1/file-001.txt")
		run("update-index", "--assume-unchanged", "d2/file-002.txt")
		data, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		r := &Repo{gitDir: filepath.Join(dir, ".git")}
		got := r.indexState(data)
		ui, err := decodeIndexFile(data, r.gitDir)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		var b []byte
		for _, e := range ui.entries {
			b = fmt.Appendf(b[:0], "%o %s %d %d %s\x00", e.mode, e.hash, e.stage, e.flags, e.name)
			h.Write(b)
		}
		if want := hex.EncodeToString(h.Sum(nil)); got.Entries != want {
			t.Errorf("index v%s: Entries %s, the fmt format over decoded entries gives %s", v, got.Entries, want)
		}
	}
}

// A file truncated in place while withFileData has it mapped faults on the next read of a lost
// page: that is recovered and fn sees a copy of what the file now holds, instead of the process
// dying of SIGBUS.
func TestWithFileDataSurvivesTruncation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	var sizes []int
	err := withFileData(path, func(data []byte) error {
		if len(sizes) == 0 {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range data { // faults on the first page read after the truncation
			faultSink += int(c)
		}
		sizes = append(sizes, len(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 1 || sizes[0] != 0 {
		t.Fatalf("fn saw %v bytes; want one complete call on the truncated (empty) copy", sizes)
	}
}

var faultSink int
