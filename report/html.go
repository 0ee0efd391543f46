package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"
	"sync"
	"time"
)

//go:embed report.html.tmpl
var pageText string

// page is parsed on first use, not at every start of the program.
var page = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("report").Funcs(template.FuncMap{
		"pct":  func(f float64) string { return fmt.Sprintf("%.3f%%", f) },
		"time": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"timep": func(t *time.Time) string {
			if t == nil {
				return "not finished"
			}
			return t.UTC().Format("2006-01-02 15:04:05 UTC")
		},
		"money": func(c *float64) string {
			if c == nil {
				return "-"
			}
			return fmt.Sprintf("$%.4f", *c)
		},
		"span": func(a, b time.Time) string { return b.Sub(a).Round(time.Second).String() },
		// diffLine is the CSS class of a line of a unified diff.
		"diffLine": func(l string) string {
			switch {
			case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "diff "):
				return "dh"
			case strings.HasPrefix(l, "@@"):
				return "dk"
			case strings.HasPrefix(l, "+"):
				return "da"
			case strings.HasPrefix(l, "-"):
				return "dd"
			}
			return ""
		},
		"lines": func(s string) []string { return strings.Split(strings.TrimRight(s, "\n"), "\n") },
	}).Parse(pageText))
})

// Write draws the report as one HTML page.
func Write(w io.Writer, d *Doc) error {
	return page().Execute(w, d)
}
