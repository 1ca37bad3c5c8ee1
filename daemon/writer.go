package daemon

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"time"

	"github.com/agentd/agentd/preview"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
)

// editorWriter writes a document that an editor has open through that editor, so the change lands
// in the buffer as one undoable step and never clobbers unsaved text:
//
//  1. the buffer must still hold exactly the text the change was computed against (else stale);
//  2. workspace/applyEdit with a versioned edit of exactly the changed lines;
//  3. wait until the editor's didChange shows the new text in the overlay;
//  4. if the buffer had no unsaved changes before, ask the editor to save it (document/save) so
//     commands see the change on disk — or, for an editor that cannot, write the same text to
//     disk atomically, unless another editor has the document open with unsaved changes. If it
//     had unsaved changes, leave the disk alone: the user's unsaved text stays theirs to save,
//     and the model is told (see Harness.afterCall).
//
// The editor it goes through is the one that opened the document last (Overlay.get). When that
// editor disconnects before the change is complete (before it answers applyEdit, shows the new
// text, or answers document/save), its buffer is gone: its overlay entry is dropped and the whole
// write starts again with the editor that has the document open now, or, when none does, with an
// atomic disk write. Either target must hold exactly the text the change was computed against
// (the disk: or already the new text, when the editor saved before it went away); otherwise
// nothing is written and the model gets an error saying so. Every error says whether the change
// was written, so the model's picture of the file never differs from the disk.
//
// Documents no editor has open are written atomically to disk under the same rule.
type editorWriter struct{ srv *Server }

const editorWait = 10 * time.Second

// errEditorGone reports that the editor a write went through disconnected before the change was
// complete: the write starts again without it.
var errEditorGone = errors.New("the editor disconnected during the change")

func (w editorWriter) Write(ctx context.Context, p fsafe.Path, data []byte, base fsafe.Stamp) (fsafe.Stamp, error) {
	overlay := w.srv.overlay
	key := tools.Canonical(p.Abs())
	fallback := false // an editor went away during this write
	for {
		doc, open := overlay.get(key)
		if !open {
			return w.toDisk(p, data, base)
		}
		st, err := w.through(ctx, p, key, doc, data, base, fallback)
		if !errors.Is(err, errEditorGone) {
			return st, err
		}
		// Its connection has ended (editorGone): no notification of it can arrive any more, so
		// dropping its entries now only anticipates client.gone.
		slog.Info("the editor holding a document disconnected during a write; writing without it", "path", p.Rel())
		overlay.dropClient(doc.owner)
		fallback = true
	}
}

// matches reports whether text is what the change was computed against.
func matches(base fsafe.Stamp, text []byte) bool {
	if base.Hash == ([sha256.Size]byte{}) {
		return false
	}
	return int64(len(text)) == base.Size && sha256.Sum256(text) == base.Hash
}

// toDisk writes data atomically when no editor holds the document: only when the disk holds what
// the change was computed against (or already data); a buffer that disappeared with unsaved text
// leaves the disk alone.
func (w editorWriter) toDisk(p fsafe.Path, data []byte, base fsafe.Stamp) (fsafe.Stamp, error) {
	disk, _, err := fsafe.ReadFile(p, 64<<20)
	if base.Source == fsafe.SourceEditor && (err != nil || (!matches(base, disk) && string(disk) != string(data))) {
		return fsafe.Stamp{}, tools.Errorf(tools.Stale, "the change to %s was NOT written: the editor that had it open went away, and the file on disk is not the text your change was made from (the editor's unsaved changes were not saved); read the file again", p.Rel())
	}
	return fsafe.DiskWriter{}.Write(context.Background(), p, data, base)
}

// editorGone reports whether c's connection has ended, waiting up to wait for it.
func editorGone(c *client, wait time.Duration) bool {
	select {
	case <-c.conn.Done():
		return true
	case <-c.exit:
		return true
	default:
	}
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.conn.Done():
		return true
	case <-c.exit:
		return true
	case <-t.C:
		return false
	}
}

// callFailed tells whether a failed call to the editor means it is gone: a transport failure (not
// an answer, not our own deadline) is followed by the end of the connection.
func callFailed(c *client, err error, callCtx context.Context) bool {
	var answered *jsonrpc2.Error
	if errors.As(err, &answered) || callCtx.Err() != nil {
		return editorGone(c, 0)
	}
	return editorGone(c, editorWait)
}

// through writes data through doc's editor. It returns errEditorGone when that editor
// disconnected before the change was complete.
func (w editorWriter) through(ctx context.Context, p fsafe.Path, key string, doc openDoc, data []byte, base fsafe.Stamp, fallback bool) (fsafe.Stamp, error) {
	overlay := w.srv.overlay
	owner := doc.owner
	if base.Source == fsafe.SourceEditor && !matches(base, []byte(doc.text)) {
		if fallback {
			return fsafe.Stamp{}, tools.Errorf(tools.Stale, "the change to %s was NOT written: the editor it was going through went away, and the other editor that has %s open holds different text; read the file again", p.Rel(), p.Rel())
		}
		return fsafe.Stamp{}, tools.Errorf(tools.Stale, "%s changed in the editor while the change waited (now version %d); the change was NOT written; read it again", p.Rel(), doc.version)
	}
	disk, _, derr := fsafe.ReadFile(p, 64<<20)
	wasClean := derr == nil && string(disk) == doc.text

	d := preview.Compute(p.Rel(), doc.text, string(data))
	edits := make([]protocol.TextEdit, 0, len(d.Hunks))
	for _, e := range d.TextEdits() {
		edits = append(edits, lspEdit(e))
	}
	params := rpc.ApplyWorkspaceEditParams{
		Label: "agentd: edit " + p.Rel(),
		Edit: rpc.WorkspaceEdit{DocumentChanges: []rpc.TextDocumentEdit{{
			TextDocument: rpc.VersionedDocument{URI: doc.uri, Version: doc.version},
			Edits:        edits,
		}}},
	}
	changed := overlay.watch()
	var res rpc.ApplyWorkspaceEditResult
	callCtx, cancel := context.WithTimeout(ctx, editorWait)
	defer cancel()
	if err := owner.conn.Call(callCtx, "workspace/applyEdit", params, &res); err != nil {
		switch {
		case callFailed(owner, err, callCtx):
			return fsafe.Stamp{}, errEditorGone
		case ctx.Err() != nil:
			return fsafe.Stamp{}, tools.Errorf(tools.Cancelled, "cancelled while the editor applied the change to %s: it was NOT written to disk, and the editor's buffer may or may not have it; read the file again", p.Rel())
		case callCtx.Err() != nil:
			return fsafe.Stamp{}, tools.Errorf(tools.Timeout, "the editor did not answer within %s: the change to %s was NOT written to disk, and the editor's buffer may or may not have it; read the file again", editorWait, p.Rel())
		}
		return fsafe.Stamp{}, tools.Errorf(tools.IOError, "the editor did not apply the change to %s (%v); nothing was written", p.Rel(), err)
	}
	if !res.Applied {
		return fsafe.Stamp{}, tools.Errorf(tools.Stale, "the editor refused the change to %s (%s); nothing was written; read the file again", p.Rel(), res.FailureReason)
	}
	// The buffer's didChange may arrive just after the answer.
	var now openDoc
	for {
		var ok bool
		if now, ok = overlay.getFrom(key, owner); !ok {
			if editorGone(owner, editorWait) {
				return fsafe.Stamp{}, errEditorGone
			}
			// Closed in the editor, which is still there: saved first, or not.
			if got, _, err := fsafe.ReadFile(p, 64<<20); err == nil && string(got) == string(data) {
				return fsafe.DiskWriter{}.Write(context.Background(), p, data, base)
			}
			return fsafe.Stamp{}, tools.Errorf(tools.IOError, "%s was closed in the editor during the change; it was NOT written to disk; read the file again", p.Rel())
		}
		if now.text == string(data) {
			break
		}
		select {
		case <-changed:
			changed = overlay.watch()
		case <-owner.conn.Done():
			return fsafe.Stamp{}, errEditorGone
		case <-callCtx.Done():
			if editorGone(owner, 0) {
				return fsafe.Stamp{}, errEditorGone
			}
			return fsafe.Stamp{}, tools.Errorf(tools.IOError, "the editor said it applied the change to %s but did not report the new text; it was NOT written to disk; read the file again", p.Rel())
		}
	}
	if wasClean {
		saved := false
		owner.mu.Lock()
		canSave := owner.init.DocumentSave
		owner.mu.Unlock()
		if canSave {
			var sr rpc.DocumentSaveResult
			err := owner.conn.Call(callCtx, rpc.MethodDocumentSave, rpc.DocumentSaveParams{URI: doc.uri}, &sr)
			if err != nil && callFailed(owner, err, callCtx) {
				// Saved or not, its buffer is gone: write again through whoever holds the
				// document now, or to the disk (which may already hold data).
				return fsafe.Stamp{}, errEditorGone
			}
			saved = err == nil && sr.Saved
		}
		if !saved && w.othersClean(key, owner, string(disk), string(data)) {
			if _, err := fsafe.WriteFile(p, data, fsafe.WriteOptions{}); err != nil {
				return fsafe.Stamp{}, err
			}
		}
	}
	return fsafe.Stamp{Source: fsafe.SourceEditor, Version: int64(now.version), Size: int64(len(data)),
		Hash: sha256.Sum256(data), Taken: time.Now()}, nil
}

// othersClean reports whether every other editor that has the document open holds the disk's text
// (disk) or the new text: writing the disk then puts nothing under unsaved changes.
func (w editorWriter) othersClean(key string, owner *client, disk, data string) bool {
	for _, h := range w.srv.overlay.holders(key) {
		if h.owner != owner && h.text != disk && h.text != data {
			return false
		}
	}
	return true
}
