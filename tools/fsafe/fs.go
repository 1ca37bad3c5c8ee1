package fsafe

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"time"

	"github.com/agentd/agentd/tools"
)

// Limits bound what one file operation may move. Zero fields take the DefaultLimits value.
type Limits struct {
	// ReadBytes is the largest file Read returns whole; larger ones must be paged (ReadLines).
	ReadBytes int64
	// WriteBytes is the largest content Commit writes and the largest file PrepareWrite lets
	// the model change.
	WriteBytes int64
	// PageBytes bounds the text of one ReadLines page; LineBytes is the longest line it returns
	// before cutting it.
	PageBytes int
	LineBytes int
	// StaleBytes is the most current content a stale error carries.
	StaleBytes int
}

// DefaultLimits are sized for local models: a whole read is at most 256 KiB, a page 64 KiB of
// text with lines of at most 2000 bytes, a stale error 32 KiB, a written file 10 MiB.
func DefaultLimits() Limits {
	return Limits{ReadBytes: 256 << 10, WriteBytes: 10 << 20, PageBytes: 64 << 10, LineBytes: 2000, StaleBytes: 32 << 10}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.ReadBytes <= 0 {
		l.ReadBytes = d.ReadBytes
	}
	if l.WriteBytes <= 0 {
		l.WriteBytes = d.WriteBytes
	}
	if l.PageBytes <= 0 {
		l.PageBytes = d.PageBytes
	}
	if l.LineBytes <= 0 {
		l.LineBytes = d.LineBytes
	}
	if l.StaleBytes <= 0 {
		l.StaleBytes = d.StaleBytes
	}
	return l
}

// Writer writes a document that is open in an editor. The daemon implements it with
// workspace/applyEdit, so the change lands in the buffer (undoable there, unsaved text kept)
// instead of under it on disk.
type Writer interface {
	// Write replaces the whole content of the document at p with data. base is the stamp the
	// change was computed from (base.Version is the editor's document version): the write must
	// fail when the buffer is no longer at that version. It returns once the overlay shows the
	// new content, with the new stamp (a zero Hash is filled in from data). A refusal the model
	// should see is a *tools.Error.
	Write(ctx context.Context, p Path, data []byte, base Stamp) (Stamp, error)
}

// DiskWriter is the default Writer: an atomic disk write (WriteFile) with parents created.
type DiskWriter struct{}

// Write implements Writer.
func (DiskWriter) Write(_ context.Context, p Path, data []byte, _ Stamp) (Stamp, error) {
	return WriteFile(p, data, WriteOptions{MkdirAll: true})
}

// Options configure an FS. Every field is optional.
type Options struct {
	// Overlay is the editor's open documents: reads and stamps prefer them to the disk.
	Overlay Overlay
	// Writer writes documents the overlay has open. Nil: DiskWriter.
	Writer Writer
	// Queue serializes writes per file. Share one queue among every session of a workspace.
	// Nil: a queue private to this FS.
	Queue *tools.MutationQueue
	// Limits bound sizes; zero fields take DefaultLimits.
	Limits Limits
}

// FS is what the file tools use: one per session, over a shared Workspace. It bundles
// confinement (Workspace), what the model has read (ReadState), the editor overlay and writer,
// the per-file mutation queue, and size limits. It is safe for concurrent use.
//
// The flows:
//
//	read tool:   FS.Read (whole, small files) or FS.ReadLines (pages) — both record a stamp.
//	edit/write:  FS.PrepareWrite (resolve, read-first and freshness check; returns the current
//	             content) → compute new content → preview → gate → FS.Commit (lock, re-check
//	             against what the change was computed from, write, refresh the stamp).
//	ls/glob/grep: FS.Resolve, then ReadDir / WalkDir / FS.ReadLines.
type FS struct {
	ws      *Workspace
	state   *ReadState
	overlay Overlay
	writer  Writer
	queue   *tools.MutationQueue
	limits  Limits
	current StampSource // overlay, then disk
}

// New returns an FS for one session over ws.
func New(ws *Workspace, opt Options) *FS {
	f := &FS{ws: ws, overlay: opt.Overlay, writer: opt.Writer, queue: opt.Queue, limits: opt.Limits.withDefaults()}
	if f.writer == nil {
		f.writer = DiskWriter{}
	}
	if f.queue == nil {
		f.queue = &tools.MutationQueue{}
	}
	f.current = Sources(OverlaySource{opt.Overlay}, DiskSource{Max: f.limits.WriteBytes})
	f.state = NewReadState(f.current)
	f.state.staleMax = f.limits.StaleBytes
	return f
}

// Workspace returns the workspace.
func (f *FS) Workspace() *Workspace { return f.ws }

// State returns this session's read state.
func (f *FS) State() *ReadState { return f.state }

// Limits returns the limits in force.
func (f *FS) Limits() Limits { return f.limits }

// Resolve resolves a path the model gave (see Workspace.Resolve).
func (f *FS) Resolve(path string) (Path, error) { return f.ws.Resolve(path) }

// Content is a whole file as the model read it.
type Content struct {
	Path Path
	Data []byte
	// Stamp says where Data came from (disk, or the editor buffer with its version).
	Stamp Stamp
}

// Read returns the whole content of the file at path — the editor's buffer when the document is
// open, else the disk — and records it as read whole. A file larger than Limits.ReadBytes is an
// oversized error telling the model to page (ReadLines).
func (f *FS) Read(ctx context.Context, path string) (*Content, error) {
	if err := ctx.Err(); err != nil {
		return nil, tools.Errorf(tools.Cancelled, "cancelled")
	}
	p, err := f.ws.Resolve(path)
	if err != nil {
		return nil, err
	}
	var c *Content
	if doc, ok := f.document(p); ok {
		if int64(len(doc.Content)) > f.limits.ReadBytes {
			return nil, oversizedRead(p, int64(len(doc.Content)), f.limits.ReadBytes)
		}
		c = &Content{Path: p, Data: doc.Content, Stamp: StampOf(SourceEditor, doc.Version, doc.Content)}
	} else {
		data, st, err := ReadFile(p, f.limits.ReadBytes)
		if err != nil {
			return nil, err
		}
		c = &Content{Path: p, Data: data, Stamp: st}
	}
	f.state.RecordRead(p, c.Stamp, false)
	return c, nil
}

// ReadLines returns up to limit lines (limit <= 0: as many as fit) of the file at path starting
// at the 0-based line offset, from the editor's buffer when the document is open. The page is
// bounded by Limits.PageBytes and long lines are cut at Limits.LineBytes. The read is recorded
// as partial; pages of the same content add up, and once every line was seen (uncut) the file
// counts as read whole. An offset past the end is an invalid_args error.
func (f *FS) ReadLines(ctx context.Context, path string, offset, limit int) (*Page, error) {
	if err := ctx.Err(); err != nil {
		return nil, tools.Errorf(tools.Cancelled, "cancelled")
	}
	p, err := f.ws.Resolve(path)
	if err != nil {
		return nil, err
	}
	sp := pageSpec{offset: offset, limit: limit, pageBytes: f.limits.PageBytes, lineBytes: f.limits.LineBytes, scanAll: true}
	var pg Page
	if doc, ok := f.document(p); ok {
		pg, _, _, err = scanPage(bytes.NewReader(doc.Content), sp)
		pg.Stamp = StampOf(SourceEditor, doc.Version, doc.Content)
	} else {
		file, info, oerr := p.openRegular()
		if oerr != nil {
			return nil, oerr
		}
		sp.scanAll = info.Size <= f.limits.WriteBytes
		var n int64
		var sum [sha256.Size]byte
		pg, n, sum, err = scanPage(file, sp)
		file.Close()
		pg.Stamp = Stamp{Source: SourceDisk, Size: n, Hash: sum, ModTime: info.ModTime, Dev: info.Dev, Inode: info.Inode, Links: info.Links, Taken: time.Now()}
		if !sp.scanAll {
			pg.Stamp.Size, pg.Stamp.Hash = info.Size, [sha256.Size]byte{}
		}
	}
	if err != nil {
		return nil, mapErr(p, err)
	}
	pg.Path = p
	if pg.TotalLines >= 0 && offset > 0 && offset >= pg.TotalLines {
		return nil, tools.Errorf(tools.InvalidArgs, "offset %d is past the end of %s, which has %d lines", offset, p.rel, pg.TotalLines)
	}
	switch {
	case pg.TotalLines < 0:
		// Too large to hash: such a file can be paged but never changed, so nothing to record.
	case cutAny(pg.Lines):
		f.state.RecordRead(p, pg.Stamp, true)
	default:
		f.state.RecordLines(p, pg.Stamp, pg.Offset, pg.Offset+len(pg.Lines), pg.TotalLines)
	}
	return &pg, nil
}

func cutAny(ls []Line) bool {
	for _, l := range ls {
		if l.Cut {
			return true
		}
	}
	return false
}

// document returns the overlay's open document at p.
func (f *FS) document(p Path) (Document, bool) {
	if f.overlay == nil {
		return Document{}, false
	}
	return f.overlay.Document(p.abs)
}

// Target is a file about to be written, as PrepareWrite checked it.
type Target struct {
	Path Path
	// Exists is set when the file existed. Content is then its current content — the editor's
	// buffer for an open document — which equals what the model read: compute the change from
	// it. Base is its stamp.
	Exists  bool
	Content []byte
	Base    Stamp
	// perm is the mode of a new file (PrepareReview); 0: WriteFile's default.
	perm fs.FileMode
}

// PrepareWrite resolves path for a change and checks that the model may make it: a new file
// needs nothing; an existing one must be a regular file no larger than Limits.WriteBytes that the
// model has read whole and that has not changed since (read_first / stale errors, see
// ReadState.CheckWrite). It takes no lock and changes nothing: call it from Validate or Preview,
// then Commit after the gate.
func (f *FS) PrepareWrite(ctx context.Context, path string) (*Target, error) {
	return f.prepare(ctx, path, true)
}

// PrepareReview is PrepareWrite for a change the user reviews that the model did not make
// through the file tools — a command's change held from its copy-on-write layer: the model
// need not have read the file. A new file gets the permission bits perm (0: 0o644); Commit
// still refuses to write over a file that changed since.
func (f *FS) PrepareReview(ctx context.Context, path string, perm fs.FileMode) (*Target, error) {
	t, err := f.prepare(ctx, path, false)
	if err == nil {
		t.perm = perm.Perm()
	}
	return t, err
}

func (f *FS) prepare(ctx context.Context, path string, readFirst bool) (*Target, error) {
	if err := ctx.Err(); err != nil {
		return nil, tools.Errorf(tools.Cancelled, "cancelled")
	}
	p, err := f.ws.Resolve(path)
	if err != nil {
		return nil, err
	}
	if p.rel == "." || (p.exists && p.info.Mode.IsDir()) {
		return nil, tools.Errorf(tools.InvalidArgs, "%s is a directory, not a file", p.rel)
	}
	cur, content, exists, err := f.stamp(p)
	if err != nil {
		return nil, err
	}
	if !exists {
		return &Target{Path: p}, nil
	}
	if cur.Size > f.limits.WriteBytes {
		return nil, tools.Errorf(tools.Oversized, "%s is %s, more than the %s limit for files agentd changes",
			p.rel, sizeText(cur.Size), sizeText(f.limits.WriteBytes))
	}
	if !readFirst {
		return &Target{Path: p, Exists: true, Content: content, Base: cur}, nil
	}
	if err := f.state.check(p, cur, content); err != nil {
		return nil, err
	}
	return &Target{Path: p, Exists: true, Content: content, Base: cur}, nil
}

// stamp returns the current state of p (overlay, then disk) and whether the file exists.
func (f *FS) stamp(p Path) (Stamp, []byte, bool, error) {
	st, content, _, err := f.current.Stamp(p)
	if errors.Is(err, fs.ErrNotExist) || tools.TypeOf(err, "") == tools.NotFound {
		return Stamp{}, nil, false, nil
	}
	if err != nil {
		return Stamp{}, nil, false, err
	}
	return st, content, true, nil
}

// Commit writes data to the target PrepareWrite returned. Under the file's mutation lock it
// re-checks, right before writing (after any approval wait), that the file is still exactly what
// the change was computed from (t.Base, or still absent for a new file); if not, it fails with a
// stale error carrying the current content (which then counts as read). A document open in the
// editor is written through the Writer, anything else atomically to disk (parents created; the
// rename is made durable by the next SyncDirs, see dirsync.go). The
// new content is recorded as read, so a second edit in a row needs no read. Content larger than
// Limits.WriteBytes is an oversized error.
func (f *FS) Commit(ctx context.Context, t *Target, data []byte) (Stamp, error) {
	p := t.Path
	if p.root == nil {
		return Stamp{}, tools.Errorf(tools.InvalidArgs, "the target was not prepared")
	}
	if int64(len(data)) > f.limits.WriteBytes {
		return Stamp{}, tools.Errorf(tools.Oversized, "the new content of %s is %s, more than the %s limit for a write",
			p.rel, sizeText(int64(len(data))), sizeText(f.limits.WriteBytes))
	}
	unlock := f.queue.Lock(p.abs)
	defer unlock()
	if err := ctx.Err(); err != nil {
		return Stamp{}, tools.Errorf(tools.Cancelled, "cancelled before %s was written", p.rel)
	}
	cur, content, exists, err := f.stamp(p)
	switch {
	case err != nil:
		return Stamp{}, err
	case !exists && t.Exists:
		f.state.Forget(p)
		return Stamp{}, tools.Errorf(tools.Stale, "%s was deleted after your change was prepared; nothing was written", p.rel)
	case exists && !t.Exists:
		return Stamp{}, f.state.stale(p, cur, content, "was created by someone else after your change was prepared")
	case exists && !cur.SameContent(t.Base):
		return Stamp{}, f.state.stale(p, cur, content, "changed after your change was prepared (while it waited for approval)")
	}
	var st Stamp
	if exists && cur.Source == SourceEditor {
		st, err = f.writer.Write(ctx, p, data, cur)
		if err == nil && st.Hash == ([sha256.Size]byte{}) {
			st = StampOf(SourceEditor, st.Version, data)
		}
	} else {
		st, err = writeHooked(ctx, p, data, WriteOptions{Perm: t.perm, MkdirAll: true, deferDirSync: true})
	}
	if err != nil {
		return Stamp{}, err
	}
	f.state.RecordWrite(p, st)
	return st, nil
}
