// The chat state of one session and the reducer that folds session/update notifications into it.
// Pure: no `vscode`, no DOM. The extension host owns the state; the webview only receives the
// resulting changes (ChatChange) and renders them.
//
// Delivery rules (docs/protocol.md §4): updates are numbered by `seq`; text and thinking deltas may
// be coalesced (so a gap in seq is normal), every other kind is always delivered in order.
// Therefore:
//   - an update whose seq was already applied is a duplicate and is dropped;
//   - a delta older than the newest applied update is dropped: messageCompleted carries the whole
//     text and thinking and repairs the message;
//   - any other late update is applied (tool-call merges never move a finished call backwards).
// Each delta costs O(length of the delta): items are found through a Map, never by scanning.

import type {
	CompactionInfo,
	ErrorInfo,
	HistoryItem,
	MCPCall,
	PreviewInfo,
	ResultInfo,
	SessionInfo,
	SessionUpdateParams,
	ToolCallInfo,
	UsageInfo,
} from "../protocol";

export interface UserItem {
	kind: "user";
	id: string;
	turnId?: string;
	text: string;
	/** Labels of the context sent with the prompt ("cart.go:41-48"). */
	context?: string[];
	/** Sent by this editor and not yet echoed by the daemon. */
	pending?: boolean;
	/** Sent with session/steer into a running turn. */
	steer?: boolean;
}

export interface AssistantItem {
	kind: "assistant";
	id: string;
	turnId?: string;
	text: string;
	thinking: string;
	streaming: boolean;
}

export interface ToolItem {
	kind: "tool";
	id: string;
	turnId?: string;
	callId: string;
	tool: string;
	label: string;
	status: string;
	activity?: string;
	/** The earlier call of the reply changing the same file that this pending call waits for. */
	waitsFor?: string;
	arguments?: unknown;
	preview?: PreviewInfo;
	/** Output of a running call, accumulated from toolCallUpdated.progress (tail kept). */
	output: string;
	result?: ResultInfo;
	/** The review waiting for this call, while it waits. */
	reviewId?: string;
	reviewKind?: string;
	/** Why the review asks (the approval mode, a protected path…). */
	reviewWhy?: string;
	/** An MCP server's tool: the server and the tool on it. */
	mcp?: MCPCall;
	/** The exact arguments the pending review of an MCP call is bound to. */
	reviewArgs?: unknown;
}

export interface NoticeItem {
	kind: "notice";
	id: string;
	turnId?: string;
	text: string;
	detail?: string;
	level: "info" | "warning";
}

export interface ErrorItem {
	kind: "error";
	id: string;
	turnId?: string;
	error: ErrorInfo;
}

export interface TurnEndItem {
	kind: "turnEnd";
	id: string;
	turnId: string;
	/** "done", "cancelled", "error", …; undefined for turns loaded from history. */
	reason?: string;
	/** The turn changed files (a completed call with a diff): offer to revert it. */
	changedFiles: boolean;
	/** Set once the turn was reverted. */
	reverted?: string;
}

export type ChatItem = UserItem | AssistantItem | ToolItem | NoticeItem | ErrorItem | TurnEndItem;

export type ChatChange =
	| { op: "add"; item: ChatItem }
	| { op: "set"; item: ChatItem }
	| { op: "append"; id: string; field: "text" | "thinking" | "output"; text: string }
	| { op: "remove"; id: string }
	| { op: "reset"; items: ChatItem[] };

export interface ChatState {
	sessionId?: string;
	lastSeq: number;
	/** Applied seqs near lastSeq, to drop duplicates of late non-delta updates. */
	seen: Set<number>;
	items: ChatItem[];
	byId: Map<string, ChatItem>;
	/** The assistant message deltas go to, until messageCompleted or a tool call. */
	currentAssistant?: string;
	pendingUser?: string;
	running: boolean;
	turnId?: string;
	/** What the agent is doing now, for the status bar ("thinking", "running go test ./..."). */
	activity?: string;
	usage?: UsageInfo;
	/** Turns with a completed call that changed a file. */
	changedTurns: Set<string>;
	/** Tool calls waiting for the user's approval: while any waits, the activity says so. */
	awaiting: Set<string>;
	nextId: number;
}

/** The activity while a call waits for the user (a review or a command approval). */
export const WAITING_ACTIVITY = "waiting for your review";

/** Output kept per tool card; older output is cut (the result text is the authoritative end). */
export const MAX_TOOL_OUTPUT = 64 * 1024;
const SEEN_WINDOW = 4096;
const TERMINAL = new Set(["completed", "failed"]);

export function newChatState(sessionId?: string): ChatState {
	return {
		sessionId,
		lastSeq: 0,
		seen: new Set(),
		items: [],
		byId: new Map(),
		running: false,
		changedTurns: new Set(),
		awaiting: new Set(),
		nextId: 1,
	};
}

function localId(s: ChatState, prefix: string): string {
	return `${prefix}${s.nextId++}`;
}

function add(s: ChatState, item: ChatItem, out: ChatChange[]): void {
	s.items.push(item);
	s.byId.set(item.id, item);
	out.push({ op: "add", item: { ...item } as ChatItem });
}

function set(item: ChatItem, out: ChatChange[]): void {
	out.push({ op: "set", item: { ...item } as ChatItem });
}

function remove(s: ChatState, id: string, out: ChatChange[]): void {
	if (!s.byId.delete(id)) return;
	const i = s.items.findIndex((it) => it.id === id);
	if (i >= 0) s.items.splice(i, 1);
	out.push({ op: "remove", id });
}

/** Builds the state of a session from session/attach's history. */
export function fromHistory(session: SessionInfo, history: HistoryItem[]): ChatState {
	const s = newChatState(session.sessionId);
	const out: ChatChange[] = [];
	let turn: string | undefined;
	const endTurn = () => {
		if (turn === undefined) return;
		add(s, { kind: "turnEnd", id: localId(s, "e"), turnId: turn, changedFiles: s.changedTurns.has(turn) }, out);
	};
	for (const h of history) {
		if (turn !== undefined && h.turnId !== turn) endTurn();
		turn = h.turnId;
		switch (h.type) {
			case "user":
				add(s, userItem(s, h.turnId, h.text ?? "", h.context), out);
				break;
			case "assistant":
				add(
					s,
					{ kind: "assistant", id: localId(s, "a"), turnId: h.turnId, text: h.text ?? "", thinking: h.thinking ?? "", streaming: false },
					out,
				);
				break;
			case "tool":
				if (h.toolCall) mergeToolCall(s, h.turnId, h.toolCall, out);
				break;
			case "compaction":
				// agentd's summary of the earlier turns: a notice, as live, never the user's words.
				add(s, compactionNotice(s, h.turnId, h.compaction ?? { tokensBefore: 0, tokensAfter: 0 }), out);
				break;
		}
	}
	if (session.running) {
		s.running = true;
		s.turnId = turn;
		// A call of the running turn may wait for the user (the daemon sends the calls as they are).
		for (const it of s.items) if (it.kind === "tool" && it.status === "awaitingApproval") s.awaiting.add(it.callId);
		if (s.awaiting.size > 0) s.activity = WAITING_ACTIVITY;
	} else {
		endTurn();
	}
	return s;
}

export function snapshot(s: ChatState): ChatItem[] {
	return s.items.map((it) => ({ ...it }) as ChatItem);
}

/** A user's message as the daemon sent it (live or in the history): the words and the context's labels. */
function userItem(s: ChatState, turnId: string | undefined, text: string, context: string[] | undefined): UserItem {
	const item: UserItem = { kind: "user", id: localId(s, "u"), turnId, text };
	if (context?.length) item.context = [...context];
	return item;
}

/** Adds the user's own message at once, before the daemon echoes it as userMessage. */
export function addLocalUser(s: ChatState, text: string, context: string[] | undefined, steer: boolean): ChatChange[] {
	const out: ChatChange[] = [];
	const item: UserItem = { kind: "user", id: localId(s, "u"), text, pending: true };
	if (context && context.length) item.context = context;
	if (steer) item.steer = true;
	add(s, item, out);
	s.pendingUser = item.id;
	// A new prompt ends the previous assistant bubble.
	s.currentAssistant = undefined;
	return out;
}

/** Drops the optimistic user message when the request failed. */
export function dropLocalUser(s: ChatState, id: string): ChatChange[] {
	const out: ChatChange[] = [];
	if (s.pendingUser === id) s.pendingUser = undefined;
	remove(s, id, out);
	return out;
}

export function addNotice(s: ChatState, text: string, level: "info" | "warning" = "info", detail?: string): ChatChange[] {
	const out: ChatChange[] = [];
	const n: NoticeItem = { kind: "notice", id: localId(s, "n"), turnId: s.turnId, text, level };
	if (detail) n.detail = detail;
	add(s, n, out);
	return out;
}

export function addError(s: ChatState, error: ErrorInfo): ChatChange[] {
	const out: ChatChange[] = [];
	add(s, { kind: "error", id: localId(s, "x"), turnId: s.turnId, error }, out);
	return out;
}

export function markReverted(s: ChatState, turnId: string, summary: string): ChatChange[] {
	const out: ChatChange[] = [];
	for (const it of s.items) {
		if (it.kind === "turnEnd" && it.turnId === turnId) {
			it.reverted = summary;
			set(it, out);
		}
	}
	return out;
}

/** Links a pending review to its tool card (so the card can show Run / Reject buttons). */
export function setToolReview(s: ChatState, callId: string, reviewId: string | undefined, reviewKind?: string, why?: string, reviewArgs?: unknown): ChatChange[] {
	const out: ChatChange[] = [];
	const it = s.byId.get(toolId(callId));
	if (!it || it.kind !== "tool") return out;
	if (it.reviewId === reviewId) return out;
	if (reviewId === undefined) {
		delete it.reviewId;
		delete it.reviewKind;
		delete it.reviewWhy;
		delete it.reviewArgs;
	} else {
		it.reviewId = reviewId;
		if (reviewKind) it.reviewKind = reviewKind;
		if (why) it.reviewWhy = why;
		if (reviewArgs !== undefined) it.reviewArgs = reviewArgs;
	}
	set(it, out);
	return out;
}

const isDelta = (t: string) => t === "textDelta" || t === "thinkingDelta";

/** Folds one session/update into the state and returns what changed, for the view. */
export function applyUpdate(s: ChatState, p: SessionUpdateParams): ChatChange[] {
	if (s.sessionId !== undefined && p.sessionId !== s.sessionId) return [];
	const u = p.update;
	if (typeof p.seq === "number" && p.seq > 0) {
		if (s.seen.has(p.seq)) return [];
		if (p.seq < s.lastSeq && isDelta(u.type)) return [];
		s.seen.add(p.seq);
		if (p.seq > s.lastSeq) s.lastSeq = p.seq;
		if (s.seen.size > SEEN_WINDOW) {
			for (const q of s.seen) if (q < s.lastSeq - SEEN_WINDOW / 2) s.seen.delete(q);
		}
	}
	const out: ChatChange[] = [];
	const turnId = p.turnId;
	switch (u.type) {
		case "turnStarted":
			s.running = true;
			s.turnId = turnId;
			s.activity = "thinking";
			s.awaiting.clear();
			s.currentAssistant = undefined;
			break;
		case "userMessage": {
			const text = u.text ?? "";
			const pending = s.pendingUser ? s.byId.get(s.pendingUser) : undefined;
			s.pendingUser = undefined;
			if (pending && pending.kind === "user") {
				pending.pending = false;
				pending.turnId = turnId;
				// The echo is the user's words and the labels of the context the daemon got (mentions
				// included; a steer has none): the chips show them as a replayed history does.
				pending.text = text || pending.text;
				if (u.context?.length) pending.context = u.context;
				else delete pending.context;
				set(pending, out);
			} else {
				add(s, userItem(s, turnId, text, u.context), out);
			}
			s.currentAssistant = undefined;
			break;
		}
		case "thinkingDelta":
		case "textDelta": {
			const text = u.text ?? "";
			if (!text) break;
			const a = currentAssistant(s, turnId, out);
			const field = u.type === "textDelta" ? "text" : "thinking";
			a[field] += text;
			out.push({ op: "append", id: a.id, field, text });
			s.activity = field === "text" ? "writing" : "thinking";
			break;
		}
		case "messageCompleted": {
			const text = u.text ?? "";
			const thinking = u.thinking ?? "";
			const cur = s.currentAssistant ? s.byId.get(s.currentAssistant) : undefined;
			if (cur && cur.kind === "assistant") {
				if (!text && !thinking) {
					remove(s, cur.id, out);
				} else {
					cur.text = text;
					cur.thinking = thinking;
					cur.streaming = false;
					set(cur, out);
				}
			} else if (text || thinking) {
				add(s, { kind: "assistant", id: localId(s, "a"), turnId, text, thinking, streaming: false }, out);
			}
			s.currentAssistant = undefined;
			break;
		}
		case "toolCallStarted":
		case "toolCallUpdated":
		case "toolCallCompleted":
			if (u.toolCall) {
				s.currentAssistant = undefined;
				mergeToolCall(s, turnId, u.toolCall, out);
				const tc = u.toolCall;
				if (tc.status === "awaitingApproval" && u.type !== "toolCallCompleted") s.awaiting.add(tc.callId);
				else s.awaiting.delete(tc.callId);
				if (u.type === "toolCallCompleted" || TERMINAL.has(tc.status)) {
					s.activity = s.running ? "thinking" : undefined;
				} else {
					s.activity = tc.activity || (tc.status === "awaitingApproval" ? `waiting for approval: ${tc.label || tc.tool}` : tc.label || tc.tool);
				}
			}
			break;
		case "usage":
			if (u.usage) s.usage = u.usage;
			break;
		case "compaction":
			if (u.compaction) add(s, compactionNotice(s, turnId, u.compaction), out);
			break;
		case "turnCompleted":
		case "turnFailed": {
			const cur = s.currentAssistant ? s.byId.get(s.currentAssistant) : undefined;
			if (cur && cur.kind === "assistant" && cur.streaming) {
				cur.streaming = false;
				set(cur, out);
			}
			s.currentAssistant = undefined;
			s.pendingUser = undefined;
			if (u.type === "turnFailed" && u.error) {
				add(s, { kind: "error", id: localId(s, "x"), turnId, error: u.error }, out);
			}
			const t = turnId ?? s.turnId ?? "";
			add(
				s,
				{ kind: "turnEnd", id: localId(s, "e"), turnId: t, reason: u.reason || (u.type === "turnFailed" ? "error" : "done"), changedFiles: s.changedTurns.has(t) },
				out,
			);
			s.running = false;
			s.activity = undefined;
			s.awaiting.clear();
			break;
		}
		default:
			// An update kind this editor does not know yet: ignore, never fail.
			break;
	}
	// While a call waits for the user, that is what the turn does (not "thinking").
	if (s.running && s.awaiting.size > 0) s.activity = WAITING_ACTIVITY;
	return out;
}

function currentAssistant(s: ChatState, turnId: string | undefined, out: ChatChange[]) {
	const cur = s.currentAssistant ? s.byId.get(s.currentAssistant) : undefined;
	if (cur && cur.kind === "assistant") return cur;
	const a: AssistantItem = { kind: "assistant", id: localId(s, "a"), turnId, text: "", thinking: "", streaming: true };
	add(s, a, out);
	s.currentAssistant = a.id;
	// The view appends the deltas to this (empty) item.
	return a;
}

function compactionNotice(s: ChatState, turnId: string | undefined, c: CompactionInfo): NoticeItem {
	const n: NoticeItem = {
		kind: "notice",
		id: localId(s, "n"),
		turnId,
		// The history does not know the token counts (0): it says what happened without them.
		text:
			c.tokensBefore > 0
				? `Context compacted: ${c.tokensBefore.toLocaleString("en-US")} → ${c.tokensAfter.toLocaleString("en-US")} tokens`
				: "Context compacted: the earlier conversation was replaced by a summary",
		level: "info",
	};
	if (c.summary) n.detail = c.summary;
	return n;
}

export function toolId(callId: string): string {
	return `call:${callId}`;
}

function mergeToolCall(s: ChatState, turnId: string | undefined, tc: ToolCallInfo, out: ChatChange[]): void {
	const id = toolId(tc.callId);
	let it = s.byId.get(id) as ToolItem | undefined;
	let progress = tc.progress ?? "";
	if (!it) {
		it = {
			kind: "tool",
			id,
			turnId,
			callId: tc.callId,
			tool: tc.tool,
			label: tc.label || tc.tool,
			status: tc.status,
			output: "",
		};
		applyFields(it, tc);
		if (progress) it.output = capOutput(progress);
		progress = "";
		add(s, it, out);
	} else {
		let changed = false;
		// Never move a finished call back to an earlier state (a late update).
		if (!(TERMINAL.has(it.status) && !TERMINAL.has(tc.status)) && it.status !== tc.status) {
			it.status = tc.status;
			changed = true;
		}
		if (applyFields(it, tc)) changed = true;
		if (TERMINAL.has(it.status) && (it.activity !== undefined || it.reviewId !== undefined)) {
			delete it.activity;
			delete it.reviewId;
			delete it.reviewKind;
			delete it.reviewWhy;
			delete it.reviewArgs;
			changed = true;
		}
		if (changed) set(it, out);
	}
	if (progress) {
		it.output += progress;
		if (it.output.length > MAX_TOOL_OUTPUT) {
			it.output = capOutput(it.output);
			set(it, out);
		} else {
			out.push({ op: "append", id, field: "output", text: progress });
		}
	}
	if (it.status === "completed" && it.preview?.unifiedDiff && it.result && !it.result.isError && it.turnId) {
		s.changedTurns.add(it.turnId);
	}
}

/** Copies the fields the update carries; true when something visible changed. */
function applyFields(it: ToolItem, tc: ToolCallInfo): boolean {
	let changed = false;
	if (tc.label && tc.label !== it.label) {
		it.label = tc.label;
		changed = true;
	}
	if (tc.tool && tc.tool !== it.tool) {
		it.tool = tc.tool;
		changed = true;
	}
	if (tc.activity !== undefined && tc.activity !== it.activity) {
		it.activity = tc.activity;
		changed = true;
	}
	// Every update says it while the call waits: one without it ends the wait.
	if (tc.waitsFor !== it.waitsFor) {
		it.waitsFor = tc.waitsFor;
		changed = true;
	}
	if (tc.arguments !== undefined) {
		it.arguments = tc.arguments;
		changed = true;
	}
	if (tc.preview) {
		it.preview = tc.preview;
		changed = true;
	}
	if (tc.result) {
		it.result = tc.result;
		changed = true;
	}
	if (tc.mcp && !it.mcp) {
		it.mcp = tc.mcp;
		changed = true;
	}
	return changed;
}

function capOutput(s: string): string {
	if (s.length <= MAX_TOOL_OUTPUT) return s;
	const cut = s.slice(s.length - MAX_TOOL_OUTPUT);
	const nl = cut.indexOf("\n");
	return "…\n" + (nl >= 0 && nl < 200 ? cut.slice(nl + 1) : cut);
}

/**
 * Merges consecutive appends to the same item field, so a burst of deltas is posted to the
 * webview as one message per frame.
 */
export function coalesceChanges(changes: ChatChange[]): ChatChange[] {
	const out: ChatChange[] = [];
	for (const c of changes) {
		const last = out[out.length - 1];
		if (c.op === "append" && last && last.op === "append" && last.id === c.id && last.field === c.field) {
			out[out.length - 1] = { ...last, text: last.text + c.text };
			continue;
		}
		if (c.op === "reset") {
			out.length = 0;
		}
		out.push(c);
	}
	return out;
}

/** Applies changes to a plain item list (what the webview does, without the DOM). */
export function applyChanges(items: ChatItem[], changes: ChatChange[]): ChatItem[] {
	let list = items.slice();
	const index = new Map(list.map((it, i) => [it.id, i]));
	for (const c of changes) {
		switch (c.op) {
			case "reset":
				list = c.items.slice();
				index.clear();
				list.forEach((it, i) => index.set(it.id, i));
				break;
			case "add":
				index.set(c.item.id, list.length);
				list.push(c.item);
				break;
			case "set": {
				const i = index.get(c.item.id);
				if (i !== undefined) list[i] = c.item;
				break;
			}
			case "append": {
				const i = index.get(c.id);
				if (i === undefined) break;
				const it = { ...list[i] } as ChatItem & Record<string, unknown>;
				it[c.field] = String(it[c.field] ?? "") + c.text;
				list[i] = it;
				break;
			}
			case "remove": {
				const i = index.get(c.id);
				if (i === undefined) break;
				list.splice(i, 1);
				index.clear();
				list.forEach((it, j) => index.set(it.id, j));
				break;
			}
		}
	}
	return list;
}
