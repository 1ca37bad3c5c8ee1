package rpc

// Sessions, prompts, turns and their checkpoints, models and the daemon status.

import (
	"go.lsp.dev/protocol"
)

// SessionInfo describes a session.
type SessionInfo struct {
	SessionID       string `json:"sessionId"`
	Title           string `json:"title"`
	WorkspaceFolder string `json:"workspaceFolder"` // URI
	Model           string `json:"model"`
	ApprovalMode    string `json:"approvalMode"`
	ContextLength   int    `json:"contextLength,omitzero"`
	CreatedAt       string `json:"createdAt"`
	UpdatedAt       string `json:"updatedAt"`
	Turns           int    `json:"turns"`
	// Running is true while a turn is in progress.
	Running bool `json:"running"`
	// Attached counts the editor connections attached now.
	Attached int `json:"attached"`
	// Instructions describes the project instructions (AGENTS.md) the model reads in this session;
	// absent when it reads none (no file, or the workspace is not trusted).
	Instructions *InstructionsInfo `json:"instructions,omitzero"`
	// Warnings are what the user should know about the session's setup: its tool definitions
	// take more than a quarter of the context window (with what to do).
	Warnings []string `json:"warnings,omitzero"`
}

// InstructionsInfo describes a project instructions file a session uses.
type InstructionsInfo struct {
	Path      string `json:"path"`      // relative to the workspace folder ("AGENTS.md")
	Bytes     int64  `json:"bytes"`     // the file's size
	Truncated bool   `json:"truncated"` // only the beginning is used (the cap is 8 KiB)
}

// SessionNewParams creates a session and attaches the calling connection to it.
type SessionNewParams struct {
	// WorkspaceFolder is the URI of the folder the agent works in; default: the connection's first
	// workspace folder.
	WorkspaceFolder string `json:"workspaceFolder,omitzero"`
	Model           string `json:"model,omitzero"`
	ApprovalMode    string `json:"approvalMode,omitzero"`
	Title           string `json:"title,omitzero"`
}

type SessionNewResult struct {
	Session SessionInfo `json:"session"`
}

type SessionListParams struct {
	// WorkspaceFolder filters by folder URI when set.
	WorkspaceFolder string `json:"workspaceFolder,omitzero"`
}

type SessionListResult struct {
	Sessions []SessionInfo `json:"sessions"`
}

// SessionAttachParams attaches the connection to a live or stored session (resume).
type SessionAttachParams struct {
	SessionID string `json:"sessionId"`
}

type SessionAttachResult struct {
	Session SessionInfo `json:"session"`
	// History is the conversation so far, for the chat view.
	History []HistoryItem `json:"history"`
	// PendingReviews are reviews waiting for a decision.
	PendingReviews []ReviewRequestedParams `json:"pendingReviews"`
}

// HistoryItem is one entry of a session's history. Type is "user", "assistant", "tool" or
// "compaction" (the earlier turns were replaced by a summary; Compaction carries it, with 0 tokens
// when the counts are not known).
type HistoryItem struct {
	Type       string          `json:"type"`
	TurnID     string          `json:"turnId"`
	Text       string          `json:"text,omitzero"`
	Thinking   string          `json:"thinking,omitzero"`
	ToolCall   *ToolCallInfo   `json:"toolCall,omitzero"`
	Compaction *CompactionInfo `json:"compaction,omitzero"`
	// Context, for "user", labels the editor context sent with the prompt ("cart.go",
	// "cart.go:3-5", "@greet.go"); Text is the user's words without it.
	Context []string `json:"context,omitzero"`
}

type SessionDetachParams struct {
	SessionID string `json:"sessionId"`
}

type SessionDetachResult struct{}

// SessionPromptParams starts a turn. It returns at once; the turn streams as session/update.
// A prompt while a turn runs is an error (use session/steer).
type SessionPromptParams struct {
	SessionID string `json:"sessionId"`
	Text      string `json:"text"`
	// Context is editor context sent with the prompt: a selection, the active file.
	Context []ContextItem `json:"context,omitzero"`
}

// ContextItem is a piece of editor context. Without Kind it is a selection (Range set, Text the
// selected text) or the active file (no Range). With Kind it is a mention the user typed in the
// prompt: a file or folder the daemon reads or lists, or a symbol whose source Text the editor sends
// (with Range, Name and SymbolKind, e.g. "function").
type ContextItem struct {
	Kind       string          `json:"kind,omitzero"`
	URI        string          `json:"uri"`
	Range      *protocol.Range `json:"range,omitzero"`
	Text       string          `json:"text,omitzero"`
	Name       string          `json:"name,omitzero"`
	SymbolKind string          `json:"symbolKind,omitzero"`
}

// ContextItem kinds: mentions typed in the prompt.
const (
	ContextFile   = "file"
	ContextFolder = "folder"
	ContextSymbol = "symbol"
)

type SessionPromptResult struct {
	TurnID string `json:"turnId"`
}

// SessionSteerParams queues a user message into the running turn: no new tool call starts,
// interruptible calls are cancelled, and the model sees the message next. With no turn running it
// starts one, like session/prompt.
type SessionSteerParams struct {
	SessionID string `json:"sessionId"`
	Text      string `json:"text"`
}

type SessionSteerResult struct {
	TurnID string `json:"turnId"`
}

type SessionCancelParams struct {
	SessionID string `json:"sessionId"`
}

type SessionCancelResult struct {
	// Cancelled is false when no turn was running.
	Cancelled bool `json:"cancelled"`
}

// SessionRevertParams restores the files a turn changed (default: the last turn that changed
// files). Files changed since by someone else are skipped and reported.
type SessionRevertParams struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId,omitzero"`
}

type SessionRevertResult struct {
	TurnID   string       `json:"turnId"`
	Restored []string     `json:"restored"` // workspace-relative paths
	Skipped  []RevertSkip `json:"skipped"`
}

// SessionForkParams copies a session (its whole conversation) to a new session.
type SessionForkParams struct {
	SessionID string `json:"sessionId"`
}

// SessionForkResult is the new session; the editor is attached to it.
type SessionForkResult struct {
	Session SessionInfo `json:"session"`
}

// SessionRewindParams goes back to before a turn of the session.
type SessionRewindParams struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
}

// SessionRewindResult is the new session holding the conversation before the turn (the editor is
// attached to it; attach to read its history), the turn's prompt to send again, edited or not,
// and the files restored and skipped (changed since by someone else: never overwritten).
type SessionRewindResult struct {
	Session  SessionInfo  `json:"session"`
	TurnID   string       `json:"turnId"`
	Prompt   string       `json:"prompt"`
	Restored []string     `json:"restored"`
	Skipped  []RevertSkip `json:"skipped"`
}

type RevertSkip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// TurnListParams asks for the session's turns that changed files.
type TurnListParams struct {
	SessionID string `json:"sessionId"`
}

// TurnListResult lists the turns that changed files, newest first.
type TurnListResult struct {
	Turns []TurnSummary `json:"turns"`
}

// TurnSummary is one turn that changed files.
type TurnSummary struct {
	TurnID    string `json:"turnId"`
	Prompt    string `json:"prompt"`    // first line of the user's prompt, at most 80 characters
	CreatedAt string `json:"createdAt"` // RFC 3339
	Files     int    `json:"files"`     // how many files the turn changed
	Reverted  bool   `json:"reverted"`  // already reverted (session/revert, or every file undone)
}

// TurnChangesParams asks for a turn's changes (default: the newest turn that changed files and
// is not reverted).
type TurnChangesParams struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId,omitzero"`
}

// TurnChangesResult is a turn's changed files; TurnID is "" and Files empty when no turn of the
// session changed files (turnId omitted).
type TurnChangesResult struct {
	TurnID string       `json:"turnId"`
	Files  []TurnChange `json:"files"`
}

// TurnChange is one file a turn changed: its diff from the turn's checkpoint (the pre-image) to
// what the turn left, or to the current content when the file changed since (ChangedSince: undo
// skips it).
type TurnChange struct {
	Path         string     `json:"path"` // workspace-relative, with /
	URI          string     `json:"uri"`
	Status       string     `json:"status"` // modified | created | deleted
	Diff         string     `json:"diff"`   // unified diff
	Hunks        []TurnHunk `json:"hunks"`
	ChangedSince bool       `json:"changedSince"`
	// Reason says why the file cannot be undone, when ChangedSince is set.
	Reason string `json:"reason,omitzero"`
}

// TurnHunk is one hunk of a TurnChange's diff; ID is the hunk's stable preview ID.
type TurnHunk struct {
	ID       string `json:"id"`
	Header   string `json:"header"` // "@@ -3,2 +3,4 @@"
	OldStart int    `json:"oldStart"`
	OldLines int    `json:"oldLines"`
	NewStart int    `json:"newStart"`
	NewLines int    `json:"newLines"`
}

// TurnUndoParams undoes a turn's changes: the chosen files (restored to their pre-image), the
// chosen hunks (reversed), or, with neither, the whole turn.
type TurnUndoParams struct {
	SessionID string              `json:"sessionId"`
	TurnID    string              `json:"turnId"`
	Files     []string            `json:"files,omitzero"` // document URIs
	Hunks     map[string][]string `json:"hunks,omitzero"` // document URI → hunk IDs
}

// TurnUndoResult names the files undone (wholly or some hunks) and those skipped.
type TurnUndoResult struct {
	Undone  []string     `json:"undone"` // workspace-relative paths
	Skipped []RevertSkip `json:"skipped"`
}

type SessionSetModeParams struct {
	SessionID    string `json:"sessionId"`
	ApprovalMode string `json:"approvalMode"` // ask | auto-edit | plan | yolo
}

type SessionSetModeResult struct {
	ApprovalMode string `json:"approvalMode"`
}

type ModelListParams struct{}

type ModelListResult struct {
	Models  []ModelInfo `json:"models"`
	Default string      `json:"default"`
}

type ModelInfo struct {
	Name          string   `json:"name"`
	SizeBytes     int64    `json:"sizeBytes,omitzero"`
	ParameterSize string   `json:"parameterSize,omitzero"`
	Capabilities  []string `json:"capabilities,omitzero"`
}

type DaemonStatusParams struct {
	// Model is the model the editor will start sessions with (default: its initialize model, else
	// the daemon's); the result's model field says whether Ollama has it.
	Model string `json:"model,omitzero"`
}

type DaemonStatusResult struct {
	Version  string `json:"version"`
	Sandbox  string `json:"sandbox"`
	Sessions int    `json:"sessions"`
	// Ollama is "ok" or what is wrong with the model server, with the fix (whatever the engine:
	// the name predates engine openai).
	Ollama string `json:"ollama"`
	// Model is "ok" when Ollama has the model, else that it is not pulled, with the fix and the
	// models Ollama has; absent when Ollama could not be asked.
	Model string `json:"model,omitzero"`
	// CompletionModel is the inline completion model of this connection.
	CompletionModel string `json:"completionModel"`
	// Engine names the model server's API and address: "ollama http://127.0.0.1:11434",
	// "openai http://gpu:8000/v1".
	Engine string `json:"engine"`
}
