// Package lazyre holds regular expressions compiled on first use instead of at start-up.
//
// mulligan is a short-lived process started for every command, and most commands use few of its
// patterns (the autopsy's, the presets' banners, the quota texts): compiling some seventy of them
// in package initialisers cost every start ~5 ms and 1.5 MB of fresh heap, which on a machine
// where fresh memory is dear is most of a small command's time.
package lazyre

import (
	"regexp"
	"sync"
)

// Regexp is a regular expression compiled the first time it is used. The methods are
// regexp.Regexp's; a bad expression panics there, as regexp.MustCompile would at start-up
// (TestCompileAll in cmd compiles every one).
type Regexp struct {
	expr string
	once sync.Once
	re   *regexp.Regexp
}

var (
	mu     sync.Mutex
	all    []*Regexp
	byExpr = map[string]*Regexp{}
)

// New returns expr, to be compiled on first use: the same *Regexp for the same expression, so
// that packages sharing a pattern (the ANSI escapes, an id's characters) compile it once.
func New(expr string) *Regexp {
	mu.Lock()
	defer mu.Unlock()
	if r, ok := byExpr[expr]; ok {
		return r
	}
	r := &Regexp{expr: expr}
	byExpr[expr] = r
	all = append(all, r)
	return r
}

// Get is the compiled expression.
func (r *Regexp) Get() *regexp.Regexp {
	r.once.Do(func() {
		r.re = regexp.MustCompile(r.expr)
	})
	return r.re
}

// CompileAll compiles every expression made so far and returns the first that does not compile,
// for a test to check them all at once.
func CompileAll() (bad string, err error) {
	mu.Lock()
	rs := append([]*Regexp(nil), all...)
	mu.Unlock()
	for _, r := range rs {
		if _, err := regexp.Compile(r.expr); err != nil {
			return r.expr, err
		}
	}
	return "", nil
}

func (r *Regexp) String() string                         { return r.expr }
func (r *Regexp) MatchString(s string) bool              { return r.Get().MatchString(s) }
func (r *Regexp) Match(b []byte) bool                    { return r.Get().Match(b) }
func (r *Regexp) FindString(s string) string             { return r.Get().FindString(s) }
func (r *Regexp) FindStringIndex(s string) []int         { return r.Get().FindStringIndex(s) }
func (r *Regexp) FindStringSubmatch(s string) []string   { return r.Get().FindStringSubmatch(s) }
func (r *Regexp) FindStringSubmatchIndex(s string) []int { return r.Get().FindStringSubmatchIndex(s) }
func (r *Regexp) FindAllString(s string, n int) []string {
	return r.Get().FindAllString(s, n)
}
func (r *Regexp) FindAllStringIndex(s string, n int) [][]int {
	return r.Get().FindAllStringIndex(s, n)
}
func (r *Regexp) FindAllStringSubmatch(s string, n int) [][]string {
	return r.Get().FindAllStringSubmatch(s, n)
}
func (r *Regexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return r.Get().FindAllStringSubmatchIndex(s, n)
}
func (r *Regexp) ReplaceAllString(src, repl string) string {
	return r.Get().ReplaceAllString(src, repl)
}
func (r *Regexp) ReplaceAllStringFunc(src string, repl func(string) string) string {
	return r.Get().ReplaceAllStringFunc(src, repl)
}
func (r *Regexp) ReplaceAllLiteralString(src, repl string) string {
	return r.Get().ReplaceAllLiteralString(src, repl)
}
func (r *Regexp) SubexpNames() []string              { return r.Get().SubexpNames() }
func (r *Regexp) NumSubexp() int                     { return r.Get().NumSubexp() }
func (r *Regexp) ReplaceAll(src, repl []byte) []byte { return r.Get().ReplaceAll(src, repl) }
func (r *Regexp) FindIndex(b []byte) []int           { return r.Get().FindIndex(b) }
func (r *Regexp) FindAllSubmatch(b []byte, n int) [][][]byte {
	return r.Get().FindAllSubmatch(b, n)
}
func (r *Regexp) FindSubmatch(b []byte) [][]byte { return r.Get().FindSubmatch(b) }
func (r *Regexp) FindAllIndex(b []byte, n int) [][]int {
	return r.Get().FindAllIndex(b, n)
}
