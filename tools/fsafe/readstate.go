package fsafe

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/agentd/agentd/tools"
)

// Source says where a stamp's content came from.
type Source string

const (
	// SourceDisk is the file on disk.
	SourceDisk Source = "disk"
	// SourceEditor is an editor's buffer for a document open in it (the overlay).
	SourceEditor Source = "editor"
)

// Stamp fingerprints one version of a file's content. Content equality is decided by Size and
// Hash alone; the other fields say where the version came from (a touch or a save of identical
// text is not a change).
type Stamp struct {
	Source Source
	// Version is the editor's document version (SourceEditor); 0 for disk.
	Version int64
	// Size is the length of the whole content in bytes; Hash is its SHA-256.
	Size int64
	Hash [sha256.Size]byte
	// ModTime, Dev, Inode and Links (the hard-link count) describe the disk file (SourceDisk).
	// A tool may compare Links with the Path.Info its permission was computed from: a file that
	// became hard-linked since may be an outside file's content.
	ModTime    time.Time
	Dev, Inode uint64
	Links      uint64
	// Taken is when the stamp was made.
	Taken time.Time
}

// SameContent reports whether s and o fingerprint the same bytes.
func (s Stamp) SameContent(o Stamp) bool { return s.Size == o.Size && s.Hash == o.Hash }

// HashHex is the content hash in hex, for approval bindings and logs.
func (s Stamp) HashHex() string { return hex.EncodeToString(s.Hash[:]) }

// StampOf fingerprints content that is entirely in memory.
func StampOf(src Source, version int64, content []byte) Stamp {
	return Stamp{Source: src, Version: version, Size: int64(len(content)), Hash: sha256.Sum256(content), Taken: time.Now()}
}

// LineRange is a range of 0-based line indexes, To exclusive.
type LineRange struct{ From, To int }

// Record is what the model has seen of one file in this session.
type Record struct {
	Stamp Stamp
	// Partial is set when the model has not seen the whole content of Stamp.
	Partial bool
	// Lines are the line ranges seen by paged reads of this content (sorted, merged), and
	// TotalLines its line count; when they cover every line the record becomes whole.
	Lines      []LineRange
	TotalLines int
}

// StampSource tells the current state of a file. Sources are chained (see Sources): the first
// that handles a path answers. The daemon can add one for editor buffers; the default is the disk.
type StampSource interface {
	// Stamp returns the current stamp of p and its content: all of it, or its first bytes when
	// it is larger than the source's cap (Stamp.Size and Hash always cover the whole). handled
	// is false when the source has no say about p. A missing file is an error satisfying
	// errors.Is(err, fs.ErrNotExist).
	Stamp(p Path) (s Stamp, content []byte, handled bool, err error)
}

// Sources chains stamp sources: the first that handles a path answers.
func Sources(srcs ...StampSource) StampSource { return chain(srcs) }

type chain []StampSource

func (c chain) Stamp(p Path) (Stamp, []byte, bool, error) {
	for _, s := range c {
		if s == nil {
			continue
		}
		if st, content, ok, err := s.Stamp(p); ok || err != nil {
			return st, content, true, err
		}
	}
	return Stamp{}, nil, false, nil
}

// DiskSource stamps the file on disk through the workspace root. It handles every path.
type DiskSource struct {
	// Max is the most content returned (the hash still covers all of it). Zero means
	// DefaultLimits().WriteBytes.
	Max int64
}

// Stamp implements StampSource.
func (d DiskSource) Stamp(p Path) (Stamp, []byte, bool, error) {
	limit := d.Max
	if limit <= 0 {
		limit = DefaultLimits().WriteBytes
	}
	st, content, err := diskStamp(p, limit)
	return st, content, true, err
}

// diskStamp reads the file at p through its root, hashing all of it and keeping at most limit
// bytes. The stamp describes exactly the bytes read.
func diskStamp(p Path, limit int64) (Stamp, []byte, error) {
	f, info, err := p.openRegular()
	if err != nil {
		return Stamp{}, nil, err
	}
	defer f.Close()
	h := sha256.New()
	keep := &capBuffer{max: limit}
	if info.Size <= limit {
		keep.buf = make([]byte, 0, info.Size)
	}
	n, err := io.Copy(io.MultiWriter(h, keep), f)
	if err != nil {
		return Stamp{}, nil, mapErr(p, err)
	}
	st := Stamp{Source: SourceDisk, Size: n, ModTime: info.ModTime, Dev: info.Dev, Inode: info.Inode, Links: info.Links, Taken: time.Now()}
	h.Sum(st.Hash[:0])
	return st, keep.buf, nil
}

// capBuffer keeps the first max bytes written to it and discards the rest.
type capBuffer struct {
	buf []byte
	max int64
}

func (c *capBuffer) Write(b []byte) (int, error) {
	if room := c.max - int64(len(c.buf)); room > 0 {
		c.buf = append(c.buf, b[:min(int64(len(b)), room)]...)
	}
	return len(b), nil
}

// Overlay gives the editor's view of documents open in it: the daemon keeps it from the LSP
// didOpen/didChange/didClose notifications. Reads honour it (an open document is read from the
// buffer, unsaved text included), stamps of open documents use its version and content, and
// FS.Commit routes writes of open documents to its Writer.
type Overlay interface {
	// Document returns the open document whose file is at the canonical absolute path abs
	// (keys must be canonicalized the same way, e.g. with tools.Canonical), or false when the
	// document is not open. The returned content must not be modified by either side.
	Document(abs string) (Document, bool)
}

// Document is an editor buffer's state.
type Document struct {
	Version int64
	Content []byte
}

// OverlaySource stamps documents open in the overlay and leaves other paths to the next source.
type OverlaySource struct{ Overlay Overlay }

// Stamp implements StampSource.
func (o OverlaySource) Stamp(p Path) (Stamp, []byte, bool, error) {
	if o.Overlay == nil {
		return Stamp{}, nil, false, nil
	}
	doc, ok := o.Overlay.Document(p.abs)
	if !ok {
		return Stamp{}, nil, false, nil
	}
	return StampOf(SourceEditor, doc.Version, doc.Content), doc.Content, true, nil
}

// ReadState records, for one session, what the model has read of each file, keyed by canonical
// absolute path. It is safe for concurrent use.
type ReadState struct {
	source   StampSource
	staleMax int

	mu   sync.Mutex
	recs map[string]Record
}

// NewReadState returns an empty read state whose CheckWrite asks src for the current state of a
// file (nil: the disk).
func NewReadState(src StampSource) *ReadState {
	if src == nil {
		src = DiskSource{}
	}
	return &ReadState{source: src, staleMax: DefaultLimits().StaleBytes, recs: make(map[string]Record)}
}

// RecordRead records that the model read the content fingerprinted by s, whole or in part. A
// partial read of content already recorded keeps the record (whole, or the pages seen).
func (rs *ReadState) RecordRead(p Path, s Stamp, partial bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if old, ok := rs.recs[p.abs]; ok && partial && old.Stamp.SameContent(s) {
		return
	}
	rs.recs[p.abs] = Record{Stamp: s, Partial: partial}
}

// RecordLines records a paged read of lines [from, to) of content s that has total lines (-1 when
// unknown). Pages of the same content add up: once they cover every line, the record is whole.
func (rs *ReadState) RecordLines(p Path, s Stamp, from, to, total int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rec, ok := rs.recs[p.abs]
	if ok && rec.Stamp.SameContent(s) && !rec.Partial {
		return
	}
	if !ok || !rec.Stamp.SameContent(s) {
		rec = Record{Stamp: s, Partial: true}
	}
	rec.TotalLines = total
	if to > from {
		rec.Lines = addRange(rec.Lines, LineRange{from, to})
	}
	if total == 0 || (total > 0 && len(rec.Lines) == 1 && rec.Lines[0].From <= 0 && rec.Lines[0].To >= total) {
		rec = Record{Stamp: s}
	}
	rs.recs[p.abs] = rec
}

// addRange inserts r into the sorted, merged ranges rs.
func addRange(rs []LineRange, r LineRange) []LineRange {
	rs = append(slices.Clone(rs), r)
	slices.SortFunc(rs, func(a, b LineRange) int { return a.From - b.From })
	out := rs[:1]
	for _, x := range rs[1:] {
		last := &out[len(out)-1]
		if x.From <= last.To {
			last.To = max(last.To, x.To)
			continue
		}
		out = append(out, x)
	}
	return out
}

// RecordWrite records content agentd itself just wrote: the model knows it whole, so a second
// edit in a row needs no new read.
func (rs *ReadState) RecordWrite(p Path, s Stamp) { rs.RecordRead(p, s, false) }

// Forget drops the record of p (after the file was deleted, say).
func (rs *ReadState) Forget(p Path) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.recs, p.abs)
}

// Lookup returns the record of p.
func (rs *ReadState) Lookup(p Path) (Record, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.recs[p.abs]
	return r, ok
}

// CheckWrite checks that the model may change the existing file at p: it must have read the whole
// file, and the file must not have changed since (content hash). It returns nil for a file that
// does not exist (creating one needs no read), a read_first error when the file was never read or
// only partly, and a stale error carrying the current content (see StaleDetails) when it changed;
// that content then counts as read, so the model can retry at once.
func (rs *ReadState) CheckWrite(p Path) error {
	cur, content, _, err := rs.source.Stamp(p)
	if errors.Is(err, fs.ErrNotExist) || tools.TypeOf(err, "") == tools.NotFound {
		return nil
	}
	if err != nil {
		return err
	}
	return rs.check(p, cur, content)
}

// check compares the current state (cur, content) of the existing file p with the record.
func (rs *ReadState) check(p Path, cur Stamp, content []byte) error {
	rec, ok := rs.Lookup(p)
	switch {
	case !ok:
		return tools.Errorf(tools.ReadFirst, "%s exists and you have not read it yet; read it before changing it", p.rel)
	case !rec.Stamp.SameContent(cur):
		return rs.stale(p, cur, content, "changed since you last read it")
	case rec.Partial:
		return tools.Errorf(tools.ReadFirst, "you have read only part of %s%s; read all of it before changing it", p.rel, describeRanges(rec))
	}
	return nil
}

func describeRanges(rec Record) string {
	if len(rec.Lines) == 0 || rec.TotalLines == 0 {
		return ""
	}
	s := " (lines"
	for i, r := range rec.Lines {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf(" %d-%d", r.From+1, r.To)
	}
	return s + fmt.Sprintf(" of %d)", rec.TotalLines)
}

// StaleDetails is the Details of a stale error: the file's current content, so the model can
// redo its change without another read.
type StaleDetails struct {
	// Path is the canonical relative path.
	Path string
	// Content is the current content, or its first lines when Truncated. It is empty when
	// Withheld (see the error message).
	Content   string
	Truncated bool
	Withheld  bool
	// Stamp is the current state; Content now counts as the model's read of it (whole unless
	// Truncated).
	Stamp Stamp
}

// stale builds a stale error for p carrying its current content, and records that content as
// read (in part when it had to be cut).
//
// The content is withheld — the error then only says to read the file, which goes through the
// gate — when the model never read this path in this session (a file created by someone else
// while a new file waited for approval: its content never passed a read permission) or when the
// file now has other hard links (its content may be an outside file's, which a read would flag)
// or is a git configuration that now holds a credential (a read of it would ask).
func (rs *ReadState) stale(p Path, cur Stamp, content []byte, what string) error {
	_, hadRead := rs.Lookup(p)
	hardLinked := false
	if cur.Source == SourceDisk {
		if in, err := Stat(p); err == nil && in.HardLinked() {
			hardLinked = true
		}
	}
	_, credential := RedactGitCredentials(content)
	credential = credential && p.gitConfig()
	if !hadRead || hardLinked || credential {
		rs.Forget(p)
		why := "you have not read it"
		switch {
		case hardLinked:
			why = "it now has other hard links"
		case credential:
			why = "it now holds a credential"
		}
		return &tools.Error{Type: tools.Stale, Message: fmt.Sprintf(
			"%s %s. Its content is not shown because %s: read it, then make your change against what you read.", p.rel, what, why),
			Details: &StaleDetails{Path: p.rel, Withheld: true, Stamp: cur}}
	}
	shown, truncated := cutAtLine(content, rs.staleMax)
	if int64(len(content)) < cur.Size {
		truncated = true
	}
	rs.RecordRead(p, cur, truncated)
	d := &StaleDetails{Path: p.rel, Content: string(shown), Truncated: truncated, Stamp: cur}
	var msg string
	if truncated {
		msg = fmt.Sprintf("%s %s (edited by the user, a formatter or another tool). It is now %d bytes; its first %d bytes follow. Read the rest before changing it.\n\n%s",
			p.rel, what, cur.Size, len(shown), shown)
	} else {
		msg = fmt.Sprintf("%s %s (edited by the user, a formatter or another tool). Its current content follows and now counts as your read of it: make your change against this content.\n\n%s",
			p.rel, what, shown)
	}
	return &tools.Error{Type: tools.Stale, Message: msg, Details: d}
}
