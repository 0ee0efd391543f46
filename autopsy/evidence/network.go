package evidence

import (
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/mulligan-dev/mulligan/internal/lazyre"
)

// NetError is one network failure a line shows, with the host it names ("" when none).
type NetError struct {
	Host string
	Line string
	// API: the host is an agent provider's API (api.anthropic.com, api.openai.com, …): the agent
	// itself could not reach its model.
	API bool
	// Denied: the operating system refused the connection (a sandbox's or a firewall's rule),
	// whatever the host: no service was asked.
	Denied bool
}

var (
	netErrRe = lazyre.New(`(?i)\bnxdomain\b|could not resolve host|Unable to load the service index for source|unable to resolve host|no such host|temporary failure in name resolution|name or service not known|name does not resolve|nodename nor servname|failed to lookup address|getaddrinfo|(?-i:\bENOTFOUND\b)|(?-i:\bEAI_AGAIN\b)|network is unreachable|connection refused|(?-i:\bECONNREFUSED\b)|(?-i:\bECONNRESET\b)|connection reset by peer|TLS handshake timeout|i/o timeout|unable to connect to api|cannot connect to api|fetch failed|waiting for network|error sending request|stream disconnected before completion|socket hang up|(?-i:\bETIMEDOUT\b)|(?-i:\bENETUNREACH\b)|Failed to establish a new connection|Max retries exceeded with url|Could not connect to|Connection timed out|Network is unreachable|network request to .* failed|dial tcp|unable to access '|server misbehaving|lookup \S+ on \S+:|Could not resolve proxy|Connection timed out|An IO error occurred when talking to the server|failed: connect timed out|connect E(?:PERM|ACCES)\b|Couldn't connect to server|connect: (?:operation not permitted|permission denied)|Got socket error trying to find package|couldn't resolve host|\bSocketException: Failed host lookup\b`)
	hostRes  = []*lazyre.Regexp{
		lazyre.New(`(?i)(?:(?-i:\bENOTFOUND\b)|(?-i:\bEAI_AGAIN\b)|(?-i:\bECONNREFUSED\b)|(?-i:\bETIMEDOUT\b)|(?-i:\bECONNRESET\b)) ([A-Za-z0-9.-]+\.[A-Za-z]{2,})`),
		lazyre.New(`(?i)(?:could not|unable to) resolve host:? '?([A-Za-z0-9.-]+)`),
		lazyre.New(`lookup ([A-Za-z0-9.-]+\.[A-Za-z]{2,})(?: on [^:]+)?: `),
		lazyre.New(`host='([^']+)'`),
		lazyre.New(`(?i)(?:failed to connect to|could not connect to|connecting to) ([A-Za-z0-9.-]+\.[A-Za-z]{2,})`),
		lazyre.New(`(?i)unable to access '([^']+)'`),
		lazyre.New(`(https?://[^\s"'<>)]+)`),
	}
	fetchFromRe  = lazyre.New(`(?i)\b(?:fetching|downloading|cloning|updating|resolving)\b.*\b(?:from|into)?\s*[\x60'"]?(https?://[^\s\x60'"]+)`)
	erlangAddrRe = lazyre.New(`to_address,\s*\{"([A-Za-z0-9.-]+)",\s*\d+\}`)
	// The provider APIs the agent CLIs talk to.
	apiHostRe = lazyre.New(`(?i)^(?:api\.anthropic\.com|api\.openai\.com|chatgpt\.com|(?:[\w-]+\.)?generativelanguage\.googleapis\.com|cloudcode-pa\.googleapis\.com|[\w-]*aiplatform\.googleapis\.com|openrouter\.ai|api\.deepseek\.com|statsig\.anthropic\.com)$`)
	// An agent CLI that says it cannot reach its API without naming the host.
	agentAPIRe = lazyre.New(`(?i)unable to connect to api|cannot connect to api|API Error: (?:Connection error|Request timed out)|waiting for network|stream disconnected before completion|Reconnecting\.\.\.`)
)

// serverSideRe: the request reached the provider, which answered with an error ("stream
// disconnected before completion: An error occurred while processing your request …"): the
// provider failed, not the network.
var serverSideRe = lazyre.New(`(?i)an error occurred while processing your request|include the request ID|internal server error|\boverloaded\b|high demand|\b(?:status|code)[ :=]*5\d\d\b|\b5\d\d (?:Internal|Bad Gateway|Service Unavailable)`)

// connectDeniedRe: a connection the operating system refused to make (EPERM, EACCES on
// connect: codex's seccomp sandbox, a firewall), not one a host refused (ECONNREFUSED).
var connectDeniedRe = lazyre.New(`connect E(?:PERM|ACCES)\b|connect: (?:operation not permitted|permission denied)|Failed to establish a new connection: \[Errno (?:1|13)\]`)

// ConnectDenied: the line shows a connection the operating system refused to make.
func ConnectDenied(line string) bool { return connectDeniedRe.MatchString(line) }

// IsNetworkError: the line shows a network failure.
func IsNetworkError(line string) bool {
	return netErrRe.MatchString(line) && !serverSideRe.MatchString(line)
}

// NetworkErrors lists the network failures in text, one per host, the last line of each.
func NetworkErrors(text string) []NetError {
	var out []NetError
	idx := map[string]int{}
	lines := expandJSON(Lines(text))
	for i, h := range lines {
		if !IsNetworkError(h) {
			continue
		}
		e := NetError{Host: hostOf(h), Line: clip(h), Denied: ConnectDenied(h)}
		for j := i - 1; e.Host == "" && !agentAPIRe.MatchString(h) && j >= max(0, i-3); j-- {
			// The host on a line above: an Erlang term over lines ({failed_connect,[{to_address,
			// {"repo.hex.pm",443}}, {inet,[inet],nxdomain}]}), a fetch announced before it
			// failed ("Fetching advisory database from `https://github.com/RustSec/…`").
			if m := erlangAddrRe.FindStringSubmatch(lines[j]); m != nil {
				e.Host = strings.ToLower(m[1])
			} else if m := fetchFromRe.FindStringSubmatch(lines[j]); m != nil {
				e.Host = hostOf(m[1])
			}
		}
		e.API = apiHostRe.MatchString(e.Host) || (e.Host == "" && agentAPIRe.MatchString(h))
		k := e.Host
		if k == "" && e.API {
			k = "(api)"
		}
		if i, ok := idx[k]; ok {
			out[i] = e
			continue
		}
		idx[k] = len(out)
		out = append(out, e)
	}
	// A line without a host ("npm error code \bENOTFOUND\b") says no more than one with it.
	if i, ok := idx[""]; ok && len(out) > 1 {
		out = append(out[:i], out[i+1:]...)
	}
	return out
}

func hostOf(l string) string {
	for _, re := range hostRes {
		m := re.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		h := m[1]
		if strings.Contains(h, "://") {
			u, err := url.Parse(h)
			if err != nil || u.Hostname() == "" {
				continue
			}
			h = u.Hostname()
		}
		return strings.ToLower(strings.TrimSuffix(h, "."))
	}
	return ""
}

// expandJSON replaces each JSON event line by the lines of its string values (a tool's output
// inside a codex event is many lines in one string), leaving out the prompt echoed back and the
// arguments of tool calls.
func expandJSON(lines []string) []string {
	var out []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		var v any
		if !strings.HasPrefix(l, "{") || json.Unmarshal([]byte(l), &v) != nil {
			out = append(out, l)
			continue
		}
		if echoed(v) {
			continue // the prompt, echoed back (gemini's user message): not what happened
		}
		var walk func(any)
		walk = func(v any) {
			switch t := v.(type) {
			case string:
				for _, s := range Lines(t) {
					if s = strings.TrimSpace(s); s != "" {
						out = append(out, s)
					}
				}
			case map[string]any:
				for _, k := range slices.Sorted(maps.Keys(t)) {
					if k == "input" || k == "parameters" {
						continue // what a tool call is given (a file's new text): not what it met
					}
					walk(t[k])
				}
			case []any:
				for _, x := range t {
					walk(x)
				}
			}
		}
		walk(v)
	}
	return out
}

// Echoed reports whether a JSON event line only repeats what the agent was given or gives — the
// prompt echoed back (gemini's user message), a tool call's arguments (the text of a file it
// writes) — so that no failure it names happened.
func Echoed(line string) bool {
	if !strings.HasPrefix(line, "{") {
		return false
	}
	var v any
	if json.Unmarshal([]byte(line), &v) != nil {
		return false
	}
	if echoed(v) {
		return true
	}
	m, _ := v.(map[string]any)
	if m["type"] == "user" && fileRead(m) {
		return true // claude's Read: a file's text, numbered
	}
	if m["type"] == "tool_use" {
		return true // gemini's tool call: its name and parameters
	}
	// claude's assistant event whose content is tool calls only
	msg, _ := m["message"].(map[string]any)
	parts, _ := msg["content"].([]any)
	if m["type"] != "assistant" || len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		if pm, _ := p.(map[string]any); pm["type"] != "tool_use" {
			return false
		}
	}
	return true
}

func echoed(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || m["role"] != "user" {
		return false
	}
	_, text := m["content"].(string)
	return text
}

// fileRead: a claude tool result whose text is a file's lines as its Read tool numbers them
// ("    52\tdef test_…" or "    52→def test_…"): what the file says, not what happened.
func fileRead(m map[string]any) bool {
	msg, _ := m["message"].(map[string]any)
	parts, _ := msg["content"].([]any)
	if len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		pm, _ := p.(map[string]any)
		text, _ := pm["content"].(string)
		lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
		if pm["type"] != "tool_result" || len(lines) < 2 {
			return false
		}
		n := 0
		for _, l := range lines {
			if numberedLineRe.MatchString(l) {
				n++
			}
		}
		if n*10 < len(lines)*8 {
			return false
		}
	}
	return true
}

var numberedLineRe = lazyre.New(`^\s*\d+(?:\t|→)`)
