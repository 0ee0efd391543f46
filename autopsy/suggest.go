package autopsy

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/mulligan-dev/mulligan/agentcli"
	"github.com/mulligan-dev/mulligan/autopsy/evidence"
	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/store"
	"github.com/mulligan-dev/mulligan/taskfile"
)

type storeAttempt = store.Attempt

// The commands a suggestion names are built here, from the run, and only from commands this
// build of mulligan has (Input.Commands): a suggestion that does not parse is worse than none.

// retry is the command that tries the decisive task again: retry-task where it exists, else a
// new run of the task.
func (f *facts) retry() string {
	if f.commands["retry-task"] && f.task != nil {
		return fmt.Sprintf("mulligan retry-task %s %s", f.run.ID, f.task.ID)
	}
	return f.rerun()
}

// fixed is the command that runs the decisive task again once its definition was fixed:
// retry-task --reload, which takes the edited task file and keeps the run; for an ad-hoc run
// (no file to edit) the same command with every flag it had, where the flag to change is.
func (f *facts) fixed() string {
	if f.adHoc() || !f.commands["retry-task"] || f.task == nil {
		return f.rerun()
	}
	return fmt.Sprintf("mulligan retry-task %s %s --reload", f.run.ID, f.task.ID)
}

// editFirst puts the edit before a suggestion that runs the task again with its definition
// reloaded: the fix is a change to the task file, so the first command opens it, and the
// retry that takes the change comes second.
func (f *facts) editFirst(s Suggestion) Suggestion {
	if len(s.Commands) == 0 || f.adHoc() || f.run.TaskFile == "" || !strings.HasSuffix(s.Commands[0], " --reload") {
		return s
	}
	path := f.taskFilePath()
	if !filepath.IsAbs(path) && f.run.Worktree != "" {
		path = filepath.Join(f.run.Worktree, path)
	}
	edit := "${EDITOR:-vi} " + shellQuote(path)
	if c := strings.Join(strings.Fields(s.Change), " "); c != "" {
		edit += "  # " + c
	}
	s.Commands = append([]string{edit}, s.Commands...)
	return s
}

// rerun starts a new run of the decisive task from the same task file (after it was fixed), or
// the same ad-hoc command with all its flags: the prompt, the presets, the policy, verify.
func (f *facts) rerun() string {
	if f.adHoc() {
		return f.rerunAdHoc()
	}
	cmd := "mulligan run"
	if tf := f.run.TaskFile; tf != "" && tf != "mulligan.yaml" {
		cmd += " -f " + shellQuote(f.taskFilePath())
	}
	if f.task != nil {
		cmd += " " + shellQuote(f.task.ID)
	}
	return cmd
}

func (f *facts) rerunAdHoc() string {
	args := []string{"mulligan", "run"}
	t := f.def
	switch {
	case t.PromptFile != "":
		args = append(args, "--prompt-file", shellQuote(t.PromptFile))
	case t.Prompt != "":
		args = append(args, "--prompt", shellQuote(t.Prompt))
	}
	main := f.file.Agents[t.Agents[0]]
	if main.Preset != "" && main.Preset != taskfile.PresetGeneric {
		args = append(args, "--preset", main.Preset)
	}
	if len(t.Agents) > 1 {
		if fb := f.file.Agents[t.Agents[1]]; fb != nil {
			q := make([]string, len(fb.Command))
			for i, a := range fb.Command {
				q[i] = shellQuote(a)
			}
			args = append(args, "--fallback", shellQuote(strings.Join(q, " ")))
		}
	}
	if t.OnFailure != "" && t.OnFailure != "fail" {
		args = append(args, "--on-failure", t.OnFailure)
		if t.OnFailure == "retry" {
			args = append(args, "--retries", fmt.Sprint(t.Retries))
			b := t.Backoff
			args = append(args, "--backoff", fmt.Sprintf("%s:%s:%s:%s", b.Kind, b.Initial, b.Max, b.Jitter))
		}
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--timeout", t.Timeout}, {"--heartbeat", t.Heartbeat}, {"--deadline", t.Deadline}} {
		if d.v > 0 {
			args = append(args, d.flag, d.v.String())
		}
	}
	if t.Verify != nil && len(t.Verify.Command) > 0 {
		q := make([]string, len(t.Verify.Command))
		for i, a := range t.Verify.Command {
			q[i] = shellQuote(a)
		}
		args = append(args, "--verify", shellQuote(strings.Join(q, " ")))
	}
	args = append(args, "--")
	for _, a := range main.Command {
		args = append(args, shellQuote(a))
	}
	return strings.Join(args, " ")
}

// taskFilePath names the run's task file as it can be passed to -f from the working tree root:
// the stored path is relative to where the run was started.
func (f *facts) taskFilePath() string {
	tf := f.run.TaskFile
	if filepath.IsAbs(tf) {
		if rel, err := filepath.Rel(f.run.Worktree, tf); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return tf
}

// adHoc reports whether the run is `mulligan run -- CMD`: one task main on agent main, from
// no file.
func (f *facts) adHoc() bool {
	return f.file != nil && f.def != nil && (f.run.TaskFile == "" || strings.HasPrefix(f.run.TaskFile, "(")) &&
		len(f.def.Agents) > 0 && f.file.Agents[f.def.Agents[0]] != nil
}

func (f *facts) fileName() string {
	if f.adHoc() {
		return "the command's flags"
	}
	if f.run.TaskFile == "" {
		return "the task file"
	}
	return f.run.TaskFile
}

func (f *facts) logs(a storeAttempt) string {
	return fmt.Sprintf("mulligan logs %s/%s@%d", f.run.ID, a.TaskID, a.N)
}

// keep is the command that puts an attempt's tree into the working tree.
func (f *facts) keep(a storeAttempt) string {
	if f.commands["revert"] {
		return fmt.Sprintf("mulligan revert %s/%s@%d", f.run.ID, a.TaskID, a.N)
	}
	return "mulligan restore " + a.Ref
}

// best is the attempt worth keeping: the last failed one that changed files and has a ref.
func (f *facts) best() (storeAttempt, bool) {
	for i := len(f.failed) - 1; i >= 0; i-- {
		a := f.failed[i]
		if a.Ref != "" && a.FilesChanged != nil && *a.FilesChanged > 0 {
			return a, true
		}
	}
	return storeAttempt{}, false
}

// retryKeeping suggests another attempt, and how to keep the best attempt's edits instead.
func (f *facts) retryKeeping(why string) Suggestion {
	s := Suggestion{Text: why + ": run the task again", Commands: []string{f.retry()}}
	if a, ok := f.best(); ok {
		s.Text += fmt.Sprintf(", or keep the edits of attempt %d (%d file(s) changed)", a.N, *a.FilesChanged)
		s.Commands = append(s.Commands, f.keep(a))
	}
	return s
}

// inspect is the suggestion when the autopsy cannot say more: look at the run and the output.
func (f *facts) inspect(why string) Suggestion {
	s := Suggestion{Text: why, Commands: []string{"mulligan show " + f.run.ID}}
	if len(f.failed) > 0 {
		s.Commands = append(s.Commands, f.logs(f.last()))
	}
	return s
}

// login is the command that logs an agent's CLI in, by preset, and the sentence around it.
func (f *facts) login(agentName string) (cmd, text string) {
	preset := ""
	if a := f.agent(agentName); a != nil {
		preset = a.Preset
	}
	if a := f.agent(agentName); a != nil {
		preset = presetOf(a.Preset, a.Command)
	}
	switch preset {
	case taskfile.PresetClaude:
		return "claude /login", "log claude in again (or set a valid ANTHROPIC_API_KEY)"
	case taskfile.PresetCodex:
		return "codex login", "log codex in again (or set a valid OPENAI_API_KEY)"
	case taskfile.PresetGemini:
		return "gemini", "log gemini in (run `gemini` once and choose a sign-in method), or set a valid GEMINI_API_KEY in the environment mulligan runs in"
	case taskfile.PresetOpencode:
		return "opencode auth login", "log opencode in again"
	case taskfile.PresetAider:
		return "", "set a valid API key for aider's model (e.g. ANTHROPIC_API_KEY or OPENAI_API_KEY)"
	}
	return "", fmt.Sprintf("log agent %s in again or give it a valid key", agentName)
}

func (f *facts) agent(name string) *taskfile.Agent {
	if f.file == nil {
		return nil
	}
	return f.file.Agents[name]
}

func (f *facts) argv0(agentName string) string {
	if a := f.agent(agentName); a != nil && len(a.Command) > 0 {
		return a.Command[0]
	}
	return ""
}

func (f *facts) verifyArgv0() string {
	if v := f.verifyArgv(); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (f *facts) verifyArgv() []string {
	if f.def != nil && f.def.Verify != nil {
		return f.def.Verify.Command
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// applyAddr is the address of the decisive task's successful attempt (the one an apply-conflict
// holds back): RUN/TASK@N.
func (f *facts) applyAddr() string {
	n := 0
	for _, a := range f.task.Attempts {
		if a.State == "succeeded" {
			n = a.N
		}
	}
	return fmt.Sprintf("%s/%s@%d", f.run.ID, f.task.ID, n)
}

// fewerAtOnce is how the test tool the verify output shows runs fewer tests at once.
func fewerAtOnce(text string) string {
	for _, t := range testTools {
		if t.re.MatchString(text) {
			return t.fewer
		}
	}
	return "one test process at a time"
}

// testTools: a test tool by what its output (or the verify command) shows, and how it runs
// fewer tests at once.
var testTools = []struct {
	re    *lazyre.Regexp
	fewer string
}{
	{lazyre.New(`cargo|rustc|test result:`), "cargo test -j 1 -- --test-threads=1"},
	{lazyre.New(`(?i)gradle`), "org.gradle.jvmargs=-Xmx2g, maxParallelForks = 1"},
	{lazyre.New(`(?i)surefire|maven|\bmvn\b`), "mvn -DforkCount=1"},
	{lazyre.New(`(?i)pytest|xdist|\bgw\d`), "pytest without -n"},
	{lazyre.New(`(?i)jest|vitest`), "jest --runInBand, vitest --no-file-parallelism"},
	{lazyre.New(`(?i)cc1plus|c\+\+:|make(?:\[\d+\])?:|ninja|cmake`), "make -j1"},
	{lazyre.New(`--- FAIL|go test|\bok  \t|FAIL\t`), "go test -p 1"},
}

// keyRe: an authentication failure that is about the API key itself.
var keyRe = lazyre.New(`(?i)\bAPI[ _-]?key\b|x-api-key|API_KEY_(?:INVALID|EXPIRED)|invalid_api_key|Incorrect API key`)

// keyPage is where a preset's provider makes API keys, and the variable its CLI reads one from
// (codex has none here: `codex login` takes a key as well as a sign-in).
func keyPage(preset string) (page, env string) {
	switch preset {
	case taskfile.PresetClaude:
		return "https://console.anthropic.com/settings/keys", "ANTHROPIC_API_KEY"
	case taskfile.PresetGemini:
		return "https://aistudio.google.com/apikey", "GEMINI_API_KEY"
	}
	return "", ""
}

// cond is a when ok, else b.
func cond(ok bool, a, b string) string {
	if ok {
		return a
	}
	return b
}

// installCommand is the command that installs a preset's CLI, from its install hint
// ("install it: CMD, then …").
func installCommand(preset string) string {
	p := agentcli.PresetFor(preset)
	if p == nil || preset == "" || preset == taskfile.PresetGeneric {
		return ""
	}
	cmd, ok := strings.CutPrefix(p.Install, "install it: ")
	if !ok {
		return ""
	}
	cmd, _, _ = strings.Cut(cmd, ", then")
	return strings.TrimSpace(cmd)
}

// upgradeCommand is the command that brings a preset's CLI to its latest version, or "".
func upgradeCommand(preset string) string {
	if preset == taskfile.PresetAider {
		return "python -m pip install --upgrade aider-chat"
	}
	c := installCommand(preset)
	if !strings.HasPrefix(c, "npm install -g ") {
		return ""
	}
	return strings.Replace(c, "install -g ", "install -g --force ", 1) + "@latest"
}

// services are the usual servers on their ports: their names and systemd units.
var services = map[string]struct{ name, unit string }{
	"5432": {"PostgreSQL", "postgresql"}, "3306": {"MySQL", "mysql"}, "6379": {"Redis", "redis-server"},
	"27017": {"MongoDB", "mongod"}, "9200": {"Elasticsearch", "elasticsearch"}, "5672": {"RabbitMQ", "rabbitmq-server"},
	"11211": {"memcached", "memcached"}, "1433": {"SQL Server", "mssql-server"}, "9092": {"Kafka", "kafka"}, "2181": {"ZooKeeper", "zookeeper"}, "8500": {"Consul", "consul"},
}

// serviceName names the usual server on a port.
func serviceName(port string) string {
	switch port {
	case "docker":
		return "the Docker daemon"
	case "4566":
		return "LocalStack (port 4566)"
	case "wp-env":
		return "wp-env's database (its Docker containers)"
	case "database-url":
		return "the database at DATABASE_URL (sqlx checks its queries against it as it compiles)"
	case "kubernetes":
		return "the Kubernetes cluster's API server"
	}
	if p, ok := strings.CutPrefix(port, "app:"); ok {
		return "the app the end-to-end tests open" + cond(p != "", " (port "+p+")", "")
	}
	if s, ok := services[port]; ok {
		return s.name + " (port " + port + ")"
	}
	if port == "" {
		return "the service"
	}
	return "the service on port " + port
}

// serviceStart is the command that starts the usual server on a port (systemd's unit names),
// or shows what listens when the port names none.
func serviceStart(port string) string {
	if s, ok := services[port]; ok {
		return "sudo systemctl start " + s.unit
	}
	switch port {
	case "docker":
		return "sudo systemctl start docker"
	case "4566":
		return "docker run -d -p 4566:4566 localstack/localstack"
	case "wp-env":
		return "npx wp-env start"
	case "database-url":
		return `pg_isready -d "$DATABASE_URL"  # start the database it names, or build offline with SQLX_OFFLINE=true and cargo sqlx prepare`
	case "":
		return "ss -ltn"
	case "kubernetes":
		return "kubectl cluster-info  # kind: docker start KIND-control-plane"
	}
	if p, ok := strings.CutPrefix(port, "app:"); ok {
		return "npm run dev &  # serve the app the tests open" + cond(p != "", " (http://localhost:"+p+")", "") + ", or start it in verify.command"
	}
	return "ss -ltnp 'sport = :" + port + "'"
}

// networkHost is the host the failures could not reach, else the API of the agent's provider.
func (f *facts) networkHost() string {
	// The verify's and the tools' hosts before the agent's own API (an overload on the way is
	// not what the network failed to reach).
	api := ""
	for i := len(f.failed) - 1; i >= 0; i-- {
		a := f.failed[i]
		k := key(a.TaskID, a.N)
		for _, e := range evidence.NetworkErrors(f.verifyOutput[k] + "\n" + a.Message + "\n" + f.output[k]) {
			switch {
			case e.Host == "":
			case !e.API:
				return e.Host
			case api == "":
				api = e.Host
			}
		}
	}
	if api != "" {
		return api
	}
	switch f.presetFor(f.last().Agent) {
	case taskfile.PresetCodex:
		return "api.openai.com"
	case taskfile.PresetGemini:
		return "generativelanguage.googleapis.com"
	}
	return "api.anthropic.com"
}

func firstHost(line string) string {
	for _, e := range evidence.NetworkErrors(line) {
		if e.Host != "" {
			return e.Host
		}
	}
	return ""
}

// debianPackages names the Debian package of the programs whose package has another name.
var debianPackages = map[string]string{
	"cc": "build-essential", "gcc": "build-essential", "g++": "build-essential", "c++": "build-essential", "make": "build-essential",
	"python": "python3", "pip": "python3-pip", "pip3": "python3-pip", "node": "nodejs", "psql": "postgresql-client",
	"pg_ctl": "postgresql", "mysql": "default-mysql-client", "redis-server": "redis-server", "redis-cli": "redis-tools",
	"docker": "docker.io", "Xvfb": "xvfb", "xvfb-run": "xvfb", "javac": "default-jdk", "java": "default-jdk",
	"arm-none-eabi-gcc": "gcc-arm-none-eabi", "arm-none-eabi-g++": "gcc-arm-none-eabi", "avr-gcc": "gcc-avr",
	"riscv64-unknown-elf-gcc": "gcc-riscv64-unknown-elf",
	"mvn":                     "maven", "rg": "ripgrep", "fd": "fd-find", "protoc": "protobuf-compiler", "pkg-config": "pkg-config",
	"convert": "imagemagick", "ffmpeg": "ffmpeg", "chromium": "chromium", "google-chrome": "chromium",
}

// installProgram installs a missing program the way most machines that run agents can (Debian
// and Ubuntu); cargo and language tools have their own installers.
func installProgram(prog string) string {
	switch prog {
	case "cargo", "rustc", "rustup":
		return "curl --proto '=https' -sSf https://sh.rustup.rs | sh"
	case "go":
		return "sudo apt-get install -y golang-go"
	case "uv":
		return "curl -LsSf https://astral.sh/uv/install.sh | sh"
	case "pnpm", "yarn":
		return "corepack enable"
	case "protoc":
		return "sudo apt-get install -y protobuf-compiler"
	case "protoc-gen-go":
		return "go install google.golang.org/protobuf/cmd/protoc-gen-go@latest"
	case "protoc-gen-go-grpc":
		return "go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@latest"
	case "pytest", "tox", "nox", "black", "ruff", "mypy", "flake8", "pylint", "isort", "poetry", "pre-commit", "pipenv", "hatch":
		return "python3 -m pip install " + prog
	}
	pkg := debianPackages[prog]
	if pkg == "" {
		pkg = strings.ToLower(prog)
	}
	return "sudo apt-get install -y " + shellQuote(pkg)
}

// loginSuggestion: sign agent a's CLI in again (or replace the key it is refused), then run the
// task again.
func (f *facts) loginSuggestion(a storeAttempt) Suggestion {
	login, how := f.login(a.Agent)
	if page, env := keyPage(f.presetFor(a.Agent)); page != "" && keyRe.MatchString(a.Message) && !strings.Contains(a.Message, "/login") {
		// The key itself is refused (expired, revoked): signing in again does not
		// replace a key the environment sets.
		login, how = "xdg-open "+page, fmt.Sprintf("the agent's API key is refused: make a new one (the first command opens the page) and set %s to it in the environment mulligan runs in", env)
	} else if page != "" && strings.Contains(a.Message, env) {
		// The CLI names the variable it reads (gemini's "Please set an Auth method … or
		// specify one of the following environment variables: GEMINI_API_KEY, …"): headless,
		// the key in the environment is the way in.
		login = "export " + env + "=...  # a key from " + page + " (or run " + orWord(login, "the CLI") + " once to sign in)"
	}
	if login == "" {
		// No sign-in command (aider, a generic command): the key or setting the provider
		// refused, set where it is set — the task file's agent env, else the environment.
		if v := keyVar(a.Message); v != "" {
			if _, inFile := f.agentEnv(a.Agent)[v]; inFile {
				return Suggestion{Text: fmt.Sprintf("the provider refused %s, which the task file sets for agent %s: correct it (or remove it) in %s, then run the task again", v, a.Agent, f.fileName()),
					Commands: []string{f.fixed()}, Change: "agents." + a.Agent + ".env." + v}
			}
			how = "the provider refused " + v + ": set it right in the environment mulligan runs in"
			login = "export " + v + "=..."
			if strings.HasSuffix(v, "ORGANIZATION") {
				login, how = "unset "+v, "the key belongs to another organisation than "+v+" names: unset it (the key's own organisation is used) or set the key's"
			}
		}
	}
	cmds := []string{}
	if login != "" {
		cmds = append(cmds, login)
	}
	cmds = append(cmds, f.retry())
	return Suggestion{Text: how + ", then run the task again", Commands: cmds}
}

// keyVar is the environment variable an authentication error is about: the one it names, an
// organisation header that does not match the key's, else the key of the provider it names.
func keyVar(msg string) string {
	if m := keyVarRe.FindString(msg); m != "" {
		return m
	}
	lower := strings.ToLower(msg)
	switch {
	case strings.Contains(lower, "organization") && strings.Contains(lower, "openai"):
		return "OPENAI_ORGANIZATION"
	case strings.Contains(lower, "openai"):
		return "OPENAI_API_KEY"
	case strings.Contains(lower, "anthropic"):
		return "ANTHROPIC_API_KEY"
	case strings.Contains(lower, "gemini") || strings.Contains(lower, "vertex"):
		return "GEMINI_API_KEY"
	}
	return ""
}

var keyVarRe = lazyre.New(`\b[A-Z][A-Z0-9]*_(?:API_KEY|ORGANIZATION|ORG_ID|PROJECT)\b`)

// agentEnv is the environment the task file gives an agent.
func (f *facts) agentEnv(name string) map[string]string {
	if a := f.agent(name); a != nil {
		return a.Env
	}
	return nil
}
