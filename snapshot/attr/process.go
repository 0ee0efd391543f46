package attr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// This file speaks git's long-running filter protocol
// (gitattributes(5), Documentation/technical/long-running-process-protocol.txt,
// sub-process.c and convert.c's apply_multi_file_filter): pkt-line framed,
// version 2, capabilities clean and smudge. "delay" is not offered, so a
// filter must answer every request at once.

const (
	pktMax     = 65520      // LARGE_PACKET_MAX
	pktDataMax = pktMax - 4 // LARGE_PACKET_DATA_MAX
)

type pktWriter struct{ w *bufio.Writer }

func (p pktWriter) data(b []byte) error {
	if len(b) > pktDataMax {
		return fmt.Errorf("packet of %d bytes is too long", len(b))
	}
	if _, err := fmt.Fprintf(p.w, "%04x", len(b)+4); err != nil {
		return err
	}
	_, err := p.w.Write(b)
	return err
}

func (p pktWriter) text(s string) error { return p.data([]byte(s)) }

func (p pktWriter) flush() error {
	_, err := p.w.WriteString("0000")
	return err
}

// readPkt returns the payload of the next packet, or end=true for a flush
// packet. Like pkt-line.c's packet_read, an empty data packet and the
// delim and response-end packets also end a list.
func readPkt(r *bufio.Reader) (data []byte, end bool, err error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, false, err
	}
	n, perr := strconv.ParseUint(string(hdr[:]), 16, 16)
	if perr != nil {
		return nil, false, fmt.Errorf("protocol error: bad line length character: %q", hdr[:])
	}
	switch {
	case n <= 2 || n == 4:
		return nil, true, nil
	case n == 3 || n > pktMax:
		return nil, false, fmt.Errorf("protocol error: bad line length %d", n)
	}
	data = make([]byte, n-4)
	if _, err := io.ReadFull(r, data); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, false, err
	}
	return data, false, nil
}

// readLine is packet_read_line: a text packet without its trailing LF;
// ok=false at the end of a list.
func readLine(r *bufio.Reader) (string, bool, error) {
	data, end, err := readPkt(r)
	if err != nil || end {
		return "", false, err
	}
	return strings.TrimSuffix(string(data), "\n"), true, nil
}

// readStatus is sub-process.c's subprocess_read_status: a list of
// key=value lines in which the last non-empty "status=" wins; prev stays
// when there is none.
func readStatus(r *bufio.Reader, prev string) (string, error) {
	status := prev
	for {
		line, ok, err := readLine(r)
		if err != nil {
			return "", err
		}
		if !ok {
			return status, nil
		}
		if v, found := strings.CutPrefix(line, "status="); found && v != "" {
			status = v
		}
	}
}

// filterProcess is one running long-running filter.
type filterProcess struct {
	mu      sync.Mutex // one request at a time
	cmdline string
	cmd     *exec.Cmd
	in      *os.File
	w       pktWriter
	outFile *os.File
	out     *bufio.Reader
	caps    map[string]bool
	done    chan struct{}
	broken  bool
}

// statusError is a filter's own answer ("error", "abort", …) for one file.
type statusError struct{ status string }

func (e *statusError) Error() string { return "filter answered status=" + e.status }

var errNoCapability = errors.New("filter process does not offer this command")

func startFilterProcess(ctx context.Context, root, cmdline string, stderr io.Writer) (*filterProcess, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Dir = root
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // kill ends it and all it started
	cmd.Stdin = inR
	cmd.Stdout = outW
	cmd.Stderr = stderr
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("cannot start filter process '%s': %w", cmdline, err)
	}
	p := &filterProcess{
		cmdline: cmdline,
		cmd:     cmd,
		in:      inW,
		w:       pktWriter{bufio.NewWriterSize(inW, pktMax)},
		outFile: outR,
		out:     bufio.NewReaderSize(outR, pktMax),
		caps:    map[string]bool{},
		done:    make(chan struct{}),
	}
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	stop := context.AfterFunc(ctx, p.kill)
	err = p.handshake()
	stop()
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("filter process '%s': %w", cmdline, err)
	}
	return p, nil
}

// handshake is sub-process.c's handshake_version and
// handshake_capabilities with welcome prefix "git-filter".
func (p *filterProcess) handshake() error {
	for _, s := range []string{"git-filter-client\n", "version=2\n"} {
		if err := p.w.text(s); err != nil {
			return err
		}
	}
	if err := p.w.flush(); err != nil {
		return err
	}
	if err := p.w.w.Flush(); err != nil {
		return err
	}
	line, ok, err := readLine(p.out)
	if err != nil {
		return err
	}
	if !ok || line != "git-filter-server" {
		return fmt.Errorf("unexpected line %q, expected git-filter-server", line)
	}
	line, ok, err = readLine(p.out)
	if err != nil {
		return err
	}
	v, found := strings.CutPrefix(line, "version=")
	if !ok || !found {
		return fmt.Errorf("unexpected line %q, expected version", line)
	}
	if _, ok, err = readLine(p.out); err != nil {
		return err
	} else if ok {
		return errors.New("unexpected line, expected flush")
	}
	if n, err := strconv.Atoi(v); err != nil || n != 2 {
		return fmt.Errorf("version %s not supported", v)
	}
	for _, s := range []string{"capability=clean\n", "capability=smudge\n"} {
		if err := p.w.text(s); err != nil {
			return err
		}
	}
	if err := p.w.flush(); err != nil {
		return err
	}
	if err := p.w.w.Flush(); err != nil {
		return err
	}
	for {
		line, ok, err := readLine(p.out)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		c, found := strings.CutPrefix(line, "capability=")
		if !found {
			continue
		}
		if c != "clean" && c != "smudge" {
			return fmt.Errorf("filter requested unsupported capability '%s'", c)
		}
		p.caps[c] = true
	}
}

// request is one round of apply_multi_file_filter. A *statusError means
// the filter refused this file and the stream is still in step; any other
// error leaves the process unusable.
func (p *filterProcess) request(ctx context.Context, capName, path string, in io.Reader, out io.Writer) error {
	if !p.caps[capName] {
		return errNoCapability
	}
	if len(path) > pktDataMax-len("pathname=\n") {
		return errors.New("path name too long for external filter")
	}
	stop := context.AfterFunc(ctx, p.kill)
	defer stop()
	if err := p.w.text("command=" + capName + "\n"); err != nil {
		return err
	}
	if err := p.w.text("pathname=" + path + "\n"); err != nil {
		return err
	}
	if err := p.w.flush(); err != nil {
		return err
	}
	buf := make([]byte, pktDataMax)
	for {
		n, err := io.ReadFull(in, buf)
		if n > 0 {
			if werr := p.w.data(buf[:n]); werr != nil {
				return werr
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading filter input: %w", err)
		}
	}
	if err := p.w.flush(); err != nil {
		return err
	}
	if err := p.w.w.Flush(); err != nil {
		return err
	}
	status, err := readStatus(p.out, "")
	if err != nil {
		return err
	}
	if status != "success" {
		return &statusError{status}
	}
	for {
		data, end, err := readPkt(p.out)
		if err != nil {
			return err
		}
		if end {
			break
		}
		if _, err := out.Write(data); err != nil {
			return fmt.Errorf("writing filter output: %w", err)
		}
	}
	status, err = readStatus(p.out, status)
	if err != nil {
		return err
	}
	if status != "success" {
		return &statusError{status}
	}
	return nil
}

func (p *filterProcess) kill() {
	killGroup(p.cmd.Process)
	// Closing our ends unblocks a pending read even if a grandchild of
	// the shell still holds the pipes.
	p.in.Close()
	p.outFile.Close()
}

// stop ends the process as git does at exit: close its stdin and wait.
func (p *filterProcess) stop() {
	p.in.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.kill()
		<-p.done
	}
	p.outFile.Close()
}

// processFilter runs one request through the long-running filter for
// cmdline, starting it on first use and again after it broke.
func (c *Converter) processFilter(ctx context.Context, cmdline, capName, path string, in io.Reader, out io.Writer) error {
	c.mu.Lock()
	p := c.procs[cmdline]
	if p == nil {
		var err error
		p, err = startFilterProcess(ctx, c.root, cmdline, c.cfg.Stderr)
		if err != nil {
			c.mu.Unlock()
			return err
		}
		c.procs[cmdline] = p
	}
	c.mu.Unlock()

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.broken {
		return fmt.Errorf("filter process '%s' stopped", cmdline)
	}
	err := p.request(ctx, capName, path, in, out)
	var se *statusError
	switch {
	case err == nil || errors.Is(err, errNoCapability):
	case errors.As(err, &se):
		if se.status == "abort" {
			// A permanent problem: do not ask again in this Converter.
			delete(p.caps, capName)
		} else if se.status != "error" {
			p.retire(c)
		}
	default:
		p.retire(c)
	}
	if err != nil && ctx.Err() != nil {
		return stoppedError(ctx, cmdline, path)
	}
	if err != nil {
		return fmt.Errorf("external filter '%s' failed: %w", cmdline, err)
	}
	return nil
}

// retire kills a process whose stream is out of step; the next request
// starts a fresh one. p.mu is held.
func (p *filterProcess) retire(c *Converter) {
	p.broken = true
	p.kill()
	c.mu.Lock()
	if c.procs[p.cmdline] == p {
		delete(c.procs, p.cmdline)
	}
	c.mu.Unlock()
}
