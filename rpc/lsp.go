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

// InlineCompletionParams are the params of textDocument/inlineCompletion (LSP 3.18): complete the
// document at a position, in the editor's buffer as the daemon holds it.
type InlineCompletionParams struct {
	TextDocument protocol.TextDocumentIdentifier `json:"textDocument"`
	Position     protocol.Position               `json:"position"`
	Context      InlineCompletionContext         `json:"context"`
}

// InlineCompletionContext says how the request was triggered.
type InlineCompletionContext struct {
	// TriggerKind is 1 when the user asked (Invoked), 2 while typing (Automatic).
	TriggerKind int `json:"triggerKind"`
	// SelectedCompletionInfo is the item selected in the completion menu, if one is open.
	SelectedCompletionInfo *SelectedCompletionInfo `json:"selectedCompletionInfo,omitzero"`
}

// SelectedCompletionInfo is the completion menu's selected item.
type SelectedCompletionInfo struct {
	Range protocol.Range `json:"range"`
	Text  string         `json:"text"`
}

// InlineCompletionList is the answer of textDocument/inlineCompletion: no items when there is
// nothing to suggest.
type InlineCompletionList struct {
	Items []InlineCompletionItem `json:"items"`
}

// InlineCompletionItem is one suggestion: InsertText replaces Range (an empty range at the cursor:
// it is inserted there).
type InlineCompletionItem struct {
	InsertText string         `json:"insertText"`
	Range      protocol.Range `json:"range"`
}
