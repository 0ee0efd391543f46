package cmd

import (
	"io"
	"strings"

	"github.com/mattn/go-runewidth"
)

// A cell is one column's text and how to paint it. Columns are padded by the display width of
// the plain text, and the paint is applied after padding, so color escapes never shift a column
// (text/tabwriter counts their bytes) and wide or combining characters line up too.
type cell struct {
	text  string
	paint func(string) string // nil: printed as is
}

// plain is a cell without color.
func plain(s string) cell { return cell{text: s} }

// painted is a cell drawn with paint, e.g. stateColor.
func painted(s string, paint func(string) string) cell { return cell{text: s, paint: paint} }

// table collects rows and writes them with two spaces between columns. The last column is not
// padded, so no line ends in blanks.
type table struct {
	indent string
	rows   [][]cell
}

func (t *table) row(cells ...cell) { t.rows = append(t.rows, cells) }

func (t *table) header(names ...string) {
	cells := make([]cell, len(names))
	for i, n := range names {
		cells[i] = plain(n)
	}
	t.row(cells...)
}

func (t *table) write(w io.Writer) error {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], runewidth.StringWidth(c.text))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		b.WriteString(t.indent)
		for i, c := range r {
			s := c.text
			if c.paint != nil {
				s = c.paint(s)
			}
			b.WriteString(s)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-runewidth.StringWidth(c.text)+2))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
