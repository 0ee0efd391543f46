package autopsy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/snapshot"
	"github.com/mulligan-dev/mulligan/taskfile"
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

// depRes: the project's dependencies not installed, read only on the base tree (an attempt may
// import a package it did not add). Node's bare module names are packages (the project's own are
// relative); Python's are told from the project's own by pythonDep.
var depRes = []lackRe{
	// The tool's own command, when it installs ("run `npm test -- -u` to update them" updates
	// snapshots: not a dependency).
	{lazyre.New("(?i)(?:please )?run [`'\"]((?:bundle|npm|yarn|pnpm|pip3?|poetry|uv|composer|go|cargo|mix|dotnet|gem) (?:install|ci|i|add|sync|get|fetch|restore|deps\\.get|mod|update|lock|download)\\b[^`'\"]*)[`'\"] to (?:install|fetch|download|update|restore)"),
		func(m []string) string { return "the project's dependencies (the tool says: " + m[1] + ")" },
		func(m []string) string { return m[1] }},
	// prisma/prisma#23759: the Prisma client not generated after an install.
	{lazyre.New(`@prisma/client did not initialize yet|Please run "prisma generate"`),
		func(m []string) string { return "the generated Prisma client (prisma generate)" },
		func(m []string) string { return "npx prisma generate" }},
	{lazyre.New(`Could not find gem '([^']+)' in (?:locally installed gems|any of the gem sources)`),
		func(m []string) string { return "the project's gems (" + m[1] + ")" },
		func(m []string) string { return "bundle install" }},
	// A pytest fixture a plugin provides, the plugin not installed (pytest-mock's mocker, …).
	{lazyre.New(`fixture '(mocker|class_mocker|benchmark|httpx_mock|requests_mock|freezer|respx_mock|snapshot|aioresponses|event_loop|faker|httpserver|celery_app|django_db_setup|live_server)' not found`),
		func(m []string) string { return "the pytest plugin that provides the fixture " + m[1] },
		func(m []string) string {
			plugin := map[string]string{"mocker": "pytest-mock", "class_mocker": "pytest-mock", "benchmark": "pytest-benchmark", "httpx_mock": "pytest-httpx",
				"requests_mock": "requests-mock", "freezer": "pytest-freezer", "respx_mock": "respx", "snapshot": "syrupy", "aioresponses": "aioresponses",
				"event_loop": "pytest-asyncio", "faker": "faker", "httpserver": "pytest-httpserver", "celery_app": "celery[pytest]"}[m[1]]
			if plugin == "" {
				plugin = "pytest-django" // live_server, django_db_setup
			}
			return "python3 -m pip install " + plugin
		}},
	{lazyre.New(`Can't locate [\w/]+\.pm in @INC \(you may need to install the ([\w:]+) module\)`), // perl's require
		func(m []string) string { return "the Perl module " + m[1] },
		func(m []string) string { return "cpanm --installdeps . || cpanm " + m[1] }},
	{lazyre.New(`there is no package called [‘'"]([\w.]+)[’'"]`), // R's library()
		func(m []string) string { return "the R package " + m[1] },
		func(m []string) string { return `Rscript -e 'install.packages("` + m[1] + `")'` }},
	{lazyre.New(`Error: Library "([\w.-]+)" not found`), // dune's, for an opam package
		func(m []string) string { return "the project's OCaml libraries (" + m[1] + ")" },
		func(m []string) string { return "opam install . --deps-only --with-test  # " + m[1] }},
	{lazyre.New(`requires the ([\w.-]+) package to be installed`),
		func(m []string) string { return "the project's Python dependencies (" + m[1] + ")" },
		func(m []string) string { return "python3 -m pip install " + m[1] }},
	// (A path alias — '@/app/…', '~/lib', '#internal' — is the project's own file.)
	{lazyre.New(`Cannot find (?:module|package) '((?:@[\w.-]+/|[^'./@~#])[^']*)'`),
		func(m []string) string { return "the project's node dependencies (" + m[1] + ")" },
		func(m []string) string { return "npm ci" }},
}

// pyDepRe: a Python module not installed; projectModules are names a project's own packages
// usually have (a PYTHONPATH matter of the verify command, not a dependency).
var (
	pyDepRe        = lazyre.New(`ModuleNotFoundError: No module named '([\w]+)(?:\.[\w.]+)?'`)
	projectModules = []string{"app", "src", "lib", "core", "api", "tests", "test", "main", "server", "backend", "config", "utils", "common", "service", "services", "project", "web", "cli"}
)

// pythonDep is a third-party Python module the base tree's verify could not import, with the
// install that brings the project's requirements.
func pythonDep(text string) (lack, bool) {
	m := pyDepRe.FindStringSubmatch(text)
	if m == nil || slices.Contains(projectModules, m[1]) || strings.Contains(text, "/"+m[1]+"/") {
		return lack{}, false
	}
	return lack{what: "the project's Python dependencies (" + m[1] + ")", line: clip(strings.TrimSpace(m[0])), fix: "python3 -m pip install -r requirements.txt"}, true
}

// lackIn is what text says the machine lacks, if anything; deps also reads the project's
// dependencies not installed.
func lackIn(text string, deps bool) (lack, bool) {
	if m := cmakeCompilerRe.FindStringSubmatch(text); m != nil {
		// CMake names the compiler lines apart from what is wrong with it.
		return lack{what: "the compiler " + m[2] + " (CMAKE_" + m[1] + "_COMPILER; not in the PATH)",
			line: clip(strings.Join(strings.Fields(m[0]), " ")), fix: installProgram(m[2])}, true
	}
	if strings.Count(text, "AddressSanitizer:DEADLYSIGNAL") >= 3 && !strings.Contains(text, "ERROR: AddressSanitizer") {
		// ASan's runtime cannot map its shadow memory under the kernel's ASLR entropy (Linux 6.5+
		// with vm.mmap_rnd_bits=32, google/sanitizers#1716): it loops on DEADLYSIGNAL without a
		// report, whatever the code does.
		return lack{what: "a kernel ASLR setting ASan can run under (vm.mmap_rnd_bits)", line: "AddressSanitizer:DEADLYSIGNAL (repeated, no report)",
			fix: "sudo sysctl vm.mmap_rnd_bits=28"}, true
	}
	res := slices.Concat(lackRes, portRes)
	if deps {
		res = append(res, depRes...)
	}
	return scanLacks(text, res)
}

// cmakeCompilerRe: CMake's compiler check, over lines ("The CMAKE_C_COMPILER:\n\n    gcc\n\n  is
// not a full path and was not found in the PATH.").
var cmakeCompilerRe = lazyre.New(`The CMAKE_(\w+)_COMPILER:\s+(\S+)\s+is not a full path and was not found in the PATH`)

func scanLacks(text string, res []lackRe) (lack, bool) {
	for _, l := range evidence.Lines(text) {
		l = strings.TrimSpace(strings.Trim(strings.TrimSpace(l), "║│|"))
		if fellBackRe.MatchString(l) {
			continue // "VITE_API_URL not set, using http://localhost:8080": a warning, it went on
		}
		for _, r := range res {
			if m := r.re.FindStringSubmatch(l); m != nil {
				return lack{what: r.what(m), line: clip(l), fix: r.fix(m)}, true
			}
		}
	}
	return lack{}, false
}

// fellBackRe: a program saying it did without something and went on with a default.
var fellBackRe = lazyre.New(`(?i)\b(?:not set|not found|missing|unset)\b[^.;]{0,20}?[,;(-]\s*(?:using|falling back|defaulting|default(?:s|ing)? to|assuming)\b`)

// machineLacks: the verify output says the machine lacks something, on the base tree (when it
// was checked and failed) or else after the attempt the run stopped on (the verdict is about
// why it stopped: an earlier failure of the agent's own does not take it away).
func (f *facts) machineLacks() (lack, bool) {
	if !f.allClasses(cQuality) {
		return lack{}, false
	}
	a := f.last()
	if f.base.failed() {
		// (A port the base found taken that the last attempt's verify got past comes and goes.)
		if k, ok := lackIn(f.base.Output, true); ok && !(strings.HasPrefix(k.what, "a free port") && f.gotPast(a)) && !f.pinsRuntime(k.what, a) && !f.projectHolds(k.line) && !f.verifyTurnsOff(k.line, a) {
			return k, true
		}
		if k, ok := pythonDep(f.base.Output); ok {
			return k, true
		}
	}
	k, ok := lackIn(f.verifyOutput[key(a.TaskID, a.N)]+"\n"+a.Message, false)
	if ok && f.base.failed() && changeMadeRe.MatchString(k.what) {
		// The base failed for another reason, and what the attempt ran into is a version its
		// change may have raised (go.mod's go line) or a port its own server holds.
		return lack{}, false
	}
	if ok && f.base != nil && resourceLimitRe.MatchString(k.line) {
		return lack{}, false // the untouched tree passed within this machine's limits: the change used them up
	}
	if ok && f.verifyTurnsOff(k.line, a) {
		return lack{}, false // the verify itself sets CGO_ENABLED=0: its command's doing
	}
	if ok && f.pinsRuntime(k.what, a) {
		// The verify (or the project's toolchain file) asks for the very version the machine
		// runs: an MSRV check, a pinned toolchain. What needs a newer one is the project's.
		return lack{}, false
	}
	if ok && changeMadeRe.MatchString(k.what) && f.gotPast(a) {
		// An earlier verify got past it (the port was free then, the runtime was enough for
		// that change): what comes and goes is the change's or the suite's, not the machine's.
		return lack{}, false
	}
	return k, ok
}

// perlModuleRe: the file of a Perl module require could not find.
var perlModuleRe = lazyre.New(`Can't locate ([\w/]+\.pm) in @INC`)

// projectHolds: the module a lack's line names is the project's own (lib/Ledger/Parser.pm in
// the tree the task started from): the verify does not put it on the path (prove without -l);
// nothing is missing from the machine.
func (f *facts) projectHolds(line string) bool {
	m := perlModuleRe.FindStringSubmatch(line)
	if m == nil || f.repo == nil {
		return false
	}
	base := f.baseTree()
	if base == "" {
		return false
	}
	for _, dir := range []string{"lib/", "", "blib/lib/"} {
		if has, err := f.repo.HasPath(snapshot.NewHash(base), dir+m[1]); err == nil && has {
			return true
		}
	}
	return false
}

// runsVersionRe: the version a lack says this machine runs.
var runsVersionRe = lazyre.New(`\(this machine runs (?:Java |v)?([\d.]+)\)`)

// toolchainFiles pin a project's runtime version.
var toolchainFiles = []string{"rust-toolchain", "rust-toolchain.toml", ".nvmrc", ".node-version", ".python-version", ".tool-versions", ".java-version", ".sdkmanrc"}

// pinsRuntime: the version the machine runs (what names it) is the one the verify's command,
// a script it runs, or the project's toolchain file names, in attempt a's tree.
func (f *facts) pinsRuntime(what string, a storeAttempt) bool {
	m := runsVersionRe.FindStringSubmatch(what)
	if m == nil {
		return false
	}
	v := regexp.QuoteMeta(m[1])
	// In a command or script, a pin says so: cargo +1.70.0, rustup run 1.70.0, nvm use 16,
	// channel = "1.70.0"; a toolchain file holds the version alone.
	pinRe := regexp.MustCompile(`(?:\+|\brustup run |\bnvm (?:use|install) |\b(?:channel|toolchain|version)\s*[=:]\s*"?|\bpython)v?` + v + `(?:[^\d.]|$)`)
	fileRe := regexp.MustCompile(`(?:^|[^\d.])v?` + v + `(?:[^\d.]|$)`)
	return f.verifySays(a, func(p, text string) bool {
		return pinRe.MatchString(text) || slices.Contains(toolchainFiles, p) && fileRe.MatchString(text)
	}, toolchainFiles...)
}

// verifySays: match holds for the verify's command (path "") or for a file of attempt a's tree
// that the command names (a script it runs) or that extra lists.
func (f *facts) verifySays(a storeAttempt, match func(path, text string) bool, extra ...string) bool {
	if f.def == nil || f.def.Verify == nil {
		return false
	}
	if match("", strings.Join(f.def.Verify.Command, " ")) {
		return true
	}
	if f.repo == nil || a.PreTree == "" {
		return false
	}
	tree := snapshot.NewHash(a.PreTree)
	names := verifyNames(f.def.Verify.Command)
	for _, p := range extra {
		names[p] = true
	}
	for p := range names {
		if b, err := f.repo.ReadPath(tree, p, 64<<10); err == nil && match(p, string(b)) {
			return true
		}
	}
	return false
}

// cgoOffRe: the line of a lack that cgo is off; cgoSetOffRe a command or script turning it off.
var (
	cgoOffRe    = lazyre.New(`requires cgo|CGO_ENABLED=1`)
	cgoSetOffRe = lazyre.New(`\bCGO_ENABLED=0\b`)
)

// verifyTurnsOff: the lack's line says cgo is off, and the verify's command (or a script it
// runs, in attempt a's tree) turns it off itself: `CGO_ENABLED=0 go test -race` cannot pass on any
// machine.
func (f *facts) verifyTurnsOff(line string, a storeAttempt) bool {
	return cgoOffRe.MatchString(line) && f.verifySays(a, func(_, text string) bool { return cgoSetOffRe.MatchString(text) })
}

// gotPast: one of the last two rejected attempts of a's task (a and the one before it) failed
// its verify with no lack of the machine's in what it printed: it got past what the lack stops.
func (f *facts) gotPast(a storeAttempt) bool {
	rejected, _ := f.qualityViews()
	seen := 0
	for i := len(rejected) - 1; i >= 0 && seen < 2; i-- {
		r := rejected[i]
		if r.TaskID != a.TaskID || r.N > a.N {
			continue
		}
		seen++
		if _, lacks := lackIn(f.verifyOutput[key(r.TaskID, r.N)]+"\n"+r.Message, false); !lacks {
			return true
		}
	}
	return false
}

// changeMadeRe: lacks a change can bring upon itself: a newer runtime than the one it was
// written for, a port its own code listens on.
var changeMadeRe = lazyre.New(`(?i)or later|newer|a Python in|a free port`)

// resourceLimitRe: a limit of the machine's that code can run into by itself (a leak of files).
var resourceLimitRe = lazyre.New(`(?i)too many open files|\bEMFILE\b`)

// worktreeLack: the task ran in its own worktree, which holds the tracked files only, and what
// the verify lacks is the project's (its dependencies, an environment variable its ignored .env
// sets): the worktree's, not the machine's.
func (f *facts) worktreeLack() (lack, bool) {
	if f.def == nil || f.def.Isolation != taskfile.IsolationWorktree {
		return lack{}, false
	}
	if file := f.uncopiedSecrets(); file != "" {
		if k, ok := f.loginLack(); ok {
			k.what += " (the working tree's " + file + " may hold them)"
			return k, true
		}
	}
	k, ok := f.machineLacks()
	if !ok || !strings.HasPrefix(k.what, "the project's") && !strings.HasPrefix(k.what, "the environment variable") {
		return lack{}, false
	}
	return k, true
}

var worktreeLackRule = Rule{
	Name: "worktree-lacks-setup", Category: WorkflowBug, Confidence: 0.875,
	Match: func(f *facts) bool { _, ok := f.worktreeLack(); return ok },
	Why: func(f *facts) string {
		k, _ := f.worktreeLack()
		return fmt.Sprintf("the task runs in its own worktree, which has the tracked files only, and the verify there lacks %s: %s", k.what, k.line)
	},
	Suggest: func(f *facts) Suggestion {
		return Suggestion{Text: fmt.Sprintf("give task %s's worktree what the working tree has and git ignores (worktree: {copy: [.env]} or {link: [node_modules, target]} in %s), or set it up in `verify.command`; then run it again", f.task.ID, f.fileName()),
			Commands: []string{f.fixed()}}
	},
	Lines: func(f *facts) []string { k, _ := f.worktreeLack(); return []string{k.line} },
}

var machineRule = Rule{
	Name: "machine-lacks", Category: Environment, Confidence: 0.87,
	Match: func(f *facts) bool {
		// What the agent could not install because its commands had no network is not the
		// machine's: the sandbox rules say so.
		_, _, offline := f.sandboxNetwork()
		_, ok := f.machineLacks()
		return ok && !offline
	},
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

// cmakePackage is Debian's development package for what CMake's find_package names.
func cmakePackage(name string) string {
	if p, ok := map[string]string{"Protobuf": "libprotobuf-dev protobuf-compiler", "OpenSSL": "libssl-dev", "ZLIB": "zlib1g-dev",
		"Boost": "libboost-all-dev", "CURL": "libcurl4-openssl-dev", "PkgConfig": "pkg-config", "Threads": "build-essential",
		"GTest": "libgtest-dev", "Python3": "python3-dev", "LLVM": "llvm-dev", "Clang": "libclang-dev"}[name]; ok {
		return p
	}
	return "lib" + strings.ToLower(name) + "-dev"
}

// machineWordsRe: a tool saying the machine lacks something, in words no entry of lackRes
// knows: not installed, a licence not accepted, no toolchain or SDK it can find, an invalid
// developer path.
var machineWordsRe = lazyre.New(`(?i)\bis not installed\b|\bnot installed on (?:this|the|your) (?:machine|system)|licen[cs]es? (?:for .{1,60} )?(?:have |has )?not (?:been )?accepted|accept the (?:SDK )?licen[cs]e|invalid active developer path|requires? (?:the )?(?:PHP )?ext(?:ension)?-[\w]+|extension \S+ (?:is )?missing|(?:cannot|could not|couldn't|unable to) (?:find|locate) (?:a |an |any )?(?:java installation|jdk|sdk|toolchain|matching toolchain|compiler|interpreter|python installation|ruby installation)|no (?:such )?(?:toolchain|sdk|jdk) (?:found|installed)|please install\b|command line tools are not installed|SDK location not found|not installed or not (?:in|on) (?:the )?PATH|No valid credential sources found|Unable to locate credentials|could not find default credentials|Daemon process terminated|daemon is not running|Cannot connect to the Docker daemon|Incorrect username or password|password authentication failed for user|Access denied for user|ORA-28001: the password has expired|ORA-01017: invalid username/password|contains root-owned files|no default (?:toolchain )?is configured`)

// stopSays is the first line of the last rejected attempt's verify output (or its message) that
// re matches and not (if given) does not, when the rejected attempt before it, if any, has one
// too: what the run stopped on, twice over, not once on the way (an agent's overload passed on
// the way does not count).
func (f *facts) stopSays(re *lazyre.Regexp, not func(string) bool) (string, bool) {
	if len(f.failed) == 0 || f.last().Class != cQuality {
		return "", false
	}
	rejected, _ := f.qualityViews()
	find := func(a storeAttempt) string {
		for _, l := range evidence.Lines(f.verifyOutput[key(a.TaskID, a.N)] + "\n" + a.Message) {
			l = strings.TrimSpace(strings.Trim(strings.TrimSpace(l), "║│|")) // (Terraform's box)
			if re.MatchString(l) && (not == nil || !not(l)) {
				return l
			}
		}
		return ""
	}
	n := len(rejected)
	line := find(rejected[n-1])
	if line == "" || n >= 2 && find(rejected[n-2]) == "" {
		return "", false
	}
	return line, true
}

// machineSays: the verify output of the attempt that stopped the run (and of the one before,
// when there was one) says the machine lacks something; the line and the tool's own advice.
func (f *facts) machineSays() (string, string, bool) {
	if f.def != nil && f.def.Isolation == taskfile.IsolationWorktree {
		return "", "", false // (in an isolated worktree, an ignored file of the user's may be what provides it)
	}
	line, ok := f.stopSays(machineWordsRe, testReportLineRe.MatchString)
	if !ok {
		return "", "", false
	}
	if advice := toolAdvice(f.verifyOutput[key(f.last().TaskID, f.last().N)]); advice != "" {
		return clip(line), advice, true
	}
	for _, k := range machineAdvice {
		if k.re.MatchString(line) {
			return clip(line), k.fix, true
		}
	}
	return clip(line), "", true
}

// machineAdvice: the first step for what machineWordsRe finds, where the tool gives none.
var machineAdvice = []struct {
	re  *lazyre.Regexp
	fix string
}{
	{lazyre.New(`(?i)SDK location not found|ANDROID_(?:HOME|SDK_ROOT)`), "export ANDROID_HOME=$HOME/Android/Sdk"},
	{lazyre.New(`(?i)\brustc\b|\bcargo\b`), "curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh"},
	{lazyre.New(`(?i)Daemon process terminated`), "npx nx reset"},
	{lazyre.New(`(?i)No valid credential sources found|Unable to locate credentials`), "aws configure"},
	{lazyre.New(`(?i)could not find default credentials`), "gcloud auth application-default login"},
	{lazyre.New(`(?i)Cannot connect to the Docker daemon|docker daemon is not running`), "sudo systemctl start docker"},
	{lazyre.New(`(?i)Incorrect username or password|password authentication failed for user|Access denied for user|ORA-01017`), "${EDITOR:-vi} .env  # the service's user and password"},
	{lazyre.New(`ORA-28001`), "sqlplus / as sysdba  # ALTER USER the_user IDENTIFIED BY a_new_password; the database user's password expired"},
	{lazyre.New(`(?i)contains root-owned files`), `sudo chown -R "$(id -u):$(id -g)" ~/.npm`},
}

// toolAdvice is the command a tool's own message tells the user to run ("run `sdkmanager
// --licenses`", "Run 'xcode-select --install'"), if it names one.
func toolAdvice(out string) string {
	for _, l := range evidence.Lines(out) {
		if m := adviceRe.FindStringSubmatch(l); m != nil {
			if c := strings.TrimSpace(firstNonEmpty(m[1:]...)); len(c) > 3 && commandLikeRe.MatchString(c) {
				return c
			}
		}
	}
	return ""
}

var (
	adviceRe      = lazyre.New("(?i)\\b(?:run|running|try|use|execute|install (?:it )?(?:with|using))\\b:?\\s*(?:`([^`]+)`|'([^']+)'|\"([^\"]+)\")")
	commandLikeRe = lazyre.New(`^(?:sudo |yes \| )?[a-z][\w.+-]*(?:\s+\S+)+$`)
)

var machineSaysRule = Rule{
	// A tool says the machine lacks something, in words the table of what machines lack does
	// not know yet: the environment, with the tool's own advice when it gives one.
	Name: "verify-blames-machine", Category: Environment, Confidence: 0.65,
	Match: func(f *facts) bool { _, _, ok := f.machineSays(); return ok },
	Why: func(f *facts) string {
		l, _, _ := f.machineSays()
		return "the verify command stopped on something this machine lacks: " + l
	},
	Suggest: func(f *facts) Suggestion {
		_, advice, _ := f.machineSays()
		cmds := []string{f.retry()}
		if advice != "" {
			cmds = append([]string{advice}, cmds...)
		}
		return Suggestion{Text: "install or set up what the tool names on this machine (the first command is the tool's own advice, when it gave one), then run the task again", Commands: cmds}
	},
	Lines: func(f *facts) []string { l, _, _ := f.machineSays(); return []string{l} },
}

// newerRuntime installs a runtime of at least version v where a version manager makes it one
// command; else it shows the version there is.
func newerRuntime(name, v string) string {
	switch strings.TrimSuffix(name, ".js") {
	case "node":
		return "nvm install " + v
	case "python":
		return "uv python install " + v
	case "go":
		return "go env -w GOTOOLCHAIN=go" + v + "+auto"
	case "rustc":
		return "rustup update stable"
	case "pnpm", "yarn":
		return "corepack prepare " + name + "@latest --activate"
	}
	return name + " --version"
}

// lockPIDRe: the process a lock's message names.
var lockPIDRe = lazyre.New(`\(PID (\d+)\)|\bheld by (?:process|pid) (\d+)`)

// heldLockRe: a tool that could not take a lock because another process holds it.
var heldLockRe = lazyre.New(`(?i)Error acquiring the state lock|Could not acquire change ?log lock|database "(?:[\w.-]+)" is being accessed by other users|Could not get lock (\S+?)\.? It is held by process|Could not get lock (/\S+?)\.?$|is (?:currently )?in use by another (?:Gradle )?(?:instance|process)|Timeout waiting to lock|Another git process seems to be running|(?:lock|lockfile) is (?:already )?held by|held by (?:another|a different) process|Could not set lock on file .*Conflicting lock is held`)

// dbInUseRe: PostgreSQL refusing to drop a database other sessions hold (a test run's leftover).
var dbInUseRe = lazyre.New(`database "([\w.-]+)" is being accessed by other users`)

// terraformLockIDRe: the ID under Terraform's "Lock Info:".
var terraformLockIDRe = lazyre.New(`^\s*ID:\s+(\S+)\s*$`)

// heldLock: the verify output of the attempt the run stopped on (and of the one before it,
// when there was one) says a lock is held by another process; the line and the first step.
func (f *facts) heldLock() (lack, bool) {
	line, ok := f.stopSays(heldLockRe, nil)
	if !ok {
		return lack{}, false
	}
	m := heldLockRe.FindStringSubmatch(line)
	id := ""
	for _, l := range evidence.Lines(f.verifyOutput[key(f.last().TaskID, f.last().N)]) {
		if im := terraformLockIDRe.FindStringSubmatch(strings.Trim(strings.TrimSpace(l), "║│| ")); im != nil {
			id = im[1] // the ID under Terraform's "Lock Info:"
			break
		}
	}
	k := lack{what: "a lock another process holds", line: clip(line)}
	switch {
	case strings.Contains(line, "state lock") && id != "":
		k.fix = "terraform force-unlock " + id + "  # only once the run it names (Who:) has ended"
	case strings.Contains(strings.ToLower(line), "change log lock") || strings.Contains(strings.ToLower(line), "changelog lock"):
		k.fix = "liquibase releaseLocks  # (mvn liquibase:releaseLocks, gradle releaseLocks) once no migration runs"
	case dbInUseRe.MatchString(line):
		k.fix = fmt.Sprintf(`psql -d postgres -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '%s' AND pid <> pg_backend_pid()"`, dbInUseRe.FindStringSubmatch(line)[1])
	case firstNonEmpty(m[1:]...) != "":
		k.fix = "sudo fuser -v " + firstNonEmpty(m[1:]...)
	case lockPIDRe.MatchString(line):
		k.fix = "ps -o pid,args -p " + firstNonEmpty(lockPIDRe.FindStringSubmatch(line)[1:]...) + "  # the process holding the lock (DuckDB names it)"
	default:
		k.fix = "ps -ef  # the process holding the lock"
	}
	return k, true
}

var toolchainRule = Rule{
	// The project's own build definition does not evaluate, on the untouched tree as after
	// every attempt: a build file its authors run every day fails here, as a rule because this
	// machine's build tool is another version than the one it is written for (build.zig for
	// Zig 0.14 under 0.13, a build.gradle for an older Gradle).
	Name: "build-file-fails-here", Category: Environment, Confidence: 0.65,
	Match: func(f *facts) bool { _, _, ok := f.buildFileFails(); return ok },
	Why: func(f *facts) string {
		l, _, _ := f.buildFileFails()
		return "the project's build definition fails on the tree the task started from and after every attempt — as a rule this machine's build tool is not the version it is written for: " + l
	},
	Suggest: func(f *facts) Suggestion {
		_, check, _ := f.buildFileFails()
		return Suggestion{Text: "install the version of the build tool the project is written for (its README, CI configuration or version file says which), then run the task again",
			Commands: []string{check, f.retry()}}
	},
	Lines: func(f *facts) []string { l, _, _ := f.buildFileFails(); return []string{l} },
}

// buildFileErrRe: an error the build tool reports in the project's own build definition; the
// file names the tool.
var buildFileErrRe = lazyre.New(`(?:^|[\s/])(build\.zig|build\.gradle(?:\.kts)?|settings\.gradle(?:\.kts)?|meson\.build|Package\.swift|build\.sbt):\d+(?::\d+)?:? (?:error|Error)\b|Build file '[^']*?(build\.gradle(?:\.kts)?|settings\.gradle(?:\.kts)?)' line: \d+`)

// buildFileFails: the base tree's verify and the last attempt's stop on the same error in the
// project's build definition; the line and the command that shows the tool's version.
func (f *facts) buildFileFails() (string, string, bool) {
	if !f.base.failed() || !f.allClasses(cQuality) || len(readVerify(f.base.Output).tests) > 0 {
		return "", "", false
	}
	find := func(out string) (string, string) {
		for _, l := range evidence.Lines(out) {
			if m := buildFileErrRe.FindStringSubmatch(l); m != nil {
				return clip(strings.TrimSpace(l)), firstNonEmpty(m[1:]...)
			}
		}
		return "", ""
	}
	line, file := find(f.base.Output)
	a := f.last()
	if again, _ := find(f.verifyOutput[key(a.TaskID, a.N)]); line == "" || volatileRe.ReplaceAllString(again, "#") != volatileRe.ReplaceAllString(line, "#") {
		return "", "", false
	}
	check := map[string]string{"build.zig": "zig version", "meson.build": "meson --version", "Package.swift": "swift --version", "build.sbt": "sbt --version"}[file]
	if strings.Contains(file, "gradle") {
		check = "./gradlew --version"
	}
	return line, check + "  # the version the project's build file is written for?", true
}
