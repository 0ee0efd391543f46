package attr

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// Config is what conversion needs from git config; the caller reads it.
type Config struct {
	AutoCRLF string // core.autocrlf: "", "true", "false", "input" (any git boolean spelling)
	EOL      string // core.eol: "", "lf", "crlf", "native"
	Filters  map[string]FilterDriver

	// Stderr receives filter commands' standard error, which git lets
	// through to the terminal. Nil discards it (a failing single-file
	// filter's last lines still appear in its error).
	Stderr io.Writer
	// Warn, if set, hears about a filter that failed but is not required:
	// git prints an error and carries on with the unfiltered content.
	Warn func(error)
}

// FilterDriver is one filter.<name>.* section. A driver present in
// Config.Filters is "configured" in git's sense even with no commands: a
// required one then fails every conversion.
type FilterDriver struct {
	Clean, Smudge, Process string
	Required               bool
}

// crlfAction is convert.c's enum convert_crlf_action.
type crlfAction int

const (
	crlfUndefined crlfAction = iota
	crlfBinary
	crlfText
	crlfTextInput
	crlfTextCRLF
	crlfAuto
	crlfAutoInput
	crlfAutoCRLF
)

func (a crlfAction) isAuto() bool {
	return a == crlfAuto || a == crlfAutoInput || a == crlfAutoCRLF
}

type eolKind int

const (
	eolUnset eolKind = iota
	eolLF
	eolCRLF
)

type autoCRLF int

const (
	autoCRLFFalse autoCRLF = iota
	autoCRLFTrue
	autoCRLFInput
)

// Converter applies git's content conversions for one worktree. It is safe
// for concurrent use; long-running filter processes it starts live until
// Close.
type Converter struct {
	cfg      Config
	root     string
	autocrlf autoCRLF
	eolCRLF  bool // convert.c's text_eol_is_crlf()

	mu    sync.Mutex
	procs map[string]*filterProcess
}

// NewConverter returns a Converter for the worktree at root, where filter
// commands run.
func NewConverter(cfg Config, root string) *Converter {
	c := &Converter{cfg: cfg, root: root, procs: map[string]*filterProcess{}}
	switch v := strings.TrimSpace(cfg.AutoCRLF); {
	case strings.EqualFold(v, "input"):
		c.autocrlf = autoCRLFInput
	case parseBool(v):
		c.autocrlf = autoCRLFTrue
	}
	nativeCRLF := runtime.GOOS == "windows"
	switch {
	case c.autocrlf == autoCRLFTrue:
		c.eolCRLF = true
	case c.autocrlf == autoCRLFInput:
		c.eolCRLF = false
	case strings.EqualFold(cfg.EOL, "crlf"):
		c.eolCRLF = true
	case strings.EqualFold(cfg.EOL, "lf"):
		c.eolCRLF = false
	default:
		// "native", unset, and values git does not know.
		c.eolCRLF = nativeCRLF
	}
	return c
}

// parseBool is git's boolean config parsing for a value that is present;
// anything git would reject counts as false.
func parseBool(v string) bool {
	switch strings.ToLower(v) {
	case "true", "yes", "on":
		return true
	case "", "false", "no", "off":
		return false
	}
	n, err := strconv.Atoi(v)
	return err == nil && n != 0
}

// Close stops the long-running filter processes, as git does when it
// exits: their stdin is closed and they are waited for.
func (c *Converter) Close() error {
	c.mu.Lock()
	procs := c.procs
	c.procs = map[string]*filterProcess{}
	c.mu.Unlock()
	for _, p := range procs {
		p.mu.Lock()
		p.stop()
		p.mu.Unlock()
	}
	return nil
}

func stateAction(s State) crlfAction {
	switch s {
	case Set:
		return crlfText
	case Unset:
		return crlfBinary
	case Input:
		return crlfTextInput
	case Auto:
		return crlfAuto
	}
	return crlfUndefined
}

// action is convert.c's convert_attrs decision: text, else crlf, refined
// by eol, then text resolved by core.eol/core.autocrlf, and no attribute at
// all resolved by core.autocrlf.
func (c *Converter) action(a Attrs) crlfAction {
	act := stateAction(a.Text)
	if act == crlfUndefined {
		act = stateAction(a.Crlf)
	}
	if act != crlfBinary {
		switch {
		case act == crlfAuto && a.EOL == "lf":
			act = crlfAutoInput
		case act == crlfAuto && a.EOL == "crlf":
			act = crlfAutoCRLF
		case a.EOL == "lf":
			act = crlfTextInput
		case a.EOL == "crlf":
			act = crlfTextCRLF
		}
	}
	if act == crlfText {
		if c.eolCRLF {
			act = crlfTextCRLF
		} else {
			act = crlfTextInput
		}
	}
	if act == crlfUndefined {
		switch c.autocrlf {
		case autoCRLFFalse:
			act = crlfBinary
		case autoCRLFTrue:
			act = crlfAutoCRLF
		case autoCRLFInput:
			act = crlfAutoInput
		}
	}
	return act
}

// outputEOL is convert.c's output_eol.
func (c *Converter) outputEOL(act crlfAction) eolKind {
	switch act {
	case crlfBinary:
		return eolUnset
	case crlfTextCRLF, crlfUndefined, crlfAutoCRLF:
		return eolCRLF
	case crlfTextInput, crlfAutoInput:
		return eolLF
	}
	if c.eolCRLF {
		return eolCRLF
	}
	return eolLF
}

func (c *Converter) driver(a Attrs) (FilterDriver, bool) {
	if a.Filter == "" {
		return FilterDriver{}, false
	}
	d, ok := c.cfg.Filters[a.Filter]
	return d, ok
}

// NeedsClean reports whether content must go through Clean (false: the
// file's bytes are the blob). It is git's would_convert_to_git: true does
// not promise that the content changes.
func (c *Converter) NeedsClean(a Attrs) bool {
	_, drv := c.driver(a)
	return drv || a.Ident || c.action(a) != crlfBinary
}

// NeedsSmudge reports whether a blob must go through Smudge on its way to
// the worktree (false: write the blob's bytes as they are).
func (c *Converter) NeedsSmudge(a Attrs) bool {
	_, drv := c.driver(a)
	return drv || a.Ident || c.outputEOL(c.action(a)) == eolCRLF
}

func (c *Converter) warn(err error) {
	if c.cfg.Warn != nil {
		c.cfg.Warn(err)
	}
}

// applyFilter runs the driver's command for capName ("clean" or "smudge").
// Unlike git, which prefers filter.<name>.process whenever it is set, a
// configured clean/smudge command wins here and process is used only when
// the direction has no command of its own (git-lfs configures all three
// and both ways give the same bytes).
func (c *Converter) applyFilter(ctx context.Context, drv FilterDriver, name, capName, path string, in content, out io.Writer) error {
	cmd := drv.Clean
	if capName == "smudge" {
		cmd = drv.Smudge
	}
	switch {
	case cmd != "":
		return c.runSingleFileFilter(ctx, cmd, path, in.reader(), out)
	case drv.Process != "":
		return c.processFilter(ctx, drv.Process, capName, path, in.reader(), out)
	}
	return fmt.Errorf("filter '%s' has no %s command", name, capName)
}

// Clean turns worktree content into blob content exactly as `git add`
// does: the clean filter, then CRLF→LF per text/eol/core.autocrlf (with
// git's text=auto binary detection and, for text=auto, the rule that a
// path whose index blob already has CRLF is left alone), then ident.
//
// indexHasCR is called lazily and only when that rule decides; it should
// answer BlobHasCRLF for the blob the index holds at path (nil: no index
// entry). src must be a regular file; it is read from offset 0 whatever
// its position, Clean never closes it, and the returned reader may read it
// until closed. Reading fails with an error if src changes size meanwhile,
// so the announced size never lies about the bytes delivered. Memory stays
// bounded: an end-of-line conversion is streamed with its size computed in
// a first pass, and filter output or ident-rewritten content is spooled to
// temporary files that Close removes.
func (c *Converter) Clean(ctx context.Context, path string, a Attrs, src *os.File, indexHasCR func() bool) (io.ReadCloser, int64, error) {
	st, err := src.Stat()
	if err != nil {
		return nil, 0, err
	}
	sp := &spool{}
	fail := func(err error) (io.ReadCloser, int64, error) {
		sp.release()
		return nil, 0, err
	}
	cur := content{src, st.Size()}
	// A stream that still reads src checks at its end that src kept the
	// size the blob size was computed from.
	srcUnchanged := func() error {
		st2, err := src.Stat()
		if err != nil {
			return err
		}
		if st2.Size() != st.Size() {
			return errChanged
		}
		return nil
	}

	if drv, ok := c.driver(a); ok {
		out, err := sp.create()
		if err != nil {
			return fail(err)
		}
		ferr := c.applyFilter(ctx, drv, a.Filter, "clean", path, cur, out)
		switch {
		case ferr == nil:
			size, err := out.Seek(0, io.SeekCurrent)
			if err != nil {
				return fail(err)
			}
			cur = content{out, size}
		case ctx.Err() != nil:
			return fail(ferr) // says which filter was stopped, and why
		case drv.Required:
			return fail(fmt.Errorf("%s: clean filter '%s' failed: %w", path, a.Filter, ferr))
		default:
			c.warn(fmt.Errorf("%s: clean filter '%s' failed, adding the file unfiltered: %w", path, a.Filter, ferr))
		}
	}

	var final io.Reader
	finalSize := cur.size
	if act := c.action(a); act != crlfBinary && cur.size > 0 {
		stats, err := gatherStats(ctxReader(ctx, cur.reader()))
		if err != nil {
			return fail(err)
		}
		convert := stats.crlf > 0
		if act.isAuto() {
			if stats.isBinary() {
				convert = false
			} else if convert && indexHasCR != nil && indexHasCR() {
				convert = false
			}
		}
		if convert {
			size := cur.size - int64(stats.crlf)
			conv := &exactReader{r: newCRLFToLF(cur.reader(), act.isAuto()), n: size}
			if cur.r == io.ReaderAt(src) {
				conv.atEOF = srcUnchanged
			}
			if a.Ident {
				f, err := sp.create()
				if err != nil {
					return fail(err)
				}
				if _, err := io.Copy(f, ctxReader(ctx, conv)); err != nil {
					return fail(err)
				}
				cur = content{f, size}
			} else {
				final, finalSize = conv, size
			}
		}
	}
	if a.Ident && final == nil && cur.size > 0 {
		f, err := sp.create()
		if err != nil {
			return fail(err)
		}
		if err := identToGit(cur, f); err != nil {
			return fail(err)
		}
		size, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return fail(err)
		}
		cur = content{f, size}
		finalSize = size
	}
	if final == nil {
		e := &exactReader{r: cur.reader(), n: cur.size}
		if cur.r == io.ReaderAt(src) {
			e.atEOF = srcUnchanged
		}
		final, finalSize = e, cur.size
	}
	return &spoolReader{r: ctxReader(ctx, final), sp: sp}, finalSize, nil
}

// stage is content on its way to the worktree: a function that writes it,
// and the file holding it when it is nothing more than that file.
type stage struct {
	write func(io.Writer) error
	file  *content
}

func fileStage(c content) stage {
	return stage{write: func(w io.Writer) error { return c.copyRange(w, 0, c.size) }, file: &c}
}

// materialize returns the stage's bytes as a re-readable file.
func (s stage) materialize(sp *spool) (content, error) {
	if s.file != nil {
		return *s.file, nil
	}
	f, err := sp.create()
	if err != nil {
		return content{}, err
	}
	if err := s.write(f); err != nil {
		return content{}, err
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return content{}, err
	}
	return content{f, size}, nil
}

// Smudge turns blob content into worktree content as `git checkout` does:
// ident expansion, LF→CRLF where git would, then the smudge filter. A
// failing filter writes nothing to w. The blob is streamed; it is spooled
// to a temporary file only when git would need it whole (ident needs the
// blob id, text=auto with CRLF output needs the whole file's statistics, a
// filter's failure falls back to its input).
func (c *Converter) Smudge(ctx context.Context, path string, a Attrs, blob io.Reader, w io.Writer) error {
	sp := &spool{}
	defer sp.release()
	act := c.action(a)
	drv, hasDrv := c.driver(a)
	// convert.c's classify_conv_attrs: checkout streams unless a filter
	// command or text=auto with CRLF output needs the blob in memory, and
	// the streaming and in-memory ident rewrites differ in corner cases.
	streamable := !(hasDrv && (drv.Clean != "" || drv.Smudge != "" || drv.Process != "")) &&
		act != crlfAuto && act != crlfAutoCRLF
	blob = ctxReader(ctx, blob)

	cur := stage{write: func(w io.Writer) error {
		_, err := io.Copy(w, blob)
		return err
	}}
	if a.Ident {
		raw, err := cur.materialize(sp)
		if err != nil {
			return err
		}
		oid, err := blobID(raw)
		if err != nil {
			return err
		}
		if streamable {
			cur = stage{write: func(w io.Writer) error { return identStream(raw, oid, w) }}
		} else {
			cur = stage{write: func(w io.Writer) error { return identToWorktree(raw, oid, w) }}
		}
	}

	if c.outputEOL(act) == eolCRLF {
		if !streamable && act.isAuto() {
			// will_convert_lf_to_crlf looks at the whole file first.
			f, err := cur.materialize(sp)
			if err != nil {
				return err
			}
			stats, err := gatherStats(f.reader())
			if err != nil {
				return err
			}
			if stats.lonelf > 0 && stats.lonecr == 0 && stats.crlf == 0 && !stats.isBinary() {
				cur = stage{write: func(w io.Writer) error { return f.copyRange(newLFToCRLF(w), 0, f.size) }}
			} else {
				cur = fileStage(f)
			}
		} else {
			// Without guessing, the conversion is the identity when
			// there is no lone LF, so it needs no first pass.
			prev := cur
			cur = stage{write: func(w io.Writer) error { return prev.write(newLFToCRLF(w)) }}
		}
	}

	if !hasDrv {
		return cur.write(w)
	}
	in, err := cur.materialize(sp)
	if err != nil {
		return err
	}
	out, err := sp.create()
	if err != nil {
		return err
	}
	result := in
	if ferr := c.applyFilter(ctx, drv, a.Filter, "smudge", path, in, out); ferr == nil {
		size, err := out.Seek(0, io.SeekCurrent)
		if err != nil {
			return err
		}
		result = content{out, size}
	} else if ctx.Err() != nil {
		return ferr // says which filter was stopped, and why
	} else if drv.Required {
		return fmt.Errorf("%s: smudge filter %s failed: %w", path, a.Filter, ferr)
	} else {
		c.warn(fmt.Errorf("%s: smudge filter %s failed, writing the file unfiltered: %w", path, a.Filter, ferr))
	}
	return result.copyRange(w, 0, result.size)
}

// blobID is the SHA-1 object id git gives content as a blob.
func blobID(c content) (string, error) {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", c.size)
	if _, err := io.Copy(h, c.reader()); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// spool owns the temporary files of one conversion.
type spool struct {
	mu    sync.Mutex
	files []*os.File
}

func (s *spool) create() (*os.File, error) {
	f, err := os.CreateTemp("", "mulligan-attr-*")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.files = append(s.files, f)
	s.mu.Unlock()
	return f, nil
}

func (s *spool) release() error {
	s.mu.Lock()
	files := s.files
	s.files = nil
	s.mu.Unlock()
	var first error
	for _, f := range files {
		f.Close()
		if err := os.Remove(f.Name()); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// spoolReader is Clean's result: closing it removes the spool files.
type spoolReader struct {
	r  io.Reader
	sp *spool
}

func (s *spoolReader) Read(p []byte) (int, error) { return s.r.Read(p) }
func (s *spoolReader) Close() error               { return s.sp.release() }

type ctxRead struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxRead) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}

func ctxReader(ctx context.Context, r io.Reader) io.Reader {
	if ctx.Done() == nil {
		return r
	}
	return ctxRead{ctx, r}
}
