package evidence

import (
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// A failed command's output often ends on boilerplate that says only that it failed, or how to
// get help: make's "*** [all] Error 2", Maven's "[Help 1] http://cwiki…", Gradle's "location of
// your Java installation.", npm's "A complete log of this run…". The line a person quotes is the
// error above it.

var (
	// strongErrRe: a line that names an error.
	strongErrRe = lazyre.New(`(?:^|[\s:\]])(?:ERROR|FATAL|[Ee]rror|[Ff]atal(?: error)?|[\w.$]*(?:Error|Exception))(?:\[\w+\])?:\s*\S|^(?:\W{0,3})(?:ERROR|FATAL|FAILED|FAILURE)\b|Killed signal|signal: killed|^Killed$|\bOOMKilled\b|[Oo]ut of memory|No space left on device|No tests? matching|No tests were executed|No tests found|Failed to execute goal|Segmentation fault|core dumped|command not found|is not a git command|No such file or directory|Permission denied|^panic: |Traceback \(most recent call last\)` +
		// An exception's class on a line of its own, its message below (RSpec's
		// "ActiveRecord::PendingMigrationError:"); miette's mark of an error's head (uv).
		`|^[\w.:$]*(?:Error|Exception):$|^× \S`)
	// weakErrRe: a line that says something failed or could not be done.
	weakErrRe = lazyre.New(`(?i)\bfail(?:ed|s|ure)?\b|\bcannot\b|\bcan't\b|\bunable to\b|\bnot found\b|\bcould not find\b|\bdenied\b|\brefused\b|\binvalid\b|\bmissing\b|\btimed out\b|\berrors?\b` +
		`|\bcouldn't find\b|\b(?:is|are) required\b|\brequires\b|\bno such host\b|\bserver misbehaving\b|\bi/o timeout\b|\baborted\b|\bcrashed\b`)
	// boilerplateRe: a line that says only that something failed, or where to read more.
	boilerplateRe = lazyre.New(`(?i)^make(?:\[\d+\])?: \*\*\* (?:\[.*\] )?(?:Error \d+|Waiting for unfinished jobs)|^\[ERROR\]\s*(?:-> \[Help \d+\].*|\[Help \d+\].*|To see the full stack trace|Re-run Maven using|For more information about the errors|After correcting the problems|mvn <args>|$)|^(?:npm (?:ERR!|error)|ERR!) (?:A complete log|code \S+$|errno|path |workspace |location |command |Lifecycle |Test failed|This is probably not a problem|Failed at the|Exit status|\s*$)|^error Command failed with exit code|^info Visit https://yarnpkg|ELIFECYCLE|^(?:FAIL|FAILED|ERROR|FAILURE)\.?$|^Test Run Aborted\.$|^Failed to update packages\.$|^(?:\d+:\d+ \+\d+(?: ~\d+)? -\d+: )?Some tests failed\.$|^\d+ issues? found\.$|(?:^|\] )The platform failed to initialize\.\s+Exiting\.$|^(?:× )?Encountered error while generating package metadata\.$|^error: (?:metadata-generation-failed|subprocess-exited-with-error)$|^╰─> See above for output\.$|^Result: FAIL$|^Error: plugin "[\w-]+" exited with error$|^exit status \d+$|^Error: Process completed with exit code|returned non-zero exit status \d+\.?$|^compilation terminated\.$|^\d+ errors? generated\.|^BUILD FAILED in |^FAILURE: Build failed with an exception|^\* (?:Try|Get more help)|Run with --(?:stacktrace|info|debug|scan)|^> Get more help|^Please set the JAVA_HOME|^location of your Java installation|^\[ERROR\] Please refer to (?:\S+ for the individual test results|dump files)` +
		// BuildKit's word that a RUN step exited non-zero (its output above says why); tox's
		// summary of its environments and its last line.
		`|^ERROR: (?:failed to solve: )?process ".*" did not complete successfully: exit code: \d+$|^[\w.-]+: (?:OK|FAIL code -?\d+|SKIP|exit -?\d+) \(|^(?:evaluation failed :\(|congratulations :\)) \(` +
		// CTest's, meson test's and automake's summaries: how many failed, not why.
		`|^Errors while running CTest|^The following tests FAILED:|^\d+% tests passed, \d+ tests? failed out of \d+|^(?:Ok|Expected Fail|Fail|Unexpected Pass|Skipped|Timeout):\s+\d+$|^Summary of Failures:$` +
		`|^# (?:TOTAL|PASS|SKIP|XFAIL|FAIL|XPASS|ERROR):\s+\d+$|^Testsuite summary for |^See \S*test-suite\.log$|^Please report to \S+@` +
		// RSpec's tally; a task runner's word that a command it ran exited non-zero (turbo:
		// "ERROR  run failed: command  exited (1)").
		`|^\d+ examples?, \d+ failures?|exited \(-?\d+\)$` +
		// tox 4's line per environment; CMake's and west's words that configuring stopped;
		// cargo's trailer of a test binary that exited non-zero (a signal it died of is kept).
		"|^[\\w.-]+: (?:FAIL ✖|OK ✔) in [\\d.]+ seconds$|^-- Configuring incomplete, errors occurred!$|^FATAL ERROR: command exited with status \\d+:" +
		"|^details were reported earlier$|^error: aborting due to (?:\\d+ )?previous errors?|^error: test failed, to rerun pass `|^process didn't exit successfully: `.*` \\(exit (?:status|code): \\d+\\)$")
	// mavenGoalRe: Maven's "Failed to execute goal g:a:v:goal (id) on project p: why -> [Help 1]".
	mavenGoalRe = lazyre.New(`^(?:\[ERROR\] )?Failed to execute goal (?:[\w.-]+:)?([\w.-]+):[\w.-]+:([\w.-]+) \([^)]*\) on project [\w.-]+: (.+?)(?: -> \[Help \d+\])?$`)
)

// DecisiveLine is the line of a failed command's output that says why it failed when no test
// runner said so: the last line naming an error, else the last saying something failed, else the
// last a logger marked as an error ("npm error", "[ERROR]"), boilerplate, bare marks, advice and
// another program's output quoted below a failure passed over; Gradle's "What went wrong" block
// and a logfmt record at level error count as naming the error. The line chosen is made whole
// (the sentence it is wrapped in, the message below an exception's class) and gets the
// innermost cause its chain prints below it, the cause of the retries just above it, or the
// question an EOFError met; a line of a miette tree is read as the tree. A sanitizer's report
// or a failed assert comes before all of them, with its place in the code, then a tool's coded
// error (pnpm, NuGet), then a tool's error in a shape of its own (Terraform, Composer, Credo).
// "" when no line does.
func DecisiveLine(out string) string {
	lines := Lines(out)
	if c, ok := crashReport(lines); ok {
		// A sanitizer's report or a failed assert says what went wrong and where, whatever
		// the test runner's trailer says after it ("Errors while running CTest").
		return clip(strings.TrimPrefix(c.Where()+": "+c.Message, ": "))
	}
	if l := codedError(lines); l != "" {
		return l
	}
	if l := ownShape(lines); l != "" {
		return l
	}
	if l := ipythonRaised(lines); l != "" {
		return l
	}
	wrong := gradleWrong(lines)
	stepped := buildkitStepRe.MatchString(out)
	quoted := quotedOutput(lines)
	var best [3]string // by strength: marked as an error, says something failed, names an error
	var at [3]int
	for i := len(lines) - 1; i >= 0 && best[2] == ""; i-- {
		l := strings.TrimSpace(lines[i])
		if stepped {
			l = buildkitPrefixRe.ReplaceAllString(l, "")
		}
		if l == "" || quoted[i] || boilerplateRe.MatchString(l) || bareMarkRe.MatchString(l) {
			continue
		}
		if wrong.from > 0 && i >= wrong.from && i < wrong.to {
			best[2], at[2] = wrong.text, i
			break
		}
		content := errLevelRe.ReplaceAllString(l, "")
		if hintRe.MatchString(content) {
			continue
		}
		tier := -1
		switch {
		case logfmtErrRe.MatchString(l):
			// A logfmt record at level error is an error whatever its message's words; the
			// message is what it says.
			l = logfmtMsg(l)
			tier = 2
		case strongErrRe.MatchString(content):
			tier = 2
		case weakErrRe.MatchString(content):
			tier = 1
		case content != l:
			tier = 0
		}
		if tier >= 0 && best[tier] == "" {
			best[tier], at[tier] = l, i
		}
	}
	for i := 2; i >= 0; i-- {
		if best[i] == "" {
			continue
		}
		if t := errorTree(lines, at[i]); t != "" {
			return clip(t)
		}
		l, end := best[i], at[i]
		if l == strings.TrimSpace(lines[at[i]]) {
			l, end = sentence(lines, at[i])
			l = messageBelow(lines, end, l)
		}
		l = clipChain(tidyLine(l))
		if lookAboveRe.MatchString(l) {
			if d := ruleAbove(lines, at[i]); d != "" {
				return clip(d) // JaCoCo's, the enforcer's: the goal says only to look above
			}
		}
		if q := askedFirst(lines, at[i], l); q != l {
			return clip(q)
		}
		return retriedOn(lines, at[i], causedBy(lines, end, l))
	}
	return ""
}

// BuildKit's plain progress prefixes a step's output with the step and the seconds since it
// started ("#8 0.515 npm ERR! …"), and repeats its last lines under the step's name with the
// seconds alone ("0.515 npm ERR! …"): the tool's line is what follows.
var (
	buildkitStepRe   = lazyre.New(`(?m)^#\d+ \[`)
	buildkitPrefixRe = lazyre.New(`^(?:#\d+ )?(?:\d+\.\d+ +)?`)
)

// wrapRe: a segment of an error chain that wraps another ("failed to copy", "error reading …",
// go's "verifying go.mod", "reading https://…", net/http's `Get "https://…"`, "dial tcp").
var wrapRe = lazyre.New(`(?i)^(?:failed|error|unable|cannot|can't|could not|verifying|reading|loading|downloading|fetching|parsing|opening|resolving|get|post|dial|lookup)\b`)

// wrapsErrors: the line's ": "-separated parts are an error chain, each wrapping the next (two
// wrappers at least), as Go programs (docker, BuildKit, containerd) print them.
func wrapsErrors(parts []string) bool {
	n := 0
	for _, p := range parts[:len(parts)-1] {
		if wrapRe.MatchString(p) {
			n++
		}
	}
	return n >= 2
}

// clipChain clips a long line that chains its causes ("ERROR: failed to solve: golang:1.22:
// failed to resolve source metadata …: 429 Too Many Requests - Server message: toomanyrequests:
// You have reached your pull rate limit …") by its middle: the innermost cause is at its end
// and must survive the clip, its first words say what failed.
func clipChain(s string) string {
	s = strings.TrimRight(s, " \t")
	parts := strings.Split(s, ": ")
	if len(s) <= maxLine || !wrapsErrors(parts) {
		return clip(s) // a long assertion or message: its start says most
	}
	head := parts[0] + ": "
	if len(parts[0]) < 12 { // "ERROR", "error": say what errored too
		head += parts[1] + ": "
	}
	const gap = "…: "
	tail := ""
	for i := len(parts) - 1; i > 0; i-- {
		t := parts[i]
		if tail != "" {
			t += ": " + tail
		}
		if len(head)+len(gap)+len(t) > maxLine {
			break
		}
		tail = t
	}
	if tail == "" {
		return clip(s)
	}
	return head + gap + tail
}

// errLevelRe: a logger's mark that a line is an error, not what the error is.
var errLevelRe = lazyre.New(`^(?:npm (?:ERR!|error)|\[(?:ERROR|FATAL)\]|yarn error|error) +`)

type block struct {
	from, to int
	text     string
}

// gradleWrong is Gradle's "* What went wrong:" block, its lines joined.
func gradleWrong(lines []string) block {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(lines[i]) != "* What went wrong:" {
			continue
		}
		b := block{from: i + 1, to: i + 1}
		var text []string
		for b.to < len(lines) && strings.TrimSpace(lines[b.to]) != "" && b.to < i+6 {
			text = append(text, strings.TrimSpace(lines[b.to]))
			b.to++
		}
		b.text = strings.Join(text, " ")
		if leaf, deep := gradleLeaf(lines[i+1:]); deep {
			// A chain deeper than the lines above hold: its head, then its innermost cause.
			b.text = strings.TrimSpace(lines[i+1]) + " > … " + leaf
			if len(b.text) > maxLine {
				b.text = leaf
			}
		}
		return b
	}
	return block{}
}

// gradleLeaf is the innermost cause of the first branch of Gradle's "What went wrong" chain
// (each cause one "> " deeper; "Required by:" and the projects under it are no cause), and
// whether it is deeper than the first five lines: dependency resolution nests the server's
// answer ("Received status code 401 from server: Unauthorized") five levels down.
func gradleLeaf(block []string) (string, bool) {
	leaf, depth, n := "", -1, 0
	for k := 0; k < len(block) && strings.TrimSpace(block[k]) != ""; k++ {
		l := block[k]
		t := strings.TrimSpace(l)
		if t == "Required by:" {
			for k+1 < len(block) && len(leading(block[k+1])) > len(leading(l)) && !strings.HasPrefix(strings.TrimSpace(block[k+1]), ">") {
				k++ // the projects that require it
			}
			continue
		}
		d := len(leading(l))
		if leaf != "" && d < depth {
			break // the chain's next branch
		}
		leaf, depth = t, d
		n++
	}
	return leaf, n > 5
}

// A Maven goal that says only that its rules failed ("Coverage checks have not been met. See log
// for details.", "Some Enforcer rules have failed. Look above for specific messages…"): the rule
// it printed above says which (JaCoCo's "[WARNING] Rule violated for bundle legacy-ledger: lines
// covered ratio is 0.61, but expected minimum is 0.80"; the enforcer's message below its "Rule 0:
// … failed with message:").
var (
	lookAboveRe   = lazyre.New(`(?i)See log for details|Look above for specific messages`)
	ruleViolRe    = lazyre.New(`Rule violated for |^(?:\[(?:WARNING|ERROR)\] )?Rule \d+: \S+ failed with message:$`)
	levelPrefixRe = lazyre.New(`^\[(?:WARNING|ERROR|INFO)\]\s*`)
)

// ruleAbove is the last rule violation printed above line at (the enforcer's message on the line
// after its rule); "" when none is.
func ruleAbove(lines []string, at int) string {
	for j := at - 1; j >= 0; j-- {
		l := strings.TrimSpace(lines[j])
		if !ruleViolRe.MatchString(l) {
			continue
		}
		if strings.HasSuffix(l, "failed with message:") && j+1 < at {
			return levelPrefixRe.ReplaceAllString(strings.TrimSpace(lines[j+1]), "")
		}
		return levelPrefixRe.ReplaceAllString(l, "")
	}
	return ""
}

// IPython's traceback (a notebook run by papermill or nbmake) heads it with the exception's name
// ("ArrowInvalid      Traceback (most recent call last)") and ends it with the name and message.
var ipyHeadRe = lazyre.New(`^([A-Za-z_][\w.]*)\s{2,}Traceback \(most recent call last\)$`)

// ipythonRaised is the last line that names the exception an IPython traceback heads; "" when
// there is none.
func ipythonRaised(lines []string) string {
	name := ""
	for _, l := range lines {
		if m := ipyHeadRe.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			name = m[1]
		}
	}
	if name == "" {
		return ""
	}
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); strings.HasPrefix(l, name+": ") {
			return clip(l)
		}
	}
	return ""
}

// tidyLine shortens a line to what it says: Maven's goal line to the plugin, goal and reason.
func tidyLine(l string) string {
	if m := mavenGoalRe.FindStringSubmatch(l); m != nil {
		return "Failed to execute goal " + m[1] + ":" + m[2] + ": " + m[3]
	}
	return labelGapRe.ReplaceAllString(l, "$1 ")
}

// labelGapRe: a label whose value a tool aligns in a column (turbo's "Failed:    @acme/ui#test").
var labelGapRe = lazyre.New(`^(\w+:) {2,}`)
