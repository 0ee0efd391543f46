package attr

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// expandFilterCommand replaces %f with the shell-quoted path and %% with
// %, as convert.c's filter_buffer_or_fd does; any other %x stays as is.
func expandFilterCommand(cmd, path string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(cmd, '%')
		if i < 0 {
			b.WriteString(cmd)
			return b.String()
		}
		b.WriteString(cmd[:i])
		cmd = cmd[i+1:]
		switch {
		case strings.HasPrefix(cmd, "%"):
			b.WriteByte('%')
			cmd = cmd[1:]
		case strings.HasPrefix(cmd, "f"):
			b.WriteString(sqQuote(path))
			cmd = cmd[1:]
		default:
			b.WriteByte('%')
		}
	}
}

// sqQuote is quote.c's sq_quote_buf: single quotes, with ' and ! escaped
// outside them.
func sqQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, c := range []byte(s) {
		if c == '\'' || c == '!' {
			b.WriteString(`'\`)
			b.WriteByte(c)
			b.WriteByte('\'')
			continue
		}
		b.WriteByte(c)
	}
	b.WriteByte('\'')
	return b.String()
}

// tailBuffer keeps the last bytes written to it, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const tailMax = 2048

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailMax {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return ": " + s
}

// runSingleFileFilter is convert.c's apply_single_file_filter: one shell
// command per file, content on stdin, result on stdout, in the worktree
// root. A filter that exits without reading all its input is fine (git
// ignores EPIPE, and so does os/exec); a non-zero exit is a failure.
func (c *Converter) runSingleFileFilter(ctx context.Context, cmdline, path string, in io.Reader, out io.Writer) error {
	cmd := exec.CommandContext(ctx, "sh", "-c", expandFilterCommand(cmdline, path))
	cmd.Dir = c.root
	cmd.Stdin = in
	cmd.Stdout = out
	tail := &tailBuffer{}
	if c.cfg.Stderr != nil {
		cmd.Stderr = io.MultiWriter(tail, c.cfg.Stderr)
	} else {
		cmd.Stderr = tail
	}
	// The filter and whatever it starts share a process group of their own, which is what a
	// cancel or timeout (ctx) ends; a grandchild that keeps a pipe open must not hang us after
	// the filter itself is gone.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return stoppedError(ctx, cmdline, path)
		}
		return fmt.Errorf("external filter '%s' failed: %w%s", cmdline, err, tail)
	}
	return nil
}

// filterStopped is a filter ended by its context: it prints the context's cause (the timeout or
// the cancel that ended it) and matches both the cause and ctx.Err() under errors.Is.
type filterStopped struct {
	cmdline, path string
	cause, err    error
}

func (e *filterStopped) Error() string {
	return fmt.Sprintf("external filter '%s' stopped on %s: %v", e.cmdline, e.path, e.cause)
}

func (e *filterStopped) Unwrap() []error { return []error{e.cause, e.err} }

func stoppedError(ctx context.Context, cmdline, path string) error {
	return &filterStopped{cmdline: cmdline, path: path, cause: context.Cause(ctx), err: ctx.Err()}
}

// killGroup kills the process group p leads (the filter started with Setpgid), and p itself.
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	syscall.Kill(-p.Pid, syscall.SIGKILL)
	return p.Kill()
}
