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
