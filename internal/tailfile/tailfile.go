// Package tailfile reads the end of a log: what `top` shows of an attempt's output and what
// `report` quotes of it, without reading a large log whole.
package tailfile

import (
	"bytes"
	"io"
	"os"
)

// Read returns at most limit bytes from the end of the file at path, starting at a line (the
// line the limit cut is dropped), and the file's size.
func Read(path string, limit int64) ([]byte, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, 0, err
	}
	off := max(0, size-limit)
	buf := make([]byte, size-off)
	n, err := f.ReadAt(buf, off)
	if err != nil && err != io.EOF {
		return nil, 0, err
	}
	buf = buf[:n]
	if off > 0 {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	return buf, size, nil
}
