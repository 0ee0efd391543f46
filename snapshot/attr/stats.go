package attr

import (
	"bytes"
	"io"
)

// textStats is convert.c's struct text_stat.
type textStats struct {
	nul, lonecr, lonelf, crlf uint64
	printable, nonprintable   uint64
}

// isBinary is convert.c's convert_is_binary: a lone CR or a NUL makes a
// file binary, and so do too many non-printable bytes.
func (s *textStats) isBinary() bool {
	return s.lonecr > 0 || s.nul > 0 || (s.printable>>7) < s.nonprintable
}

// statsWriter is convert.c's gather_stats made incremental: a CR at the end
// of one chunk is held until the next byte shows whether it starts a CRLF.
type statsWriter struct {
	textStats
	pendingCR bool
	last      byte
	n         int64
}

func (g *statsWriter) Write(p []byte) (int, error) {
	s := &g.textStats
	for _, c := range p {
		if g.pendingCR {
			g.pendingCR = false
			if c == '\n' {
				s.crlf++
				continue
			}
			s.lonecr++
		}
		switch {
		case c == '\r':
			g.pendingCR = true
		case c == '\n':
			s.lonelf++
		case c == 127:
			s.nonprintable++
		case c < 32:
			switch c {
			case '\b', '\t', '\033', '\014':
				s.printable++
			case 0:
				s.nul++
				s.nonprintable++
			default:
				s.nonprintable++
			}
		default:
			s.printable++
		}
	}
	if len(p) > 0 {
		g.last = p[len(p)-1]
		g.n += int64(len(p))
	}
	return len(p), nil
}

func (g *statsWriter) result() textStats {
	s := g.textStats
	if g.pendingCR {
		s.lonecr++
	}
	// A trailing ^Z (DOS end of file) does not count as non-printable.
	if g.n > 0 && g.last == '\032' {
		s.nonprintable--
	}
	return s
}

func gatherStats(r io.Reader) (textStats, error) {
	var g statsWriter
	if _, err := io.Copy(&g, r); err != nil {
		return textStats{}, err
	}
	return g.result(), nil
}

// BlobHasCRLF reports what convert.c's has_crlf_in_index decides for a
// blob: it contains a CRLF and is not binary by git's rule. A caller uses
// it on the blob the index holds for a path to answer Clean's indexHasCR.
func BlobHasCRLF(blob io.Reader) (bool, error) {
	var g statsWriter
	buf := make([]byte, 32*1024)
	sawCR := false
	for {
		n, err := blob.Read(buf)
		if n > 0 {
			if !sawCR && bytes.IndexByte(buf[:n], '\r') >= 0 {
				sawCR = true
			}
			g.Write(buf[:n])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return false, err
		}
	}
	if !sawCR {
		return false, nil
	}
	s := g.result()
	return !s.isBinary() && s.crlf > 0, nil
}
