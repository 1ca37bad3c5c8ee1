package daemon

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
	"go.lsp.dev/protocol"
)

// Overlay holds the documents editors have open, so that tools read the editor's text (unsaved
// changes included) and stamp it with the document version. It is keyed by canonical absolute
// path; it implements fsafe.Overlay and the search engine's overlay.
//
// Each editor that has a document open has its own entry (its own buffer, text and version): the
// entry of the editor that opened the document last is the one tools read and edits go through;
// when that editor closes it or disconnects, the entry of the previous one takes over.
type Overlay struct {
	mu   sync.Mutex
	docs map[string][]*openDoc // by canonical absolute path; one per editor, in open order
	// changed is closed and replaced whenever a document changes (see wait).
	changed chan struct{}
}

type openDoc struct {
	path    string // canonical absolute path
	uri     string
	version int32
	text    string
	owner   *client // the connection whose buffer this is (edits go through it)
}

func newOverlay() *Overlay {
	return &Overlay{docs: map[string][]*openDoc{}, changed: make(chan struct{})}
}

// open records a document an editor opened (again: its previous entry is replaced).
func (o *Overlay) open(path, uri string, version int32, text string, owner *client) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.removeLocked(path, owner)
	o.docs[path] = append(o.docs[path], &openDoc{path: path, uri: uri, version: version, text: text, owner: owner})
	o.notifyLocked()
}

// change applies an editor's incremental or whole-document changes in order, to its own entry.
func (o *Overlay) change(path string, owner *client, version int32, changes []protocol.TextDocumentContentChangeEvent) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	var d *openDoc
	for _, h := range o.docs[path] {
		if h.owner == owner {
			d = h
		}
	}
	if d == nil {
		return fmt.Errorf("didChange for a document that is not open: %s", path)
	}
	text := d.text
	for _, c := range changes {
		switch c := c.(type) {
		case *protocol.TextDocumentContentChangeWholeDocument:
			text = c.Text
		case *protocol.TextDocumentContentChangePartial:
			start, err := offsetOf(text, c.Range.Start)
			if err != nil {
				return err
			}
			end, err := offsetOf(text, c.Range.End)
			if err != nil {
				return err
			}
			if end < start {
				return fmt.Errorf("change range ends before it starts")
			}
			text = text[:start] + c.Text + text[end:]
		}
	}
	d.text, d.version = text, version
	o.notifyLocked()
	return nil
}

// close forgets an editor's entry for a document.
func (o *Overlay) close(path string, owner *client) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.removeLocked(path, owner) {
		o.notifyLocked()
	}
}

// dropClient forgets every document a disconnected editor had open; documents other editors
// have open stay, with their own text.
func (o *Overlay) dropClient(owner *client) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for p := range o.docs {
		o.removeLocked(p, owner)
	}
	o.notifyLocked()
}

// removeLocked removes owner's entry for path and reports whether there was one.
func (o *Overlay) removeLocked(path string, owner *client) bool {
	hs := o.docs[path]
	for i, h := range hs {
		if h.owner == owner {
			hs = append(hs[:i:i], hs[i+1:]...)
			if len(hs) == 0 {
				delete(o.docs, path)
			} else {
				o.docs[path] = hs
			}
			return true
		}
	}
	return false
}

func (o *Overlay) notifyLocked() {
	close(o.changed)
	o.changed = make(chan struct{})
}

// get returns a copy of the entry tools read for path: the editor that opened it last.
func (o *Overlay) get(path string) (openDoc, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	hs := o.docs[path]
	if len(hs) == 0 {
		return openDoc{}, false
	}
	return *hs[len(hs)-1], true
}

// getFrom returns a copy of owner's entry for path.
func (o *Overlay) getFrom(path string, owner *client) (openDoc, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, h := range o.docs[path] {
		if h.owner == owner {
			return *h, true
		}
	}
	return openDoc{}, false
}

// holders returns copies of every editor's entry for path, in open order.
func (o *Overlay) holders(path string) []openDoc {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]openDoc, 0, len(o.docs[path]))
	for _, h := range o.docs[path] {
		out = append(out, *h)
	}
	return out
}

// watch returns a channel closed at the next change.
func (o *Overlay) watch() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.changed
}

// Document implements fsafe.Overlay. abs is canonical (fsafe.Path.Abs, as the interface says),
// like the keys: no symlink walk here (it ran on every stamp of every file tool call).
func (o *Overlay) Document(abs string) (fsafe.Document, bool) {
	d, ok := o.get(abs)
	if !ok {
		return fsafe.Document{}, false
	}
	return fsafe.Document{Version: int64(d.version), Content: []byte(d.text)}, true
}

// Open implements the search overlay: the absolute paths of open documents.
func (o *Overlay) Open() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]string, 0, len(o.docs))
	for p := range o.docs {
		out = append(out, p)
	}
	return out
}

// Content implements the search overlay.
func (o *Overlay) Content(abs string) ([]byte, bool) {
	d, ok := o.get(tools.Canonical(abs))
	if !ok {
		return nil, false
	}
	return []byte(d.text), true
}

// offsetOf converts an LSP position (zero-based line, UTF-16 code units) to a byte offset in
// text. Lines end at "\n", "\r\n" or "\r", as LSP says. A character past the end of its line
// clamps to the line's end, as editors do.
func offsetOf(text string, pos protocol.Position) (int, error) {
	off := 0
	for line := uint32(0); line < pos.Line; line++ {
		i := strings.IndexAny(text[off:], "\r\n")
		if i < 0 {
			return 0, fmt.Errorf("position %d:%d is past the end of the document", pos.Line, pos.Character)
		}
		off += i
		if text[off] == '\r' && off+1 < len(text) && text[off+1] == '\n' {
			off++
		}
		off++
	}
	units := uint32(0)
	for off < len(text) && units < pos.Character {
		r, size := utf8.DecodeRuneInString(text[off:])
		if r == '\n' || r == '\r' {
			break
		}
		n := uint32(utf16.RuneLen(r))
		if n > 1<<30 { // invalid rune: one unit
			n = 1
		}
		if units+n > pos.Character { // inside a surrogate pair: stay before it
			break
		}
		units += n
		off += size
	}
	return off, nil
}
