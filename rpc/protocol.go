// Package rpc is the single source of truth of agentd's editor protocol: method names and the
// *Params / *Result / notification types of every agentd-specific method. The transport is the LSP
// base protocol (Content-Length framing, JSON-RPC 2.0); the standard LSP lifecycle and text
// document sync come from go.lsp.dev/protocol. docs/protocol.md documents every method with JSON
// examples, and a test decodes those examples into these types so the document cannot drift.
//
// Conventions (after LSP and the codex app-server protocol): methods are "<resource>/<verb>" with a
// singular resource; JSON is camelCase; tagged unions carry a "type" field; IDs are strings; times
// are RFC 3339 strings; optional fields use omitzero. Decisions are decoded strictly: an unknown
// field is an error.
package rpc

//go:generate go test -run TestProtocolJSONIsFresh . -update

import (
	"encoding/json"
	"reflect"

	"go.lsp.dev/protocol"
)

// ProtocolVersion is bumped on incompatible changes. Editors send the version they speak in
// initialize's initializationOptions; the daemon answers with its own in the server capabilities.
const ProtocolVersion = 1

// Client → server requests.
const (
	MethodSessionNew    = "session/new"
	MethodSessionList   = "session/list"
	MethodSessionAttach = "session/attach"
	MethodSessionDetach = "session/detach"
	MethodSessionPrompt = "session/prompt"
	MethodSessionSteer  = "session/steer"
	MethodSessionCancel = "session/cancel"
	MethodSessionRevert = "session/revert"
	// MethodSessionFork copies a session to a new one and attaches the editor to it.
	MethodSessionFork = "session/fork"
	// MethodSessionRewind goes back to before a turn: its files and the later turns' are
	// restored (never a file changed since), and the conversation before it continues in a new
	// session, to which the editor is attached.
	MethodSessionRewind  = "session/rewind"
	MethodSessionSetMode = "session/setMode"
	MethodModelList      = "model/list"
	MethodReviewDecide   = "review/decide"
	MethodReviewList     = "review/list"
	// MethodReviewHunkState records an editor's per-hunk decisions of a pending file review (a
	// hunk accepted or rejected, with its reason, or back to pending) before the file is settled;
	// the daemon relays them to the session's other editors with review/hunkStates.
	MethodReviewHunkState = "review/hunkState"
	MethodGrantList       = "grant/list"
	MethodGrantRevoke     = "grant/revoke"
	MethodDaemonStatus    = "daemon/status"
	MethodTurnList        = "turn/list"
	MethodTurnChanges     = "turn/changes"
	MethodTurnUndo        = "turn/undo"
	// MethodMCPProposals lists the MCP servers a workspace proposes and their state.
	MethodMCPProposals = "mcp/proposals"
	// MethodMCPApprove approves one proposed MCP server's exact definition (what
	// `agentd mcp approve` records); it starts from the next session on.
	MethodMCPApprove = "mcp/approve"
)

// Server → client notifications and requests.
const (
	// MethodSessionUpdate streams everything that happens in a session (notification).
	MethodSessionUpdate = "session/update"
	// MethodReviewRequested announces a pending review (notification). The editor answers later
	// with review/decide: editors whose request handlers must answer synchronously (Neovim) can
	// show the review and let the user take their time.
	MethodReviewRequested = "review/requested"
	// MethodReviewResolved tells every attached editor that a review is settled (notification).
	MethodReviewResolved = "review/resolved"
	// MethodReviewHunkStates tells the other editors of a session the per-hunk decisions of a
	// pending review after one editor changed them (notification).
	MethodReviewHunkStates = "review/hunkStates"
	// MethodDocumentSave asks the editor to save a document agentd just edited through
	// workspace/applyEdit, so that commands see the change on disk (request).
	MethodDocumentSave = "document/save"
	// MethodDocumentDiagnostics asks the editor for a document's errors and warnings once its
	// language server has published them for the current text, after an applied edit (request).
	MethodDocumentDiagnostics = "document/diagnostics"
)

// LSP methods agentd serves or sends, besides its own. Their params and results are LSP's (from
// go.lsp.dev/protocol), or agentd's reduction of them to the fields it uses (rpc/lsp.go and the
// progress and message types below).
const (
	MethodInitialize                = "initialize"
	MethodInitialized               = "initialized"
	MethodShutdown                  = "shutdown"
	MethodExit                      = "exit"
	MethodSetTrace                  = "$/setTrace"
	MethodDidChangeConfiguration    = "workspace/didChangeConfiguration"
	MethodDidChangeWorkspaceFolders = "workspace/didChangeWorkspaceFolders"
	MethodDidOpen                   = "textDocument/didOpen"
	MethodDidChange                 = "textDocument/didChange"
	MethodDidClose                  = "textDocument/didClose"
	MethodDidSave                   = "textDocument/didSave"
	MethodWorkDoneProgressCancel    = "window/workDoneProgress/cancel"
	MethodInlineCompletion          = "textDocument/inlineCompletion"
	MethodWorkDoneProgressCreate    = "window/workDoneProgress/create"
	MethodProgress                  = "$/progress"
	MethodShowMessage               = "window/showMessage"
	MethodLogMessage                = "window/logMessage"
	MethodApplyEdit                 = "workspace/applyEdit"
)

// Direction of a method.
type Direction string

const (
	ClientToServer Direction = "client→server"
	ServerToClient Direction = "server→client"
)

// Kind says whether a method is a request (answered with a result or an error) or a notification.
type Kind string

const (
	Request      Kind = "request"
	Notification Kind = "notification"
)

// MethodInfo describes one method: its direction, its kind, and the Go types of its params and
// result (Result is nil for a notification, and for a request answered with null).
type MethodInfo struct {
	Name      string
	Direction Direction
	Kind      Kind
	Params    reflect.Type
	Result    reflect.Type
	// LSP marks a method of the Language Server Protocol; the others are agentd's own.
	LSP bool
}

// IsRequest reports whether the method is a request.
func (m MethodInfo) IsRequest() bool { return m.Kind == Request }

func req[P, R any](name string, dir Direction) MethodInfo {
	return MethodInfo{Name: name, Direction: dir, Kind: Request, Params: reflect.TypeFor[P](), Result: reflect.TypeFor[R]()}
}

func note[P any](name string, dir Direction) MethodInfo {
	return MethodInfo{Name: name, Direction: dir, Kind: Notification, Params: reflect.TypeFor[P]()}
}

func lsp(m MethodInfo) MethodInfo {
	m.LSP = true
	return m
}

// Methods is the protocol table: every method an agentd connection carries, agentd's own first,
// then the LSP methods. The daemon's dispatch is checked against it (daemon/dispatch_test.go:
// every client→server method has a handler and every handler an entry), rpc/protocol.json is
// generated from it, and the editors' tests check their method tables against that file.
var Methods = []MethodInfo{
	req[SessionNewParams, SessionNewResult](MethodSessionNew, ClientToServer),
	req[SessionListParams, SessionListResult](MethodSessionList, ClientToServer),
	req[SessionAttachParams, SessionAttachResult](MethodSessionAttach, ClientToServer),
	req[SessionDetachParams, SessionDetachResult](MethodSessionDetach, ClientToServer),
	req[SessionPromptParams, SessionPromptResult](MethodSessionPrompt, ClientToServer),
	req[SessionSteerParams, SessionSteerResult](MethodSessionSteer, ClientToServer),
	req[SessionCancelParams, SessionCancelResult](MethodSessionCancel, ClientToServer),
	req[SessionRevertParams, SessionRevertResult](MethodSessionRevert, ClientToServer),
	req[SessionForkParams, SessionForkResult](MethodSessionFork, ClientToServer),
	req[SessionRewindParams, SessionRewindResult](MethodSessionRewind, ClientToServer),
	req[SessionSetModeParams, SessionSetModeResult](MethodSessionSetMode, ClientToServer),
	req[ModelListParams, ModelListResult](MethodModelList, ClientToServer),
	req[ReviewDecideParams, ReviewDecideResult](MethodReviewDecide, ClientToServer),
	req[ReviewListParams, ReviewListResult](MethodReviewList, ClientToServer),
	req[ReviewHunkStateParams, ReviewHunkStateResult](MethodReviewHunkState, ClientToServer),
	req[GrantListParams, GrantListResult](MethodGrantList, ClientToServer),
	req[GrantRevokeParams, GrantRevokeResult](MethodGrantRevoke, ClientToServer),
	req[DaemonStatusParams, DaemonStatusResult](MethodDaemonStatus, ClientToServer),
	req[TurnListParams, TurnListResult](MethodTurnList, ClientToServer),
	req[TurnChangesParams, TurnChangesResult](MethodTurnChanges, ClientToServer),
	req[TurnUndoParams, TurnUndoResult](MethodTurnUndo, ClientToServer),
	req[MCPProposalsParams, MCPProposalsResult](MethodMCPProposals, ClientToServer),
	req[MCPApproveParams, MCPApproveResult](MethodMCPApprove, ClientToServer),
	note[SessionUpdateParams](MethodSessionUpdate, ServerToClient),
	note[ReviewRequestedParams](MethodReviewRequested, ServerToClient),
	note[ReviewResolvedParams](MethodReviewResolved, ServerToClient),
	note[ReviewHunkStatesParams](MethodReviewHunkStates, ServerToClient),
	req[DocumentSaveParams, DocumentSaveResult](MethodDocumentSave, ServerToClient),
	req[DocumentDiagnosticsParams, DocumentDiagnosticsResult](MethodDocumentDiagnostics, ServerToClient),

	// LSP lifecycle and document sync, client → server. initialize carries InitializationOptions
	// and answers ServerInfo (in capabilities.experimental.agentd).
	lsp(req[protocol.InitializeParams, protocol.InitializeResult](MethodInitialize, ClientToServer)),
	lsp(note[protocol.InitializedParams](MethodInitialized, ClientToServer)),
	lsp(MethodInfo{Name: MethodShutdown, Direction: ClientToServer, Kind: Request}),
	lsp(MethodInfo{Name: MethodExit, Direction: ClientToServer, Kind: Notification}),
	lsp(note[protocol.SetTraceParams](MethodSetTrace, ClientToServer)),
	lsp(note[protocol.DidChangeConfigurationParams](MethodDidChangeConfiguration, ClientToServer)),
	lsp(note[protocol.DidChangeWorkspaceFoldersParams](MethodDidChangeWorkspaceFolders, ClientToServer)),
	lsp(note[protocol.DidOpenTextDocumentParams](MethodDidOpen, ClientToServer)),
	lsp(note[protocol.DidChangeTextDocumentParams](MethodDidChange, ClientToServer)),
	lsp(note[protocol.DidCloseTextDocumentParams](MethodDidClose, ClientToServer)),
	lsp(note[protocol.DidSaveTextDocumentParams](MethodDidSave, ClientToServer)),
	lsp(note[WorkDoneProgressCancelParams](MethodWorkDoneProgressCancel, ClientToServer)),
	lsp(req[InlineCompletionParams, InlineCompletionList](MethodInlineCompletion, ClientToServer)),
	// Server → client.
	lsp(MethodInfo{Name: MethodWorkDoneProgressCreate, Direction: ServerToClient, Kind: Request,
		Params: reflect.TypeFor[WorkDoneProgressCreateParams]()}),
	lsp(note[ProgressParams](MethodProgress, ServerToClient)),
	lsp(note[ShowMessageParams](MethodShowMessage, ServerToClient)),
	lsp(note[LogMessageParams](MethodLogMessage, ServerToClient)),
	lsp(req[ApplyWorkspaceEditParams, ApplyWorkspaceEditResult](MethodApplyEdit, ServerToClient)),
}

// EmbeddedTypes are agentd's types carried inside LSP messages: initialize's
// initializationOptions and capabilities.experimental.agentd.
var EmbeddedTypes = []reflect.Type{reflect.TypeFor[InitializationOptions](), reflect.TypeFor[ServerInfo]()}

// Method returns the table entry of a method.
func Method(name string) (MethodInfo, bool) {
	for _, m := range Methods {
		if m.Name == name {
			return m, true
		}
	}
	return MethodInfo{}, false
}

// InitializationOptions is what an editor sends in initialize's initializationOptions.
type InitializationOptions struct {
	ProtocolVersion int `json:"protocolVersion"`
	// Client names the editor integration ("agentd-vscode 0.1.0", "agentd.nvim 0.1.0").
	Client string `json:"client,omitzero"`
	// Reviews is true when the editor shows reviews and answers them with review/decide. An
	// editor without it never receives reviews; with no such editor attached, every review is
	// rejected (fail closed).
	Reviews bool `json:"reviews"`
	// DocumentSave is true when the editor implements document/save.
	DocumentSave bool `json:"documentSave,omitzero"`
	// Diagnostics is true when the editor implements document/diagnostics: after an applied
	// edit, the daemon asks it for the file's new errors and warnings and tells the model.
	Diagnostics bool `json:"diagnostics,omitzero"`
	// Model, ApprovalMode and OllamaHost are the editor's settings, used as defaults for sessions
	// this connection creates.
	Model        string `json:"model,omitzero"`
	ApprovalMode string `json:"approvalMode,omitzero"`
	OllamaHost   string `json:"ollamaHost,omitzero"`
	// ContextLength caps the context window the daemon chooses (0 = the daemon's default).
	ContextLength int `json:"contextLength,omitzero"`
	// CompletionModel is the editor's inline completion model for this connection ("" : the
	// daemon's).
	CompletionModel string `json:"completionModel,omitzero"`
}

// ServerInfo is the "agentd" entry of the server capabilities' experimental field.
type ServerInfo struct {
	ProtocolVersion int    `json:"protocolVersion"`
	Version         string `json:"version"`
	// Sandbox says which protection commands run under ("bubblewrap+landlock+seccomp", …).
	Sandbox string `json:"sandbox"`
	// CompletionModel is the model textDocument/inlineCompletion uses for this connection;
	// CompletionConfigured is true when someone chose it (the editor's setting or the daemon's
	// completion-model), which turns inline completion on in the editors unless the user turned
	// it off.
	CompletionModel      string `json:"completionModel"`
	CompletionConfigured bool   `json:"completionConfigured,omitzero"`
}

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

// SessionUpdateParams is one update of a session (notification, server → client).
type SessionUpdateParams struct {
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId,omitzero"`
	// Seq numbers the updates of a session from 1, so an editor can spot a gap.
	Seq    int64  `json:"seq"`
	Update Update `json:"update"`
}

// Update kinds.
const (
	UpdateTurnStarted       = "turnStarted"
	UpdateUserMessage       = "userMessage"
	UpdateTextDelta         = "textDelta"
	UpdateThinkingDelta     = "thinkingDelta"
	UpdateMessageCompleted  = "messageCompleted"
	UpdateToolCallStarted   = "toolCallStarted"
	UpdateToolCallUpdated   = "toolCallUpdated"
	UpdateToolCallCompleted = "toolCallCompleted"
	UpdateUsage             = "usage"
	UpdateCompaction        = "compaction"
	UpdateTurnCompleted     = "turnCompleted"
	UpdateTurnFailed        = "turnFailed"
)

// Update is a tagged union on Type. Text and thinking deltas may be coalesced under pressure; all
// other kinds are always delivered.
type Update struct {
	Type string `json:"type"`
	// Text is set for userMessage, textDelta, thinkingDelta and messageCompleted.
	Text string `json:"text,omitzero"`
	// Thinking is the full thinking of a messageCompleted.
	Thinking   string          `json:"thinking,omitzero"`
	ToolCall   *ToolCallInfo   `json:"toolCall,omitzero"`
	Usage      *UsageInfo      `json:"usage,omitzero"`
	Compaction *CompactionInfo `json:"compaction,omitzero"`
	// Reason is set for turnCompleted ("done", "cancelled", "terminated", "steps_exhausted",
	// "time_exhausted", "blocked") and turnFailed ("error"): the Reason* constants.
	Reason string     `json:"reason,omitzero"`
	Error  *ErrorInfo `json:"error,omitzero"`
}

// ToolCallInfo describes a tool call at some point of its life.
type ToolCallInfo struct {
	CallID string `json:"callId"`
	Tool   string `json:"tool"`
	Label  string `json:"label,omitzero"`
	// Status: "pending" (validating), "awaitingApproval", "running", "completed", "failed".
	Status string `json:"status"`
	// Arguments are the arguments as the model sent them.
	Arguments json.RawMessage `json:"arguments,omitzero"`
	Activity  string          `json:"activity,omitzero"`
	// WaitsFor is set while a file change waits for an earlier call of the same reply that
	// changes the same file (its callId): it is previewed and reviewed once that one has ended,
	// against what it left (status stays "pending" until then).
	WaitsFor string       `json:"waitsFor,omitzero"`
	Preview  *PreviewInfo `json:"preview,omitzero"`
	// Progress is a running call's output: the latest chunk in a live update; in session/attach's
	// history, the output so far (its last 64 KiB, after a line saying how many bytes were cut).
	Progress string      `json:"progress,omitzero"`
	Result   *ResultInfo `json:"result,omitzero"`
	// MCP is set when the tool is an MCP server's: which server and which of its tools.
	MCP *MCPCall `json:"mcp,omitzero"`
}

// MCPCall names the MCP server and the tool on it that a call goes to (the model sees the tool as
// "server__tool"). In a review, Arguments are the exact arguments that will be sent (after
// validation and coercion, keys sorted); in a tool call they are absent (see ToolCallInfo.arguments).
type MCPCall struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitzero"`
}

// PreviewInfo is a call's preview: a summary plus the unified diff or the exact command.
type PreviewInfo struct {
	Summary     string          `json:"summary"`
	UnifiedDiff string          `json:"unifiedDiff,omitzero"`
	Command     *CommandPreview `json:"command,omitzero"`
}

// ResultInfo is a call's typed result.
type ResultInfo struct {
	Type      string `json:"type"` // ok, not_found, invalid_args, …
	IsError   bool   `json:"isError"`
	Text      string `json:"text"`
	ElapsedMs int64  `json:"elapsedMs"`
	Truncated bool   `json:"truncated,omitzero"`
	// Details is tool-specific structured data (exit code, applied hunks, …).
	Details json.RawMessage `json:"details,omitzero"`
	// Images are the images the result gave the model (not their data): editors show a
	// placeholder with the type and size.
	Images []ResultImage `json:"images,omitzero"`
}

// ResultImage is one image of a result.
type ResultImage struct {
	MIMEType string `json:"mimeType"`
	Bytes    int    `json:"bytes"`
}

type UsageInfo struct {
	PromptTokens int `json:"promptTokens"`
	OutputTokens int `json:"outputTokens"`
	// CachedTokens are the prompt tokens the server took from its prompt cache (OpenAI-compatible
	// servers report them; Ollama does not).
	CachedTokens   int   `json:"cachedTokens,omitzero"`
	PromptMs       int64 `json:"promptMs"`
	OutputMs       int64 `json:"outputMs"`
	LoadMs         int64 `json:"loadMs,omitzero"`
	ContextLength  int   `json:"contextLength"`
	ContextPercent int   `json:"contextPercent"`
}

type CompactionInfo struct {
	TokensBefore int    `json:"tokensBefore"`
	TokensAfter  int    `json:"tokensAfter"`
	Summary      string `json:"summary,omitzero"`
}

// ErrorInfo is a failure the user can act on.
type ErrorInfo struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitzero"`
}

// ReviewRequestedParams announces a pending review (notification, server → client).
type ReviewRequestedParams struct {
	ReviewID  string `json:"reviewId"`
	SessionID string `json:"sessionId"`
	TurnID    string `json:"turnId"`
	CallID    string `json:"callId"`
	Tool      string `json:"tool"`
	Label     string `json:"label"`
	// Kind is "edit" (File set), "command" (Command set) or "tool" (another tool, e.g. a
	// sensitive read).
	Kind string `json:"kind"`
	// Why says why this asks: the approval mode, a protected path, a sensitive read.
	Why     string          `json:"why"`
	File    *FileReview     `json:"file,omitzero"`
	Command *CommandPreview `json:"command,omitzero"`
	// MCP is set for a call of an MCP server's tool (kind "tool"): the server, the tool and the
	// exact arguments the approval is bound to.
	MCP *MCPCall `json:"mcp,omitzero"`
	// Scopes are the "allow for this session" scopes the editor may offer.
	Scopes []GrantScope `json:"scopes"`
	// TimeoutMs is how long the daemon waits before rejecting (0: no timeout).
	TimeoutMs int64 `json:"timeoutMs,omitzero"`
	// HunkStates are the per-hunk decisions editors already made on this file review (hunk ID →
	// state; a hunk not listed is pending). Set in session/attach's pendingReviews and review/list.
	HunkStates map[string]HunkState `json:"hunkStates,omitzero"`
}

// FileReview is a proposed file change.
type FileReview struct {
	URI     string `json:"uri"`
	Path    string `json:"path"` // workspace-relative, for display
	Created bool   `json:"created,omitzero"`
	Deleted bool   `json:"deleted,omitzero"`
	// Version is the document version the change was computed against (open documents only).
	Version     int32    `json:"version,omitzero"`
	Hunks       []Hunk   `json:"hunks"`
	UnifiedDiff string   `json:"unifiedDiff"`
	Edit        FileEdit `json:"edit"`
}

// FileEdit is what applying every hunk would do, as LSP text edits against the current text.
type FileEdit struct {
	Edits []protocol.TextEdit `json:"edits"`
}

// Hunk is one change of a file. Lines are 1-based; Removed and Added hold whole lines without
// their terminators.
type Hunk struct {
	ID       string   `json:"id"`
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Removed  []string `json:"removed"`
	Added    []string `json:"added"`
}

// CommandPreview is the exact command a call would run.
type CommandPreview struct {
	Argv      []string `json:"argv"`
	Cwd       string   `json:"cwd"`
	TimeoutMs int64    `json:"timeoutMs"`
	Sandbox   string   `json:"sandbox"`
	Network   bool     `json:"network"`
}

// Grant scope kinds.
const (
	ScopeTool    = "tool"
	ScopeCommand = "command"
	ScopePath    = "path"
)

// GrantScope is what an "allow for this session" covers: a tool, a command prefix (parsed argv
// tokens) or a path prefix (workspace-relative, directory boundary aware).
type GrantScope struct {
	Kind          string   `json:"kind"`
	Tool          string   `json:"tool,omitzero"`
	CommandPrefix []string `json:"commandPrefix,omitzero"`
	PathPrefix    string   `json:"pathPrefix,omitzero"`
	// Label is how the editor shows the scope ("all edits under src/").
	Label string `json:"label,omitzero"`
}

// Decision types.
const (
	DecisionAccept           = "accept"
	DecisionAcceptForSession = "acceptForSession"
	DecisionReject           = "reject"
	DecisionCancelTurn       = "cancelTurn"
)

// ReviewDecideParams answers a review. The first attached editor to answer wins.
type ReviewDecideParams struct {
	ReviewID string   `json:"reviewId"`
	Decision Decision `json:"decision"`
}

// Decision is a closed set: accept (all hunks, or the listed ones, with an optional reason for
// the hunks left out), acceptForSession (with a scope from the review's Scopes), reject (with an
// optional reason), cancelTurn. A partial accept and a reject may also carry HunkReasons: the
// user's reason for each rejected hunk that has one (hunk ID → reason); a reason for a hunk the
// review does not have, or for an accepted hunk, is an error. Unknown fields and fields that do
// not belong to the type are errors. An accept of a file change may carry Content instead of hunks:
// the user's own version of the whole file (they edited the proposal before accepting); it is
// written in place of the proposal, and the model is told how it differs from what it proposed.
type Decision struct {
	Type        string            `json:"type"`
	Hunks       []string          `json:"hunks,omitzero"`
	Scope       *GrantScope       `json:"scope,omitzero"`
	Reason      string            `json:"reason,omitzero"`
	HunkReasons map[string]string `json:"hunkReasons,omitzero"`
	Content     *string           `json:"content,omitzero"`
}

type ReviewDecideResult struct {
	// Outcome is "accepted", "rejected" or "cancelled".
	Outcome string `json:"outcome"`
	// Settled lists other pending reviews the decision's grant also settled.
	Settled []string `json:"settled"`
}

type ReviewListParams struct {
	SessionID string `json:"sessionId"`
}

type ReviewListResult struct {
	Reviews []ReviewRequestedParams `json:"reviews"`
}

// ReviewResolvedParams tells editors a review is settled (notification, server → client).
type ReviewResolvedParams struct {
	ReviewID  string `json:"reviewId"`
	SessionID string `json:"sessionId"`
	// Outcome is "accepted", "rejected" or "cancelled".
	Outcome string `json:"outcome"`
	// By says who settled it: "editor" (an editor's decision), "grant" (a session grant),
	// "timeout", "disconnect" (no editor left), "turnEnded".
	By string `json:"by"`
	// Hunks are the accepted hunk IDs of an accepted edit.
	Hunks []string `json:"hunks,omitzero"`
	// HunkReasons are the final decision's reasons for rejected hunks (hunk ID → reason).
	HunkReasons map[string]string `json:"hunkReasons,omitzero"`
}

// Hunk decision states (HunkState.state).
const (
	HunkPending  = "pending"
	HunkAccepted = "accepted"
	HunkRejected = "rejected"
)

// HunkState is an editor's decision on one hunk before its file is settled. Reason goes only with
// "rejected"; "pending" undoes an earlier decision.
type HunkState struct {
	State  string `json:"state"`
	Reason string `json:"reason,omitzero"`
}

// ReviewHunkStateParams changes the per-hunk decisions of a pending file review (the listed
// hunks only; the others keep their state). Unknown review or hunk, a review that is not a file
// change, an unknown state or a reason with a state other than "rejected" are invalid params;
// a settled review is CodeReviewResolved.
type ReviewHunkStateParams struct {
	ReviewID string               `json:"reviewId"`
	Hunks    map[string]HunkState `json:"hunks"`
}

// ReviewHunkStateResult is the review's per-hunk decisions after the change (a hunk not listed is
// pending).
type ReviewHunkStateResult struct {
	Hunks map[string]HunkState `json:"hunks"`
}

// ReviewHunkStatesParams tells an editor the per-hunk decisions of a pending review after another
// editor of the session changed them: every decided hunk (a hunk not listed is pending).
type ReviewHunkStatesParams struct {
	ReviewID  string               `json:"reviewId"`
	SessionID string               `json:"sessionId"`
	Hunks     map[string]HunkState `json:"hunks"`
}

type GrantListParams struct {
	SessionID string `json:"sessionId"`
}

type GrantListResult struct {
	Grants []Grant `json:"grants"`
}

type Grant struct {
	ID    string     `json:"id"`
	Scope GrantScope `json:"scope"`
}

type GrantRevokeParams struct {
	SessionID string `json:"sessionId"`
	GrantID   string `json:"grantId"`
}

type GrantRevokeResult struct {
	Revoked bool `json:"revoked"`
}

// MCPProposalsParams asks which MCP servers a workspace proposes (.agentd/mcp.json, .mcp.json).
type MCPProposalsParams struct {
	// WorkspaceFolder is a folder URI inside the connection's workspace folders; default: the
	// connection's first workspace folder.
	WorkspaceFolder string `json:"workspaceFolder,omitzero"`
}

// MCPProposalsResult lists the proposals of a trusted workspace. An untrusted workspace gets
// Trusted false and no proposals: its proposals are ignored and cannot be approved.
type MCPProposalsResult struct {
	WorkspaceFolder string        `json:"workspaceFolder"` // URI
	Trusted         bool          `json:"trusted"`
	Proposals       []MCPProposal `json:"proposals"`
}

// MCPProposal is one server a workspace proposes: its exact definition, and its state.
type MCPProposal struct {
	Name string `json:"name"`
	// File is the workspace-relative file that proposes it.
	File string `json:"file"`
	// Transport is "stdio" (Command, Args, Env, Cwd) or "http" (URL, Headers).
	Transport string            `json:"transport"`
	Command   string            `json:"command,omitzero"`
	Args      []string          `json:"args,omitzero"`
	Env       map[string]string `json:"env,omitzero"`
	Cwd       string            `json:"cwd,omitzero"`
	URL       string            `json:"url,omitzero"`
	Headers   map[string]string `json:"headers,omitzero"`
	// Network is whether the server may reach the network: always false for a proposal (only
	// the user's own mcp.json can turn it on); stdio servers run in agentd's sandbox.
	Network bool `json:"network"`
	// Hash identifies the exact definition; mcp/approve must name it.
	Hash string `json:"hash,omitzero"`
	// State: "approved", "needsApproval", "invalid" (Error says why it can never start as
	// written), "shadowed" (the user's own mcp.json has a server of that name, which wins).
	State string `json:"state"`
	Error string `json:"error,omitzero"`
}

// MCP proposal states (MCPProposal.state).
const (
	ProposalApproved      = "approved"
	ProposalNeedsApproval = "needsApproval"
	ProposalInvalid       = "invalid"
	ProposalShadowed      = "shadowed"
)

// MCPApproveParams approves one proposal of a trusted workspace. Hash must be the definition's
// hash from mcp/proposals: a definition changed since it was shown is not approved.
type MCPApproveParams struct {
	WorkspaceFolder string `json:"workspaceFolder,omitzero"`
	Name            string `json:"name"`
	Hash            string `json:"hash"`
}

// MCPApproveResult: the server starts in sessions created from now on, not in running ones.
type MCPApproveResult struct {
	Name     string `json:"name"`
	Approved bool   `json:"approved"`
	// Note says when it applies ("it starts in new sessions of this workspace").
	Note string `json:"note"`
}

// DocumentSaveParams asks the editor to save a document (server → client request).
type DocumentSaveParams struct {
	URI string `json:"uri"`
}

type DocumentSaveResult struct {
	Saved bool `json:"saved"`
}

// DocumentDiagnosticsParams asks the editor for the diagnostics of a document (server → client
// request). The editor answers once its language server has published diagnostics for the
// document's current text (Version, when set, is the version the daemon expects), or after
// SettleMs milliseconds with what it has then.
type DocumentDiagnosticsParams struct {
	URI      string `json:"uri"`
	Version  int32  `json:"version,omitzero"`
	SettleMs int    `json:"settleMs"`
}

// DocumentDiagnosticsResult is the document's diagnostics (errors and warnings are enough).
type DocumentDiagnosticsResult struct {
	Diagnostics []DocumentDiagnostic `json:"diagnostics"`
}

// DocumentDiagnostic is one diagnostic. Line and Character are zero-based, as in LSP.
type DocumentDiagnostic struct {
	Line      int    `json:"line"`
	Character int    `json:"character"`
	Severity  string `json:"severity"`
	Message   string `json:"message"`
	Source    string `json:"source,omitzero"`
}

// Diagnostic severities (DocumentDiagnostic.severity).
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
	SeverityInfo    = "info"
	SeverityHint    = "hint"
)

// Turn end reasons (Update.reason of turnCompleted and turnFailed).
const (
	ReasonDone           = "done"
	ReasonCancelled      = "cancelled"
	ReasonTerminated     = "terminated"
	ReasonStepsExhausted = "steps_exhausted"
	ReasonTimeExhausted  = "time_exhausted"
	// ReasonBlocked: a call needed an approval no one could give, so the turn stopped.
	ReasonBlocked = "blocked"
	// ReasonError is the reason of turnFailed.
	ReasonError = "error"
)

// Tool call statuses (ToolCallInfo.status).
const (
	StatusPending          = "pending"
	StatusAwaitingApproval = "awaitingApproval"
	StatusRunning          = "running"
	StatusCompleted        = "completed"
	StatusFailed           = "failed"
)

// History item types (HistoryItem.type).
const (
	HistoryUser       = "user"
	HistoryAssistant  = "assistant"
	HistoryTool       = "tool"
	HistoryCompaction = "compaction"
)

// Review kinds (ReviewRequestedParams.kind).
const (
	ReviewEdit    = "edit"
	ReviewCommand = "command"
	ReviewTool    = "tool"
)

// Review outcomes (ReviewDecideResult.outcome, ReviewResolvedParams.outcome).
const (
	OutcomeAccepted  = "accepted"
	OutcomeRejected  = "rejected"
	OutcomeCancelled = "cancelled"
)

// Who settled a review (ReviewResolvedParams.by).
const (
	ByEditor     = "editor"
	ByGrant      = "grant"
	ByTimeout    = "timeout"
	ByDisconnect = "disconnect"
	ByTurnEnded  = "turnEnded"
)

// Approval modes (approvalMode fields and session/setMode).
const (
	ModeAsk      = "ask"
	ModeAutoEdit = "auto-edit"
	ModePlan     = "plan"
	ModeYolo     = "yolo"
)

// Result types (ResultInfo.type): the kernel's typed results (tools.ResultTypes).
const (
	ResultOK                  = "ok"
	ResultNotFound            = "not_found"
	ResultInvalidArgs         = "invalid_args"
	ResultReadFirst           = "read_first"
	ResultStale               = "stale"
	ResultPermissionDenied    = "permission_denied"
	ResultRejectedByUser      = "rejected_by_user"
	ResultApprovalUnavailable = "approval_unavailable"
	ResultTimeout             = "timeout"
	ResultCancelled           = "cancelled"
	ResultOversized           = "oversized"
	ResultExecFailed          = "exec_failed"
	ResultIOError             = "io_error"
)

// Work-done progress kinds (WorkDoneProgress.kind).
const (
	ProgressBegin  = "begin"
	ProgressReport = "report"
	ProgressEnd    = "end"
)

// Message types of window/showMessage and window/logMessage (LSP's MessageType).
const (
	MessageError   = 1
	MessageWarning = 2
	MessageInfo    = 3
	MessageLog     = 4
)

// Enum is a closed set of strings (or numbers) on the wire, and the fields that carry it.
type Enum struct {
	Name   string   // "UpdateType"
	Fields []string // "Update.type": Go type name, then the JSON field
	Values []EnumValue
}

// EnumValue is one value of an enum, named after its Go constant without the group's prefix.
type EnumValue struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// Enums lists every enum of the protocol. rpc/protocol_table_test.go checks that every constant of
// a group is listed; protocol.json carries them to the editors' tests.
var Enums = []Enum{
	{"UpdateType", []string{"Update.type"}, []EnumValue{
		{"TurnStarted", UpdateTurnStarted}, {"UserMessage", UpdateUserMessage}, {"TextDelta", UpdateTextDelta},
		{"ThinkingDelta", UpdateThinkingDelta}, {"MessageCompleted", UpdateMessageCompleted},
		{"ToolCallStarted", UpdateToolCallStarted}, {"ToolCallUpdated", UpdateToolCallUpdated},
		{"ToolCallCompleted", UpdateToolCallCompleted}, {"Usage", UpdateUsage}, {"Compaction", UpdateCompaction},
		{"TurnCompleted", UpdateTurnCompleted}, {"TurnFailed", UpdateTurnFailed}}},
	{"Reason", []string{"Update.reason"}, []EnumValue{
		{"Done", ReasonDone}, {"Cancelled", ReasonCancelled}, {"Terminated", ReasonTerminated},
		{"StepsExhausted", ReasonStepsExhausted}, {"TimeExhausted", ReasonTimeExhausted},
		{"Blocked", ReasonBlocked}, {"Error", ReasonError}}},
	{"Status", []string{"ToolCallInfo.status"}, []EnumValue{
		{"Pending", StatusPending}, {"AwaitingApproval", StatusAwaitingApproval}, {"Running", StatusRunning},
		{"Completed", StatusCompleted}, {"Failed", StatusFailed}}},
	{"History", []string{"HistoryItem.type"}, []EnumValue{
		{"User", HistoryUser}, {"Assistant", HistoryAssistant}, {"Tool", HistoryTool}, {"Compaction", HistoryCompaction}}},
	{"Review", []string{"ReviewRequestedParams.kind"}, []EnumValue{
		{"Edit", ReviewEdit}, {"Command", ReviewCommand}, {"Tool", ReviewTool}}},
	{"Outcome", []string{"ReviewDecideResult.outcome", "ReviewResolvedParams.outcome"}, []EnumValue{
		{"Accepted", OutcomeAccepted}, {"Rejected", OutcomeRejected}, {"Cancelled", OutcomeCancelled}}},
	{"By", []string{"ReviewResolvedParams.by"}, []EnumValue{
		{"Editor", ByEditor}, {"Grant", ByGrant}, {"Timeout", ByTimeout}, {"Disconnect", ByDisconnect},
		{"TurnEnded", ByTurnEnded}}},
	{"HunkState", []string{"HunkState.state"}, []EnumValue{
		{"Pending", HunkPending}, {"Accepted", HunkAccepted}, {"Rejected", HunkRejected}}},
	{"Decision", []string{"Decision.type"}, []EnumValue{
		{"Accept", DecisionAccept}, {"AcceptForSession", DecisionAcceptForSession}, {"Reject", DecisionReject},
		{"CancelTurn", DecisionCancelTurn}}},
	{"Scope", []string{"GrantScope.kind"}, []EnumValue{
		{"Tool", ScopeTool}, {"Command", ScopeCommand}, {"Path", ScopePath}}},
	{"Mode", []string{"SessionInfo.approvalMode", "SessionSetModeParams.approvalMode", "SessionSetModeResult.approvalMode",
		"SessionNewParams.approvalMode", "InitializationOptions.approvalMode"}, []EnumValue{
		{"Ask", ModeAsk}, {"AutoEdit", ModeAutoEdit}, {"Plan", ModePlan}, {"Yolo", ModeYolo}}},
	{"Result", []string{"ResultInfo.type"}, []EnumValue{
		{"OK", ResultOK}, {"NotFound", ResultNotFound}, {"InvalidArgs", ResultInvalidArgs},
		{"ReadFirst", ResultReadFirst}, {"Stale", ResultStale}, {"PermissionDenied", ResultPermissionDenied},
		{"RejectedByUser", ResultRejectedByUser}, {"ApprovalUnavailable", ResultApprovalUnavailable},
		{"Timeout", ResultTimeout}, {"Cancelled", ResultCancelled}, {"Oversized", ResultOversized},
		{"ExecFailed", ResultExecFailed}, {"IOError", ResultIOError}}},
	{"Progress", []string{"WorkDoneProgress.kind"}, []EnumValue{
		{"Begin", ProgressBegin}, {"Report", ProgressReport}, {"End", ProgressEnd}}},
	{"Severity", []string{"DocumentDiagnostic.severity"}, []EnumValue{
		{"Error", SeverityError}, {"Warning", SeverityWarning}, {"Info", SeverityInfo}, {"Hint", SeverityHint}}},
	{"Message", []string{"ShowMessageParams.type", "LogMessageParams.type"}, []EnumValue{
		{"Error", MessageError}, {"Warning", MessageWarning}, {"Info", MessageInfo}, {"Log", MessageLog}}},
	{"Context", []string{"ContextItem.kind"}, []EnumValue{
		{"File", ContextFile}, {"Folder", ContextFolder}, {"Symbol", ContextSymbol}}},
	{"Proposal", []string{"MCPProposal.state"}, []EnumValue{
		{"Approved", ProposalApproved}, {"NeedsApproval", ProposalNeedsApproval}, {"Invalid", ProposalInvalid},
		{"Shadowed", ProposalShadowed}}},
}

// WorkDoneProgressCreateParams asks the editor to create a progress token
// (window/workDoneProgress/create). agentd reports a running turn with it.
type WorkDoneProgressCreateParams struct {
	Token string `json:"token"`
}

// WorkDoneProgressCancelParams is the user cancelling a progress: agentd cancels the turn.
type WorkDoneProgressCancelParams struct {
	Token string `json:"token"`
}

// ProgressParams is a $/progress notification of a turn. For one token the editor receives
// begin, then reports, then end, in that order.
type ProgressParams struct {
	Token string           `json:"token"`
	Value WorkDoneProgress `json:"value"`
}

// WorkDoneProgress is the value of a $/progress: begin (with title and cancellable), report, end.
type WorkDoneProgress struct {
	Kind        string `json:"kind"`
	Title       string `json:"title,omitzero"`
	Cancellable bool   `json:"cancellable,omitzero"`
	Message     string `json:"message,omitzero"`
}

// ShowMessageParams is a window/showMessage notification (a failed turn, with its fix).
type ShowMessageParams struct {
	Type    int    `json:"type"`
	Message string `json:"message"`
}

// LogMessageParams is a window/logMessage notification (the daemon's warnings and errors).
type LogMessageParams struct {
	Type    int    `json:"type"`
	Message string `json:"message"`
}
