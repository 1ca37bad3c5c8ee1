// agentd's editor protocol, mirrored one-to-one from package rpc (the source of truth) and
// documented with JSON examples in docs/protocol.md. test/protocol.test.ts reads rpc/protocol.json
// (generated from the Go table and types) and fails when this file drifts from it.
//
// This file has no dependency on `vscode` or vscode-languageclient, so the unit tests and the
// webview can import it.

export const PROTOCOL_VERSION = 1;

/** Every agentd-specific method, by the name of its Go constant without the "Method" prefix. */
export const Method = {
	// Client → server requests.
	SessionNew: "session/new",
	SessionList: "session/list",
	SessionAttach: "session/attach",
	SessionDetach: "session/detach",
	SessionPrompt: "session/prompt",
	SessionSteer: "session/steer",
	SessionCancel: "session/cancel",
	SessionRevert: "session/revert",
	SessionFork: "session/fork",
	SessionRewind: "session/rewind",
	SessionSetMode: "session/setMode",
	ModelList: "model/list",
	ReviewDecide: "review/decide",
	ReviewList: "review/list",
	ReviewHunkState: "review/hunkState",
	GrantList: "grant/list",
	GrantRevoke: "grant/revoke",
	DaemonStatus: "daemon/status",
	TurnList: "turn/list",
	TurnChanges: "turn/changes",
	TurnUndo: "turn/undo",
	MCPProposals: "mcp/proposals",
	MCPApprove: "mcp/approve",
	// Server → client.
	SessionUpdate: "session/update",
	ReviewRequested: "review/requested",
	ReviewResolved: "review/resolved",
	ReviewHunkStates: "review/hunkStates",
	DocumentSave: "document/save",
	DocumentDiagnostics: "document/diagnostics",
} as const;

export type MethodName = (typeof Method)[keyof typeof Method];

export type Direction = "client→server" | "server→client";

export interface MethodInfo {
	name: MethodName;
	direction: Direction;
	/** false: a notification. */
	request: boolean;
}

/** Mirrors rpc.Methods. */
export const Methods: readonly MethodInfo[] = [
	{ name: Method.SessionNew, direction: "client→server", request: true },
	{ name: Method.SessionList, direction: "client→server", request: true },
	{ name: Method.SessionAttach, direction: "client→server", request: true },
	{ name: Method.SessionDetach, direction: "client→server", request: true },
	{ name: Method.SessionPrompt, direction: "client→server", request: true },
	{ name: Method.SessionSteer, direction: "client→server", request: true },
	{ name: Method.SessionCancel, direction: "client→server", request: true },
	{ name: Method.SessionRevert, direction: "client→server", request: true },
	{ name: Method.SessionFork, direction: "client→server", request: true },
	{ name: Method.SessionRewind, direction: "client→server", request: true },
	{ name: Method.SessionSetMode, direction: "client→server", request: true },
	{ name: Method.ModelList, direction: "client→server", request: true },
	{ name: Method.ReviewDecide, direction: "client→server", request: true },
	{ name: Method.ReviewList, direction: "client→server", request: true },
	{ name: Method.ReviewHunkState, direction: "client→server", request: true },
	{ name: Method.GrantList, direction: "client→server", request: true },
	{ name: Method.GrantRevoke, direction: "client→server", request: true },
	{ name: Method.DaemonStatus, direction: "client→server", request: true },
	{ name: Method.TurnList, direction: "client→server", request: true },
	{ name: Method.TurnChanges, direction: "client→server", request: true },
	{ name: Method.TurnUndo, direction: "client→server", request: true },
	{ name: Method.MCPProposals, direction: "client→server", request: true },
	{ name: Method.MCPApprove, direction: "client→server", request: true },
	{ name: Method.SessionUpdate, direction: "server→client", request: false },
	{ name: Method.ReviewRequested, direction: "server→client", request: false },
	{ name: Method.ReviewResolved, direction: "server→client", request: false },
	{ name: Method.ReviewHunkStates, direction: "server→client", request: false },
	{ name: Method.DocumentSave, direction: "server→client", request: true },
	{ name: Method.DocumentDiagnostics, direction: "server→client", request: true },
];

/** JSON-RPC error codes of docs/protocol.md §8. */
export const ErrorCode = {
	ModelUnavailable: -32001,
	ParseError: -32700,
	InvalidRequest: -32600,
	MethodNotFound: -32601,
	InvalidParams: -32602,
	RequestCancelled: -32800,
	UnknownSession: -32801,
	UnknownReview: -32802,
	TurnRunning: -32803,
	ReviewResolved: -32804,
	WorkspaceFolder: -32805,
	RequestFailed: -32806,
} as const;

// ---- LSP basics (the subset used here, to keep this file free of dependencies) ----

export interface Position {
	line: number;
	character: number;
}
export interface Range {
	start: Position;
	end: Position;
}
export interface TextEdit {
	range: Range;
	newText: string;
}

// ---- Lifecycle ----

export type ApprovalMode = "ask" | "auto-edit" | "plan" | "yolo";
export const APPROVAL_MODES: readonly ApprovalMode[] = ["ask", "auto-edit", "plan", "yolo"];

export interface InitializationOptions {
	protocolVersion: number;
	client?: string;
	reviews: boolean;
	documentSave?: boolean;
	/** The editor answers document/diagnostics (see DocumentDiagnosticsParams). */
	diagnostics?: boolean;
	model?: string;
	approvalMode?: string;
	ollamaHost?: string;
	contextLength?: number;
	/** The inline completion model for this connection (empty: the daemon's). */
	completionModel?: string;
}

/** capabilities.experimental.agentd of the initialize result. */
export interface ServerInfo {
	protocolVersion: number;
	version: string;
	sandbox: string;
	/** The model textDocument/inlineCompletion uses for this connection. */
	completionModel: string;
	/** Someone chose the completion model: inline completion is on by default ("auto"). */
	completionConfigured?: boolean;
}

/** textDocument/inlineCompletion's answer (LSP 3.18; docs/protocol.md §2). */
export interface InlineCompletionList {
	items: { insertText: string; range: { start: { line: number; character: number }; end: { line: number; character: number } } }[];
}

// ---- Sessions ----

export interface SessionInfo {
	sessionId: string;
	title: string;
	workspaceFolder: string;
	model: string;
	approvalMode: string;
	contextLength?: number;
	createdAt: string;
	updatedAt: string;
	turns: number;
	running: boolean;
	attached: number;
	/** The project instructions (AGENTS.md) the model reads; absent when none. */
	instructions?: InstructionsInfo;
	/** What the user should know about the session's setup (tool definitions over a quarter of the window). */
	warnings?: string[];
}

export interface InstructionsInfo {
	/** Relative to the workspace folder ("AGENTS.md"). */
	path: string;
	bytes: number;
	/** Only the beginning is used (the cap is 8 KiB). */
	truncated: boolean;
}

export interface SessionNewParams {
	workspaceFolder?: string;
	model?: string;
	approvalMode?: string;
	title?: string;
}
export interface SessionNewResult {
	session: SessionInfo;
}

export interface SessionListParams {
	workspaceFolder?: string;
}
export interface SessionListResult {
	sessions: SessionInfo[];
}

export interface SessionAttachParams {
	sessionId: string;
}
export interface SessionAttachResult {
	session: SessionInfo;
	history: HistoryItem[];
	pendingReviews: ReviewRequestedParams[];
}

export type HistoryItemType = "user" | "assistant" | "tool" | "compaction";
export interface HistoryItem {
	type: HistoryItemType;
	turnId: string;
	text?: string;
	thinking?: string;
	toolCall?: ToolCallInfo;
	/** For "compaction": the summary that replaced the earlier turns (tokens 0 when unknown). */
	compaction?: CompactionInfo;
	/** For "user": labels of the editor context sent with the prompt ("cart.go", "cart.go:3-5", "@greet.go"); text is the user's words without it. */
	context?: string[];
}

export interface SessionDetachParams {
	sessionId: string;
}
export type SessionDetachResult = Record<string, never>;

/** ContextItem kinds: mentions typed in the prompt (no kind: a selection or the active file). */
export const ContextKind = { File: "file", Folder: "folder", Symbol: "symbol" } as const;

export interface ContextItem {
	kind?: "file" | "folder" | "symbol";
	uri: string;
	range?: Range;
	text?: string;
	name?: string;
	symbolKind?: string;
}

export interface SessionPromptParams {
	sessionId: string;
	text: string;
	context?: ContextItem[];
}
export interface SessionPromptResult {
	turnId: string;
}

export interface SessionSteerParams {
	sessionId: string;
	text: string;
}
export interface SessionSteerResult {
	turnId: string;
}

export interface SessionCancelParams {
	sessionId: string;
}
export interface SessionCancelResult {
	cancelled: boolean;
}

export interface SessionRevertParams {
	sessionId: string;
	turnId?: string;
}
export interface RevertSkip {
	path: string;
	reason: string;
}
export interface SessionForkParams {
	sessionId: string;
}

export interface SessionForkResult {
	session: SessionInfo;
}

export interface SessionRewindParams {
	sessionId: string;
	turnId: string;
}

export interface SessionRewindResult {
	session: SessionInfo;
	turnId: string;
	prompt: string;
	restored: string[];
	skipped: RevertSkip[];
}

export interface SessionRevertResult {
	turnId: string;
	restored: string[];
	skipped: RevertSkip[];
}

export interface SessionSetModeParams {
	sessionId: string;
	approvalMode: string;
}
export interface SessionSetModeResult {
	approvalMode: string;
}

export type ModelListParams = Record<string, never>;
export interface ModelInfo {
	name: string;
	sizeBytes?: number;
	parameterSize?: string;
	capabilities?: string[];
}
export interface ModelListResult {
	models: ModelInfo[];
	default: string;
}

export interface DaemonStatusParams {
	/** The model the editor will start sessions with (default: its initialize model). */
	model?: string;
}
export interface DaemonStatusResult {
	version: string;
	sandbox: string;
	sessions: number;
	/** "ok" or what is wrong with the model server, with the fix (whatever the engine). */
	ollama: string;
	/** "ok" when Ollama has the model, else that it is not pulled, with the fix and the models there. */
	model?: string;
	/** The inline completion model of this connection. */
	completionModel: string;
	/** The engine and its address: "ollama http://127.0.0.1:11434", "openai http://gpu:8000/v1". */
	engine: string;
}

// ---- Turns: session/update ----

export const UpdateType = {
	TurnStarted: "turnStarted",
	UserMessage: "userMessage",
	TextDelta: "textDelta",
	ThinkingDelta: "thinkingDelta",
	MessageCompleted: "messageCompleted",
	ToolCallStarted: "toolCallStarted",
	ToolCallUpdated: "toolCallUpdated",
	ToolCallCompleted: "toolCallCompleted",
	Usage: "usage",
	Compaction: "compaction",
	TurnCompleted: "turnCompleted",
	TurnFailed: "turnFailed",
} as const;
export type UpdateKind = (typeof UpdateType)[keyof typeof UpdateType];

export interface SessionUpdateParams {
	sessionId: string;
	turnId?: string;
	seq: number;
	update: Update;
}

export interface Update {
	type: UpdateKind | string;
	text?: string;
	/** For userMessage: labels of the editor context sent with the prompt, as in HistoryItem.context. */
	context?: string[];
	thinking?: string;
	toolCall?: ToolCallInfo;
	usage?: UsageInfo;
	compaction?: CompactionInfo;
	reason?: string;
	error?: ErrorInfo;
}

export type ToolCallStatus = "pending" | "awaitingApproval" | "running" | "completed" | "failed";

export interface ToolCallInfo {
	callId: string;
	tool: string;
	label?: string;
	status: ToolCallStatus | string;
	arguments?: unknown;
	activity?: string;
	/** A file change waiting for an earlier call of the reply that changes the same file (its
	 * callId): it is previewed and reviewed once that one has ended. */
	waitsFor?: string;
	preview?: PreviewInfo;
	progress?: string;
	result?: ResultInfo;
	mcp?: MCPCall;
}

/** The MCP server and tool behind a call ("everything__echo" is server everything, tool echo); in a review, the exact arguments sent. */
export interface MCPCall {
	server: string;
	tool: string;
	arguments?: unknown;
}

export interface PreviewInfo {
	summary: string;
	unifiedDiff?: string;
	command?: CommandPreview;
}

export interface ResultInfo {
	type: string;
	isError: boolean;
	text: string;
	elapsedMs: number;
	truncated?: boolean;
	details?: unknown;
	images?: ResultImage[];
}

export interface ResultImage {
	mimeType: string;
	bytes: number;
}

export interface UsageInfo {
	promptTokens: number;
	outputTokens: number;
	/** Prompt tokens taken from the server's prompt cache (OpenAI-compatible engines only). */
	cachedTokens?: number;
	promptMs: number;
	outputMs: number;
	loadMs?: number;
	contextLength: number;
	contextPercent: number;
}

export interface CompactionInfo {
	tokensBefore: number;
	tokensAfter: number;
	summary?: string;
}

export interface ErrorInfo {
	kind: string;
	message: string;
	fix?: string;
}

// ---- Reviews ----

export type ReviewKind = "edit" | "command" | "tool";

export interface ReviewRequestedParams {
	reviewId: string;
	sessionId: string;
	turnId: string;
	callId: string;
	tool: string;
	label: string;
	kind: ReviewKind | string;
	why: string;
	file?: FileReview;
	command?: CommandPreview;
	mcp?: MCPCall;
	scopes: GrantScope[];
	timeoutMs?: number;
	/** The per-hunk decisions editors already made (session/attach, review/list); a hunk not listed is pending. */
	hunkStates?: Record<string, HunkState>;
}

export interface FileReview {
	uri: string;
	path: string;
	created?: boolean;
	deleted?: boolean;
	version?: number;
	hunks: Hunk[];
	unifiedDiff: string;
	edit: { edits: TextEdit[] };
}

/**
 * One change of a file. Lines are 1-based. For a pure insertion (oldLines 0) oldStart is the line
 * before which the added lines go. removed/added are whole lines without terminators.
 */
export interface Hunk {
	id: string;
	oldStart: number;
	oldLines: number;
	newStart: number;
	newLines: number;
	removed: string[];
	added: string[];
}

export interface CommandPreview {
	argv: string[];
	cwd: string;
	timeoutMs: number;
	sandbox: string;
	network: boolean;
}

export const ScopeKind = { Tool: "tool", Command: "command", Path: "path" } as const;

export interface GrantScope {
	kind: (typeof ScopeKind)[keyof typeof ScopeKind] | string;
	tool?: string;
	commandPrefix?: string[];
	pathPrefix?: string;
	label?: string;
}

export const DecisionType = {
	Accept: "accept",
	AcceptForSession: "acceptForSession",
	Reject: "reject",
	CancelTurn: "cancelTurn",
} as const;

/** The closed decision set; fields that do not belong to the type are errors on the daemon side. */
/**
 * The closed decision set. hunkReasons (hunk ID → the user's reason) goes with a partial accept
 * (for hunks not in `hunks`) or a reject; a reason for an accepted or unknown hunk is -32602.
 */
export type Decision =
	| { type: "accept"; hunks?: string[]; reason?: string; hunkReasons?: Record<string, string>; /** The user's own version of the whole file (an edited proposal); without hunks. */ content?: string }
	| { type: "acceptForSession"; scope: GrantScope }
	| { type: "reject"; reason?: string; hunkReasons?: Record<string, string> }
	| { type: "cancelTurn" };

export interface ReviewDecideParams {
	reviewId: string;
	decision: Decision;
}
export interface ReviewDecideResult {
	outcome: "accepted" | "rejected" | "cancelled" | string;
	settled: string[];
}

export interface ReviewListParams {
	sessionId: string;
}
export interface ReviewListResult {
	reviews: ReviewRequestedParams[];
}

export interface ReviewResolvedParams {
	reviewId: string;
	sessionId: string;
	outcome: "accepted" | "rejected" | "cancelled" | string;
	by: "editor" | "grant" | "timeout" | "disconnect" | "turnEnded" | string;
	hunks?: string[];
	/** The final decision's reasons for rejected hunks. */
	hunkReasons?: Record<string, string>;
}

/** An editor's decision on one hunk before its file is settled (review/hunkState). */
export interface HunkState {
	state: "pending" | "accepted" | "rejected";
	/** Only with "rejected". */
	reason?: string;
}
/** Changes the listed hunks' states of a pending file review (-32602 when invalid). */
export interface ReviewHunkStateParams {
	reviewId: string;
	hunks: Record<string, HunkState>;
}
export interface ReviewHunkStateResult {
	hunks: Record<string, HunkState>;
}
/** Another editor changed a pending review's hunk states: every decided hunk (the others are pending). */
export interface ReviewHunkStatesParams {
	reviewId: string;
	sessionId: string;
	hunks: Record<string, HunkState>;
}

// ---- Grants ----

export interface GrantListParams {
	sessionId: string;
}
export interface Grant {
	id: string;
	scope: GrantScope;
}
export interface GrantListResult {
	grants: Grant[];
}
export interface GrantRevokeParams {
	sessionId: string;
	grantId: string;
}
export interface GrantRevokeResult {
	revoked: boolean;
}

// ---- document/save ----

export interface DocumentSaveParams {
	uri: string;
}
export interface DocumentSaveResult {
	saved: boolean;
}

// ---- document/diagnostics (server → client) ----

export interface DocumentDiagnosticsParams {
	uri: string;
	version?: number;
	settleMs: number;
}
export interface DocumentDiagnostic {
	line: number;
	character: number;
	severity: string;
	message: string;
	source?: string;
}
export interface DocumentDiagnosticsResult {
	diagnostics: DocumentDiagnostic[];
}

/** Params and result type of every request, so `request()` call sites are checked. */
export interface RequestTypes {
	"session/new": [SessionNewParams, SessionNewResult];
	"session/list": [SessionListParams, SessionListResult];
	"session/attach": [SessionAttachParams, SessionAttachResult];
	"session/detach": [SessionDetachParams, SessionDetachResult];
	"session/prompt": [SessionPromptParams, SessionPromptResult];
	"session/steer": [SessionSteerParams, SessionSteerResult];
	"session/cancel": [SessionCancelParams, SessionCancelResult];
	"session/revert": [SessionRevertParams, SessionRevertResult];
	"session/fork": [SessionForkParams, SessionForkResult];
	"session/rewind": [SessionRewindParams, SessionRewindResult];
	"session/setMode": [SessionSetModeParams, SessionSetModeResult];
	"model/list": [ModelListParams, ModelListResult];
	"review/decide": [ReviewDecideParams, ReviewDecideResult];
	"review/list": [ReviewListParams, ReviewListResult];
	"review/hunkState": [ReviewHunkStateParams, ReviewHunkStateResult];
	"grant/list": [GrantListParams, GrantListResult];
	"grant/revoke": [GrantRevokeParams, GrantRevokeResult];
	"daemon/status": [DaemonStatusParams, DaemonStatusResult];
	"turn/list": [TurnListParams, TurnListResult];
	"turn/changes": [TurnChangesParams, TurnChangesResult];
	"turn/undo": [TurnUndoParams, TurnUndoResult];
	"mcp/proposals": [MCPProposalsParams, MCPProposalsResult];
	"mcp/approve": [MCPApproveParams, MCPApproveResult];
}

// ---- MCP servers a workspace proposes (mcp/proposals, mcp/approve) ----
export interface MCPProposalsParams {
	workspaceFolder?: string;
}

export interface MCPProposalsResult {
	workspaceFolder: string;
	/** false: the workspace is not trusted; nothing is offered. */
	trusted: boolean;
	proposals: MCPProposal[];
}

export type MCPProposalState = "approved" | "needsApproval" | "invalid" | "shadowed";

export interface MCPProposal {
	name: string;
	file: string;
	transport: string;
	command?: string;
	args?: string[];
	env?: Record<string, string>;
	cwd?: string;
	url?: string;
	headers?: Record<string, string>;
	network: boolean;
	hash?: string;
	state: MCPProposalState | string;
	error?: string;
}

export interface MCPApproveParams {
	workspaceFolder?: string;
	name: string;
	hash: string;
}

export interface MCPApproveResult {
	name: string;
	approved: boolean;
	note: string;
}
export type ClientRequest = keyof RequestTypes;

// ---- A turn's changes, after the fact (turn/list, turn/changes, turn/undo) ----
export interface TurnListParams {
	sessionId: string;
}

export interface TurnSummary {
	turnId: string;
	/** The first line of the turn's prompt (≤ 80 characters). */
	prompt: string;
	createdAt: string;
	/** The number of files the turn changed. */
	files: number;
	reverted: boolean;
}

export interface TurnListResult {
	turns: TurnSummary[];
}

export interface TurnChangesParams {
	sessionId: string;
	/** Omitted: the newest turn that changed files and is not reverted. */
	turnId?: string;
}

export interface TurnHunk {
	id: string;
	header: string;
	oldStart: number;
	oldLines: number;
	newStart: number;
	newLines: number;
}

export type TurnFileStatus = "modified" | "created" | "deleted";

export interface TurnChange {
	path: string;
	uri: string;
	status: TurnFileStatus | string;
	/** Unified diff from the turn's checkpoint (pre-image) to what the turn left, or to the current content when changedSince. */
	diff: string;
	hunks: TurnHunk[];
	/** The file changed since the turn: undo skips it. */
	changedSince: boolean;
	/** When changedSince: why undo will skip the file. */
	reason?: string;
}

export interface TurnChangesResult {
	turnId: string;
	files: TurnChange[];
}

export interface TurnUndoParams {
	sessionId: string;
	turnId: string;
	files?: string[];
	hunks?: Record<string, string[]>;
}

export interface TurnUndoResult {
	undone: string[];
	skipped: RevertSkip[];
}
