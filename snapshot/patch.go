package snapshot

import (
	"bytes"
	"io"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	fdiff "github.com/go-git/go-git/v5/plumbing/format/diff"
	udiff "github.com/go-git/go-git/v5/utils/diff"
	"github.com/sergi/go-diff/diffmatchpatch"
)

// FilePatch is one changed path's line diff, as `git diff` shows it.
type FilePatch struct {
	from, to *diffFile
	binary   bool
	chunks   []fdiff.Chunk
}

// Patch reads both sides' blobs of ch and diffs them line by line.
func (r *Repo) Patch(ch Change) (*FilePatch, error) {
	p := &FilePatch{}
	var src, dst string
	var err error
	if ch.Action != Add {
		p.from = &diffFile{hash: ch.From.Hash, mode: ch.From.Mode, path: ch.Path}
		if src, p.binary, err = r.blobText(ch.From); err != nil {
			return nil, err
		}
	}
	if ch.Action != Delete {
		p.to = &diffFile{hash: ch.To.Hash, mode: ch.To.Mode, path: ch.Path}
		var bin bool
		if dst, bin, err = r.blobText(ch.To); err != nil {
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

// Binary reports whether either side is binary (a NUL in its first 8000 bytes, git's rule).
func (p *FilePatch) Binary() bool { return p.binary }

// Counts returns the lines added and deleted.
func (p *FilePatch) Counts() (add, del int) {
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

// WriteUnified writes patches as `git diff` does, colored when color is set.
func WriteUnified(w io.Writer, patches []*FilePatch, color bool) error {
	enc := fdiff.NewUnifiedEncoder(w, fdiff.DefaultContextLines)
	if color {
		enc.SetColor(fdiff.NewColorConfig())
	}
	files := make([]fdiff.FilePatch, len(patches))
	for i, p := range patches {
		files[i] = p
	}
	return enc.Encode(patch{files: files})
}

// The go-git encoder's interfaces.

type patch struct {
	files []fdiff.FilePatch
	msg   string
}

func (p patch) FilePatches() []fdiff.FilePatch { return p.files }
func (p patch) Message() string                { return p.msg }

type diffFile struct {
	hash Hash
	mode filemode.FileMode
	path string
}

func (f diffFile) Hash() Hash              { return f.hash }
func (f diffFile) Mode() filemode.FileMode { return f.mode }
func (f diffFile) Path() string            { return f.path }

type chunk struct {
	content string
	op      fdiff.Operation
}

func (c chunk) Content() string       { return c.content }
func (c chunk) Type() fdiff.Operation { return c.op }

// IsBinary is the encoder's name for Binary.
func (p *FilePatch) IsBinary() bool { return p.binary }

// Files returns nil interfaces (not typed nils) for the absent side: the encoder compares them
// with nil to write "new file" and "deleted file".
func (p *FilePatch) Files() (fdiff.File, fdiff.File) {
	var from, to fdiff.File
	if p.from != nil {
		from = p.from
	}
	if p.to != nil {
		to = p.to
	}
	return from, to
}

// Chunks is the encoder's view of the line diff.
func (p *FilePatch) Chunks() []fdiff.Chunk { return p.chunks }

// blobText returns an entry's content as text (a gitlink as git shows it), and whether it is
// binary (a NUL in its first 8000 bytes, git's rule).
func (r *Repo) blobText(e Entry) (string, bool, error) {
	if e.Mode == filemode.Submodule {
		return "Subproject commit " + e.Hash.String() + "\n", false, nil
	}
	data, err := r.ReadBlob(e.Hash, 0)
	if err != nil {
		return "", false, err
	}
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		return "", true, nil
	}
	return string(data), false, nil
}
