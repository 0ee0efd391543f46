package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	udiff "github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
	"github.com/urfave/cli/v2"

	"github.com/mulligan-dev/mulligan/snapshot"
)

type diffOptions struct {
	Addrs    []string
	Stat     bool
	NameOnly bool
}

func diffCommand(g *globals) *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "what an attempt changed (pre → post), or the difference between two attempts' trees",
		ArgsUsage: "ADDR [ADDR2]",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "stat", Usage: "a line per file with the lines added and removed"},
			&cli.BoolFlag{Name: "name-only", Usage: "only the paths that differ"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 || c.NArg() > 2 {
				return usageError("e.g. mulligan diff fix-tests@2, or mulligan diff fix-tests@1 fix-tests@2", "diff takes one or two addresses")
			}
			if c.Bool("stat") && c.Bool("name-only") {
				return usageError("", "--stat and --name-only cannot go together")
			}
			return runDiff(c.Context, g, diffOptions{Addrs: c.Args().Slice(), Stat: c.Bool("stat"), NameOnly: c.Bool("name-only")})
		},
	}
}

func runDiff(ctx context.Context, g *globals, opts diffOptions) error {
	st, err := openState()
	if err != nil {
		return err
	}
	defer st.Close()
	var from, to, fromName, toName string
	run, a, err := st.resolveAddress(ctx, opts.Addrs[0])
	if err != nil {
		return err
	}
	if err := notPruned(run); err != nil {
		return err
	}
	addr := fmt.Sprintf("%s/%s@%d", run.ID, a.TaskID, a.N)
	if len(opts.Addrs) == 1 {
		from, to, fromName, toName = a.PreTree, a.Tree, addr+" (pre)", addr
	} else {
		run2, b, err := st.resolveAddress(ctx, opts.Addrs[1])
		if err != nil {
			return err
		}
		if err := notPruned(run2); err != nil {
			return err
		}
		from, to = a.Tree, b.Tree
		fromName, toName = addr, fmt.Sprintf("%s/%s@%d", run2.ID, b.TaskID, b.N)
	}
	if from == "" || to == "" {
		return &Error{Code: ExitFailed, Msg: "the attempt has no tree recorded yet (it is still running)"}
	}
	changes, err := st.repo.DiffTrees(plumbing.NewHash(from), plumbing.NewHash(to))
	if err != nil {
		return err
	}
	if opts.NameOnly && !g.json() {
		for _, ch := range changes {
			fmt.Fprintln(g.io.Out, ch.Path)
		}
		return nil
	}
	objs := filesystem.NewStorage(osfs.New(st.repo.CommonDir()), cache.NewObjectLRUDefault())
	patches := make([]*filePatch, 0, len(changes))
	for _, ch := range changes {
		p, err := newFilePatch(objs, ch)
		if err != nil {
			return err
		}
		patches = append(patches, p)
	}
	switch {
	case g.json():
		files := make([]map[string]any, 0, len(patches))
		for i, p := range patches {
			add, del := p.counts()
			files = append(files, map[string]any{"path": changes[i].Path, "action": changes[i].Action.String(),
				"additions": add, "deletions": del, "binary": p.binary})
		}
		return writeJSON(g.io.Out, map[string]any{"from": fromName, "to": toName, "from_tree": from, "to_tree": to, "files": files})
	case opts.Stat:
		return writeStat(g.io.Out, changes, patches)
	}
	enc := fdiff.NewUnifiedEncoder(g.io.Out, fdiff.DefaultContextLines)
	if g.io.ColorEnabled() {
		enc.SetColor(fdiff.NewColorConfig())
	}
	files := make([]fdiff.FilePatch, len(patches))
	for i, p := range patches {
		files[i] = p
	}
	return enc.Encode(patch{files: files})
}

func writeStat(w io.Writer, changes []snapshot.Change, patches []*filePatch) error {
	width := 0
	for _, ch := range changes {
		width = max(width, len(ch.Path))
	}
	var adds, dels int
	for i, p := range patches {
		add, del := p.counts()
		adds, dels = adds+add, dels+del
		if p.binary {
			fmt.Fprintf(w, " %-*s | Bin\n", width, changes[i].Path)
			continue
		}
		bar := strings.Repeat("+", min(add, 40)) + strings.Repeat("-", min(del, 40))
		fmt.Fprintf(w, " %-*s | %d %s\n", width, changes[i].Path, add+del, bar)
	}
	fmt.Fprintf(w, " %d file%s changed, %d insertion%s(+), %d deletion%s(-)\n",
		len(changes), plural(len(changes)), adds, plural(adds), dels, plural(dels))
	return nil
}

type patch struct {
	files []fdiff.FilePatch
	msg   string
}

func (p patch) FilePatches() []fdiff.FilePatch { return p.files }
func (p patch) Message() string                { return p.msg }

type diffFile struct {
	hash plumbing.Hash
	mode filemode.FileMode
	path string
}

func (f diffFile) Hash() plumbing.Hash     { return f.hash }
func (f diffFile) Mode() filemode.FileMode { return f.mode }
func (f diffFile) Path() string            { return f.path }

type chunk struct {
	content string
	op      fdiff.Operation
}

func (c chunk) Content() string       { return c.content }
func (c chunk) Type() fdiff.Operation { return c.op }

type filePatch struct {
	from, to *diffFile
	binary   bool
	chunks   []fdiff.Chunk
}

func (p *filePatch) IsBinary() bool { return p.binary }

// Files returns nil interfaces (not typed nils) for the absent side: the encoder compares them
// with nil to write "new file" and "deleted file".
func (p *filePatch) Files() (fdiff.File, fdiff.File) {
	var from, to fdiff.File
	if p.from != nil {
		from = p.from
	}
	if p.to != nil {
		to = p.to
	}
	return from, to
}
func (p *filePatch) Chunks() []fdiff.Chunk { return p.chunks }

func (p *filePatch) counts() (add, del int) {
	for _, c := range p.chunks {
		n := strings.Count(c.Content(), "\n")
		if s := c.Content(); s != "" && !strings.HasSuffix(s, "\n") {
			n++
		}
		switch c.Type() {
		case fdiff.Add:
			add += n
		case fdiff.Delete:
			del += n
		}
	}
	return add, del
}

const modeGitlink = filemode.Submodule

// newFilePatch reads both sides' blobs and diffs them line by line.
func newFilePatch(objs *filesystem.Storage, ch snapshot.Change) (*filePatch, error) {
	p := &filePatch{}
	var src, dst string
	var err error
	if ch.Action != snapshot.Add {
		p.from = &diffFile{hash: ch.From.Hash, mode: ch.From.Mode, path: ch.Path}
		if src, p.binary, err = blobText(objs, ch.From); err != nil {
			return nil, err
		}
	}
	if ch.Action != snapshot.Delete {
		p.to = &diffFile{hash: ch.To.Hash, mode: ch.To.Mode, path: ch.Path}
		var bin bool
		if dst, bin, err = blobText(objs, ch.To); err != nil {
			return nil, err
		}
		p.binary = p.binary || bin
	}
	if p.binary || src == dst {
		return p, nil
	}
	for _, d := range udiff.Do(src, dst) {
		op := fdiff.Equal
		switch d.Type {
		case diffmatchpatch.DiffInsert:
			op = fdiff.Add
		case diffmatchpatch.DiffDelete:
			op = fdiff.Delete
		}
		p.chunks = append(p.chunks, chunk{content: d.Text, op: op})
	}
	return p, nil
}

// blobText returns an entry's content as text (a gitlink as git shows it), and whether it is
// binary (a NUL in its first 8000 bytes, git's rule).
func blobText(objs *filesystem.Storage, e snapshot.Entry) (string, bool, error) {
	if e.Mode == modeGitlink {
		return "Subproject commit " + e.Hash.String() + "\n", false, nil
	}
	blob, err := object.GetBlob(objs, e.Hash)
	if err != nil {
		return "", false, fmt.Errorf("read blob %s: %w", e.Hash, err)
	}
	r, err := blob.Reader()
	if err != nil {
		return "", false, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return "", false, err
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		return "", true, nil
	}
	return string(data), false, nil
}
