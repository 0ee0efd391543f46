// Package merge merges files three ways as `git merge-file` does: the changes base → ours and
// base → theirs are line hunks; hunks that neither overlap nor touch both apply, a hunk both
// sides made the same way applies once, and any other pair conflicts, written between git's
// markers. A file's mode merges apart from its content, and a binary file (git's rule: a NUL in
// its first 8000 bytes) merges only when one side left it as it was.
//
// It knows nothing of trees, repositories or working trees: bytes in, bytes out.
package merge

import (
	"bytes"
	"strings"
)

// Labels name the sides in conflict markers (`<<<<<<< Ours`, `>>>>>>> Theirs`).
type Labels struct{ Ours, Theirs string }

// Result is a text merge.
type Result struct {
	// Text is the merged file; where Conflicts > 0 it holds git's conflict markers.
	Text []byte
	// Conflicts counts the conflicting regions, as git merge-file's exit status does.
	Conflicts int
}

// Binary reports whether git takes data for binary: a NUL in its first 8000 bytes.
func Binary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0
}

// Mode merges a file's mode three ways: a side that left it as base takes the other's, and two
// different changes conflict (ok false).
func Mode(base, ours, theirs uint32) (uint32, bool) {
	switch {
	case ours == theirs || theirs == base:
		return ours, true
	case ours == base:
		return theirs, true
	}
	return ours, false
}

// region is one entry of the merge (git's xdmerge_t): base lines [i0, i0+n0), ours [i1, i1+n1),
// theirs [i2, i2+n2), taken from ours (sideOurs), theirs (sideTheirs), both the same way
// (sideSame), or conflicting (conflict).
type region struct {
	mode           int
	i0, n0, i1, n1 int
	i2, n2         int
}

const (
	conflict   = 0
	sideOurs   = 1
	sideTheirs = 2
	sideSame   = 4
)

// Text merges the changes base → ours and base → theirs as `git merge-file` does with its
// defaults (zealous conflicts, alphanumeric-free gaps folded, markers of 7), labels naming the
// sides. Binary input is not its business: see Binary.
func Text(base, ours, theirs []byte, labels Labels) Result {
	f := newFiles(base, ours, theirs)
	h1 := diffLines(f.base, f.ours)
	h2 := diffLines(f.base, f.theirs)
	regions := mergeHunks(f, h1, h2)
	regions = f.refine(regions)
	regions = f.foldGaps(regions)
	return f.write(regions, labels)
}

// files holds the three sides as lines (each with its newline, the last one perhaps without)
// and as numbers shared across the sides, equal for equal lines.
type files struct {
	lines              [3][][]byte
	base, ours, theirs []int
}

func newFiles(base, ours, theirs []byte) *files {
	f := &files{}
	ids := map[string]int{}
	number := func(k int, data []byte) []int {
		f.lines[k] = splitLines(data)
		out := make([]int, len(f.lines[k]))
		for i, l := range f.lines[k] {
			id, ok := ids[string(l)]
			if !ok {
				id = len(ids)
				ids[string(l)] = id
			}
			out[i] = id
		}
		return out
	}
	f.base, f.ours, f.theirs = number(0, base), number(1, ours), number(2, theirs)
	return f
}

func splitLines(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n') + 1
		if i == 0 {
			i = len(data)
		}
		out = append(out, data[:i])
		data = data[i:]
	}
	return out
}

// mergeHunks pairs the two sides' hunks as xdl_do_merge does: a hunk that ends before the
// other side's next one starts is that side's alone; hunks that overlap or touch are one
// conflicting region, unless they are the same change.
func mergeHunks(f *files, h1, h2 []hunk) []region {
	var out []region
	add := func(mode, i0, n0, i1, n1, i2, n2 int) {
		if k := len(out) - 1; k >= 0 {
			m := &out[k]
			if i1 <= m.i1+m.n1 || i2 <= m.i2+m.n2 {
				if mode != m.mode {
					m.mode = conflict
				}
				m.n0 = i0 + n0 - m.i0
				m.n1 = i1 + n1 - m.i1
				m.n2 = i2 + n2 - m.i2
				return
			}
		}
		out = append(out, region{mode: mode, i0: i0, n0: n0, i1: i1, n1: n1, i2: i2, n2: n2})
	}
	a, b := 0, 0
	for a < len(h1) && b < len(h2) {
		x, y := h1[a], h2[b]
		if x.i+x.n < y.i {
			add(sideOurs, x.i, x.n, x.j, x.m, y.j-y.i+x.i, x.n)
			a++
			continue
		}
		if y.i+y.n < x.i {
			add(sideTheirs, y.i, y.n, x.j-x.i+y.i, y.n, y.j, y.m)
			b++
			continue
		}
		if x.i != y.i || x.n != y.n || x.m != y.m || !equalLines(f.ours[x.j:x.j+x.m], f.theirs[y.j:y.j+y.m]) {
			off := x.i - y.i
			ffo := off + x.n - y.n
			i0, i1, i2 := x.i, x.j, y.j
			if off > 0 {
				i0 -= off
				i1 -= off
			} else {
				i2 += off
			}
			n0 := x.i + x.n - i0
			n1 := x.j + x.m - i1
			n2 := y.j + y.m - i2
			if ffo < 0 {
				n0 -= ffo
				n1 -= ffo
			} else {
				n2 += ffo
			}
			add(conflict, i0, n0, i1, n1, i2, n2)
		}
		e1, e2 := x.i+x.n, y.i+y.n
		if e1 >= e2 {
			b++
		}
		if e2 >= e1 {
			a++
		}
	}
	for ; a < len(h1); a++ {
		x := h1[a]
		add(sideOurs, x.i, x.n, x.j, x.m, x.i+len(f.theirs)-len(f.base), x.n)
	}
	for ; b < len(h2); b++ {
		y := h2[b]
		add(sideTheirs, y.i, y.n, y.i+len(f.ours)-len(f.base), y.n, y.j, y.m)
	}
	return out
}

func equalLines(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// refine narrows each conflict to the lines the two sides write differently (git's zealous
// level): the sides' text is diffed, and each of its hunks is a conflict of its own, the lines
// both sides share between them written once. A conflict whose sides agree is no conflict.
func (f *files) refine(in []region) []region {
	var out []region
	for _, m := range in {
		if m.mode != conflict || m.n1 == 0 || m.n2 == 0 {
			out = append(out, m)
			continue
		}
		hs := diffLines(f.ours[m.i1:m.i1+m.n1], f.theirs[m.i2:m.i2+m.n2])
		if len(hs) == 0 {
			m.mode = sideSame
			out = append(out, m)
			continue
		}
		for k, h := range hs {
			r := m
			if k > 0 {
				r = region{mode: conflict}
			}
			r.i1, r.n1, r.i2, r.n2 = m.i1+h.i, h.n, m.i2+h.j, h.m
			out = append(out, r)
		}
	}
	return out
}

// foldGaps joins two conflicts parted by at most three lines, or by lines without a letter or
// digit (git's ZEALOUS_ALNUM), into one.
func (f *files) foldGaps(in []region) []region {
	var out []region
	for _, m := range in {
		if k := len(out) - 1; k >= 0 && out[k].mode == conflict && m.mode == conflict {
			p := &out[k]
			begin, end := p.i1+p.n1, m.i1
			if end-begin <= 3 || !alnum(f.lines[1][begin:end]) {
				p.n0 = m.i0 + m.n0 - p.i0
				p.n1 = m.i1 + m.n1 - p.i1
				p.n2 = m.i2 + m.n2 - p.i2
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

func alnum(lines [][]byte) bool {
	for _, l := range lines {
		for _, c := range l {
			if c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
				return true
			}
		}
	}
	return false
}

// write produces the merged text as xdl_fill_merge_buffer does: ours between the regions, the
// side a region takes, and markers around each conflict.
func (f *files) write(regions []region, labels Labels) Result {
	var res Result
	var buf bytes.Buffer
	ours, theirs := f.lines[1], f.lines[2]
	copyLines := func(lines [][]byte, addNL bool, crlf bool) {
		for _, l := range lines {
			buf.Write(l)
		}
		if addNL && len(lines) > 0 && !bytes.HasSuffix(lines[len(lines)-1], []byte("\n")) {
			if crlf {
				buf.WriteString("\r\n")
			} else {
				buf.WriteString("\n")
			}
		}
	}
	i := 0
	for _, m := range regions {
		switch m.mode {
		case conflict:
			res.Conflicts++
			crlf := f.crlf(m)
			nl := "\n"
			if crlf {
				nl = "\r\n"
			}
			copyLines(ours[i:m.i1], false, false)
			buf.WriteString(marker('<', labels.Ours) + nl)
			copyLines(ours[m.i1:m.i1+m.n1], true, crlf)
			buf.WriteString(strings.Repeat("=", 7) + nl)
			copyLines(theirs[m.i2:m.i2+m.n2], true, crlf)
			buf.WriteString(marker('>', labels.Theirs) + nl)
		case sideOurs, sideTheirs:
			copyLines(ours[i:m.i1], false, false)
			if m.mode == sideOurs {
				copyLines(ours[m.i1:m.i1+m.n1], false, false)
			} else {
				copyLines(theirs[m.i2:m.i2+m.n2], false, false)
			}
		default:
			continue // the same on both sides: written with ours
		}
		i = m.i1 + m.n1
	}
	copyLines(ours[i:], false, false)
	res.Text = buf.Bytes()
	if res.Text == nil {
		res.Text = []byte{}
	}
	return res
}

func marker(c byte, label string) string {
	s := strings.Repeat(string(c), 7)
	if label != "" {
		s += " " + label
	}
	return s
}

// crlf reports whether a conflict's markers end in CRLF: when the lines before it (or the
// first ones) on both sides, and base's first line, do (git's is_cr_needed).
func (f *files) crlf(m region) bool {
	at := func(lines [][]byte, i int) int {
		if i > 0 {
			i--
		}
		if i >= len(lines) || !bytes.HasSuffix(lines[i], []byte("\n")) {
			return -1
		}
		if bytes.HasSuffix(lines[i], []byte("\r\n")) {
			return 1
		}
		return 0
	}
	need := at(f.lines[1], m.i1)
	if need != 0 {
		need = at(f.lines[2], m.i2)
	}
	if need != 0 {
		need = at(f.lines[0], 0)
	}
	return need > 0
}
