package attr

import (
	"errors"
	"io"
)

// crlfToLF streams convert.c's crlf_to_git conversion. With auto set (git
// "guessed" text) every CR goes, because a file with a lone CR was already
// judged binary; otherwise only a CR directly before a LF goes.
type crlfToLF struct {
	r         io.Reader
	auto      bool
	pendingCR bool
	in, out   []byte
	off       int
	eof       bool
}

func newCRLFToLF(r io.Reader, auto bool) *crlfToLF {
	return &crlfToLF{r: r, auto: auto, in: make([]byte, 32*1024), out: make([]byte, 0, 32*1024+1)}
}

func (c *crlfToLF) Read(p []byte) (int, error) {
	for c.off == len(c.out) {
		if c.eof {
			return 0, io.EOF
		}
		c.out, c.off = c.out[:0], 0
		n, err := c.r.Read(c.in)
		for _, b := range c.in[:n] {
			if c.auto {
				if b != '\r' {
					c.out = append(c.out, b)
				}
				continue
			}
			if c.pendingCR {
				c.pendingCR = false
				if b != '\n' {
					c.out = append(c.out, '\r')
				}
			}
			if b == '\r' {
				c.pendingCR = true
				continue
			}
			c.out = append(c.out, b)
		}
		if err == io.EOF {
			c.eof = true
			if c.pendingCR {
				c.pendingCR = false
				c.out = append(c.out, '\r')
			}
		} else if err != nil {
			return 0, err
		}
	}
	n := copy(p, c.out[c.off:])
	c.off += n
	return n, nil
}

// lfToCRLF streams convert.c's crlf_to_worktree (and the lf_to_crlf stream
// filter): every LF not already preceded by a CR becomes CRLF.
type lfToCRLF struct {
	w      io.Writer
	prevCR bool
	buf    []byte
}

func newLFToCRLF(w io.Writer) *lfToCRLF { return &lfToCRLF{w: w} }

func (c *lfToCRLF) Write(p []byte) (int, error) {
	out := c.buf[:0]
	for _, b := range p {
		if b == '\n' && !c.prevCR {
			out = append(out, '\r')
		}
		out = append(out, b)
		c.prevCR = b == '\r'
	}
	c.buf = out[:0]
	if _, err := c.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// errChanged reports a source that changed between the passes of one
// conversion, which would make the announced blob size a lie.
var errChanged = errors.New("file changed while it was being read")

// exactReader delivers exactly n bytes from r and fails otherwise, so a
// caller hashing "blob <n>\0" never hashes different content.
type exactReader struct {
	r io.Reader
	n int64
	// atEOF, if set, runs once all n bytes were delivered; it catches a
	// source that grew beyond the part that was read.
	atEOF func() error
}

func (e *exactReader) eof() error {
	if e.atEOF != nil {
		check := e.atEOF
		e.atEOF = nil
		if err := check(); err != nil {
			return err
		}
	}
	return io.EOF
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.n <= 0 {
		var one [1]byte
		for {
			k, err := e.r.Read(one[:])
			if k > 0 {
				return 0, errChanged
			}
			if err == io.EOF {
				return 0, e.eof()
			}
			if err != nil {
				return 0, err
			}
		}
	}
	if int64(len(p)) > e.n {
		p = p[:e.n]
	}
	k, err := e.r.Read(p)
	e.n -= int64(k)
	if err == io.EOF {
		if e.n > 0 {
			return k, errChanged
		}
		if k > 0 {
			return k, nil
		}
		return 0, e.eof()
	}
	return k, err
}
