package autopsy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
	"github.com/mulligan-dev/mulligan/taskfile"
)

// Logins and credentials the machine's tools lack: a CLI not signed in to its service, a
// registry refusing this machine's token, and in an isolated worktree the ignored files that
// would have given them.

// loginRes: a command-line tool on the machine that is not logged in to its service (the
// agent's own login is rule auth's).
var loginRes = []lackRe{
	{lazyre.New(`(?i)gh auth login|gh is not (?:authenticated|logged in)|GH_TOKEN environment variable`),
		func(m []string) string { return "a GitHub CLI login" },
		func(m []string) string { return "gh auth login" }},
	{lazyre.New(`(?i)You must be logged in to the server|error: You must be logged in|Unable to connect to the server: .*(?:token|credentials)`),
		func(m []string) string { return "valid credentials for the Kubernetes cluster" },
		func(m []string) string { return "kubectl config current-context" }},
	{lazyre.New(`(?i)Unable to locate credentials|aws configure|ExpiredToken|refresh cached SSO token failed|unable to refresh SSO token|The SSO session .* has expired|aws sso login|Token has expired and refresh failed|Error when retrieving token from sso|SSOTokenLoadError`),
		func(m []string) string { return "AWS credentials" },
		func(m []string) string { return "aws sso login" }},
	{lazyre.New(`(?i)gcloud auth (?:application-default )?login|You do not currently have an active account selected|Reauthentication (?:failed|required)`),
		func(m []string) string { return "a gcloud login" },
		func(m []string) string { return "gcloud auth login" }},
	{lazyre.New(`(?i)npm (?:ERR!|error) code E401|Unable to authenticate, your authentication token seems to be invalid|npm login`),
		func(m []string) string { return "an npm registry login" },
		func(m []string) string { return "npm login" }},
	// trivy's vulnerability database pulled from ghcr.io, rate-limited (aquasecurity/trivy-action
	// #389): a mirror of the database, not a login, gets past it.
	{lazyre.New(`(?i)trivy-db.*TOOMANYREQUESTS|TOOMANYREQUESTS.*trivy-db`),
		func(m []string) string { return "trivy's vulnerability database (ghcr.io rate-limits its download)" },
		func(m []string) string {
			return "export TRIVY_DB_REPOSITORY=mirror.gcr.io/aquasec/trivy-db:2  # a mirror of trivy's database"
		}},
	{lazyre.New(`(?i)(?:failed to fetch oauth token|failed to authorize|no basic auth credentials|pull access denied).*?(?:https?://)?([\w.-]+\.[a-z]{2,})(?:[:/]|$)|unauthorized: authentication required|requested access to the resource is denied|docker login|toomanyrequests|reached your pull rate limit`),
		func(m []string) string {
			return "a container registry login" + orWord(strings.TrimSpace(" ("+m[1]+")"), "")
		},
		func(m []string) string { return strings.TrimSpace("docker login " + m[1]) }},
	{lazyre.New(`(?i)(?:status code: 401, reason phrase: Unauthorized|Return code is: 401|401 Unauthorized).*?(?:from/to|from) ([\w.-]+) \((https?://[^)]+)\)|(?:from/to|from) ([\w.-]+) \((https?://[^)]+)\): (?:status code: 401|Unauthorized)`),
		func(m []string) string { return "credentials for the Maven repository " + firstNonEmpty(m[1], m[3]) },
		func(m []string) string { return "${EDITOR:-vi} ~/.m2/settings.xml" }},
	{lazyre.New(`(?i)could not read (?:Username|Password) for 'https://github\.com'|fatal: Authentication failed for 'https://github\.com`),
		func(m []string) string { return "git credentials for github.com" },
		func(m []string) string { return "gh auth setup-git" }},
	{lazyre.New(`(?i)could not read (?:Username|Password) for '([^']+)'|fatal: Authentication failed for '([^']+)'`),
		func(m []string) string { return "git credentials for " + firstNonEmpty(m[1:]...) },
		func(m []string) string { return "git config --global credential.helper store" }},
	{lazyre.New(`(?i)407 Proxy Authentication Required|Proxy Authentication Required \(407\)|proxy authentication required`),
		func(m []string) string {
			return "credentials for the HTTP proxy (put them in HTTPS_PROXY as user:password@ before the host)"
		},
		func(m []string) string { return "export HTTPS_PROXY=http://PROXY:PORT" }},
	// A tool's own word to log in (cargo's "token rejected for `acme`, please run `cargo login
	// --registry acme`", az's "Please run 'az login' to setup account").
	{lazyre.New("(?i)(?:please )?(?:run|use) [`'\"]((?:[\\w.-]+ ){1,2}(?:login|auth)\\b[^`'\"]*)[`'\"]"),
		func(m []string) string { return "a login the tool asks for (" + m[1] + ")" },
		func(m []string) string { return m[1] }},
	// A package index or registry beyond this machine refusing its credentials (uv, pip, cargo,
	// NuGet): 401/403 with the URL, in either order. (localhost's are a test's own server.)
	{lazyre.New(`(?i)(?:\b40[13]\W{1,3}(?:Unauthorized|Forbidden)|\b40[13] Error, Credentials not correct|HTTP error 40[13]|status(?: code)?[^\n]{0,30}?\b40[13])\b.*?(https?://([\w.-]+\.[a-z]{2,})[^\s)'"]*)|(https?://([\w.-]+\.[a-z]{2,})[^\s)'"]*).*?(?:\bgot 40[13]|\b40[13]\W{1,3}(?:Unauthorized|Forbidden)|status(?: code)?[^\n]{0,30}?\b40[13])\b`),
		func(m []string) string {
			return "credentials that " + firstNonEmpty(m[2], m[4]) + " accepts (it refused this machine's)"
		},
		func(m []string) string { return registryLogin(firstNonEmpty(m[1], m[3]), firstNonEmpty(m[2], m[4])) }},
	// .NET's HttpClient refused by a feed (NuGet/Home#12217: the 401 above the NU1301 line).
	{lazyre.New(`Response status code does not indicate success: 40[13] \((?:Unauthorized|Forbidden)\)`),
		func(m []string) string { return "credentials the NuGet feed accepts (it answered 401/403)" },
		func(m []string) string {
			return "${EDITOR:-vi} ~/.nuget/NuGet/NuGet.Config  # a valid token (PAT) for the feed"
		}},
	// NuGet says the feed's URL and its 401 on two lines (dotnet/sdk#47323).
	{lazyre.New(`error NU1301:.*\b40[13]\b`),
		func(m []string) string { return "credentials the NuGet feed accepts (it answered 401/403)" },
		func(m []string) string {
			return "${EDITOR:-vi} ~/.nuget/NuGet/NuGet.Config  # a valid token (PAT) for the feed"
		}},
	// ssh's and cargo's (libgit2's) words for an ssh key the remote did not get or accept.
	{lazyre.New(`(?i)Permission denied \(publickey\)|attempted ssh-agent authentication, but no usernames succeeded|error authenticating: no auth sock variable`),
		func(m []string) string { return "an ssh key the git remote accepts (through ssh-agent)" },
		func(m []string) string { return "ssh-add -l" }},
	// huggingface_hub: a gated model and no token of an account that was given access.
	{lazyre.New(`Cannot access gated repo for url https://huggingface\.co/([\w.-]+/[\w.-]+)|You are trying to access a gated repo|Access to model ([\w.-]+/[\w.-]+) is restricted`),
		func(m []string) string {
			return "a Hugging Face token of an account with access to the gated model " + orWord(firstNonEmpty(m[1:]...), "")
		},
		func(m []string) string { return "huggingface-cli login" }},
	// chromaui/chromatic-cli: no project token in the environment.
	{lazyre.New(`Missing project token`),
		func(m []string) string { return "Chromatic's project token (CHROMATIC_PROJECT_TOKEN)" },
		func(m []string) string {
			return "export CHROMATIC_PROJECT_TOKEN=...  # the project's token from chromatic.com"
		}},
	// A link checker or a test meeting GitHub's anonymous rate limit (lycheeverse/lychee): a
	// token lifts it.
	{lazyre.New(`\[429\] https://(?:api\.)?github\.com/|API rate limit exceeded for (?:\d{1,3}\.){3}\d{1,3}`),
		func(m []string) string { return "a GitHub token (anonymous requests met GitHub's rate limit)" },
		func(m []string) string {
			return "export GITHUB_TOKEN=...  # a token of yours: gh auth token prints one"
		}},
	// google-auth: no Application Default Credentials on this machine.
	{lazyre.New(`DefaultCredentialsError: (?:Your default credentials were not found|Could not automatically determine credentials)`),
		func(m []string) string { return "Google Cloud Application Default Credentials" },
		func(m []string) string { return "gcloud auth application-default login" }},
}

// codeArtifactRe: an AWS CodeArtifact repository's URL: domain, owner, format, repository.
var codeArtifactRe = lazyre.New(`^https?://([\w-]+)-(\d{12})\.d\.codeartifact\.[\w-]+\.amazonaws\.com/(pypi|npm|maven|nuget|cargo)/([\w.-]+)/`)

// registryLogin is the first step to give this machine credentials for the registry at url.
func registryLogin(url, host string) string {
	if m := codeArtifactRe.FindStringSubmatch(url); m != nil {
		tool := map[string]string{"pypi": "pip", "npm": "npm", "nuget": "dotnet"}[m[3]]
		if tool == "" {
			return "aws codeartifact get-authorization-token --domain " + m[1] + " --domain-owner " + m[2] + " --query authorizationToken --output text"
		}
		return "aws codeartifact login --tool " + tool + " --domain " + m[1] + " --domain-owner " + m[2] + " --repository " + m[4]
	}
	switch {
	case strings.Contains(url, "nuget") || strings.Contains(url, "_packaging"):
		return "${EDITOR:-vi} ~/.nuget/NuGet/NuGet.Config  # a valid token (PAT) for the feed at " + host
	case strings.Contains(url, "/npm/") || strings.HasPrefix(host, "npm."):
		return "npm login --registry=https://" + host
	}
	return "${EDITOR:-vi} ~/.netrc  # the login and token for " + host
}

// loggedOut: a tool the task uses is not logged in to its service, as the verify output says
// on the base tree, or the attempt the run stopped on says (its verify output, the agent's own
// words and failed tool calls).
func (f *facts) loggedOut() (lack, bool) {
	if f.uncopiedSecrets() != "" {
		return lack{}, false // the worktree's: see worktreeLack
	}
	return f.loginLack()
}

// loginLack is what loggedOut reads, whether or not the task runs in its own worktree.
func (f *facts) loginLack() (lack, bool) {
	if f.base.failed() {
		if k, ok := scanLacks(f.base.Output, loginRes); ok {
			return k, true
		}
	}
	a := f.last()
	if a.N == 0 {
		return lack{}, false
	}
	ag := f.agentOf(a)
	text := strings.Join(append([]string{a.Message, ag.LastMessage, f.verifyOutput[key(a.TaskID, a.N)]}, ag.ToolErrors...), "\n")
	return scanLacks(text, loginRes)
}

var loginRule = Rule{
	Name: "tool-not-logged-in", Category: Environment, Confidence: 0.88,
	Match: func(f *facts) bool { _, ok := f.loggedOut(); return ok },
	Why: func(f *facts) string {
		k, _ := f.loggedOut()
		return fmt.Sprintf("the task needs %s on this machine, and there is none: %s", k.what, k.line)
	},
	Suggest: func(f *facts) Suggestion {
		k, _ := f.loggedOut()
		return Suggestion{Text: fmt.Sprintf("log in (%s) as the user mulligan runs as, then run the task again", k.what), Commands: []string{k.fix, f.retry()}}
	},
	Lines: func(f *facts) []string { k, _ := f.loggedOut(); return []string{k.line} },
}

// secretFiles: ignored files that hold a project's credentials and settings, as a rule.
var secretFiles = []string{".env", ".env.local", ".env.test", ".npmrc", ".pypirc", ".netrc", "auth.json", ".cargo/credentials.toml"}

// uncopiedSecrets names a file of secretFiles the working tree has and the task's own worktree
// is not given (worktree.copy or link), or "".
func (f *facts) uncopiedSecrets() string {
	if f.def == nil || f.def.Isolation != taskfile.IsolationWorktree || f.repo == nil {
		return ""
	}
	for _, name := range secretFiles {
		if slices.ContainsFunc(slices.Concat(f.def.Worktree.Copy, f.def.Worktree.Link), func(p string) bool {
			ok, _ := filepath.Match(p, name)
			return ok || p == name
		}) {
			continue
		}
		if st, err := os.Stat(filepath.Join(f.repo.Root(), name)); err == nil && st.Mode().IsRegular() {
			return name
		}
	}
	return ""
}
