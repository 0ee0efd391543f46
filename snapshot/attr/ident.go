package attr

import (
	"bufio"
	"bytes"
	"io"
)

// content is a re-readable byte sequence: the source file or a spool file.
// The ident conversions look ahead for the closing '$' of "$Id: ... $"
// through ReadAt rather than by buffering, so a huge line stays on disk.
type content struct {
	r    io.ReaderAt
	size int64
}

func (c content) reader() io.Reader { return io.NewSectionReader(c.r, 0, c.size) }

// index returns the offset of the first byte in [from, to) that is one of
// set, or -1.
func (c content) index(from, to int64, set string) (int64, error) {
	buf := make([]byte, 32*1024)
	for from < to {
		n := int64(len(buf))
		if to-from < n {
			n = to - from
		}
		k, err := c.r.ReadAt(buf[:n], from)
		if k > 0 {
			if i := bytes.IndexAny(buf[:k], set); i >= 0 {
				return from + int64(i), nil
			}
			from += int64(k)
		}
		if err != nil && err != io.EOF {
			return -1, err
		}
		if k == 0 {
			return -1, io.ErrUnexpectedEOF
		}
	}
	return -1, nil
}

func (c content) bytesAt(off int64, n int) ([]byte, error) {
	b := make([]byte, n)
	k, err := c.r.ReadAt(b, off)
	if k == n {
		return b, nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return nil, err
}

func (c content) copyRange(w io.Writer, from, to int64) error {
	_, err := io.Copy(w, io.NewSectionReader(c.r, from, to-from))
	return err
}

// identToGit is convert.c's ident_to_git: "$Id: anything $" (no line break
// inside) collapses to "$Id$".
func identToGit(c content, w io.Writer) error {
	bw := bufio.NewWriter(w)
	pos := int64(0)
	for {
		d, err := c.index(pos, c.size, "$")
		if err != nil {
			return err
		}
		if d < 0 {
			break
		}
		if err := c.copyRange(bw, pos, d+1); err != nil {
			return err
		}
		pos = d + 1
		if c.size-pos > 3 {
			head, err := c.bytesAt(pos, 3)
			if err != nil {
				return err
			}
			if string(head) != "Id:" {
				continue
			}
			d2, err := c.index(pos+3, c.size, "$")
			if err != nil {
				return err
			}
			if d2 < 0 {
				break
			}
			nl, err := c.index(pos+3, d2, "\n")
			if err != nil {
				return err
			}
			if nl >= 0 {
				continue
			}
			bw.WriteString("Id$")
			pos = d2 + 1
		}
	}
	if err := c.copyRange(bw, pos, c.size); err != nil {
		return err
	}
	return bw.Flush()
}

// identToWorktree is convert.c's ident_to_worktree, used by checkout when
// the content goes through memory anyway (a filter driver, or text=auto
// with CRLF output): "$Id$" and git-style "$Id:xxx$" become
// "$Id: <blob id> $"; an id with inner spaces is foreign and kept.
func identToWorktree(c content, oid string, w io.Writer) error {
	bw := bufio.NewWriter(w)
	pos := int64(0)
	for {
		d, err := c.index(pos, c.size, "$")
		if err != nil {
			return err
		}
		if d < 0 {
			break
		}
		if err := c.copyRange(bw, pos, d+1); err != nil {
			return err
		}
		pos = d + 1
		if c.size-pos < 3 {
			continue
		}
		head, err := c.bytesAt(pos, 3)
		if err != nil {
			return err
		}
		if string(head[:2]) != "Id" {
			continue
		}
		switch head[2] {
		case '$':
			pos += 3
		case ':':
			d2, err := c.index(pos+3, c.size, "$")
			if err != nil {
				return err
			}
			if d2 < 0 {
				// An unterminated keyword: the rest goes out as is.
				goto done
			}
			nl, err := c.index(pos+3, d2, "\n")
			if err != nil {
				return err
			}
			if nl >= 0 {
				continue
			}
			if pos+4 < d2 {
				spc, err := c.index(pos+4, d2, " ")
				if err != nil {
					return err
				}
				if spc >= 0 && spc < d2-1 {
					continue
				}
			}
			pos = d2 + 1
		default:
			continue
		}
		bw.WriteString("Id: " + oid + " $")
	}
done:
	if err := c.copyRange(bw, pos, c.size); err != nil {
		return err
	}
	return bw.Flush()
}

func isGitSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// identStream is convert.c's ident stream filter, which checkout uses
// instead of identToWorktree when nothing else needs the whole blob. The
// two disagree in corner cases (a '$' that breaks a partial "$Id" match
// cannot start a new one here; a foreign id is judged by any whitespace,
// not only spaces), and git's choice between them decides the bytes on
// disk, so both exist.
func identStream(c content, oid string, w io.Writer) error {
	bw := bufio.NewWriter(w)
	br := bufio.NewReader(io.NewSectionReader(c.r, 0, c.size))
	const head = "$Id"
	state := 0 // bytes of head matched so far
	skipping := false
	var skipStart int64 // offset of the '$' that started "$Id:"
	var afterColon int64
	spacePrefix, prevSpace, foreign := false, false, false
	for off := int64(0); ; off++ {
		ch, err := br.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if skipping {
			// Collect up to '$' or LF; keep everything if the id looks
			// foreign (whitespace not directly before the closing '$').
			afterColon++
			if afterColon == 1 {
				spacePrefix = ch == ' '
			} else {
				if prevSpace && ch != '$' {
					foreign = true
				}
				prevSpace = isGitSpace(ch)
			}
			if ch != '\n' && ch != '$' {
				continue
			}
			skipping = false
			if ch == '$' && !(spacePrefix && foreign) {
				bw.WriteString("$Id: " + oid + " $")
			} else {
				if err := bw.Flush(); err != nil {
					return err
				}
				if err := c.copyRange(w, skipStart, off+1); err != nil {
					return err
				}
			}
			continue
		}
		if state < len(head) && head[state] == ch {
			state++
			continue
		}
		if state == len(head) && ch == 0 {
			// git compares against its head's NUL terminator too, and
			// then passes the next byte through unexamined.
			state = len(head) + 1
			continue
		}
		if state == len(head)+1 {
			bw.WriteString(head + "\x00")
			bw.WriteByte(ch)
			state = 0
			continue
		}
		if state == len(head) {
			state = 0
			switch ch {
			case ':':
				skipping = true
				skipStart = off - 3
				afterColon = 0
				spacePrefix, prevSpace, foreign = false, false, false
			case '$':
				bw.WriteString("$Id: " + oid + " $")
			default:
				bw.WriteString(head)
				bw.WriteByte(ch)
			}
			continue
		}
		bw.WriteString(head[:state])
		bw.WriteByte(ch)
		state = 0
	}
	if skipping {
		if err := bw.Flush(); err != nil {
			return err
		}
		if err := c.copyRange(w, skipStart, c.size); err != nil {
			return err
		}
	} else if state == len(head)+1 {
		bw.WriteString(head + "\x00")
	} else {
		bw.WriteString(head[:state])
	}
	return bw.Flush()
}
