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

// Streaming the index: the state is the one computed from the file's bytes, the copy kept for
// PutBackGit is the file byte for byte, and keeping it again leaves one copy and no temporary.
func TestReadIndexStateStreamsAndKeepsCopy(t *testing.T) {
	dir := newGitRepo(t)
	for i := 0; i < 300; i++ {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("d%d/f%03d", i%9, i)), fmt.Sprint(i))
	}
	runGit(t, dir, "add", "-A")
	r := openRepo(t, dir)
	data, err := os.ReadFile(r.indexFile)
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		st, err := r.readIndexState(true)
		if err != nil {
			t.Fatal(err)
		}
		if want := r.indexState(data); st != want {
			t.Fatalf("round %d: streamed %+v, from the bytes %+v", round, st, want)
		}
		if sum := sha256.Sum256(data); st.Sum != hex.EncodeToString(sum[:]) {
			t.Fatalf("Sum %s is not the file's sha256", st.Sum)
		}
		kept, err := os.ReadFile(r.indexCopyPath(st.Sum))
		if err != nil || !bytes.Equal(kept, data) {
			t.Fatalf("round %d: kept copy differs from the index (%v)", round, err)
		}
		ents, _ := os.ReadDir(filepath.Dir(r.indexCopyPath(st.Sum)))
		if len(ents) != 1 {
			t.Fatalf("round %d: user-index holds %d files, want the one copy", round, len(ents))
		}
	}
}

// The index state is kept on disk under the index's stamp: a new Repo (the next process) finds
// it there and agrees with a computation from the file; a changed index, a damaged record or a
// record of another index file is not used.
func TestIndexStateKeptAcrossProcesses(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "a"), "a\n")
	runGit(t, dir, "add", "a")
	first, err := openRepo(t, dir).ReadGitState(true)
	if err != nil {
		t.Fatal(err)
	}
	r := openRepo(t, dir)
	stamp, err := stampUserIndex(r.indexFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := r.loadIndexState(stamp); !ok || got != first.Index {
		t.Fatalf("kept %+v, %v; computed %+v", got, ok, first.Index)
	}
	if again, err := r.ReadGitState(true); err != nil || again.Index != first.Index {
		t.Fatalf("from the record: %+v, %v; want %+v", again, err, first.Index)
	}

	// Another index file (GIT_INDEX_FILE) does not match the record.
	other := openRepo(t, dir)
	other.indexFile = filepath.Join(t.TempDir(), "index")
	data, _ := os.ReadFile(r.indexFile)
	os.WriteFile(other.indexFile, data, 0o644)
	ost, _ := stampUserIndex(other.indexFile)
	if _, ok := other.loadIndexState(ost); ok {
		t.Error("the record of .git/index was used for another index file")
	}

	// A changed index is computed again, and recorded.
	writeFile(t, filepath.Join(dir, "b"), "b\n")
	runGit(t, dir, "add", "b")
	changed, err := openRepo(t, dir).ReadGitState(false)
	if err != nil {
		t.Fatal(err)
	}
	want := openRepoNoRecord(t, dir)
	if changed.Index == first.Index || changed.Index != want {
		t.Fatalf("after git add: %+v (before %+v), computed from the file %+v", changed.Index, first.Index, want)
	}

	// A damaged record is not used.
	os.WriteFile(r.indexStatePath(), []byte("garbage"), 0o644)
	if got, err := openRepo(t, dir).ReadGitState(false); err != nil || got.Index != want {
		t.Fatalf("with a damaged record: %+v, %v; want %+v", got, err, want)
	}
}

// openRepoNoRecord computes the index state from the file alone.
func openRepoNoRecord(t *testing.T, dir string) IndexState {
	t.Helper()
	r := openRepo(t, dir)
	data, err := os.ReadFile(r.indexFile)
	if err != nil {
		t.Fatal(err)
	}
	return r.indexState(data)
}
