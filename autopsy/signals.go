package autopsy

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// The evidence a person reads in a failed run, beyond the failure classes: what the environment
// said (a tool or runtime that is not installed, a network, TLS, disk or permission failure), and
// what the verify command said (which tests fail, whether the code builds at all). Each reader
// takes text and returns what it found with the line that shows it, so a verdict can quote it.

// envSignal is one piece of environment evidence in a text.
type envSignal struct {
	kind string // sigTool, sigNetwork, sigService, sigTLS, sigDisk, sigPermission, sigMemory
	line string // the line that shows it, clipped
	what string // the missing tool, the unreachable address
}

const (
	sigTool    = "tool"
	sigNetwork = "network"
	sigService = "service" // a local service (127.0.0.1, localhost) refused the connection
	// sigHighPort: the same on a port of the ephemeral range, a test's own listener as often as
	// a service (gRPC's 50051): serviceDown takes it for a service only where the same port is
	// refused on the base tree and after the last attempt (a listener's port changes from run to
	// run) and no test checks a value.
	sigHighPort   = "service-high-port"
	sigTLS        = "tls"
	sigDisk       = "disk"
	sigPermission = "permission"
	sigMemory     = "memory"
)

var (
	// A program that could not be found, as shells, make, env and Go's exec say it; the first
	// group is the program.
	toolMissingRes = []*lazyre.Regexp{
		lazyre.New(`make(?:\[\d+\])?: ([^\s:'"]+): (?:No such file or directory|Command not found|not found)`),
		lazyre.New(`env: '?([^\s:']+)'?: No such file or directory`),
		lazyre.New(`(?:^|\s)(?:/bin/|/usr/bin/)?(?:ba|da|z|k)?sh: (?:line \d+: |\d+: )?([^\s:]+): (?:command )?not found`),
		lazyre.New(`(?:^|\s)([^\s:/]+): command not found`),
		lazyre.New(`^\S+: (?:line )?\d+: ([^\s:]+): (?:command )?not found`), // dash's "$0: LINE: cmd: not found"
		lazyre.New(`exec: "([^"]+)": executable file not found in \$PATH`),
		lazyre.New(`spawn ([^\s:]+) ENOENT`),
		lazyre.New(`([\w.-]+): program not found or is not executable`),
		lazyre.New(`xargs: ([\w.+-]+): No such file or directory`),
		lazyre.New("is `([\\w.+-]+)` not installed\\?"),
		lazyre.New(`\[Errno 2\] No such file or directory: '([a-z][\w+-]*)'$`),
		lazyre.New(`Couldn't find (ffmpeg|ffprobe|avconv)\b`),
		lazyre.New("Could not find `([\\w.-]+)`"),
		lazyre.New("Executable `([\\w.+-]+)` not found"),                                                            // pre-commit's hook
		lazyre.New(`(?i)please make sure ([\w.+-]+) is installed and (?:present|available) (?:on|in) your \$?PATH`), // buf's plugin
		lazyre.New(`'([^']+)' is not recognized as an internal or external command`),
		lazyre.New(`(?i)no module named '?(pytest|pip|venv)'?`),
	}
	// serviceRe: a connection to this machine refused (a local server is not running), as Go,
	// node, libpq, redis-py, MySQL, the JVM and curl say it; servicePortRe finds its port.
	serviceRe     = lazyre.New(`(?i)Error establishing a database connection|error communicating with database: Connection refused|error: (?:40 - Could not open a connection to SQL Server|26 - Error Locating Server/Instance Specified)|Could not connect to the endpoint URL: "https?://(?:localhost|127\.0\.0\.1)[:/]|SocketNotFoundError\("[^"]*docker\.sock"\)|Cannot connect to the Docker daemon|Is the docker daemon running|Could not find a valid Docker environment|Could not find a working container runtime strategy|rootless Docker not found|Error while fetching server API version|docker (?:daemon )?(?:is )?not running|docker\.sock\b.*(?:no such file|not found|connect|must exist)|Can't connect to local (?:MySQL|MariaDB) server through socket|Can't reach database server at|No alive nodes found in your cluster|SQLSTATE\[HY000\] \[2002\]|could not connect to server: No such file or directory|(?:connection refused|(?-i:\bECONNREFUSED\b)|Errno 111|Error 111|\(111\)|Can't connect to (?:MySQL|local)|could not connect to server|Connection to \S+ refused).*(?:localhost|127\.0\.0\.1|::1|0\.0\.0\.0)|(?:localhost|127\.0\.0\.1|::1\b|0\.0\.0\.0).*(?:connection refused|(?-i:\bECONNREFUSED\b)|Errno 111|Error 111|\(111\)|refused|Couldn't connect to server)`)
	servicePortRe = lazyre.New(`(?i)(?:localhost|127\.0\.0\.1|::1|0\.0\.0\.0)['"\]]?(?:\)|,|:| port)+\s*(?:port )?(\d{2,5})\b|port (\d{2,5})\b`)
	tlsRe         = lazyre.New(`(?i)x509: |certificate signed by unknown authority|self[- ]signed certificate|SSL certificate (?:problem|verification|has expired|is not yet valid)|CERT_HAS_EXPIRED|UNABLE_TO_(?:GET_ISSUER_CERT|VERIFY_LEAF_SIGNATURE)|unable to get local issuer certificate|SSL error|invalid peer certificate|UnknownIssuer|certificate verify failed|CERTIFICATE_VERIFY_FAILED|PKIX path building failed|unable to find valid certification path|SunCertPathBuilderException|SSL peer certificate or SSH remote key was not OK|ECERTIFICATE|certificate is not correctly signed by the trusted CA`)
	diskRe        = lazyre.New(`(?i)no space left on device|disk quota exceeded|\bENOSPC\b|not enough space on the disk`)
	permRe        = lazyre.New(`(?i)permission denied|os error 13|\bEACCES\b|read-only file system|\bEROFS\b|operation not permitted|\bEPERM\b`)
	memoryRe      = lazyre.New(`(?i)out of memory|heap out of memory|cannot allocate memory|OOMKilled|oom-kill|Server terminated abruptly`)
)

// envSignals lists the environment evidence in text, one per kind, the last line of each kind
// (the one nearest the failure).
func envSignals(text string) []envSignal {
	lines := strings.Split(strings.ReplaceAll(ansiRe.ReplaceAllString(text, ""), "\r", ""), "\n")
	found := map[string]envSignal{}
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if evidence.Echoed(strings.TrimSpace(l)) {
			continue // the prompt echoed back, a tool call's arguments
		}
		if appDownRe.MatchString(l) {
			// The app an end-to-end runner opens is not being served: its address follows.
			port := ""
			for _, n := range lines[i:min(i+4, len(lines))] {
				if m := appPortRe.FindStringSubmatch(n); m != nil {
					port = m[1]
					break
				}
			}
			if prev, ok := found[sigService]; !ok || port != "" || prev.what == "app:" {
				found[sigService] = envSignal{kind: sigService, line: clip(strings.TrimSpace(l)), what: "app:" + port}
			} else {
				found[sigService] = envSignal{kind: sigService, line: clip(strings.TrimSpace(l)), what: prev.what}
			}
			continue
		}
		l = agentcli.HumanLine(strings.TrimSpace(l)) // a CLI's JSON event line, by its message
		if excClassRe.MatchString(l) && i+1 < len(lines) {
			// An error's class on its line, its message below (rspec's "# Errno::ECONNREFUSED:",
			// "#   Connection refused - connect(2) for 127.0.0.1:6379"): read them as one.
			l += " " + strings.TrimLeft(strings.TrimSpace(lines[i+1]), "# ")
		}
		for _, re := range toolMissingRes {
			if m := re.FindStringSubmatch(l); m != nil {
				found[sigTool] = envSignal{kind: sigTool, line: clip(strings.TrimSpace(l)), what: strings.Trim(m[1], `'"`)}
				break
			}
		}
		switch {
		case serviceRe.MatchString(l):
			if dnsLookupRe.MatchString(l) {
				break // the resolver refused a lookup ("read udp 127.0.0.1:41877->127.0.0.53:53"): the network's
			}
			port := ""
			if m := servicePortRe.FindStringSubmatch(l); m != nil {
				port = m[1] + m[2]
			}
			if low := strings.ToLower(l); strings.Contains(low, "docker") || strings.Contains(low, "container runtime") {
				port = "docker"
			}
			if low := strings.ToLower(l); port == "" && strings.Contains(low, "error communicating with database") {
				port = "database-url" // sqlx's macros, at build time, against DATABASE_URL
			} else if port == "" && strings.Contains(low, "`tests-mysql`") {
				port = "wp-env" // wp-env's database container for the tests
			} else if port == "" && (strings.Contains(low, "mysql") || strings.Contains(low, "[2002]")) {
				port = "3306"
			} else if port == "" && strings.Contains(low, "sql server") {
				port = "1433"
			} else if port == "" && strings.Contains(low, "alive nodes") {
				port = "9200"
			}
			if kubeRe.MatchString(l) {
				port = "kubernetes" // (kind and minikube publish the API server on a high port)
			}
			if n := atoi(port); n >= 32768 && n <= 65535 {
				found[sigHighPort] = envSignal{kind: sigHighPort, line: clip(strings.TrimSpace(l)), what: port}
				break
			}
			found[sigService] = envSignal{kind: sigService, line: clip(strings.TrimSpace(l)), what: port}
		case tlsRe.MatchString(l):
			found[sigTLS] = envSignal{kind: sigTLS, line: clip(strings.TrimSpace(l))}
		case evidence.IsNetworkError(l) && !toThisMachine(l): // (this machine refusing: a service's)
			found[sigNetwork] = envSignal{kind: sigNetwork, line: clip(strings.TrimSpace(l))}
		}
		if diskRe.MatchString(l) && !strings.Contains(l, "file watchers") {
			found[sigDisk] = envSignal{kind: sigDisk, line: clip(strings.TrimSpace(l))}
		}
		if permRe.MatchString(l) {
			found[sigPermission] = envSignal{kind: sigPermission, line: clip(strings.TrimSpace(l))}
		}
		if memoryRe.MatchString(l) {
			found[sigMemory] = envSignal{kind: sigMemory, line: clip(strings.TrimSpace(l))}
		}
	}
	var out []envSignal
	for _, k := range []string{sigTool, sigService, sigHighPort, sigTLS, sigNetwork, sigDisk, sigPermission, sigMemory} {
		if s, ok := found[k]; ok {
			out = append(out, s)
		}
	}
	return out
}

// appDownRe: an end-to-end runner that found nothing serving the app it tests (Cypress's
// baseUrl); appPortRe its address.
var (
	appDownRe = lazyre.New(`(?i)Cypress could not verify that this server is running|Cypress failed to verify that your server is running`)
	appPortRe = lazyre.New(`(?i)(?:localhost|127\.0\.0\.1|0\.0\.0\.0):(\d{2,5})`)
)

// excClassRe: an exception's class alone on its line, its message on the next (rspec).
var excClassRe = lazyre.New(`^#?\s*[\w:.]*(?:Error|Exception|ECONNREFUSED|ECONNRESET|ETIMEDOUT)\w*:$`)

// dnsLookupRe: a name lookup the local resolver refused (Go's "lookup HOST on 127.0.0.53:53").
var dnsLookupRe = lazyre.New(`\blookup \S+ on \S+:53\b|->[\d.]+:53: `)

// kubeRe: a Kubernetes client that cannot reach its cluster's API server.
var kubeRe = lazyre.New(`(?i)Kubernetes cluster unreachable|The connection to the server \S+ was refused|kube-?apiserver|couldn't get current server API group list`)

// verifyEnvSignals is the environment evidence in a verify command's output. When the output
// names why it failed — tests that fail on a value (an assertion), or build errors — and none of
// those says a connection failed, a refused connection or an unreachable host elsewhere in it
// (a passing test's log, a cache falling back to memory) is not why: those kinds are dropped.
func verifyEnvSignals(out string) []envSignal {
	sigs := envSignals(out)
	if !slices.ContainsFunc(sigs, isConnection) {
		return sigs
	}
	t := evidence.ParseTests(out)
	for _, ft := range t.Failed {
		if !assertionRe.MatchString(ft.Message) && !codeErrorRe.MatchString(ft.Message) || realConnErrRe.MatchString(ft.Message) {
			return sigs // a test that failed on an error (or got one as its value): the connection may be it
		}
	}
	// (Tests that failed on a value: a "TLS handshake timeout" in the message is what the test
	// is about. Else the build errors, when there are some, must not name a connection; go's
	// "[setup failed]" mark names nothing: its package's modules could not be fetched.)
	build := slices.DeleteFunc(slices.Clone(t.Build), func(l string) bool { return setupMarkRe.MatchString(l) })
	if len(t.Failed) == 0 && (len(build) == 0 || slices.ContainsFunc(envSignals(strings.Join(build, "\n")), isConnection)) {
		return sigs
	}
	return slices.DeleteFunc(sigs, isConnection)
}

// setupMarkRe: go test's line for a package it could not even set up.
var setupMarkRe = lazyre.New(`^(?:FAIL\s+)?\S+\s+\[setup failed\]$`)

// realConnErrRe: the marks of a connection error a program met — an address with its port, an
// errno, a dial — as against words about one.
var realConnErrRe = lazyre.New(`\b\d{1,3}(?:\.\d{1,3}){3}:\d+|localhost:\d+|\bECONN[A-Z]+\b|(?-i:\bETIMEDOUT\b)|(?-i:\bEAI_AGAIN\b)|(?-i:\bENOTFOUND\b)|\[Errno -?\d+\]|dial tcp|getaddrinfo|x509: `)

// assertionRe: a test's failure message about a value it checked (expected/received, want/got,
// an assert), not an error it met on the way.
var assertionRe = lazyre.New(`(?i)\bexpect(?:ed)?\b|\breceived\b|\bwant\b|\bgot\b|assert|\bto(?:Be|Equal|Have|Match|Contain)|\bshould\b|!=|==|\bmismatch|\bdiffer`)

// codeErrorRe: a test's failure in the code itself (a missing attribute, a nil, a wrong type),
// not in what it reached over a connection.
var codeErrorRe = lazyre.New(`\b(?:AttributeError|NameError|TypeError|KeyError|IndexError|ZeroDivisionError|UnboundLocalError|NoMethodError|ReferenceError|NullPointerException|ClassCastException|ArrayIndexOutOfBoundsException)\b|nil pointer dereference|index out of range|undefined (?:method|local variable)|is not a function|Cannot read propert`)

func signalOf(sigs []envSignal, kind string) (envSignal, bool) {
	for _, s := range sigs {
		if s.kind == kind {
			return s, true
		}
	}
	return envSignal{}, false
}

var ansiRe = lazyre.New(`\x1b\[[0-9;?]*[A-Za-z]`)

// verifyView is what a verify log says: the tests that fail, the build errors, and the text
// with the parts that differ between identical runs (timings, addresses, temp paths) taken out.
type verifyView struct {
	tests  []string // failing tests, sorted, without duplicates
	why    []string // each failing test with the first line of its failure, normalised
	build  []string // build or syntax error lines
	checks int      // how many of them a linter or formatter printed (the last ones)
	norm   string
	head   string // the first error line, normalised: what a failure without tests is about
	silent bool   // nothing was printed
}

var volatileRe = lazyre.New(`\d{4}-\d\d-\d\d[T_ ][\d:._]+Z?|\d+(?:\.\d+)?\s*(?:ms|s|sec|seconds)\b|\(\d+(?:\.\d+)?s\)|0x[0-9a-f]+|/tmp/[^\s:]+|\d{4}-\d\d-\d\dT[\d:.]+Z?|\b\d+\b`)

func readVerify(out string) verifyView {
	t := evidence.ParseTests(out)
	// A linter's or formatter's rejection reads like a build error: the code is not accepted
	// as it is, and the attempt that left it is to blame when the base passed.
	v := verifyView{silent: strings.TrimSpace(out) == "", tests: t.Keys(), build: append(t.Build, t.Checks...), checks: len(t.Checks)}
	for _, ft := range t.Failed {
		if ft.Message != "" {
			v.why = append(v.why, ft.Key()+": "+volatileRe.ReplaceAllString(ft.Message, "#"))
		}
	}
	slices.Sort(v.why)
	var norm []string
	for _, l := range evidence.Lines(out) {
		if strings.TrimSpace(l) != "" {
			norm = append(norm, volatileRe.ReplaceAllString(strings.TrimSpace(l), "#"))
		}
	}
	v.norm = strings.Join(norm, "\n")
	for _, l := range norm {
		if decisiveRe.MatchString(l) {
			v.head = l
			break
		}
	}
	return v
}

// genericFailRe: a line that says only that something failed, not what.
var genericFailRe = lazyre.New(`(?i)^(?:make(?:\[\d+\])?: \*\*\* .*Error #|exit status #|FAIL|error:? Command failed with exit code #\.?|npm (?:ERR!|error)\s*(?:Test failed.*|code \S+|errno #|command failed|command sh -c .*|Lifecycle script .* failed.*|path \S+|workspace \S+|location \S+|A complete log of this run can be found in:.*|\s+/\S+\.log|Failed at the \S+ \S+ script\.?|This is probably not a problem with npm\..*|\s*)|ELIFECYCLE.*|Error: Process completed with exit code #\.?|.*returned non-zero exit status #\.?|\S+: exit status #|> .*)$`)

// saysNothing: the verify output has no failing test, no build error and no line that says
// more than that it failed (a line without a word of failure, a progress or a summary line,
// says nothing about why).
func (v verifyView) saysNothing() bool {
	if len(v.build) == 0 && len(v.tests) > 0 && workerCrashRe.MatchString(v.norm) && !slices.ContainsFunc(v.why, func(w string) bool { return !workerCrashRe.MatchString(w) }) {
		return true // every test "failed" because the process running it died: nothing says why
	}
	if len(v.tests) > 0 || len(v.build) > 0 {
		return false
	}
	for _, l := range strings.Split(v.norm, "\n") {
		if l == "" || !causeWordsRe.MatchString(l) {
			continue
		}
		bare := workspacePrefixRe.ReplaceAllString(l, "") // lerna's, turbo's "pkg: " or "pkg:task: "
		if !saysOnlyFailed(l) && !saysOnlyFailed(bare) {
			return false
		}
	}
	return true
}

func saysOnlyFailed(l string) bool {
	return genericFailRe.MatchString(l) || exitOnlyRe.MatchString(l) || summaryRe.MatchString(l)
}

// workerCrashRe: a test runner's word that the process running a test died under it.
var workerCrashRe = lazyre.New(`(?i)worker '?[\w#]+'? crashed while running|node down: Not properly terminated|Test worker process crashed|A worker process has failed to exit gracefully|Jest worker encountered (?:\d+|#) child process exceptions`) // (digits are # in a view's norm)

// workspacePrefixRe: the package (and task) a monorepo runner puts before each line.
var workspacePrefixRe = lazyre.New(`^(?:@[\w.-]+/)?[\w.-]+(?::[\w.-]+)?:\s+`)

// summaryRe: a runner's tally (fail 0, 1/7 targets failed, the list that follows it), npm's
// lines about where a script failed: they count failures, they do not say why.
var summaryRe = lazyre.New(`(?i)^\W*(?:fail(?:ed|ures?)?|errors?|pass(?:ed)?|tests?|skipped|todo|cancelled)\W*#\W*$|#(?:/#)?\s+(?:targets?|tasks?|projects?|packages?|suites?|files?|tests?)?\s*failed|npm (?:ERR!|error)\s+(?:Lifecycle script|Error: command failed|in workspace|at location)|^-\s+[@\w./:-]+$|^(?:tests?|build|command|script)\s+failed\.?\s+see (?:above|the log|the report)[^.]*\.?$`)

// exitOnlyRe: a line that reports only that a command or package failed, with its exit code or
// its name (a test runner's per-package FAIL line, a task runner's "exited (1)"), not why.
var exitOnlyRe = lazyre.New(`(?i)^(?:FAIL|FAILED)\s+\S+\s+(?:#|\(#\))$|^Failed:\s+\S+$|(?:exited|exit code|exit status|exited with (?:error )?(?:code|status)|failed with (?:exit|error) code)\W*#\W*:?$|command finished with error|run failed: command|did(?:n't| not) complete successfully: exit(?: code:)? #$`)

func (v verifyView) sameAs(w verifyView) bool {
	if len(v.tests) > 0 || len(w.tests) > 0 {
		// The same tests failing for other reasons (an assertion, then a TypeError) is not the
		// same failure.
		return slices.Equal(v.tests, w.tests) && (len(v.why) == 0 || len(w.why) == 0 || slices.Equal(v.why, w.why))
	}
	if len(v.build) > 0 || len(w.build) > 0 {
		// A build that fails on other lines (an undefined name, then an unused variable)
		// fails differently, however alike the build tool's own head and trailer lines are.
		return slices.Equal(normalised(v.build), normalised(w.build))
	}
	if v.head != "" && w.head != "" {
		return v.head == w.head
	}
	return v.norm == w.norm
}

// normalised: the lines without what changes from run to run (times, numbers, temporary paths).
func normalised(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = volatileRe.ReplaceAllString(l, "#")
	}
	return out
}

// subset reports whether every test of a is in b.
func subset(a, b []string) bool {
	for _, t := range a {
		if !slices.Contains(b, t) {
			return false
		}
	}
	return true
}

// contextRe: the conversation did not fit the model's context window; a retry of the same task
// fails the same way.
var contextRe = lazyre.New(`(?i)context window|prompt is too long|prompt_too_long|context_length_exceeded|maximum context length|exceeds the context|input is too long|ran out of room in the model|input token count \(?\d+\)? exceeds the maximum`)

// creditRe: a quota no clock lifts: money has to be added (or a cap raised) by a person.
var creditRe = lazyre.New(`(?i)credit balance is too low|out of credits|(?:hit|reached) your (?:workspace )?(?:spend cap|credit limit)|insufficient[_ ](?:quota|credits|balance)|monthly (?:usage )?limit|payment required|add (?:more )?funds|check your plan and billing|exceeded your current quota|billing details|billing_hard_limit|insufficient funds|(?:prepayment |prepaid )?credits? (?:are|is|have been) (?:depleted|exhausted)`)

// questionRe: a last line that waits for an answer on a terminal.
var questionRe = lazyre.New(`(?i)\[y/n\]|\(y/n\)|\[yes/no\]|press enter|continue\?|proceed\?|\?\s*$|approve|allow this|do you want`)

// presetOf is the preset of an agent: the one the file names, else the CLI its command runs.
func presetOf(preset string, argv []string) string {
	if preset != "" && preset != "generic" {
		return preset
	}
	if len(argv) > 0 {
		switch base := filepath.Base(argv[0]); base {
		case "claude", "codex", "gemini", "aider", "opencode":
			return base
		}
	}
	return preset
}
