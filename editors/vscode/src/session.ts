// The session this window works in: which session is attached, its chat state (folded from
// session/update by chat/model.ts), and the user's actions on it (prompt, steer, cancel, revert,
// switch session, pick model or approval mode). Renders nothing itself: the chat view and the
// status bar listen to it.

import * as path from "node:path";
import * as vscode from "vscode";
import {
	addError,
	addLocalUser,
	addNotice,
	applyUpdate,
	dropLocalUser,
	fromHistory,
	markReverted,
	newChatState,
	setToolReview,
	snapshot,
	type ChatChange,
	type ChatItem,
	type ChatState,
	WAITING_ACTIVITY,
} from "./chat/model";
import { readConfig } from "./config";
import { showError } from "./testmode";
import { errorCode, errorMessage, type ConnectionState, type DaemonClient } from "./daemon/client";
import {
	APPROVAL_MODES,
	ErrorCode,
	Method,
	type ContextItem,
	type ReviewRequestedParams,
	type SessionInfo,
	type SessionUpdateParams,
	type UsageInfo,
} from "./protocol";

const SESSION_KEY = "agentd.sessionId";
const MODEL_KEY = "agentd.pickedModel";
const HISTORY_KEY = "agentd.promptHistory";
/** Prompts kept for the chat input's history (↑/↓). */
const HISTORY_MAX = 100;

export interface ContextChip {
	id: string;
	label: string;
	item: ContextItem;
}

export interface SessionViewState {
	connection: { kind: ConnectionState["kind"]; message?: string; fix?: string; ollama?: string; engine?: string; version?: string; sandbox?: string; modelProblem?: string };
	session?: { id: string; title: string; model: string; approvalMode: string; instructions?: SessionInfo["instructions"]; warnings?: string[] };
	/** The model of the session, or the one new sessions will use. */
	model: string;
	approvalMode: string;
	running: boolean;
	activity?: string;
	usage?: UsageInfo;
	pendingReviews: number;
	contexts: { id: string; label: string }[];
	activeFile?: string;
	includeActiveFile: boolean;
}

export class SessionController implements vscode.Disposable {
	private chat: ChatState = newChatState();
	private session: SessionInfo | undefined;
	private attaching: { id: string; buffered: SessionUpdateParams[] } | undefined;
	private contexts: ContextChip[] = [];
	private includeActiveFile: boolean;
	private nextChip = 1;
	private pendingReviews = 0;
	/** daemon/status's word on the model shown (whether Ollama has it), by model name. */
	private modelStatus: { model: string; status?: string } | undefined;
	private readonly disposables: vscode.Disposable[] = [];

	private readonly _onChanges = new vscode.EventEmitter<ChatChange[]>();
	/** Changes of the chat items (for the webview). */
	readonly onChanges = this._onChanges.event;
	private readonly _onState = new vscode.EventEmitter<SessionViewState>();
	readonly onDidChangeState = this._onState.event;
	private readonly _onPendingReviews = new vscode.EventEmitter<ReviewRequestedParams[]>();
	/** Reviews still waiting in a session just attached. */
	readonly onPendingReviews = this._onPendingReviews.event;
	private readonly _onSessionChanged = new vscode.EventEmitter<string | undefined>();
	readonly onSessionChanged = this._onSessionChanged.event;

	constructor(
		private readonly daemon: DaemonClient,
		private readonly memento: vscode.Memento,
		private readonly log: vscode.LogOutputChannel,
		/** Resolves the prompt's `@` mentions into context items (mentionsHost.ts). */
		private readonly mentions?: { resolve(text: string): Promise<{ items: ContextItem[]; problems: string[] }> },
	) {
		this.includeActiveFile = readConfig().includeActiveFile;
		this.disposables.push(
			daemon.onUpdate((p) => this.onUpdate(p)),
			daemon.onDidStart(() => {
				this.modelStatus = undefined;
				void this.reattach();
			}),
			daemon.onDidChangeState(() => this.fireState()),
			vscode.window.onDidChangeActiveTextEditor(() => this.fireState()),
		);
	}

	get sessionId(): string | undefined {
		return this.session?.sessionId;
	}

	/** The current session's workspace folder URI. */
	get workspaceFolderUri(): string | undefined {
		return this.session?.workspaceFolder;
	}

	get items(): ChatItem[] {
		return snapshot(this.chat);
	}

	/** For tests and the benchmark command. */
	get chatState(): ChatState {
		return this.chat;
	}

	setPendingReviewCount(n: number): void {
		this.pendingReviews = n;
		this.fireState();
	}

	linkReview(callId: string, reviewId: string | undefined, kind?: string, why?: string, mcpArgs?: unknown): void {
		this.emit(setToolReview(this.chat, callId, reviewId, kind, why, mcpArgs));
	}

	viewState(): SessionViewState {
		const conn = this.daemon.connectionState;
		const c: SessionViewState["connection"] = { kind: conn.kind };
		if (conn.kind === "failed") {
			c.message = conn.message;
			c.fix = conn.fix;
		} else if (conn.kind === "waiting") {
			c.message = `${conn.message}; reconnecting…`;
		} else if (conn.kind === "running") {
			c.version = conn.info?.version;
			c.sandbox = conn.info?.sandbox;
			c.ollama = conn.status?.ollama;
			c.engine = conn.status?.engine;
		}
		const cfg = readConfig();
		const active = this.activeFile();
		const model = this.session?.model || this.pickedModel() || cfg.model || "";
		if (conn.kind === "running" && this.modelStatus?.model === model && this.modelStatus.status && this.modelStatus.status !== "ok") c.modelProblem = this.modelStatus.status;
		return {
			connection: c,
			session: this.session
				? { id: this.session.sessionId, title: this.session.title || "Untitled session", model: this.session.model, approvalMode: this.session.approvalMode, instructions: this.session.instructions, warnings: this.session.warnings }
				: undefined,
			model,
			approvalMode: this.session?.approvalMode || cfg.approvalMode,
			running: this.chat.running,
			// Reviews of this session wait for the user: that is what the turn does now.
			activity: this.chat.running && this.pendingReviews > 0 ? WAITING_ACTIVITY : this.chat.activity,
			usage: this.chat.usage,
			pendingReviews: this.pendingReviews,
			contexts: this.contexts.map((c) => ({ id: c.id, label: c.label })),
			activeFile: active ? this.label(active.uri) : undefined,
			includeActiveFile: this.includeActiveFile,
		};
	}

	private fireState(): void {
		const st = this.viewState();
		if (st.connection.kind === "running" && this.modelStatus?.model !== st.model) void this.checkModel(st.model);
		this._onState.fire(this.viewState());
	}

	private emit(changes: ChatChange[]): void {
		if (changes.length) this._onChanges.fire(changes);
	}

	private reset(state: ChatState): void {
		this.chat = state;
		this._onChanges.fire([{ op: "reset", items: snapshot(state) }]);
		this.fireState();
	}

	private onUpdate(p: SessionUpdateParams): void {
		if (this.attaching && p.sessionId === this.attaching.id) {
			this.attaching.buffered.push(p);
			return;
		}
		if (!this.session || p.sessionId !== this.session.sessionId) return;
		const before = { running: this.chat.running, activity: this.chat.activity, usage: this.chat.usage };
		this.emit(applyUpdate(this.chat, p));
		if (p.update.type === "turnStarted" || p.update.type === "turnCompleted" || p.update.type === "turnFailed") {
			this.session.running = this.chat.running;
			if (p.update.type !== "turnStarted") this.session.turns++;
		}
		if (p.update.type === "turnFailed" && p.update.error) {
			const e = p.update.error;
			showError(e.fix ? `agentd: ${e.message} — ${e.fix}` : `agentd: ${e.message}`);
		}
		if (before.running !== this.chat.running || before.activity !== this.chat.activity || before.usage !== this.chat.usage) this.fireState();
	}

	// ---- attaching ----

	private async reattach(): Promise<void> {
		const id = this.session?.sessionId ?? this.memento.get<string>(SESSION_KEY);
		if (!id) {
			this.fireState();
			return;
		}
		await this.attach(id, true);
	}

	async attach(id: string, quiet = false): Promise<boolean> {
		this.attaching = { id, buffered: [] };
		try {
			const r = await this.daemon.request(Method.SessionAttach, { sessionId: id });
			const state = fromHistory(r.session, r.history ?? []);
			this.session = r.session;
			const buffered = this.attaching.buffered;
			this.attaching = undefined;
			for (const p of buffered) applyUpdate(state, p);
			this.reset(state);
			await this.memento.update(SESSION_KEY, id);
			this._onSessionChanged.fire(id);
			if (r.pendingReviews?.length) this._onPendingReviews.fire(r.pendingReviews);
			return true;
		} catch (err) {
			this.attaching = undefined;
			this.log.warn(`session/attach ${id}: ${errorMessage(err)}`);
			if (errorCode(err) === ErrorCode.UnknownSession) {
				await this.memento.update(SESSION_KEY, undefined);
				if (this.session?.sessionId === id) this.session = undefined;
				this.reset(newChatState());
			}
			if (!quiet) showError(`agentd: could not open the session: ${errorMessage(err)}`);
			return false;
		}
	}

	private async detachCurrent(): Promise<void> {
		const cur = this.session;
		if (!cur) return;
		this.session = undefined;
		try {
			await this.daemon.request(Method.SessionDetach, { sessionId: cur.sessionId });
		} catch (err) {
			this.log.warn(`session/detach: ${errorMessage(err)}`);
		}
	}

	/** Starts over: the next prompt creates a new session. */
	async newSession(): Promise<void> {
		await this.detachCurrent();
		await this.memento.update(SESSION_KEY, undefined);
		this.contexts = [];
		this.reset(newChatState());
		this._onSessionChanged.fire(undefined);
	}

	private workspaceFolder(): vscode.WorkspaceFolder | undefined {
		const ed = vscode.window.activeTextEditor;
		const f = ed ? vscode.workspace.getWorkspaceFolder(ed.document.uri) : undefined;
		return f ?? vscode.workspace.workspaceFolders?.find((w) => w.uri.scheme === "file");
	}

	private async ensureSession(firstPrompt: string): Promise<SessionInfo> {
		if (this.session) return this.session;
		const cfg = readConfig();
		const folder = this.workspaceFolder();
		const model = this.pickedModel() || cfg.model;
		const r = await this.daemon.request(Method.SessionNew, {
			...(folder ? { workspaceFolder: folder.uri.toString() } : {}),
			...(model ? { model } : {}),
			approvalMode: cfg.approvalMode,
			title: titleOf(firstPrompt),
		});
		this.session = r.session;
		// Keep what is on screen (the prompt being sent) and bind it to the session.
		this.chat.sessionId = r.session.sessionId;
		await this.memento.update(SESSION_KEY, r.session.sessionId);
		this._onSessionChanged.fire(r.session.sessionId);
		this.fireState();
		return r.session;
	}

	// ---- prompting ----

	/** The prompts sent from this workspace, oldest first (the chat input's ↑/↓). */
	get promptHistory(): string[] {
		return this.memento.get<string[]>(HISTORY_KEY) ?? [];
	}

	async send(text: string, includeActiveFile?: boolean): Promise<void> {
		text = text.trim();
		if (!text) return;
		const history = this.promptHistory.filter((h) => h !== text);
		history.push(text);
		void this.memento.update(HISTORY_KEY, history.slice(-HISTORY_MAX));
		if (includeActiveFile !== undefined) this.includeActiveFile = includeActiveFile;
		const chips = this.contextItems();
		const labels = [...this.contexts.map((c) => c.label)];
		const active = this.includeActiveFile ? this.activeFile() : undefined;
		if (active && !this.contexts.some((c) => c.item.uri === active.uri.toString())) labels.push(this.label(active.uri));
		const steer = this.chat.running;
		const local = addLocalUser(this.chat, text, labels, steer);
		const localId = local[0]?.op === "add" ? local[0].item.id : undefined;
		this.emit(local);
		this.contexts = [];
		this.fireState();
		try {
			// Mentions first, so a mentioned file is not also sent as "the active file".
			const mentioned = !steer && this.mentions ? await this.mentions.resolve(text) : { items: [], problems: [] };
			if (mentioned.problems.length) this.log.info(`mentions not found: ${mentioned.problems.join(", ")}`);
			const context = [...mentioned.items];
			for (const c of chips) if (!context.some((m) => m.uri === c.uri && !m.range && !c.range)) context.push(c);
			const s = await this.ensureSession(text);
			if (steer) {
				await this.daemon.request(Method.SessionSteer, { sessionId: s.sessionId, text });
			} else {
				try {
					await this.daemon.request(Method.SessionPrompt, { sessionId: s.sessionId, text, ...(context.length ? { context } : {}) });
				} catch (err) {
					if (errorCode(err) !== ErrorCode.TurnRunning) throw err;
					await this.daemon.request(Method.SessionSteer, { sessionId: s.sessionId, text });
				}
			}
		} catch (err) {
			if (localId) this.emit(dropLocalUser(this.chat, localId));
			this.emit(addError(this.chat, { kind: "request", message: `Could not send: ${errorMessage(err)}` }));
		}
	}

	private contextItems(): ContextItem[] {
		const items = this.contexts.map((c) => c.item);
		const active = this.includeActiveFile ? this.activeFile() : undefined;
		if (active && !items.some((i) => i.uri === active.uri.toString())) items.push({ uri: active.uri.toString() });
		return items;
	}

	private activeFile(): vscode.TextDocument | undefined {
		const ed = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
		const doc = ed?.document;
		// Only files of the workspace: the daemon ignores the others.
		return doc && doc.uri.scheme === "file" && vscode.workspace.getWorkspaceFolder(doc.uri) ? doc : undefined;
	}

	private label(uri: vscode.Uri): string {
		const rel = vscode.workspace.asRelativePath(uri, false);
		return rel || path.basename(uri.fsPath);
	}

	/** "agentd: Ask about selection": the selection (or the current line) becomes a context chip. */
	addSelection(editor: vscode.TextEditor): string | undefined {
		const doc = editor.document;
		if (doc.uri.scheme !== "file" && doc.uri.scheme !== "untitled") return undefined;
		let sel: vscode.Range = editor.selection;
		if (sel.isEmpty) sel = doc.lineAt(sel.start.line).range;
		// Whole lines read better for a model and match the label.
		const text = doc.getText(sel);
		const a = sel.start.line + 1;
		const b = sel.end.line + (sel.end.character === 0 && sel.end.line > sel.start.line ? 0 : 1);
		const label = `${this.label(doc.uri)}:${a === b ? a : `${a}-${b}`}`;
		const chip: ContextChip = {
			id: `c${this.nextChip++}`,
			label,
			item: {
				uri: doc.uri.toString(),
				range: { start: { line: sel.start.line, character: sel.start.character }, end: { line: sel.end.line, character: sel.end.character } },
				text,
			},
		};
		this.contexts.push(chip);
		this.fireState();
		return label;
	}

	removeContext(id: string): void {
		this.contexts = this.contexts.filter((c) => c.id !== id);
		this.fireState();
	}

	toggleActiveFile(on: boolean): void {
		this.includeActiveFile = on;
		this.fireState();
	}

	async cancel(): Promise<void> {
		if (!this.session) return;
		try {
			const r = await this.daemon.request(Method.SessionCancel, { sessionId: this.session.sessionId });
			if (!r.cancelled) this.log.info("session/cancel: no turn was running");
		} catch (err) {
			showError(`agentd: stop failed: ${errorMessage(err)}`);
		}
	}

	/** A turn whose every change was undone elsewhere (the Changes view): its chat link goes. */
	markTurnReverted(turnId: string, summary: string): void {
		this.emit(markReverted(this.chat, turnId, summary));
	}

	async revert(turnId?: string): Promise<void> {
		if (!this.session) {
			void vscode.window.showInformationMessage("agentd: no session to revert.");
			return;
		}
		try {
			const r = await this.daemon.request(Method.SessionRevert, { sessionId: this.session.sessionId, ...(turnId ? { turnId } : {}) });
			const restored = r.restored ?? [];
			const skipped = r.skipped ?? [];
			const parts: string[] = [];
			parts.push(restored.length ? `restored ${restored.join(", ")}` : "no file restored");
			const detail = skipped.map((s) => `skipped ${s.path}: ${s.reason}`).join("\n");
			const summary = `Reverted turn ${r.turnId}: ${parts.join("; ")}${skipped.length ? `; skipped ${skipped.length}` : ""}`;
			this.emit(addNotice(this.chat, summary, skipped.length ? "warning" : "info", detail || undefined));
			this.emit(markReverted(this.chat, r.turnId, summary));
			if (skipped.length) void vscode.window.showWarningMessage(`agentd: ${summary}. ${detail}`);
		} catch (err) {
			this.emit(addError(this.chat, { kind: "revert", message: `Revert failed: ${errorMessage(err)}` }));
		}
	}

	// ---- pickers ----

	async pickSession(): Promise<void> {
		type Item = vscode.QuickPickItem & { id?: string; create?: boolean };
		const qp = vscode.window.createQuickPick<Item>();
		qp.title = "agentd sessions";
		qp.placeholder = "Resume a session or start a new one";
		qp.busy = true;
		qp.items = [{ label: "$(add) New session", create: true, alwaysShow: true }];
		qp.show();
		try {
			const folder = this.workspaceFolder();
			const r = await this.daemon.request(Method.SessionList, folder ? { workspaceFolder: folder.uri.toString() } : {});
			const sessions = [...(r.sessions ?? [])].sort((a, b) => (b.updatedAt || "").localeCompare(a.updatedAt || ""));
			qp.items = [
				{ label: "$(add) New session", create: true, alwaysShow: true },
				{ label: "", kind: vscode.QuickPickItemKind.Separator },
				...sessions.map((s) => ({
					id: s.sessionId,
					label: `${s.sessionId === this.session?.sessionId ? "$(check) " : s.running ? "$(loading~spin) " : ""}${s.title || "Untitled session"}`,
					description: `${s.model} · ${s.turns} turn${s.turns === 1 ? "" : "s"}${s.attached ? ` · ${s.attached} attached` : ""}`,
					detail: `${s.sessionId} · updated ${when(s.updatedAt)}`,
				})),
			];
		} catch (err) {
			qp.items = [{ label: "$(add) New session", create: true, alwaysShow: true }, { label: `$(error) ${errorMessage(err)}` }];
		}
		qp.busy = false;
		const picked = await new Promise<Item | undefined>((resolve) => {
			qp.onDidAccept(() => resolve(qp.selectedItems[0]));
			qp.onDidHide(() => resolve(undefined));
		});
		qp.dispose();
		if (!picked) return;
		if (picked.create) return this.newSession();
		if (picked.id && picked.id !== this.session?.sessionId) {
			await this.detachCurrent();
			await this.attach(picked.id);
		}
	}

	/** Asks the daemon whether Ollama has the model (daemon/status), so that a model that is not
	 * pulled is said at once (status bar, chat), not after the first prompt fails. */
	private async checkModel(model: string): Promise<void> {
		this.modelStatus = { model };
		let status: string | undefined;
		try {
			status = (await this.daemon.request(Method.DaemonStatus, model ? { model } : {})).model;
		} catch (err) {
			this.log.warn(`daemon/status for the model ${model}: ${errorMessage(err)}`);
			return;
		}
		if (this.modelStatus?.model !== model) return;
		this.modelStatus = { model, status };
		if (status && status !== "ok") this.log.warn(status);
		this._onState.fire(this.viewState());
	}

	private pickedModel(): string | undefined {
		return this.memento.get<string>(MODEL_KEY);
	}

	async pickModel(): Promise<void> {
		type Item = vscode.QuickPickItem & { name: string };
		let items: Item[];
		let def = "";
		try {
			const r = await this.daemon.request(Method.ModelList, {});
			def = r.default;
			const current = this.viewState().model;
			items = (r.models ?? []).map((m) => ({
				name: m.name,
				label: `${m.name === current ? "$(check) " : ""}${m.name}`,
				description: [m.parameterSize, m.sizeBytes ? `${(m.sizeBytes / 1e9).toFixed(1)} GB` : "", m.name === def ? "default" : ""].filter(Boolean).join(" · "),
				detail: m.capabilities?.length ? m.capabilities.join(", ") : undefined,
			}));
		} catch (err) {
			showError(`agentd: could not list models: ${errorMessage(err)}`);
			return;
		}
		if (!items.length) {
			void vscode.window.showWarningMessage("agentd: Ollama has no models. Pull one first, e.g. `ollama pull qwen3:8b`.");
			return;
		}
		const picked = await vscode.window.showQuickPick(items, { title: "agentd model", placeHolder: "Model for new sessions" });
		if (!picked) return;
		await this.memento.update(MODEL_KEY, picked.name);
		this.fireState();
		if (this.session && this.session.model !== picked.name) {
			const choice = await vscode.window.showInformationMessage(
				`agentd: ${picked.name} will be used by new sessions (a session keeps its model). Start a new session now?`,
				"New Session",
			);
			if (choice) await this.newSession();
		}
	}

	async pickMode(): Promise<void> {
		const descriptions: Record<string, string> = {
			ask: "reads are free; edits and commands ask",
			"auto-edit": "edits apply (revertible); commands ask unless read-only",
			plan: "no writes, no commands that write",
			yolo: "everything runs; protected paths and sandbox escapes still ask",
		};
		const current = this.viewState().approvalMode;
		const picked = await vscode.window.showQuickPick(
			APPROVAL_MODES.map((m) => ({ label: `${m === current ? "$(check) " : ""}${m}`, mode: m, description: descriptions[m] })),
			{ title: "agentd approval mode" },
		);
		if (!picked) return;
		await this.setMode(picked.mode);
	}

	async setMode(mode: string): Promise<void> {
		if (this.session) {
			try {
				const r = await this.daemon.request(Method.SessionSetMode, { sessionId: this.session.sessionId, approvalMode: mode });
				this.session.approvalMode = r.approvalMode;
			} catch (err) {
				showError(`agentd: could not change the mode: ${errorMessage(err)}`);
				return;
			}
		} else {
			await vscode.workspace.getConfiguration("agentd").update("approvalMode", mode, vscode.ConfigurationTarget.Global);
		}
		this.fireState();
	}

	/** "agentd: Session Permissions…": the session's grants (grant/list), revoke one (grant/revoke). */
	async manageGrants(): Promise<void> {
		if (!this.session) {
			void vscode.window.showInformationMessage("agentd: no session yet.");
			return;
		}
		const sessionId = this.session.sessionId;
		let grants;
		try {
			grants = (await this.daemon.request(Method.GrantList, { sessionId })).grants ?? [];
		} catch (err) {
			showError(`agentd: could not list the permissions: ${errorMessage(err)}`);
			return;
		}
		if (!grants.length) {
			void vscode.window.showInformationMessage("agentd: this session has no \"allow for this session\" permissions.");
			return;
		}
		const picked = await vscode.window.showQuickPick(
			grants.map((g) => ({ label: `$(unlock) ${g.scope.label || g.scope.kind}`, description: g.id, grant: g })),
			{ title: "agentd: permissions of this session", placeHolder: "Pick one to revoke it" },
		);
		if (!picked) return;
		try {
			const r = await this.daemon.request(Method.GrantRevoke, { sessionId, grantId: picked.grant.id });
			if (r.revoked) this.emit(addNotice(this.chat, `Revoked: ${picked.grant.scope.label || picked.grant.id}. It asks again.`));
		} catch (err) {
			showError(`agentd: could not revoke: ${errorMessage(err)}`);
		}
	}

	notice(text: string, level: "info" | "warning" = "info"): void {
		this.emit(addNotice(this.chat, text, level));
	}

	dispose(): void {
		for (const d of this.disposables) d.dispose();
		this._onChanges.dispose();
		this._onState.dispose();
		this._onPendingReviews.dispose();
		this._onSessionChanged.dispose();
	}
}

function titleOf(prompt: string): string {
	const line = prompt.split("\n")[0].trim();
	return line.length > 60 ? line.slice(0, 57) + "…" : line;
}

function when(iso: string): string {
	const t = Date.parse(iso);
	if (!t) return iso || "?";
	const s = Math.round((Date.now() - t) / 1000);
	if (s < 60) return "just now";
	if (s < 3600) return `${Math.round(s / 60)} min ago`;
	if (s < 86400) return `${Math.round(s / 3600)} h ago`;
	return new Date(t).toLocaleDateString();
}
