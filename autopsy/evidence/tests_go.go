package evidence

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// --- go test (text, and -json turned back into its text) ---

var (
	goFailRe    = lazyre.New(`^(\s*)--- FAIL: (\S+)`)
	goPkgRe     = lazyre.New(`^(FAIL|ok)\s+(\S+)\s`)
	goLocRe     = lazyre.New(`^\s+([\w./-]+\.go):(\d+): ?(.*)$`)
	goTimeoutRe = lazyre.New(`^panic: test timed out after \S+`)
	goRunningRe = lazyre.New(`^\s+(Test\w+(?:/\S+)?) \(\S+\)$`)
	goPanicRe   = lazyre.New(`^panic: (.+?)(?: \[recovered\])?$`)
	goRunRe     = lazyre.New(`^=== (?:RUN|CONT|NAME)\s+(\S+)`)
)

func parseGo(lines []string, r *Tests) {
	start := len(r.Failed)
	var cur *Test
	// With -v a test's log lines come before its --- FAIL line, under its === RUN.
	logged := map[string]Test{}
	running := ""
	timedOut := false
	var race *Test // the last data race the race detector reported
	for i, l := range lines {
		if l == "WARNING: DATA RACE" {
			race = goRace(lines[i+1:])
			continue
		}
		if m := goRunRe.FindStringSubmatch(l); m != nil {
			running, cur = m[1], nil
			continue
		}
		if m := goFailRe.FindStringSubmatch(l); m != nil {
			t := logged[m[2]]
			t.Runner, t.Name = "go", m[2]
			r.Failed = append(r.Failed, t)
			cur = &r.Failed[len(r.Failed)-1]
			running = ""
			continue
		}
		if m := goPkgRe.FindStringSubmatch(l); m != nil {
			for j := start; j < len(r.Failed); j++ {
				if r.Failed[j].Package == "" {
					r.Failed[j].Package = m[2]
				}
			}
			cur, race = nil, nil
			continue
		}
		if goTimeoutRe.MatchString(l) {
			r.TimedOut, timedOut = clip(l), true
			continue
		}
		if timedOut {
			// "running tests:" lists the tests that were still running.
			if m := goRunningRe.FindStringSubmatch(l); m != nil && !slices.ContainsFunc(r.Failed[start:], func(t Test) bool { return t.Name == m[1] }) {
				r.Failed = append(r.Failed, Test{Runner: "go", Name: m[1], Message: "still running at the timeout"})
			}
			continue
		}
		if m := goLocRe.FindStringSubmatch(l); m != nil {
			t := Test{File: m[1], Line: atoi(m[2]), Message: clip(strings.TrimSpace(m[3]))}
			if t.Message == "" {
				t.Message = testifyError(lines[i+1:])
			}
			if t.Message == "" && i+1 < len(lines) {
				t.Message = clip(strings.TrimSpace(lines[i+1]))
			}
			if race != nil && strings.HasPrefix(t.Message, "race detected during execution of test") {
				t = *race // testing.go's line says only that there was one
			}
			switch {
			case cur != nil && cur.File == "":
				cur.File, cur.Line, cur.Message = t.File, t.Line, t.Message
			case cur == nil && running != "":
				if _, ok := logged[running]; !ok {
					logged[running] = t
				}
			}
		}
	}
	// A parent test fails because its subtest did: keep the leaves.
	kept := r.Failed[:start]
	for j := start; j < len(r.Failed); j++ {
		t := r.Failed[j]
		if slices.ContainsFunc(r.Failed[start:], func(u Test) bool { return strings.HasPrefix(u.Name, t.Name+"/") && u.Package == t.Package }) {
			continue
		}
		kept = append(kept, t)
	}
	r.Failed = kept
	goPanics(lines, r, start)
}

// The race detector's report: "Write at 0x… by goroutine 8:", then frames, a function and
// "\t/path/file.go:41 +0x64" under it.
var (
	raceAccessRe = lazyre.New(`^((?:Previous )?(?:[Ww]rite|[Rr]ead)) at 0x[0-9a-f]+ by (?:goroutine \d+|main goroutine):$`)
	raceFuncRe   = lazyre.New(`^\s+(\S+?)\.((?:\(\*?\w+\)\.)?[\w.]+)\(\)$`)
	raceFileRe   = lazyre.New(`^\s+(\S+\.go):(\d+)(?: \+0x[0-9a-f]+)?$`)
)

// goStd are the standard library's top-level packages a race report's frames name (runtime's
// frames sit in files of internal/runtime/…, so the file's path does not tell).
var goStd = map[string]bool{}

func init() {
	for _, p := range strings.Fields("archive bufio bytes cmp compress container context crypto database debug embed encoding errors expvar flag fmt go hash html image index internal io iter log maps math mime net os path plugin reflect regexp runtime slices sort strconv strings structs sync syscall testing text time unicode unique unsafe vendor weak") {
		goStd[p] = true
	}
}

// goRace is the place of a data race: the first frame of the first access in the code under
// test, not in the standard library or the module cache. nil when the report names none.
func goRace(lines []string) *Test {
	access, pkg, fn := "", "", ""
	for j, l := range lines {
		if j == 40 || strings.HasPrefix(l, "==================") {
			break
		}
		if m := raceAccessRe.FindStringSubmatch(l); m != nil {
			access = strings.ToLower(m[1])
			continue
		}
		if m := raceFuncRe.FindStringSubmatch(l); m != nil {
			pkg, fn = m[1], m[2]
			continue
		}
		m := raceFileRe.FindStringSubmatch(l)
		if m == nil || access == "" || strings.Contains(m[1], "/pkg/mod/") {
			continue
		}
		if first, _, _ := strings.Cut(pkg, "/"); goStd[first] {
			continue // the standard library (its map, its sync): the race is in its caller
		}
		file := path.Base(m[1])
		return &Test{File: file, Line: atoi(m[2]), Message: clip(fmt.Sprintf("data race: %s in %s.%s", access, path.Base(pkg), fn))}
	}
	return nil
}

// testify's assertion block under "x_test.go:72:": a table of labels and values, the value
// running over lines under an empty label.
var (
	testifyLabelRe = lazyre.New(`^\s*\t([A-Z][\w ]*?):\s*\t(.*)$`)
	testifyMoreRe  = lazyre.New(`^\s*\t\s+\t(.*)$`)
)

// testifyError is the value of testify's "Error:" (its first lines), which says what failed;
// "Error Trace:" above it only says where. "" when lines do not open such a block.
func testifyError(lines []string) string {
	var msg []string
	for j, l := range lines {
		if j == 20 {
			break
		}
		if m := testifyLabelRe.FindStringSubmatch(l); m != nil {
			if len(msg) > 0 {
				break
			}
			if m[1] == "Error" {
				msg = append(msg, strings.TrimSpace(m[2]))
			}
			continue
		}
		if m := testifyMoreRe.FindStringSubmatch(l); m != nil {
			if len(msg) > 0 && len(msg) < 4 {
				msg = append(msg, strings.Join(strings.Fields(m[1]), " "))
			}
			continue
		}
		break
	}
	return clip(strings.Join(msg, " "))
}

// goPanics gives a test that panicked the panic's text and the test file's frame.
var goFrameRe = lazyre.New(`^\s+(\S+_test\.go):(\d+)`)

func goPanics(lines []string, r *Tests, start int) {
	for i, l := range lines {
		m := goPanicRe.FindStringSubmatch(l)
		if m == nil || goTimeoutRe.MatchString(l) {
			continue
		}
		for j := start; j < len(r.Failed); j++ {
			t := &r.Failed[j]
			if t.File != "" {
				continue
			}
			t.Message = clip("panic: " + m[1])
			for k := i + 1; k < len(lines) && k < i+60; k++ {
				if f := goFrameRe.FindStringSubmatch(lines[k]); f != nil {
					t.File, t.Line = f[1], atoi(f[2])
					break
				}
			}
			break
		}
	}
}

type goEvent struct {
	Action  string
	Package string
	Test    string
	Output  string
}

func goJSON(lines []string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, `{"Time":`) || strings.HasPrefix(l, `{"Action":`) || strings.HasPrefix(l, `{"ImportPath":`) {
			return true
		}
	}
	return false
}

// goJSONText turns go test -json events back into the text go test prints, package by package
// (the events of packages run at once interleave).
func goJSONText(lines []string) []string {
	var order []string
	text := map[string]*strings.Builder{}
	var other []string
	for _, l := range lines {
		var ev goEvent
		if !strings.HasPrefix(l, "{") || json.Unmarshal([]byte(l), &ev) != nil {
			if strings.TrimSpace(l) != "" {
				other = append(other, l)
			}
			continue
		}
		if ev.Output == "" {
			continue
		}
		b := text[ev.Package]
		if b == nil {
			b = &strings.Builder{}
			text[ev.Package] = b
			order = append(order, ev.Package)
		}
		b.WriteString(ev.Output)
	}
	out := other
	for _, p := range order {
		out = append(out, strings.Split(text[p].String(), "\n")...)
	}
	return out
}
