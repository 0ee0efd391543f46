package evidence

import (
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// What a prompt waiting for a terminal asks for.
const (
	AskCredentials = "credentials" // git's Username/Password for 'https://…'
	AskPassword    = "password"    // sudo, ssh, a passphrase
	AskHostKey     = "host-key"    // ssh's first connection to a host
	AskConfirm     = "confirm"     // [y/N], (y/n), Ok to proceed?
	AskNpmInit     = "npm-init"    // npm init's questionnaire
	AskLogin       = "login"       // a CLI's interactive sign-in (a URL to open, a code to enter)
	AskInput       = "input"       // some other question
)

// Prompt is a question a command printed and waited on, with no terminal to answer it.
type Prompt struct {
	Kind string
	Line string // the prompt as printed
}

var promptRes = []struct {
	kind string
	re   *lazyre.Regexp
}{
	{AskCredentials, lazyre.New(`^(?:Username|Password) for '[^']+':`)},
	{AskLogin, lazyre.New(`(?i)Waiting for auth(?:entication|orization)?\b|\blogin required\b|Please visit the following URL to authori[sz]e|Open (?:this|the following) (?:URL|link) in (?:your|a) browser|Enter (?:the )?(?:authorization|verification) code|Paste (?:the )?(?:authorization )?code`)},
	{AskHostKey, lazyre.New(`Are you sure you want to continue connecting \(yes/no`)},
	{AskPassword, lazyre.New(`(?i)^\[sudo\] password for|^Enter passphrase for|(?:^|\s)Password:\s*$|password for \S+:\s*$|^Enter PEM pass phrase:`)},
	{AskNpmInit, lazyre.New(`^(?:package name|version|description|entry point|test command|git repository|keywords|author|license): (?:\([^)]*\) ?)?$|^Is this OK\? \(yes\)`)},
	{AskConfirm, lazyre.New(`(?i)\[y/n\]|\(y/n\)|\[yes/no\]|\(yes/no\)|Ok to proceed\? \(y\)|Do you want to continue\?|Proceed \(\[?y\]?/n\)\?|press (?:enter|any key|return)|Type 'yes' to confirm|Type 'yes' if you would like|or 'no' to cancel`)},
	{AskInput, lazyre.New(`^\? .+(?:›|\?)|^Enter (?:a |the |your )?[\w ]+:\s*$|^Select an option:|^Please select a fix:`)},
}

// WaitingPrompt is the question at the end of text that a command stopped on, if any: it must
// be among the last three lines printed (a question answered long ago is not what it waits for),
// or, for git's and ssh's own prompts, among the last eight: a prompt left unfinished on stderr
// can be logged before lines its command printed earlier on stdout, and nothing answers those
// prompts in a run.
func WaitingPrompt(text string) (Prompt, bool) {
	lines := Lines(text)
	if len(lines) > 8 {
		lines = lines[len(lines)-8:]
	}
	lines = expandJSON(lines) // a tool's output inside a JSON event
	seen := 0
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" {
			continue
		}
		seen++
		for _, p := range promptRes {
			if (seen <= 3 || p.kind == AskCredentials || p.kind == AskHostKey) && p.re.MatchString(l) {
				return Prompt{Kind: p.kind, Line: clip(l)}, true
			}
		}
	}
	return Prompt{}, false
}

// Avoid says how to run what asked without a question, by kind; what names the command when
// the prompt's text does not.
func (p Prompt) Avoid() string {
	switch p.Kind {
	case AskCredentials:
		return "git asked for credentials on a terminal nobody watches: set up a credential helper or an SSH remote for this repository, and run with GIT_TERMINAL_PROMPT=0 so git fails at once instead of waiting"
	case AskHostKey:
		return "ssh asked to trust a new host key: add the host to ~/.ssh/known_hosts beforehand (ssh-keyscan HOST >> ~/.ssh/known_hosts), or set GIT_SSH_COMMAND='ssh -o StrictHostKeyChecking=accept-new'"
	case AskPassword:
		return "a password was asked on a terminal nobody watches: give the step its credentials beforehand (an ssh-agent, a key without a passphrase, sudo rules without a password) or take the step out of the task"
	case AskNpmInit:
		return "npm init asked its questions: tell the agent to run `npm init -y` (and `npx --yes`), which answer them with the defaults"
	case AskLogin:
		return "a CLI waited for an interactive sign-in (a URL to open, a code to enter): sign it in once by hand on this machine, or give it an API key in the environment"
	case AskConfirm:
		return "a command waited for a yes/no answer: tell the agent to pass its non-interactive flag (-y, --yes, --assume-yes, CI=true), or to pipe `yes |` into it"
	}
	return "a command waited for input on a terminal nobody watches: tell the agent to pass the answer as a flag or run it non-interactively (CI=true)"
}
