package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-git/gcfg"

	"github.com/mulligan-dev/mulligan/snapshot/attr"
	"github.com/mulligan-dev/mulligan/snapshot/ignore"
)

// gitConfig is the merged view of every config file git would read for this repository, in git's
// order (system, global, repository, worktree, GIT_CONFIG_COUNT); the last value of a key wins.
//
// The syntax is parsed by gcfg, the parser go-git's plumbing/format/config decoder wraps; it is
// called directly because the decoder drops gcfg's "blank value" flag, and git reads a key written
// without "=" as boolean true.
type gitConfig struct {
	vals map[string][]configValue
}

type configValue struct {
	v     string
	blank bool // "key" with no "=": true as a boolean
}

// configKey normalises "Section.Sub.Name" as git does: section and name are case-insensitive,
// the subsection is not.
func configKey(section, sub, name string) string {
	section, name = strings.ToLower(section), strings.ToLower(name)
	if sub == "" {
		return section + "." + name
	}
	return section + "." + sub + "." + name
}

func splitKey(key string) string {
	first := strings.IndexByte(key, '.')
	last := strings.LastIndexByte(key, '.')
	if first < 0 {
		return strings.ToLower(key)
	}
	if first == last {
		return configKey(key[:first], "", key[first+1:])
	}
	return configKey(key[:first], key[first+1:last], key[last+1:])
}

func (c *gitConfig) add(key string, v configValue) {
	if c.vals == nil {
		c.vals = make(map[string][]configValue)
	}
	c.vals[key] = append(c.vals[key], v)
}

// get returns the last value of key ("core.excludesFile", "filter.lfs.clean").
func (c *gitConfig) get(key string) (configValue, bool) {
	vs := c.vals[splitKey(key)]
	if len(vs) == 0 {
		return configValue{}, false
	}
	return vs[len(vs)-1], true
}

func (c *gitConfig) str(key string) string {
	v, _ := c.get(key)
	return v.v
}

// boolean parses a value as git_config_bool does; an unparsable value yields def.
func (c *gitConfig) boolean(key string, def bool) bool {
	v, ok := c.get(key)
	if !ok {
		return def
	}
	b, ok := parseBool(v)
	if !ok {
		return def
	}
	return b
}

func parseBool(v configValue) (bool, bool) {
	if v.blank {
		return true, true
	}
	switch strings.ToLower(v.v) {
	case "true", "yes", "on":
		return true, true
	case "false", "no", "off", "":
		return false, true
	}
	n, err := parseConfigInt(v.v)
	if err != nil {
		return false, false
	}
	return n != 0, true
}

func parseConfigInt(s string) (int64, error) {
	mult := int64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		}
		if mult != 1 {
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

// configLoader reads config files, following include.path and the includeIf conditions git
// evaluates without a remote (gitdir:, gitdir/i:, onbranch:).
type configLoader struct {
	cfg    *gitConfig
	gitDir string // for includeIf "gitdir:"
	branch string // for includeIf "onbranch:"
	depth  int
}

const maxIncludeDepth = 10

// loadFile reads one config file; a missing file is not an error (git skips it too).
func (l *configLoader) loadFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return fmt.Errorf("read git config %s: %w", path, err)
	}
	return l.loadBytes(data, path)
}

// utf8BOM is the byte order mark gcfg refuses and git skips.
var utf8BOM = []byte("\xef\xbb\xbf")

func (l *configLoader) loadBytes(data []byte, path string) error {
	// gcfg rejects a few things git accepts; the commonest is a UTF-8 byte order mark.
	data = bytes.TrimPrefix(data, utf8BOM)
	var inner error
	err := gcfg.ReadWithCallback(bytes.NewReader(data), func(section, sub, name, value string, blank bool) error {
		if name == "" {
			return nil
		}
		key := configKey(section, sub, name)
		l.cfg.add(key, configValue{v: value, blank: blank})
		if err := l.include(section, sub, name, value, path); err != nil {
			inner = err
			return err
		}
		return nil
	})
	if inner != nil {
		return inner
	}
	if err != nil {
		return fmt.Errorf("parse git config %s: %w", path, err)
	}
	return nil
}

// gitmodulesPaths reads a .gitmodules file (git's config syntax): each submodule's name and
// path (its `submodule "NAME"` section's path key, the last one when it is given twice, as git
// takes it).
func gitmodulesPaths(data []byte) (map[string]string, error) {
	paths := map[string]string{}
	err := gcfg.ReadWithCallback(bytes.NewReader(bytes.TrimPrefix(data, utf8BOM)), func(section, sub, name, value string, blank bool) error {
		if strings.EqualFold(section, "submodule") && sub != "" && strings.EqualFold(name, "path") {
			paths[sub] = value
		}
		return nil
	})
	return paths, err
}

func (l *configLoader) include(section, sub, name, value, from string) error {
	if !strings.EqualFold(name, "path") || value == "" {
		return nil
	}
	switch {
	case strings.EqualFold(section, "include") && sub == "":
	case strings.EqualFold(section, "includeif") && l.includeIf(sub, from):
	default:
		return nil
	}
	if l.depth >= maxIncludeDepth {
		return fmt.Errorf("git config %s: include depth exceeded", from)
	}
	p := expandHome(value)
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(from), p)
	}
	l.depth++
	defer func() { l.depth-- }()
	return l.loadFile(p)
}

func (l *configLoader) includeIf(cond, from string) bool {
	switch {
	case strings.HasPrefix(cond, "gitdir:"):
		return l.matchGitDir(strings.TrimPrefix(cond, "gitdir:"), from, false)
	case strings.HasPrefix(cond, "gitdir/i:"):
		return l.matchGitDir(strings.TrimPrefix(cond, "gitdir/i:"), from, true)
	case strings.HasPrefix(cond, "onbranch:"):
		pat := strings.TrimPrefix(cond, "onbranch:")
		if l.branch == "" {
			return false
		}
		if strings.HasSuffix(pat, "/") {
			pat += "**"
		}
		return ignore.Match(pat, l.branch, true)
	}
	return false
}

// matchGitDir follows git's include_by_gitdir: "~/" and "./" expansion, a "**/" prefix for
// relative patterns and a "**" suffix for patterns ending in "/".
func (l *configLoader) matchGitDir(pat, from string, icase bool) bool {
	if l.gitDir == "" {
		return false
	}
	pat = expandHome(pat)
	if strings.HasPrefix(pat, "./") {
		pat = filepath.Join(filepath.Dir(from), pat[2:])
	} else if !filepath.IsAbs(pat) {
		pat = "**/" + pat
	}
	if strings.HasSuffix(pat, "/") {
		pat += "**"
	}
	text := filepath.ToSlash(l.gitDir)
	pat = filepath.ToSlash(pat)
	if icase {
		text, pat = strings.ToLower(text), strings.ToLower(pat)
	}
	if ignore.Match(pat, text, true) {
		return true
	}
	if real, err := filepath.EvalSymlinks(l.gitDir); err == nil && real != l.gitDir {
		text = filepath.ToSlash(real)
		if icase {
			text = strings.ToLower(text)
		}
		return ignore.Match(pat, text, true)
	}
	return false
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, p[1:])
		}
	}
	return p
}

// xdgConfigPath is $XDG_CONFIG_HOME/git/<name>, or ~/.config/git/<name> when it is unset or empty.
func xdgConfigPath(name string) string {
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "git", name)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".config", "git", name)
}

// loadConfig reads the configuration git would use in this repository.
// With worktreeConfig (extensions.worktreeConfig, read by readRepoFormat) the worktree's
// config.worktree is read after the repository's config.
func loadConfig(gitDir, commonDir, branch string, worktreeConfig bool) (*gitConfig, error) {
	cfg := &gitConfig{}
	l := &configLoader{cfg: cfg, gitDir: gitDir, branch: branch}
	if err := l.loadSystemGlobal(); err != nil {
		return nil, err
	}
	if err := l.loadFile(filepath.Join(commonDir, "config")); err != nil {
		return nil, err
	}
	if worktreeConfig {
		if err := l.loadFile(filepath.Join(gitDir, "config.worktree")); err != nil {
			return nil, err
		}
	}
	if err := addEnvConfig(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// protectedConfig is git's "protected configuration": the system and global files and the
// command line (GIT_CONFIG_COUNT), never a file of the repository, which whoever owns the
// repository could have written. safe.directory is read only from there.
func protectedConfig() (*gitConfig, error) {
	cfg := &gitConfig{}
	l := &configLoader{cfg: cfg}
	if err := l.loadSystemGlobal(); err != nil {
		return nil, err
	}
	if err := addEnvConfig(cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// loadSystemGlobal reads the system file (GIT_CONFIG_SYSTEM, GIT_CONFIG_NOSYSTEM) and the global
// ones (GIT_CONFIG_GLOBAL, else the XDG file and ~/.gitconfig).
func (l *configLoader) loadSystemGlobal() error {
	if !envBool("GIT_CONFIG_NOSYSTEM") {
		sys := os.Getenv("GIT_CONFIG_SYSTEM")
		if sys == "" {
			sys = "/etc/gitconfig"
		}
		if err := l.loadFile(sys); err != nil {
			return err
		}
	}
	if g, ok := os.LookupEnv("GIT_CONFIG_GLOBAL"); ok {
		if g != "" {
			return l.loadFile(expandHome(g))
		}
		return nil
	}
	if x := xdgConfigPath("config"); x != "" {
		if err := l.loadFile(x); err != nil {
			return err
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		if err := l.loadFile(filepath.Join(home, ".gitconfig")); err != nil {
			return err
		}
	}
	return nil
}

// addEnvConfig adds the GIT_CONFIG_COUNT/GIT_CONFIG_KEY_n/GIT_CONFIG_VALUE_n pairs.
func addEnvConfig(cfg *gitConfig) error {
	n, err := strconv.Atoi(os.Getenv("GIT_CONFIG_COUNT"))
	if err != nil || n <= 0 {
		return nil
	}
	for i := 0; i < n; i++ {
		k, okK := os.LookupEnv(fmt.Sprintf("GIT_CONFIG_KEY_%d", i))
		v, okV := os.LookupEnv(fmt.Sprintf("GIT_CONFIG_VALUE_%d", i))
		if !okK || !okV || k == "" {
			return fmt.Errorf("GIT_CONFIG_COUNT is %d but GIT_CONFIG_KEY_%d or GIT_CONFIG_VALUE_%d is missing", n, i, i)
		}
		cfg.add(splitKey(k), configValue{v: v})
	}
	return nil
}

func envBool(name string) bool {
	v, ok := os.LookupEnv(name)
	if !ok {
		return false
	}
	b, ok := parseBool(configValue{v: v})
	return ok && b
}

// settings are the config values the engine acts on, resolved once per Open.
type settings struct {
	excludesFile   string // "" when there is none to read
	attributesFile string
	fileMode       bool
	symlinks       bool
	trustCtime     bool
	ignoreCase     bool
	checkStat      bool // false for core.checkStat=minimal
	conv           attr.Config
}

func (c *gitConfig) settings(root string) settings {
	s := settings{
		fileMode:   c.boolean("core.fileMode", true),
		symlinks:   c.boolean("core.symlinks", true),
		trustCtime: c.boolean("core.trustCtime", true),
		ignoreCase: c.boolean("core.ignoreCase", false),
		checkStat:  !strings.EqualFold(c.str("core.checkStat"), "minimal"),
	}
	s.excludesFile = c.pathOr("core.excludesFile", xdgConfigPath("ignore"), root)
	s.attributesFile = c.pathOr("core.attributesFile", xdgConfigPath("attributes"), root)
	if v, ok := c.get("core.autocrlf"); ok {
		if strings.EqualFold(v.v, "input") {
			s.conv.AutoCRLF = "input"
		} else if b, ok := parseBool(v); ok {
			s.conv.AutoCRLF = strconv.FormatBool(b)
		}
	}
	s.conv.EOL = strings.ToLower(c.str("core.eol"))
	for key, vs := range c.vals {
		if !strings.HasPrefix(key, "filter.") || len(vs) == 0 {
			continue
		}
		rest := key[len("filter."):]
		dot := strings.LastIndexByte(rest, '.')
		if dot <= 0 {
			continue
		}
		name, field := rest[:dot], rest[dot+1:]
		if s.conv.Filters == nil {
			s.conv.Filters = make(map[string]attr.FilterDriver)
		}
		d := s.conv.Filters[name]
		last := vs[len(vs)-1]
		switch field {
		case "clean":
			d.Clean = last.v
		case "smudge":
			d.Smudge = last.v
		case "process":
			d.Process = last.v
		case "required":
			d.Required, _ = parseBool(last)
		default:
			continue
		}
		s.conv.Filters[name] = d
	}
	return s
}

// pathOr reads a pathname value (with "~/" expansion; relative to the worktree root as git, which
// runs from there) or returns def when the key is unset.
func (c *gitConfig) pathOr(key, def, root string) string {
	v, ok := c.get(key)
	if !ok {
		return def
	}
	if v.v == "" {
		return ""
	}
	p := expandHome(v.v)
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	return p
}
