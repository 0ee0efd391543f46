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
	strongErrRe = lazyre.New(`(?:^|[\s:\]])(?:ERROR|FATAL|[Ee]rror|[Ff]atal(?: error)?|[\w.$]*(?:Error|Exception))(?:\[\w+\])?:\s*\S|^(?:\W{0,3})(?:ERROR|FATAL|FAILED|FAILURE)\b|Killed signal|signal: killed|^Killed$|\bOOMKilled\b|[Oo]ut of memory|No space left on device|No tests? matching|No tests were executed|Failed to execute goal|Segmentation fault|core dumped|command not found|No such file or directory|Permission denied|^panic: |Traceback \(most recent call last\)`)
	// weakErrRe: a line that says something failed or could not be done.
	weakErrRe = lazyre.New(`(?i)\bfail(?:ed|s|ure)?\b|\bcannot\b|\bcan't\b|\bunable to\b|\bnot found\b|\bdenied\b|\brefused\b|\binvalid\b|\bmissing\b|\btimed out\b|\berrors?\b`)
	// boilerplateRe: a line that says only that something failed, or where to read more.
	boilerplateRe = lazyre.New(`(?i)^make(?:\[\d+\])?: \*\*\* (?:\[.*\] )?(?:Error \d+|Waiting for unfinished jobs)|^\[ERROR\]\s*(?:-> \[Help \d+\].*|\[Help \d+\].*|To see the full stack trace|Re-run Maven using|For more information about the errors|After correcting the problems|mvn <args>|$)|^(?:npm (?:ERR!|error)|ERR!) (?:A complete log|code \S+$|errno|path |workspace |location |command |Lifecycle |Test failed|This is probably not a problem|Failed at the|Exit status|\s*$)|^error Command failed with exit code|^info Visit https://yarnpkg|ELIFECYCLE|^(?:FAIL|FAILED|ERROR|FAILURE)\.?$|^exit status \d+$|^Error: Process completed with exit code|returned non-zero exit status \d+\.?$|^compilation terminated\.$|^\d+ errors? generated\.|^BUILD FAILED in |^FAILURE: Build failed with an exception|^\* (?:Try|Get more help)|Run with --(?:stacktrace|info|debug|scan)|^> Get more help|^Please set the JAVA_HOME|^location of your Java installation`)
	// mavenGoalRe: Maven's "Failed to execute goal g:a:v:goal (id) on project p: why -> [Help 1]".
	mavenGoalRe = lazyre.New(`^(?:\[ERROR\] )?Failed to execute goal (?:[\w.-]+:)?([\w.-]+):[\w.-]+:([\w.-]+) \([^)]*\) on project [\w.-]+: (.+?)(?: -> \[Help \d+\])?$`)
)

// DecisiveLine is the line of a failed command's output that says why it failed when no test
// runner said so: the last line naming an error (else the last saying something failed) that
// is not boilerplate; "" when no line does.
func DecisiveLine(out string) string {
	lines := Lines(out)
	weak := ""
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || boilerplateRe.MatchString(l) {
			continue
		}
		if strongErrRe.MatchString(l) {
			return clip(tidyLine(l))
		}
		if weak == "" && weakErrRe.MatchString(l) {
			weak = l
		}
	}
	if weak == "" {
		return ""
	}
	return clip(tidyLine(weak))
}

// tidyLine shortens a line to what it says: Maven's goal line to the plugin, goal and reason.
func tidyLine(l string) string {
	if m := mavenGoalRe.FindStringSubmatch(l); m != nil {
		return "Failed to execute goal " + m[1] + ":" + m[2] + ": " + m[3]
	}
	return l
}
