package evidence

import (
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// How a process ended, beyond "non-zero".
const (
	Killed      = "killed"      // SIGKILL (137): the kernel's out-of-memory killer, as a rule
	Terminated  = "terminated"  // SIGTERM (143): a supervisor, a CI runner, a container stopping
	TimedOut    = "timeout"     // 124 (coreutils timeout), go test's own -timeout
	Interrupted = "interrupted" // SIGINT (130)
)

// Exit is how a command ended.
type Exit struct {
	Kind string // Killed, Terminated, TimedOut, Interrupted; "" for an ordinary exit
	// Memory: the text names memory running out (an OOM kill, a heap limit), not only a signal.
	Memory bool
	Line   string // the line that shows it
}

var (
	killedRe = lazyre.New(`(?i)signal: killed|exit value 137\b|Killed signal terminated program|\bsignal 9\b|SIGKILL|(?:exit(?:ed)?(?: with)?|status|code)[: ]+137\b|^Killed$|^\S*: line \d+: +\d+ Killed|\bOOMKilled\b|Killed process \d+|was terminated by another process: signal=SIGKILL|received signal: KILL\b`)
	termRe   = lazyre.New(`(?i)signal: terminated|signal[ :"]+(?:15, )?SIGTERM\b|SIGTERM: termination signal|(?:killed|terminated) (?:by|with) (?:signal )?SIGTERM\b|exited with code SIGTERM|(?:exit(?:ed)?(?: with)?|status|code)[: ]+143\b|^Terminated$|received a shutdown signal`)
	timeRe   = lazyre.New(`^panic: test timed out after|(?:exit(?:ed)?(?: with)?|status|code)[: ]+124\b|ran past its timeout|Timed out after \d+|timed out after \d+ ?(?:ms|s|seconds|minutes)`)
	intRe    = lazyre.New(`signal: interrupt|(?:exit(?:ed)?(?: with)?|status|code)[: ]+130\b|\^C$`)
	memRe    = lazyre.New(`(?i)out of memory|heap out of memory|Allocation failed|cannot allocate memory|MemoryError|OutOfMemoryError|OOMKilled|oom-kill|Killed process \d+|memory limit|Server terminated abruptly \(error code: 14|Not enough memory to run compilation|JVM heap space is exhausted|GC overhead limit exceeded`)
)

// othersStoppedRe: a runner of several commands stopping the rest once one ended (concurrently's
// --kill-others: "--> Sending SIGTERM to other processes..", "[SB] … exited with code SIGTERM"):
// the signal is its own, not what ended the verify.
var othersStoppedRe = lazyre.New(`Sending SIGTERM to other processes|exited with code SIG[A-Z]+$`)

// ExitOf reads how a command ended from its exit status (-1: unknown) and what it and its
// runner printed (go test says "signal: killed" where a shell says "Killed").
func ExitOf(code int, text string) Exit {
	var e Exit
	switch code {
	case 137:
		e.Kind = Killed
	case 143:
		e.Kind = Terminated
	case 124:
		e.Kind = TimedOut
	case 130:
		e.Kind = Interrupted
	}
	lines := Lines(text)
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		if memRe.MatchString(l) {
			e.Memory = true
			if e.Kind == "" || e.Line == "" {
				e.Kind, e.Line = Killed, clip(l)
			}
			continue
		}
		if e.Line != "" || othersStoppedRe.MatchString(l) {
			continue
		}
		for _, k := range []struct {
			re   *lazyre.Regexp
			kind string
		}{{timeRe, TimedOut}, {killedRe, Killed}, {termRe, Terminated}, {intRe, Interrupted}} {
			if k.re.MatchString(l) && (e.Kind == "" || e.Kind == k.kind) {
				e.Kind, e.Line = k.kind, clip(l)
				break
			}
		}
	}
	return e
}
