package evidence

import (
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// --- RSpec, python unittest, mocha, PHPUnit, dotnet test: name and place, as each prints them ---

var (
	rspecRe    = lazyre.New(`^rspec (\./\S+?):(\d+) # (.+)$`)
	unittestRe = lazyre.New(`^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)`)
	pyFileRe   = lazyre.New(`^\s+File "([^"]+)", line (\d+), in (\w+)`)
	// pyExceptionRe: the line a traceback ends on, the exception; what follows it is the diff
	// assertEqual draws ("- Hello, bob!", "?        ^", "+ Hello, Bob!"), never the error.
	pyExceptionRe = lazyre.New(`^(?:\w+\.)*\w*(?:Error|Exception|Failure|Exit|Interrupt)\b(?::|$)`)
	mochaRe       = lazyre.New(`^\s+\d+\) (.+)$`)
	phpunitRe     = lazyre.New(`^\d+\) ([\w\\]+)::(\w+)`)
	phpFileRe     = lazyre.New(`^(/\S+\.php):(\d+)$`)
	dotnetRe      = lazyre.New(`^\s+Failed ([\w.]+) \[`)
	dotnetAtRe    = lazyre.New(`in (\S+\.cs):line (\d+)`)
	// minitest (Rails' and plain): "Failure:" / "  1) Error:" then "Class#test_name [file:line]:".
	minitestHeadRe = lazyre.New(`^\s*(?:\d+\) )?(Failure|Error):$`)
	minitestTestRe = lazyre.New(`^([\w:]+)#(\w+)(?: \[([^\]:]+):(\d+)\])?:?$`)
	// Laravel's and Pest's Collision printer: "FAILED  Tests\Feature\X > it does y   QueryException".
	collisionRe = lazyre.New(`^\s*FAILED\s+([\w\\]+)\s+>\s+(.+?)(?:\s{2,}(\w+))?\s*$`)
	playRe      = lazyre.New(`^\s+\d+\) \[([\w -]+)\] › (\S+?):(\d+):\d+ › (.+?)(?:\s+─+)?$`)
)

// parsePlaywright reads Playwright's list reporter: "1) [chromium] › tests/a.spec.ts:3:5 › title".
func parsePlaywright(lines []string, r *Tests) {
	seen := map[string]bool{}
	for i, l := range lines {
		m := playRe.FindStringSubmatch(l)
		if m == nil || seen[m[2]+m[3]+m[4]] {
			continue
		}
		seen[m[2]+m[3]+m[4]] = true
		t := Test{Runner: "playwright", Name: strings.TrimSpace(m[4]), Package: m[2], File: m[2], Line: atoi(m[3])}
		for j := i + 1; j < len(lines) && j < i+20; j++ {
			if s := strings.TrimSpace(lines[j]); s != "" && !playRe.MatchString(lines[j]) {
				t.Message = clip(s)
				break
			}
		}
		r.Failed = append(r.Failed, t)
	}
}

func parseRSpec(lines []string, r *Tests) {
	for _, l := range lines {
		if m := rspecRe.FindStringSubmatch(l); m != nil {
			f := strings.TrimPrefix(m[1], "./")
			r.Failed = append(r.Failed, Test{Runner: "rspec", Name: m[3], Package: f, File: f, Line: atoi(m[2])})
		}
	}
}

func parseUnittest(lines []string, r *Tests) {
	for i, l := range lines {
		m := unittestRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		t := Test{Runner: "unittest", Name: m[1], Package: m[2]}
		rules, raised := 0, false
		for j := i + 1; j < len(lines) && j < i+60; j++ {
			if unittestRe.MatchString(lines[j]) || strings.HasPrefix(lines[j], "=====") {
				break
			}
			if strings.HasPrefix(lines[j], "-----") {
				if rules++; rules == 2 {
					break // the traceback ends
				}
				continue
			}
			if f := pyFileRe.FindStringSubmatch(lines[j]); f != nil && f[3] == m[1] {
				t.File, t.Line = f[1], atoi(f[2])
			}
			s := strings.TrimSpace(lines[j])
			if strings.HasPrefix(s, "Traceback") {
				raised = false // a chained exception's traceback follows
			}
			if !raised && s != "" && !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "Traceback") && !strings.HasPrefix(s, "File ") {
				t.Message = clip(s) // the last line of the traceback is the error
				raised = pyExceptionRe.MatchString(s)
			}
		}
		r.Failed = append(r.Failed, t)
	}
}

// parseMocha reads mocha's failure list ("  1) suite\n       test:"), the failures after the
// "N failing" line.
func parseMocha(lines []string, r *Tests) {
	failing := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if strings.HasSuffix(strings.TrimSpace(l), " failing") {
			failing = true
			continue
		}
		m := mochaRe.FindStringSubmatch(l)
		if !failing || m == nil {
			continue
		}
		// The title runs over lines (suite, then test) up to the one ending with a colon.
		name := strings.TrimSpace(m[1])
		for !strings.HasSuffix(name, ":") && i+1 < len(lines) && strings.TrimSpace(lines[i+1]) != "" {
			i++
			name += " " + strings.TrimSpace(lines[i])
		}
		t := Test{Runner: "mocha", Name: strings.TrimSuffix(name, ":")}
		for j := i + 1; j < len(lines) && j < i+30; j++ {
			s := strings.TrimSpace(lines[j])
			if mochaRe.MatchString(lines[j]) && !strings.HasPrefix(s, "at ") {
				break
			}
			if t.Message == "" && s != "" && !strings.HasPrefix(s, "at ") {
				t.Message = clip(s)
			}
			if f := jsFrameRe.FindStringSubmatch(lines[j]); f != nil && strings.HasPrefix(s, "at ") && !strings.Contains(s, "node_modules") {
				t.File, t.Line = f[1], atoi(f[2])
				break
			}
		}
		r.Failed = append(r.Failed, t)
	}
}

func parsePHPUnit(lines []string, r *Tests) {
	for i, l := range lines {
		m := phpunitRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		t := Test{Runner: "phpunit", Name: m[2], Package: m[1]}
		for j := i + 1; j < len(lines) && j < i+30; j++ {
			if phpunitRe.MatchString(lines[j]) {
				break
			}
			s := strings.TrimSpace(lines[j])
			if f := phpFileRe.FindStringSubmatch(s); f != nil {
				t.File, t.Line = f[1], atoi(f[2])
				break
			}
			if t.Message == "" && s != "" {
				t.Message = clip(s)
			}
		}
		r.Failed = append(r.Failed, t)
	}
}

func parseDotnet(lines []string, r *Tests) {
	for i, l := range lines {
		m := dotnetRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name := m[1]
		t := Test{Runner: "dotnet", Name: name}
		if k := strings.LastIndexByte(name, '.'); k > 0 {
			t.Package, t.Name = name[:k], name[k+1:]
		}
		for j := i + 1; j < len(lines) && j < i+30; j++ {
			if dotnetRe.MatchString(lines[j]) {
				break
			}
			s := strings.TrimSpace(lines[j])
			if t.Message == "" && s != "" && s != "Error Message:" && s != "Stack Trace:" {
				t.Message = clip(s)
			}
			if f := dotnetAtRe.FindStringSubmatch(s); f != nil {
				t.File, t.Line = f[1], atoi(f[2])
				break
			}
		}
		r.Failed = append(r.Failed, t)
	}
}

// parseMinitest reads minitest's failure blocks: the test on the line after "Failure:" or
// "Error:", its message on the lines after that.
func parseMinitest(lines []string, r *Tests) {
	for i := 0; i+1 < len(lines); i++ {
		if !minitestHeadRe.MatchString(lines[i]) {
			continue
		}
		m := minitestTestRe.FindStringSubmatch(strings.TrimSpace(lines[i+1]))
		if m == nil {
			continue
		}
		t := Test{Runner: "minitest", Name: m[2], Package: m[1], File: m[3], Line: atoi(m[4])}
		if t.File != "" {
			t.Package = t.File // as rspec's: the file a prompt names
		}
		var msg []string
		for j := i + 2; j < len(lines) && j < i+8 && strings.TrimSpace(lines[j]) != ""; j++ {
			msg = append(msg, strings.TrimSpace(lines[j]))
		}
		t.Message = clip(strings.Join(msg, " "))
		r.Failed = append(r.Failed, t)
	}
}

// parseCollision reads the FAILED blocks Laravel's `artisan test` and Pest print: the class and
// the test, the exception's name, its message on the next line.
func parseCollision(lines []string, r *Tests) {
	for i, l := range lines {
		m := collisionRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		t := Test{Runner: "phpunit", Name: strings.TrimSpace(m[2]), Package: m[1]}
		for j := i + 1; j < len(lines) && j < i+4; j++ {
			if s := strings.TrimSpace(lines[j]); s != "" {
				t.Message = clip(strings.TrimSpace(m[3] + ": " + s))
				break
			}
		}
		r.Failed = append(r.Failed, t)
	}
}

// --- hspec (cabal test, stack test) and deno test ---

var (
	// hspec 2: under "Failures:", the place ("  test/FooSpec.hs:41:7: "), then "  1) Module.fn
	// does x" and the expectation ("expected: …" / " but got: …").
	hspecPlaceRe = lazyre.New(`^\s+(\S+\.l?hs):(\d+):\d+:\s*$`)
	hspecItemRe  = lazyre.New(`^\s+\d+\) (\S.*)$`)
	hspecCountRe = lazyre.New(`^(\d+) examples?, (\d+) failures?(?:, (\d+) pending)?$`)
	// deno test: "name => ./src/a_test.ts:22:6" under " ERRORS " with the error under it, again
	// under " FAILURES ", then "FAILED | 11 passed | 2 failed (118ms)".
	denoItemRe  = lazyre.New(`^(\S.*?) => (?:\./)?(\S+?):(\d+):\d+$`)
	denoCountRe = lazyre.New(`^(?:FAILED|ok) \| (\d+) passed(?: \(\d+ steps?\))? \| (\d+) failed`)
)

func parseHspec(lines []string, r *Tests) {
	hs := false
	for i := 0; i+1 < len(lines); i++ {
		p := hspecPlaceRe.FindStringSubmatch(lines[i])
		m := hspecItemRe.FindStringSubmatch(lines[i+1])
		if p == nil || m == nil {
			continue
		}
		hs = true
		t := Test{Runner: "hspec", Name: strings.TrimSpace(m[1]), Package: p[1], File: p[1], Line: atoi(p[2])}
		var msg []string
		for j := i + 2; j < len(lines) && j < i+6 && strings.TrimSpace(lines[j]) != "" && !hspecPlaceRe.MatchString(lines[j]); j++ {
			msg = append(msg, strings.TrimSpace(lines[j]))
		}
		t.Message = clip(strings.Join(msg, " "))
		r.Failed = append(r.Failed, t)
	}
	for _, l := range lines {
		if m := hspecCountRe.FindStringSubmatch(l); m != nil && hs {
			r.Total = atoi(m[1]) - atoi(m[3])
			r.Passed = r.Total - atoi(m[2])
		}
	}
}

func parseDeno(lines []string, r *Tests) {
	seen := map[string]bool{}
	for i, l := range lines {
		m := denoItemRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		t := Test{Runner: "deno", Name: m[1], Package: m[2], File: m[2], Line: atoi(m[3])}
		if seen[t.Key()] {
			continue
		}
		seen[t.Key()] = true
		if i+1 < len(lines) && !denoItemRe.MatchString(lines[i+1]) {
			t.Message = clip(strings.TrimPrefix(strings.TrimSpace(lines[i+1]), "error: "))
		}
		r.Failed = append(r.Failed, t)
	}
	for _, l := range lines {
		if m := denoCountRe.FindStringSubmatch(l); m != nil {
			r.Passed, r.Total = atoi(m[1]), atoi(m[1])+atoi(m[2])
		}
	}
}

// --- clojure.test (lein test, clojure -X:test) ---

var (
	// "lein test billing.invoice-test" names the namespace it runs; a failure is "FAIL in
	// (test-name) (invoice_test.clj:42)", its testing string, "expected: …" and "  actual: …".
	cljNsRe   = lazyre.New(`^lein test (?::only )?([\w.*+!?-]+?)(?:/[\w.*+!?-]+)?$`)
	cljFailRe = lazyre.New(`^(?:FAIL|ERROR) in \((\S+)\) \((\S+?):(\d+)\)$`)
	cljRanRe  = lazyre.New(`^Ran (\d+) tests? containing \d+ assertions?\.$`)
)

func parseClojure(lines []string, r *Tests) {
	ns := ""
	seen := map[string]bool{}
	for i, l := range lines {
		if m := cljNsRe.FindStringSubmatch(l); m != nil {
			ns = m[1]
			continue
		}
		m := cljFailRe.FindStringSubmatch(l)
		if m == nil || seen[ns+" "+m[1]] {
			continue
		}
		seen[ns+" "+m[1]] = true
		t := Test{Runner: "clojure", Name: m[1], Package: ns, File: m[2], Line: atoi(m[3])}
		var msg []string
		for j := i + 1; j < len(lines) && j < i+4 && strings.TrimSpace(lines[j]) != ""; j++ {
			msg = append(msg, strings.TrimSpace(lines[j]))
		}
		t.Message = clip(strings.Join(msg, " "))
		r.Failed = append(r.Failed, t)
	}
	for _, l := range lines {
		if m := cljRanRe.FindStringSubmatch(l); m != nil && len(seen) > 0 {
			r.Total = atoi(m[1])
			r.Passed = r.Total - len(seen)
		}
	}
}
