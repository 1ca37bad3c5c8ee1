package rpc

import "go.lsp.dev/protocol"

// The standard LSP messages the daemon sends, reduced to the fields it uses.

// ApplyWorkspaceEditParams are the params of workspace/applyEdit.
type ApplyWorkspaceEditParams struct {
	Label string        `json:"label,omitzero"`
	Edit  WorkspaceEdit `json:"edit"`
}

// WorkspaceEdit holds versioned document edits: an editor refuses them when its buffer is not at
// that version any more.
type WorkspaceEdit struct {
	DocumentChanges []TextDocumentEdit `json:"documentChanges"`
}

// TextDocumentEdit is the edits of one document.
type TextDocumentEdit struct {
	TextDocument VersionedDocument   `json:"textDocument"`
	Edits        []protocol.TextEdit `json:"edits"`
}

// VersionedDocument names a document at a version.
type VersionedDocument struct {
	URI     string `json:"uri"`
	Version int32  `json:"version"`
}

// ApplyWorkspaceEditResult is the editor's answer to workspace/applyEdit.
type ApplyWorkspaceEditResult struct {
	Applied       bool   `json:"applied"`
	FailureReason string `json:"failureReason,omitzero"`
}
