package merge

// hunk is one change of a line diff: base lines [i, i+n) became side lines [j, j+m).
type hunk struct{ i, n, j, m int }

// diffLines is the line diff a → b as git's xdiff makes it: a minimal diff (Myers, linear
// space), its changes slid down as far as they go unless that would part them from a change on
// the other side (xdl_change_compact without heuristics), so merges line hunks up as git does.
func diffLines(a, b []int) []hunk {
	d := &differ{a: a, b: b, ra: make([]bool, len(a)), rb: make([]bool, len(b))}
	d.compare(0, len(a), 0, len(b))
	compact(a, d.ra, d.rb)
	compact(b, d.rb, d.ra)
	var out []hunk
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if i < len(a) && j < len(b) && !d.ra[i] && !d.rb[j] {
			i, j = i+1, j+1
			continue
		}
		h := hunk{i: i, j: j}
		for i < len(a) && d.ra[i] {
			i++
		}
		for j < len(b) && d.rb[j] {
			j++
		}
		h.n, h.m = i-h.i, j-h.j
		out = append(out, h)
	}
	return out
}

type differ struct {
	a, b   []int
	ra, rb []bool // changed lines
}

// compare marks the lines of a[aLo:aHi] and b[bLo:bHi] that a minimal diff changes.
func (d *differ) compare(aLo, aHi, bLo, bHi int) {
	for aLo < aHi && bLo < bHi && d.a[aLo] == d.b[bLo] {
		aLo, bLo = aLo+1, bLo+1
	}
	for aLo < aHi && bLo < bHi && d.a[aHi-1] == d.b[bHi-1] {
		aHi, bHi = aHi-1, bHi-1
	}
	if aLo == aHi || bLo == bHi {
		for i := aLo; i < aHi; i++ {
			d.ra[i] = true
		}
		for j := bLo; j < bHi; j++ {
			d.rb[j] = true
		}
		return
	}
	x, y, ok := d.split(aLo, aHi, bLo, bHi)
	if !ok {
		for i := aLo; i < aHi; i++ {
			d.ra[i] = true
		}
		for j := bLo; j < bHi; j++ {
			d.rb[j] = true
		}
		return
	}
	d.compare(aLo, x, bLo, y)
	d.compare(x, aHi, y, bHi)
}

// split finds the middle snake of the two ranges (Myers' linear-space search from both ends)
// and returns where to cut them; ok is false when they share no line.
func (d *differ) split(aLo, aHi, bLo, bHi int) (int, int, bool) {
	a, b := d.a[aLo:aHi], d.b[bLo:bHi]
	n, m := len(a), len(b)
	maxD := (n + m + 1) / 2
	off := maxD + 1
	size := 2*maxD + 3
	v1, v2 := make([]int, size), make([]int, size)
	for i := range v1 {
		v1[i], v2[i] = -1, -1
	}
	v1[off+1], v2[off+1] = 0, 0
	delta := n - m
	front := delta%2 != 0
	k1start, k1end, k2start, k2end := 0, 0, 0, 0
	for dd := 0; dd < maxD; dd++ {
		for k1 := -dd + k1start; k1 <= dd-k1end; k1 += 2 {
			k := off + k1
			var x1 int
			if k1 == -dd || (k1 != dd && v1[k-1] < v1[k+1]) {
				x1 = v1[k+1]
			} else {
				x1 = v1[k-1] + 1
			}
			y1 := x1 - k1
			for x1 < n && y1 < m && a[x1] == b[y1] {
				x1, y1 = x1+1, y1+1
			}
			v1[k] = x1
			switch {
			case x1 > n:
				k1end += 2
			case y1 > m:
				k1start += 2
			case front:
				k2 := off + delta - k1
				if k2 >= 0 && k2 < size && v2[k2] != -1 && x1 >= n-v2[k2] {
					return aLo + x1, bLo + y1, true
				}
			}
		}
		for k2 := -dd + k2start; k2 <= dd-k2end; k2 += 2 {
			k := off + k2
			var x2 int
			if k2 == -dd || (k2 != dd && v2[k-1] < v2[k+1]) {
				x2 = v2[k+1]
			} else {
				x2 = v2[k-1] + 1
			}
			y2 := x2 - k2
			for x2 < n && y2 < m && a[n-x2-1] == b[m-y2-1] {
				x2, y2 = x2+1, y2+1
			}
			v2[k] = x2
			switch {
			case x2 > n:
				k2end += 2
			case y2 > m:
				k2start += 2
			case !front:
				k1 := off + delta - k2
				if k1 >= 0 && k1 < size && v1[k1] != -1 {
					x1 := v1[k1]
					y1 := x1 - (k1 - off)
					if x1 >= n-x2 {
						return aLo + x1, bLo + y1, true
					}
				}
			}
		}
	}
	return 0, 0, false
}

// compact slides each group of changed lines of one file (recs, changed) as xdiff does: up as
// far as it goes, then down as far as it goes, merging with the groups it meets, and back up
// to the last place where it lines up with a change in the other file (other), if any.
func compact(recs []int, changed, other []bool) {
	n, no := len(recs), len(other)
	g := group{}
	g.end = g.start
	for g.end < n && changed[g.end] {
		g.end++
	}
	var o group
	for o.end < no && other[o.end] {
		o.end++
	}
	for {
		if g.end != g.start {
			for {
				size := g.end - g.start
				endMatchingOther := -1
				for g.slideUp(recs, changed) {
					o.previous(other)
				}
				earliestEnd := g.end
				if o.end > o.start {
					endMatchingOther = g.end
				}
				for g.slideDown(recs, changed) {
					o.next(other)
					if o.end > o.start {
						endMatchingOther = g.end
					}
				}
				if size == g.end-g.start {
					if g.end != earliestEnd && endMatchingOther != -1 {
						for o.end == o.start {
							g.slideUp(recs, changed)
							o.previous(other)
						}
					}
					break
				}
			}
		}
		if !g.next(changed) {
			return
		}
		o.next(other)
	}
}

// group is a run of changed lines [start, end), possibly empty, between unchanged ones.
type group struct{ start, end int }

func (g *group) next(changed []bool) bool {
	if g.end == len(changed) {
		return false
	}
	g.start = g.end + 1
	g.end = g.start
	for g.end < len(changed) && changed[g.end] {
		g.end++
	}
	return true
}

func (g *group) previous(changed []bool) bool {
	if g.start == 0 {
		return false
	}
	g.end = g.start - 1
	g.start = g.end
	for g.start > 0 && changed[g.start-1] {
		g.start--
	}
	return true
}

func (g *group) slideDown(recs []int, changed []bool) bool {
	if g.end < len(recs) && recs[g.start] == recs[g.end] {
		changed[g.start], changed[g.end] = false, true
		g.start, g.end = g.start+1, g.end+1
		for g.end < len(recs) && changed[g.end] {
			g.end++
		}
		return true
	}
	return false
}

func (g *group) slideUp(recs []int, changed []bool) bool {
	if g.start > 0 && recs[g.start-1] == recs[g.end-1] {
		g.start, g.end = g.start-1, g.end-1
		changed[g.start], changed[g.end] = true, false
		for g.start > 0 && changed[g.start-1] {
			g.start--
		}
		return true
	}
	return false
}
