package scrub

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// Writer scrubs a stream on its way to W. It scrubs whole lines: an unfinished line (and an
// open private key block) is held back until it ends or Flush is called, so a secret split
// across writes is still found; a write holding a carriage return (a terminal's status line,
// redrawn whole) goes out at once. With a nil Scrubber it passes everything through.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	s   *Scrubber
	buf []byte
}

// NewWriter scrubs what is written with s before it reaches w.
func NewWriter(w io.Writer, s *Scrubber) *Writer { return &Writer{w: w, s: s} }

// SetScrubber replaces the scrubber (nil: --no-scrub) after what is held back was flushed.
func (sw *Writer) SetScrubber(s *Scrubber) {
	sw.Flush()
	sw.mu.Lock()
	sw.s = s
	sw.mu.Unlock()
}

// Scrubber is the scrubber in use (nil when scrubbing is off).
func (sw *Writer) Scrubber() *Scrubber {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return sw.s
}

// Underlying is the stream underneath, for what asks it about itself (a terminal's width);
// writing to it would bypass the scrubbing.
func (sw *Writer) Underlying() io.Writer { return sw.w }

// Raw is the stream underneath, for the one output that is never scrubbed: `logs` without
// --scrub. What is held back is flushed first, so the order of the output is kept.
func (sw *Writer) Raw() io.Writer {
	sw.Flush()
	return sw.w
}

func (sw *Writer) Write(p []byte) (int, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.s == nil {
		return sw.w.Write(p)
	}
	sw.buf = append(sw.buf, p...)
	cut := bytes.LastIndexByte(sw.buf, '\n') + 1
	if bytes.IndexByte(p, '\r') >= 0 {
		cut = len(sw.buf)
	}
	if i := bytes.LastIndex(sw.buf[:cut], []byte("-----BEGIN ")); i >= 0 && !bytes.Contains(sw.buf[i:cut], []byte("-----END ")) {
		cut = i
	}
	if cut == 0 {
		return len(p), nil
	}
	if _, err := io.WriteString(sw.w, sw.s.String(string(sw.buf[:cut]))); err != nil {
		return 0, err
	}
	sw.buf = append(sw.buf[:0], sw.buf[cut:]...)
	return len(p), nil
}

// WriteJSON writes one JSON document scrubbed value by value (JSON) instead of as text, so its
// shape survives: a number under a key named tokens_in stays a number. indent "" writes it
// compact.
func (sw *Writer) WriteJSON(doc []byte, indent string) error {
	sw.Flush()
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.s != nil {
		doc = sw.s.JSON(doc)
	}
	return writeDoc(sw.w, doc, indent)
}

func writeDoc(w io.Writer, doc []byte, indent string) error {
	if indent != "" {
		var out bytes.Buffer
		if err := json.Indent(&out, bytes.TrimRight(doc, "\n"), "", indent); err == nil {
			out.WriteByte('\n')
			doc = out.Bytes()
		}
	}
	_, err := w.Write(doc)
	return err
}

// Flush writes what is held back.
func (sw *Writer) Flush() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if len(sw.buf) > 0 {
		_, _ = io.WriteString(sw.w, sw.s.String(string(sw.buf)))
		sw.buf = sw.buf[:0]
	}
}
