package evidence

import (
	"strconv"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// Around the line that says why a command failed, tools print lines that only advise: how to
// get past the error ("Alternatively, you can run Composer with `--ignore-platform-req=ext-intl`
// …", "Try `apt install pkg-config`"), where to ask ("https://eslint.org/chat/help to chat with
// the team."), what to read. They name the error's words too ("missing", "failed"), and come
// last: DecisiveLine passes over them.

// hintRe: a line that advises or points elsewhere rather than says what went wrong.
var hintRe = lazyre.New(`(?i)^(?:ⓘ\s+)?(?:hint|help|tip|suggestion|get help)s?: |^(?:alternatively|otherwise),|^you (?:can|could|may|might)(?: also)? |^(?:try|consider) |^if you(?:'re|'ve| are| still| did| have| want| think| believe)? |^please (?:report|stop by|see|refer|open|file|follow|check|consult)|^see (?:https?://|the |\S+ for )|^for (?:more|further) (?:info|details|help)|^to (?:fix|enable|resolve|disable|see|learn|update|get|allow) |^\S*https?://\S+(?:\s+(?:to|for)\s.*)?$|^(?:[⨯•✗×]\s+)?(?:learn|read) more (?:at|on|in|about)\b.*https?://`)

// quotedOutput marks the lines a tool quotes from another program below the line that says
// what failed: a server's response (go's "reading https://sum.golang.org/lookup/…: 404 Not
// Found", then "\tserver response:" and the server's text indented), a build script's output
// (cargo's "  --- stdout", "  --- stderr" under "Caused by:"), the attempts behind a failure
// (meson's "The following exception(s) were encountered:" under "ERROR: Unknown compiler(s)").
// They explain the failure named above them; causedBy reads a build script's.
func quotedOutput(lines []string) []bool {
	quoted := make([]bool, len(lines))
	for i := 0; i < len(lines); i++ {
		switch strings.TrimSpace(lines[i]) {
		case "server response:", "--- stdout", "--- stderr", "The following exception(s) were encountered:":
		default:
			continue
		}
		quoted[i] = true
		for i+1 < len(lines) && (indented(lines[i+1]) || lines[i+1] == "") {
			i++
			quoted[i] = true
		}
	}
	return quoted
}

func indented(l string) bool {
	return l != "" && (l[0] == ' ' || l[0] == '\t')
}

// A logfmt record (golangci-lint, logrus: `level=error msg="Timeout exceeded: try increasing it
// by passing --timeout option"`): its level says it is an error, its message what the error is.
var (
	logfmtErrRe = lazyre.New(`^(?:time=\S+ )?level=(?:error|fatal|panic) msg=`)
	logfmtMsgRe = lazyre.New(`\bmsg=("(?:[^"\\]|\\.)*"|\S+)`)
)

// logfmtMsg is the message of the logfmt record l, unquoted; l itself when it has none.
func logfmtMsg(l string) string {
	m := logfmtMsgRe.FindStringSubmatch(l)
	if m == nil {
		return l
	}
	if u, err := strconv.Unquote(m[1]); err == nil {
		return u
	}
	return m[1]
}

// A tool that wraps its prose to a width breaks a sentence over lines at the same indentation
// (openssl-sys's "Could not find directory of OpenSSL installation, and this `-sys` crate
// cannot" / "proceed without this knowledge. …"): the line that names the error is half a
// sentence, and the line a person would quote is the whole.

// wrapWidth: a line shorter than this ended where its writer ended it, not at a wrap.
const wrapWidth = 40

// wordOnRe: a line that goes on with a plain lower-case word ("proceed without …"), not a
// label, a command or a path.
var wordOnRe = lazyre.New(`^[a-z][a-z'-]*[,;.]?(?: |$)`)

// continues says whether cur carries on the sentence prev broke off: the same indentation, prev
// long and not ended, cur going on with a plain word; a line a logger marked, or a tool's
// trailer, is a record of its own.
func continues(prev, cur string) bool {
	p, c := strings.TrimSpace(prev), strings.TrimSpace(cur)
	if len(p) < wrapWidth || c == "" || leading(prev) != leading(cur) || !wordOnRe.MatchString(c) {
		return false
	}
	if strings.ContainsAny(p[len(p)-1:], ".!?:;") || errLevelRe.MatchString(c) || boilerplateRe.MatchString(c) {
		return false
	}
	return true
}

func leading(l string) string {
	return l[:len(l)-len(strings.TrimLeft(l, " \t"))]
}

// sentence is the whole sentence the line at is part of, joined from the lines it is wrapped
// over and cut where it ends, and the index of its last line.
func sentence(lines []string, at int) (string, int) {
	from := at
	for from > 0 && continues(lines[from-1], lines[from]) {
		from--
	}
	s, end := strings.TrimSpace(lines[from]), from
	for end+1 < len(lines) && continues(lines[end], lines[end+1]) {
		next := strings.TrimSpace(lines[end+1])
		end++
		if cut := sentenceEnd(next); cut > 0 && end > at {
			return s + " " + next[:cut], end
		}
		s += " " + next
	}
	return s, end
}

// sentenceEnd is the length of s up to the end of its first sentence, 0 when no sentence ends
// in it.
func sentenceEnd(s string) int {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(".!?", s[i]) >= 0 && (i+1 == len(s) || s[i+1] == ' ') {
			return i + 1
		}
	}
	return 0
}

// excHeadRe: an exception's class alone on its line, or a sentence that announces the error
// (elm's "…giving me the following error message:"); its message follows, indented.
var excHeadRe = lazyre.New(`(?i)\bthe following (?:error|exception)s?(?: message)?:$|^[\w.:$]*(?-i:Error|Exception):$|^(?:ERROR|Error|error|FATAL):$|: error MSB1009: Project file does not exist\.$`)

// messageBelow is the exception class l (line at) with the message printed below it (RSpec's
// "ActiveRecord::PendingMigrationError:", "  Migrations are pending. To resolve this issue,
// run:", "  bin/rails db:migrate RAILS_ENV=test"); l itself when it is no class alone.
func messageBelow(lines []string, at int, l string) string {
	if !excHeadRe.MatchString(l) {
		return l
	}
	joined := 0
	for i := at + 1; i < len(lines) && i <= at+6 && joined < 3; i++ {
		b := strings.TrimSpace(lines[i])
		if b == "" {
			continue
		}
		l += " " + b
		joined++
		if !strings.HasSuffix(b, ":") { // a message that introduces a command goes on to it
			break
		}
	}
	return l
}
