package daemon

import (
	"context"
	"crypto/sha256"
	"time"

	"github.com/agentd/agentd/preview"
	"github.com/agentd/agentd/rpc"
	"github.com/agentd/agentd/tools"
	"github.com/agentd/agentd/tools/fsafe"
	"go.lsp.dev/protocol"
)

// editorWriter writes a document that an editor has open through that editor, so the change lands
// in the buffer as one undoable step and never clobbers unsaved text:
//
//  1. the buffer must still be at the version the change was computed against (else stale);
//  2. workspace/applyEdit with a versioned edit of exactly the changed lines;
//  3. wait until the editor's didChange shows the new text in the overlay;
//  4. if the buffer had no unsaved changes before, ask the editor to save it (document/save) so
//     commands see the change on disk — or, for an editor that cannot, write the same text to
//     disk atomically. If it had unsaved changes, leave the disk alone: the user's unsaved text
//     stays theirs to save, and the model is told (see Harness.afterCall).
//
// Documents no editor has open are written atomically to disk.
type editorWriter struct{ srv *Server }

const editorWait = 10 * time.Second

func (w editorWriter) Write(ctx context.Context, p fsafe.Path, data []byte, base fsafe.Stamp) (fsafe.Stamp, error) {
	overlay := w.srv.overlay
	key := tools.Canonical(p.Abs())
	doc, open := overlay.get(key)
	if !open {
		return fsafe.DiskWriter{}.Write(ctx, p, data, base)
	}
	if base.Source == fsafe.SourceEditor && int64(doc.version) != base.Version {
		return fsafe.Stamp{}, tools.Errorf(tools.Stale, "%s changed in the editor while the change waited (version %d, now %d); read it again", p.Rel(), base.Version, doc.version)
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
	if err := doc.owner.conn.Call(callCtx, "workspace/applyEdit", params, &res); err != nil {
		return fsafe.Stamp{}, tools.Errorf(tools.IOError, "the editor did not apply the change to %s: %v", p.Rel(), err)
	}
	if !res.Applied {
		return fsafe.Stamp{}, tools.Errorf(tools.Stale, "the editor refused the change to %s (%s); read the file again", p.Rel(), res.FailureReason)
	}
	// The buffer's didChange may arrive just after the answer.
	now := doc
	for {
		var ok bool
		if now, ok = overlay.get(key); !ok {
			return fsafe.Stamp{}, tools.Errorf(tools.IOError, "%s was closed in the editor during the change", p.Rel())
		}
		if now.text == string(data) {
			break
		}
		select {
		case <-changed:
			changed = overlay.watch()
		case <-callCtx.Done():
			return fsafe.Stamp{}, tools.Errorf(tools.IOError, "the editor applied the change to %s but did not report the new text", p.Rel())
		}
	}
	if wasClean {
		saved := false
		doc.owner.mu.Lock()
		canSave := doc.owner.init.DocumentSave
		doc.owner.mu.Unlock()
		if canSave {
			var sr rpc.DocumentSaveResult
			if err := doc.owner.conn.Call(callCtx, rpc.MethodDocumentSave, rpc.DocumentSaveParams{URI: doc.uri}, &sr); err == nil {
				saved = sr.Saved
			}
		}
		if !saved {
			if _, err := fsafe.WriteFile(p, data, fsafe.WriteOptions{}); err != nil {
				return fsafe.Stamp{}, err
			}
		}
	}
	return fsafe.Stamp{Source: fsafe.SourceEditor, Version: int64(now.version), Size: int64(len(data)),
		Hash: sha256.Sum256(data), Taken: time.Now()}, nil
}
