package snapshot

import (
	"context"
	"fmt"
	"github.com/mulligan-dev/mulligan/snapshot/internal/odb"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// Snapshots, refs and restores keep working while a real `git gc` (repack, prune-packed, prune,
// pack-refs --prune, prune of the emptied fan-out directories) runs over and over in the same
// repository, and leave no temporary file behind.
func TestSnapshotsSurviveConcurrentGC(t *testing.T) {
	dir := newGitRepo(t)
	writeFile(t, filepath.Join(dir, "README"), "readme\n")
	runGit(t, dir, "add", ".")
	runGit(t, dir, "commit", "-qm", "init")
	r := openRepo(t, dir)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var gcRuns int
	var gcErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		cmds := [][]string{{"gc", "--quiet"}, {"repack", "-a", "-d", "-q"}, {"prune-packed"}, {"pack-refs", "--all", "--prune"}, {"prune", "--expire=2.weeks.ago"}}
		for i := 0; i < 400; i++ {
			select {
			case <-stop:
				return
			default:
			}
			cmd := exec.Command("git", cmds[i%len(cmds)]...)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				// git's own lock races (two writers of packed-refs) are git's business, not ours.
				if !strings.Contains(string(out), ".lock") {
					gcErr = fmt.Errorf("git %v: %v\n%s", cmds[i%len(cmds)], err, out)
					return
				}
			}
			gcRuns++
		}
	}()

	const rounds = 40
	trees := make([]plumbing.Hash, rounds)
	var firstErr error
	for i := 0; i < rounds && firstErr == nil; i++ {
		for j := 0; j < 8; j++ {
			writeFile(t, filepath.Join(dir, fmt.Sprintf("d%d/f%d", j, i%5)), fmt.Sprintf("round %d file %d\n", i, j))
		}
		writeFile(t, filepath.Join(dir, fmt.Sprintf("new/%d", i)), strings.Repeat(fmt.Sprintf("%d ", i), 2000))
		res, err := r.Snapshot(context.Background(), SnapshotOptions{Ref: fmt.Sprintf("refs/mulligan/runs/gc%d/t/1/post", i)})
		if err != nil {
			firstErr = fmt.Errorf("round %d: snapshot: %w", i, err)
			break
		}
		trees[i] = res.Tree
		if i%4 == 3 {
			j := i - 2
			if j%5 == 3 {
				j-- // to a tree whose ref stays
			}
			if _, err := r.Restore(context.Background(), trees[j], RestoreOptions{UndoRef: fmt.Sprintf("refs/mulligan/undo/gc%d", i)}); err != nil {
				firstErr = fmt.Errorf("round %d: restore: %w", i, err)
			}
		}
		if i%5 == 4 {
			if err := r.DeleteRef(fmt.Sprintf("refs/mulligan/runs/gc%d/t/1/post", i-1), plumbing.ZeroHash); err != nil {
				firstErr = fmt.Errorf("round %d: delete ref: %w", i, err)
			}
		}
	}
	close(stop)
	wg.Wait()
	if firstErr != nil {
		t.Fatalf("%v (after %d git gc runs)", firstErr, gcRuns)
	}
	if gcErr != nil {
		t.Fatal(gcErr)
	}
	t.Logf("%d rounds against %d git gc/repack/pack-refs runs", rounds, gcRuns)
	for i := 0; i < rounds; i++ {
		if i%5 == 3 {
			continue // deleted
		}
		ref := fmt.Sprintf("refs/mulligan/runs/gc%d/t/1/post", i)
		if got := strings.TrimSpace(runGit(t, dir, "rev-parse", ref+"^{tree}")); got != trees[i].String() {
			t.Errorf("%s holds tree %s, want %s", ref, got, trees[i])
		}
	}
	runGit(t, dir, "fsck", "--no-dangling", "--strict")
	assertNoTemps(t, dir)
}

func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	objs := filepath.Join(dir, ".git", "objects")
	for _, pat := range []string{odb.LooseTempPrefix + "*", "pack/tmp_*", "*/tmp_obj_*", "tmp_obj_*"} {
		if m, _ := filepath.Glob(filepath.Join(objs, pat)); len(m) > 0 {
			t.Errorf("temporary files left: %v", m)
		}
	}
	filepath.WalkDir(filepath.Join(dir, ".git", "refs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".lock") {
			t.Errorf("lock left: %s", p)
		}
		return nil
	})
}
