package autopsy

import (
	"fmt"
	"strings"

	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// What the machine lacks, as the build tools say it: a system program or library, a newer
// runtime, a browser the tests drive. None of it is in the repository or the task: it is the
// environment, and the fix is an install.

// lack is one thing the machine lacks, with the line that says so and the command that adds it.
type lack struct {
	what string // "the C linker cc", "Go >= 1.24"
	line string
	fix  string
}

type lackRe struct {
	re   *lazyre.Regexp
	what func(m []string) string
	fix  func(m []string) string
}

var lackRes = []lackRe{
	{lazyre.New("error: linker `([^`]+)` not found"),
		func(m []string) string { return "the C linker " + m[1] },
		func(m []string) string { return "sudo apt-get install -y build-essential" }},
	{lazyre.New(`(?i)Could not find directory of (OpenSSL) installation|Package '?(openssl|libssl)'?,? .*not found|fatal error: (openssl)/\w+\.h: No such file`),
		func(m []string) string { return "the OpenSSL development files" },
		func(m []string) string { return "sudo apt-get install -y libssl-dev pkg-config" }},
	{lazyre.New(`Package '?([\w.+-]+)'?,? (?:required by '[^']*', )?(?:was )?not found(?: in the pkg-config search path)?|fatal error: ([\w./+-]+)\.h: No such file or directory|cannot find -l([\w+-]+)`),
		func(m []string) string { return "the development files of " + firstNonEmpty(m[1:]...) },
		func(m []string) string {
			return "sudo apt-get install -y pkg-config lib" + firstNonEmpty(m[1:]...) + "-dev"
		}},
	{lazyre.New(`go(?:\.mod)? requires go >= ?([\d.]+) \(running go ([\d.]+)`),
		func(m []string) string { return "Go " + m[1] + " or later (this machine runs " + m[2] + ")" },
		func(m []string) string { return "go env -w GOTOOLCHAIN=go" + m[1] + "+auto" }},
	{lazyre.New(`The engine "node" is incompatible with this module\. Expected version "([^"]+)"\. Got "([^"]+)"|EBADENGINE.*node|Unsupported engine.*node`),
		func(m []string) string { return "a newer Node.js" + orWord(strings.TrimSpace(" ("+m[1]+")"), "") },
		func(m []string) string { return "nvm install --lts" }},
	{lazyre.New(`requires a different Python: ([\d.]+) not in '([^']+)'|requires-python .*'([^']+)'`),
		func(m []string) string { return "a Python in " + firstNonEmpty(m[2], m[3]) },
		func(m []string) string { return "python3 --version" }},
	{lazyre.New(`UnsupportedClassVersionError|Unsupported class file major version (\d+)|release version (\d+) not supported|invalid target release: (\d+)`),
		func(m []string) string { return "a newer JDK" },
		func(m []string) string { return "java -version" }},
	{lazyre.New(`Executable doesn't exist at \S*ms-playwright|npx playwright install`),
		func(m []string) string { return "Playwright's browsers" },
		func(m []string) string { return "npx playwright install" }},
	{lazyre.New(`Could not find Chrome \(ver\.|npx puppeteer browsers install chrome`),
		func(m []string) string { return "Puppeteer's Chrome" },
		func(m []string) string { return "npx puppeteer browsers install chrome" }},
}

// depRes: the project's dependencies not installed, read only on the base tree (an attempt may
// import a package it did not add). Node's bare module names are packages (the project's own are
// relative); Python's cannot be told from the project's own packages, so they are not read.
var depRes = []lackRe{
	{lazyre.New(`Cannot find (?:module|package) '([^'./][^']*)'`),
		func(m []string) string { return "the project's node dependencies (" + m[1] + ")" },
		func(m []string) string { return "npm ci" }},
}

// lackIn is what text says the machine lacks, if anything; deps also reads the project's
// dependencies not installed.
func lackIn(text string, deps bool) (lack, bool) {
	for _, l := range evidence.Lines(text) {
		l = strings.TrimSpace(strings.Trim(strings.TrimSpace(l), "║│|"))
		res := lackRes
		if deps {
			res = append(res[:len(res):len(res)], depRes...)
		}
		for _, r := range res {
			if m := r.re.FindStringSubmatch(l); m != nil {
				return lack{what: r.what(m), line: clip(l), fix: r.fix(m)}, true
			}
		}
	}
	return lack{}, false
}

// machineLacks: the verify output says the machine lacks something, on the base tree (when it
// was checked and failed) or else after every rejected attempt.
func (f *facts) machineLacks() (lack, bool) {
	if !f.allClasses(cQuality) {
		return lack{}, false
	}
	if f.base.failed() {
		return lackIn(f.base.Output, true)
	}
	var last lack
	for _, a := range f.failed {
		k, ok := lackIn(f.verifyOutput[key(a.TaskID, a.N)]+"\n"+a.Message, false)
		if !ok {
			return lack{}, false
		}
		last = k
	}
	return last, true
}

var machineRule = Rule{
	Name: "machine-lacks", Category: Environment, Confidence: 0.87,
	Match: func(f *facts) bool { _, ok := f.machineLacks(); return ok },
	Why: func(f *facts) string {
		k, _ := f.machineLacks()
		return fmt.Sprintf("the machine lacks %s, which the verify command needs (not the repository, not the agent): %s", k.what, k.line)
	},
	Suggest: func(f *facts) Suggestion {
		k, _ := f.machineLacks()
		return Suggestion{Text: fmt.Sprintf("install %s where the task runs (the first command, or your system's equivalent), then run the task again", k.what),
			Commands: []string{k.fix, f.retry()}}
	},
	Lines: func(f *facts) []string { k, _ := f.machineLacks(); return []string{k.line} },
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
