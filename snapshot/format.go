package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/mulligan-dev/mulligan/snapshot/internal/odb"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/go-git/gcfg"
)

// ErrUnsupportedFormat means the repository's format (core.repositoryformatversion and
// extensions.*) asks for something mulligan does not read or write. It is returned by Open,
// before anything is written.
var ErrUnsupportedFormat = errors.New("unsupported repository format")

// repoFormat is what the repository's own config file says of its format, read as git's
// check_repository_format does: that file only (no includes, no global config), keys
// case-insensitive.
type repoFormat struct {
	version        int64
	worktreeConfig bool   // extensions.worktreeConfig: config.worktree is read
	partialClone   string // extensions.partialClone: the promisor remote; objects may be missing
	precious       bool   // extensions.preciousObjects: objects are never deleted (mulligan deletes none)
	refused        []string
}

// The extensions git honours whatever the version (handle_extension_v0), and those it knows only
// in version 1; the latter mulligan implements with the values git's defaults have.
var (
	v0Extensions = map[string]bool{"noop": true, "preciousobjects": true, "partialclone": true, "worktreeconfig": true}
	v1Defaults   = map[string]string{"noop-v1": "", "objectformat": "sha1", "refstorage": "files"}
)

// readRepoFormat reads commonDir/config's core.repositoryformatversion and extensions.*.
func readRepoFormat(commonDir string) (repoFormat, error) {
	var f repoFormat
	path := filepath.Join(commonDir, "config")
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return f, nil
		}
		return f, fmt.Errorf("read git config %s: %w", path, err)
	}
	exts := map[string]configValue{}
	names := map[string]string{} // as written, for the message
	var versionErr error
	err = gcfg.ReadWithCallback(bytes.NewReader(bytes.TrimPrefix(data, utf8BOM)), func(section, sub, name, value string, blank bool) error {
		switch {
		case name == "" || sub != "":
		case strings.EqualFold(section, "core") && strings.EqualFold(name, "repositoryformatversion"):
			n, err := parseConfigInt(value)
			if err != nil || blank {
				versionErr = fmt.Errorf("%w: bad core.repositoryformatversion %q in %s", ErrUnsupportedFormat, value, path)
			}
			f.version = n
		case strings.EqualFold(section, "extensions"):
			key := strings.ToLower(name)
			exts[key] = configValue{v: value, blank: blank}
			names[key] = "extensions." + name
		}
		return nil
	})
	if err != nil {
		return f, fmt.Errorf("parse git config %s: %w", path, err)
	}
	if versionErr != nil {
		return f, versionErr
	}
	if f.version > 1 || f.version < 0 {
		return f, fmt.Errorf("%w: core.repositoryformatversion is %d; git and mulligan read versions 0 and 1", ErrUnsupportedFormat, f.version)
	}
	keys := make([]string, 0, len(exts))
	for k := range exts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := exts[k]
		switch k {
		case "preciousobjects":
			f.precious, _ = parseBool(v)
		case "partialclone":
			f.partialClone = v.v
		case "worktreeconfig":
			f.worktreeConfig, _ = parseBool(v)
		}
		if v0Extensions[k] {
			continue
		}
		def, known := v1Defaults[k]
		switch {
		case known && (def == "" || strings.EqualFold(v.v, def)):
		case known:
			f.refused = append(f.refused, fmt.Sprintf("%s=%s", names[k], v.v))
		case f.version >= 1:
			// git refuses an extension it does not know only in version 1; in version 0 it
			// ignores it, and so does mulligan.
			f.refused = append(f.refused, names[k])
		}
	}
	if len(f.refused) > 0 {
		return f, fmt.Errorf("%w: %s (mulligan reads and writes SHA-1 objects and files refs, git's defaults, and the extensions worktreeConfig, partialClone and preciousObjects)", ErrUnsupportedFormat, strings.Join(f.refused, ", "))
	}
	return f, nil
}

// NotFetchedError is an object a partial clone never fetched (odb.NotFetchedError).
type NotFetchedError = odb.NotFetchedError

// promisorRemote is the remote a partial clone fetches missing objects from, as git's
// promisor-remote.c finds it: extensions.partialClone, else a remote with remote.NAME.promisor set
// (what `git clone --filter` writes).
func promisorRemote(f repoFormat, cfg *gitConfig) string {
	if f.partialClone != "" {
		return f.partialClone
	}
	var names []string
	for key, vs := range cfg.vals {
		rest, ok := strings.CutPrefix(key, "remote.")
		name, ok2 := strings.CutSuffix(rest, ".promisor")
		if ok && ok2 && name != "" && len(vs) > 0 {
			if b, ok := parseBool(vs[len(vs)-1]); ok && b {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
