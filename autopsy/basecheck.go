package autopsy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/mulligan-dev/mulligan/reap"
)

// baseVerify is the verify command run again on the tree the task started from, before any
// agent change, in a temporary directory: when it fails there too, the verify command (or the
// tree) is the problem, not the attempts.
type baseVerify struct {
	ExitCode int
	Output   string
}

func (b *baseVerify) failed() bool { return b != nil && b.ExitCode != 0 }

// Bounds of the base check: a tree larger than this is not copied out, and the command gets
// the task's verify timeout, or this one.
const (
	maxBaseFiles   = 20000
	maxBaseBytes   = 256 << 20
	defaultBaseTTL = 5 * time.Minute
)

var errTooLarge = errors.New("tree too large for the base check")

// checkBase runs the decisive task's verify command on its base tree when the evidence points
// at the verify command: every failure is quality_rejection. It never touches the working tree
// or the repository: the tree is written to a temporary directory that is removed afterwards.
func (f *facts) checkBase(ctx context.Context, progress io.Writer) {
	if f.objects == nil || f.def == nil || f.def.Verify == nil || len(f.def.Verify.Command) == 0 || !f.allClasses(cQuality) {
		return
	}
	base := f.task.BaseTree
	if base == "" {
		base = f.run.BaseTree
	}
	if base == "" {
		return
	}
	if progress != nil {
		fmt.Fprintf(progress, "autopsy: running the verify command of task %s on its base tree (in a temporary directory)\n", f.task.ID)
	}
	dir, err := os.MkdirTemp("", "mulligan-autopsy-")
	if err != nil {
		return
	}
	defer os.RemoveAll(dir)
	if err := f.objects.materialize(plumbing.NewHash(base), dir); err != nil {
		return
	}
	ttl := f.def.Verify.Timeout
	if ttl <= 0 {
		ttl = defaultBaseTTL
	}
	res, err := runBounded(ctx, f.def.Verify.Command, dir, ttl)
	if err != nil {
		return
	}
	f.base = res
}

// runBounded runs argv in dir in its own process group, killed with the group at the timeout.
// A command that cannot start or times out gives no answer (err), not a verdict.
func runBounded(ctx context.Context, argv []string, dir string, ttl time.Duration) (*baseVerify, error) {
	ctx, cancel := context.WithTimeout(ctx, ttl)
	defer cancel()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MULLIGAN_AUTOPSY_BASE_CHECK=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	tree, err := reap.Start(cmd)
	if err != nil {
		return nil, err
	}
	defer tree.Release()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		tree.Signal(syscall.SIGKILL)
		<-done
		tree.Kill()
		return nil, ctx.Err()
	}
	tree.Kill() // what it left behind, in its group or not
	res := &baseVerify{Output: tailString(out.String(), tailBytes)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if res.ExitCode < 0 {
			res.ExitCode = 128
		}
	default:
		return nil, err
	}
	return res, nil
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// materialize writes tree's files under dir as stored (no eol conversion or smudge filters):
// regular files with their executable bit, symlinks as symlinks, submodules as empty
// directories.
func (o *objects) materialize(tree plumbing.Hash, dir string) error {
	t, err := object.GetTree(o.st, tree)
	if err != nil {
		return err
	}
	files, size := 0, int64(0)
	return o.writeTree(t, dir, &files, &size)
}

func (o *objects) writeTree(t *object.Tree, dir string, files *int, size *int64) error {
	for _, e := range t.Entries {
		if strings.ContainsAny(e.Name, "/\x00") || e.Name == "." || e.Name == ".." || e.Name == ".git" {
			return fmt.Errorf("unsafe tree entry %q", e.Name)
		}
		p := filepath.Join(dir, e.Name)
		switch e.Mode {
		case filemode.Dir:
			sub, err := object.GetTree(o.st, e.Hash)
			if err != nil {
				return err
			}
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
			if err := o.writeTree(sub, p, files, size); err != nil {
				return err
			}
		case filemode.Submodule:
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
		case filemode.Regular, filemode.Executable, filemode.Deprecated, filemode.Symlink:
			*files++
			obj, err := o.st.EncodedObject(plumbing.BlobObject, e.Hash)
			if err != nil {
				return err
			}
			*size += obj.Size()
			if *files > maxBaseFiles || *size > maxBaseBytes {
				return errTooLarge
			}
			rd, err := obj.Reader()
			if err != nil {
				return err
			}
			err = writeEntry(p, e.Mode, rd)
			rd.Close()
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func writeEntry(p string, mode filemode.FileMode, rd io.Reader) error {
	if mode == filemode.Symlink {
		target, err := io.ReadAll(rd)
		if err != nil {
			return err
		}
		return os.Symlink(string(target), p)
	}
	perm := os.FileMode(0o644)
	if mode == filemode.Executable {
		perm = 0o755
	}
	fh, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(fh, rd); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}
