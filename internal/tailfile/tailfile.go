// Package tailfile reads the end of a log: what `top` shows of an attempt's output and what
// `report` quotes of it, without reading a large log whole.
package tailfile

import (
	"bytes"
	"io"
	"os"
)

// Read returns at most limit bytes from the end of the file at path, starting at a line (the
// line the limit cuts is left out), and the file's size.
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
	// One byte more than the limit: whether the first byte kept starts a line.
	off := max(0, size-limit-1)
	buf := make([]byte, size-off)
	n, err := f.ReadAt(buf, off)
	if err != nil && err != io.EOF {
		return nil, 0, err
	}
	buf = buf[:n]
	if off > 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return nil, size, nil // no line starts within the limit
		}
		buf = buf[i+1:]
	}
	return buf, size, nil
}
