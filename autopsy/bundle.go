package autopsy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mulligan-dev/mulligan/store"
)

// Versions are the versions a bug bundle records.
type Versions struct {
	Mulligan string `json:"mulligan"`
	Revision string `json:"revision,omitempty"`
	Go       string `json:"go"`
	Git      string `json:"git"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
}

// gitVersion is what the bundle says about git: mulligan reads repositories with its own
// engine and never runs the git binary, so it does not know (and does not ask) which git the
// user has.
const gitVersion = "not checked (mulligan never runs git)"

// HostVersions fills Go, git and the OS (uname) around the given mulligan version.
func HostVersions(mulligan, revision string) Versions {
	v := Versions{Mulligan: mulligan, Revision: revision, Go: runtime.Version(), Git: gitVersion, OS: runtime.GOOS, Arch: runtime.GOARCH}
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		v.OS = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Machine[:])
	}
	return v
}

// bundleEvents is how many of the run's last events a bundle holds.
const bundleEvents = 50

// Bundle is the content of `mulligan bug`, file by file.
type Bundle struct {
	Files []BundleFile
}

// BundleFile is one member of the archive.
type BundleFile struct {
	Name string
	Data []byte
}

// BuildBundle collects a run's diagnostic bundle: the autopsy (Markdown and JSON), the run with
// its tasks and attempts, the last events, the task file and the versions, all scrubbed. It
// only reads.
func BuildBundle(ctx context.Context, in Input, v Versions) (*Bundle, error) {
	r, err := Build(ctx, in)
	if err != nil {
		return nil, err
	}
	var run *store.Run
	var events []store.Event
	if err := in.DB.View(ctx, func(tx *store.Tx) error {
		var err error
		if run, err = tx.GetRun(in.RunID); err != nil {
			return err
		}
		events, err = allEvents(tx, run.ID)
		return err
	}); err != nil {
		return nil, err
	}
	sc := in.Scrub
	if sc == nil {
		sc = gather(in, run, nil).scrub
	}
	b := &Bundle{}
	add := func(name string, data []byte) { b.Files = append(b.Files, BundleFile{Name: name, Data: data}) }
	var md bytes.Buffer
	if err := Markdown(&md, r); err != nil {
		return nil, err
	}
	add("autopsy.md", md.Bytes())
	js, err := JSON(r)
	if err != nil {
		return nil, err
	}
	add("autopsy.json", js)
	runJSON, err := json.Marshal(run)
	if err != nil {
		return nil, err
	}
	add("run.json", indent(sc.JSON(runJSON)))
	if len(events) > bundleEvents {
		events = events[len(events)-bundleEvents:]
	}
	var evs []json.RawMessage
	for _, ev := range events {
		raw, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		evs = append(evs, sc.JSON(raw))
	}
	evJSON, err := json.Marshal(evs)
	if err != nil {
		return nil, err
	}
	add("events.json", indent(evJSON))
	if len(run.TaskFileContent) > 0 {
		name := filepath.Base(run.TaskFile)
		if name == "." || name == "/" || name == "" {
			name = "mulligan.yaml"
		}
		add("task-file/"+name, []byte(sc.String(string(run.TaskFileContent))))
	}
	vj, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	add("versions.json", append(vj, '\n'))
	return b, nil
}

func indent(js []byte) []byte {
	var out bytes.Buffer
	if err := json.Indent(&out, js, "", "  "); err != nil {
		return js
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// WriteTarGz writes the bundle as a .tar.gz under dir mulligan-bug-<run>/ to path (0600),
// replacing it atomically.
func (b *Bundle) WriteTarGz(path, run string, now time.Time) error {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	prefix := "mulligan-bug-" + run + "/"
	for _, f := range b.Files {
		hdr := &tar.Header{Name: prefix + f.Name, Mode: 0o600, Size: int64(len(f.Data)), ModTime: now, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return writePrivate(path, buf.Bytes())
}
