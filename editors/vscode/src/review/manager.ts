// Reviews: the editor is the approval gate (docs/protocol.md §5).
//
// Edit reviews are shown inline over the untouched buffer (see review/model.ts for the rendering
// model): removed lines struck through in red, proposed lines as green ghost text, a CodeLens row
// per hunk (Accept / Reject / Reject with reason…) and one per file (Accept all / Reject all / Reject with reason… /
// Diff). Per-hunk choices are collected locally; once every hunk of a review is decided, one
// review/decide goes out (accept, accept with the chosen hunk IDs, or reject). The daemon then
// applies the accepted hunks through workspace/applyEdit (one undo step) and asks for document/save.
// Nothing here ever writes the file.
//
// Command and other tool reviews are asked in a notification (or a modal, agentd.commandApproval)
// and in the chat's tool card. Every pending review is listed in the "Pending reviews" tree and
// counted in the status bar; review/resolved clears it, whoever decided.

import * as vscode from "vscode";
import { errorCode, errorMessage, sameUri, type DaemonClient } from "../daemon/client";
import { readConfig } from "../config";
import {
	ErrorCode,
	Method,
	type Decision,
	type GrantScope,
	type ReviewHunkStatesParams,
	type ReviewRequestedParams,
	type ReviewResolvedParams,
} from "../protocol";
import { registerCommand, showError } from "../testmode";
import { applyTextEdits } from "./apply";
import { clip, commandLine, escapeMd, longestRun, relativeTo, reviewReason, sandboxLabel, scopeLabel, where } from "./format";
import { EditedProposals } from "./editedProposals";
import { mcpTitle, prettyArgs, toastArgs } from "../mcpFormat";
import { anchorsOf, applyHunkStates, decisionFor, hunkAt, hunkStatesFor, hunkStats, planDecorations, proposedLine, rejectRestDecision, shiftAnchors, type HunkAnchor, type HunkState, type ProposedBlock } from "./model";
import { visible } from "../visible";
import { PendingTree, pendingCount } from "./tree";
import { sameWaiting, type WaitingChange } from "./waiting";

export const PROPOSED_SCHEME = "agentd-proposed";
/** The left side of the review's diff: the buffer's text when the diff opened, read-only, undecorated. */
export const ORIGINAL_SCHEME = "agentd-original";
/** A proposal the user edits before accepting (agentd-edit:/<reviewId>/<path>): saving accepts it. */
export const EDIT_SCHEME = "agentd-edit";

/** The review a proposed (or original) document shows, from its query. */
function reviewOf(uri: vscode.Uri): string | undefined {
	if (uri.scheme !== PROPOSED_SCHEME && uri.scheme !== ORIGINAL_SCHEME) return undefined;
	return new URLSearchParams(uri.query).get("review") ?? undefined;
}

interface Entry {
	params: ReviewRequestedParams;
	receivedAt: number;
	/** Edit reviews only. */
	uri?: vscode.Uri;
	anchors: HunkAnchor[];
	states: Map<string, HunkState>;
	/** The buffer changed since the proposal: accepting will be answered with `stale`. */
	changed: boolean;
	busy: boolean;
	renderedAt?: number;
	/** Command reviews: the notification was shown. */
	asked?: boolean;
	/** Command reviews: closes the notification (the review was settled, here or elsewhere). */
	closeToast?: () => void;
	/** Edit reviews: the hunks decided locally, most recent last (for Undo). */
	decidedOrder: string[];
	/** Edit reviews: the user's reason for a hunk rejected with "Reject with reason…" (sent as hunkReasons). */
	reasons: Map<string, string>;
}

export interface ReviewTiming {
	reviewId: string;
	receivedAt: number;
	renderedAt?: number;
}

type HunkArgs = [reviewId?: string | { reviewId?: string; hunkId?: string } | vscode.CommentThread, hunkId?: string, from?: "thread"];

const MAC = process.platform === "darwin";
/** The keys of package.json's keybindings, shown where the actions are. */
export const KEYS = {
	accept: MAC ? "⌘⌥Y" : "Ctrl+Alt+Y",
	reject: MAC ? "⌘⌥N" : "Ctrl+Alt+N",
	rejectReason: MAC ? "⌘⌥R" : "Ctrl+Alt+R",
	acceptFile: MAC ? "⌘⌥⇧Y" : "Ctrl+Alt+Shift+Y",
	rejectFile: MAC ? "⌘⌥⇧N" : "Ctrl+Alt+Shift+N",
	undo: MAC ? "⌘⌥U" : "Ctrl+Alt+U",
	run: MAC ? "⌘⌥Enter" : "Ctrl+Alt+Enter",
};

export class ReviewManager implements vscode.Disposable {
	private readonly entries = new Map<string, Entry>();
	private readonly disposables: vscode.Disposable[] = [];
	private readonly removedType: vscode.TextEditorDecorationType;
	private readonly ghostType: vscode.TextEditorDecorationType;
	private readonly acceptedRemovedType: vscode.TextEditorDecorationType;
	private readonly acceptedGhostType: vscode.TextEditorDecorationType;
	/** Multi-line proposals: one comment thread per hunk (see README "Why this review surface"). */
	private readonly comments: vscode.CommentController;
	private readonly threads = new Map<string, { thread: vscode.CommentThread; key: string }>();
	private readonly edits = new EditedProposals();
	private readonly threadHunks = new WeakMap<vscode.CommentThread, { reviewId: string; hunkId: string }>();
	/** Threads (reviewId/hunkId) whose links were clicked since they were created: see syncThreads. */
	private readonly clickedThreads = new Set<string>();
	private readonly addedType: vscode.TextEditorDecorationType;
	/** Why a change no grant covers needs review, after the file's first line (the lens row is full). */
	private readonly reasonType = vscode.window.createTextEditorDecorationType({
		after: { color: new vscode.ThemeColor("editorCodeLens.foreground"), fontStyle: "italic", margin: "0 0 0 2em" },
	});
	private readonly statusItem: vscode.StatusBarItem;
	private readonly lensEmitter = new vscode.EventEmitter<void>();
	private readonly tree = new PendingTree(this.entries);
	private readonly proposedEmitter = new vscode.EventEmitter<vscode.Uri>();
	private readonly _onDidChange = new vscode.EventEmitter<void>();
	/** Fires when the set of pending reviews changes. */
	readonly onDidChange = this._onDidChange.event;
	private readonly _onLink = new vscode.EventEmitter<{ callId: string; reviewId?: string; kind?: string; why?: string; mcpArgs?: unknown }>();
	/** Links a review to its tool call in the chat (and unlinks it when resolved). */
	readonly onLink = this._onLink.event;
	readonly timings: ReviewTiming[] = [];
	/** The review whose decision was made in its editor: the next file's review takes the focus. */
	private followFocus: string | undefined;
	private focusNextArrival = false;
	/** Counts colour theme changes: the proposal blocks are rendered again in the new theme. */
	private themeGeneration = 0;
	/** Review tabs being closed: the active editor changes then by our doing, not the user's. */
	private closingTabs = 0;
	/** The file whose decision set focusNextArrival. */
	private followedFrom: vscode.Uri | undefined;
	/** Documents whose lenses VS Code asked for since they were last shown (reveal). */
	private readonly lensesAsked = new Set<string>();
	private readonly lensTimers = new Set<ReturnType<typeof setTimeout>>();

	constructor(
		private readonly daemon: DaemonClient,
		private readonly log: vscode.LogOutputChannel,
	) {
		// Theme colours only (the diff editor's own): high-contrast themes give the diff line
		// backgrounds no colour and draw text borders instead, so both are set.
		this.removedType = vscode.window.createTextEditorDecorationType({
			isWholeLine: true,
			backgroundColor: new vscode.ThemeColor("diffEditor.removedLineBackground"),
			borderColor: new vscode.ThemeColor("diffEditor.removedTextBorder"),
			borderStyle: "dashed",
			borderWidth: "1px",
			textDecoration: "line-through",
			overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.deletedForeground"),
			overviewRulerLane: vscode.OverviewRulerLane.Left,
		});
		// The proposed text in the editor's own foreground on the inserted-line background (a
		// git colour on a diff background read as olive on tan in Light Modern).
		this.ghostType = vscode.window.createTextEditorDecorationType({
			after: {
				color: new vscode.ThemeColor("editor.foreground"),
				backgroundColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
				border: "1px solid",
				borderColor: new vscode.ThemeColor("diffEditor.insertedTextBorder"),
				margin: "0 0 0 1.5em",
			},
			before: {
				color: new vscode.ThemeColor("editor.foreground"),
				backgroundColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
				border: "1px solid",
				borderColor: new vscode.ThemeColor("diffEditor.insertedTextBorder"),
			},
			overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.addedForeground"),
			overviewRulerLane: vscode.OverviewRulerLane.Left,
		});
		// An accepted hunk, waiting for the file's other hunks: the lines it removes stay in the
		// buffer until then, struck through and faded (never green: they are going away), and its
		// new text is shown, subdued, marked accepted. A rejected hunk shows nothing.
		this.acceptedRemovedType = vscode.window.createTextEditorDecorationType({
			isWholeLine: true,
			textDecoration: "line-through",
			opacity: "0.55",
			borderWidth: "0 0 0 2px",
			borderStyle: "solid",
			borderColor: new vscode.ThemeColor("editorOverviewRuler.deletedForeground"),
		});
		this.acceptedGhostType = vscode.window.createTextEditorDecorationType({
			after: { color: new vscode.ThemeColor("gitDecoration.addedResourceForeground"), margin: "0 0 0 1.5em", fontStyle: "italic" },
			before: { color: new vscode.ThemeColor("gitDecoration.addedResourceForeground"), fontStyle: "italic" },
		});
		this.comments = vscode.comments.createCommentController("agentd-review", "agentd proposals");
		this.comments.options = { placeHolder: "", prompt: "" };
		// A new file's proposal: every line is new, so a bar in the gutter's "added" colour marks
		// them and the text keeps the editor's own background (the theme's token colours on the
		// inserted-line green fell to 2–3:1 in Dark Modern).
		this.addedType = vscode.window.createTextEditorDecorationType({
			isWholeLine: true,
			borderColor: new vscode.ThemeColor("editorGutter.addedBackground"),
			borderStyle: "solid",
			borderWidth: "0 0 0 3px",
			overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.addedForeground"),
			overviewRulerLane: vscode.OverviewRulerLane.Left,
		});
		this.statusItem = vscode.window.createStatusBarItem("agentd.reviews", vscode.StatusBarAlignment.Left, 1000);
		this.statusItem.name = "agentd reviews";
		this.statusItem.command = "agentd.review.next";
		this.statusItem.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");

		this.disposables.push(
			this.removedType,
			this.ghostType,
			this.acceptedRemovedType,
			this.acceptedGhostType,
			this.comments,
			this.addedType,
			this.reasonType,
			this.statusItem,
			daemon.onReviewRequested((p) => this.add(p)),
			daemon.onReviewResolved((p) => this.resolved(p)),
			daemon.onReviewHunkStates((p) => this.applyRemoteStates(p)),
			vscode.window.onDidChangeVisibleTextEditors(() => this.renderAll()),
			// A comment's highlighted code keeps the token classes of the theme it was rendered in:
			// in another theme they name other colours (navy operators on High Contrast's black).
			vscode.window.onDidChangeActiveColorTheme(() => {
				this.themeGeneration++;
				this.syncThreads();
			}),
			vscode.window.onDidChangeActiveTextEditor((ed) => {
				// The user went to another file (or closed them all): the next review does not pull
				// the focus there. The review's own documents (the decided file, its diff closing)
				// do not count.
				if (!this.closingTabs && (!ed || !this.isReviewDocument(ed.document.uri))) this.focusNextArrival = false;
				this.updateContext();
			}),
			vscode.workspace.onDidChangeTextDocument((e) => this.onDocChange(e)),
			vscode.languages.registerCodeLensProvider([{ scheme: "file" }, { scheme: PROPOSED_SCHEME }], {
				onDidChangeCodeLenses: this.lensEmitter.event,
				provideCodeLenses: (doc) => {
					this.lensesAsked.add(doc.uri.toString());
					return this.lenses(doc);
				},
			}),
			vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, {
				onDidChange: this.proposedEmitter.event,
				provideTextDocumentContent: (uri) => this.proposedText(uri),
			}),
			vscode.workspace.registerTextDocumentContentProvider(ORIGINAL_SCHEME, {
				provideTextDocumentContent: (uri) => this.originalText(uri),
			}),
			vscode.workspace.registerFileSystemProvider(EDIT_SCHEME, this.edits, { isCaseSensitive: true }),
			// Saving an edited proposal accepts it: the user's version is what is written.
			vscode.workspace.onDidSaveTextDocument((doc) => {
				if (doc.uri.scheme === EDIT_SCHEME) void this.acceptEdited(doc);
			}),
			this.tree,
			vscode.window.createTreeView("agentd.reviews", { treeDataProvider: this.tree, showCollapseAll: false }),
			daemon.onDidChangeState((s) => {
				// The daemon rejects reviews whose editor went away; forget them locally too.
				if (s.kind !== "running" && this.entries.size) this.clearAll("disconnect");
			}),
		);
		this.registerCommands();
		this.registerTreeCommands();
		this.update();
	}

	// ---- queue ----

	/** Edit reviews for `uri`, in arrival order. */
	private entriesFor(uri: vscode.Uri): Entry[] {
		const out: Entry[] = [];
		const review = uri.scheme === PROPOSED_SCHEME ? reviewOf(uri) : undefined;
		for (const e of this.entries.values()) {
			if (!e.uri) continue;
			if (review !== undefined ? e.params.reviewId === review : sameUri(e.uri, uri) || sameUri(this.displayUri(e), uri)) out.push(e);
		}
		return out;
	}

	pending(): ReviewRequestedParams[] {
		return [...this.entries.values()].map((e) => e.params);
	}

	add(p: ReviewRequestedParams): void {
		if (this.entries.has(p.reviewId)) return;
		const e: Entry = { params: p, receivedAt: Date.now(), anchors: [], states: new Map(), changed: false, busy: false, decidedOrder: [], reasons: new Map() };
		if (p.kind === "edit" && p.file) {
			e.uri = vscode.Uri.parse(p.file.uri);
			e.anchors = anchorsOf(p.file);
			for (const h of p.file.hunks) e.states.set(h.id, "pending");
			// Hunks decided already in another editor of the session (attached mid-review).
			applyHunkStates(e, p.hunkStates);
			// The buffer may already differ from the version the proposal was computed on.
			const doc = vscode.workspace.textDocuments.find((d) => sameUri(d.uri, e.uri!));
			if (doc && p.file.version && doc.version !== p.file.version) e.changed = true;
		}
		this.entries.set(p.reviewId, e);
		this.timings.push({ reviewId: p.reviewId, receivedAt: e.receivedAt });
		if (this.timings.length > 200) this.timings.shift();
		this._onLink.fire({ callId: p.callId, reviewId: p.reviewId, kind: p.kind, why: p.why, mcpArgs: p.mcp?.arguments });
		this.update();
		if (e.uri) {
			// Only when the user is still on a file of the turn's reviews (or nothing else).
			const focus = this.focusNextArrival;
			this.focusNextArrival = false;
			this.followedFrom = undefined;
			void (focus ? this.reveal(e, true) : this.revealIfIdle(e));
			this.renderAll();
		} else {
			void this.ask(e);
		}
	}

	/** Forgets the reviews of other sessions (after switching: the daemon resolves them without us). */
	retainSession(sessionId: string | undefined): void {
		for (const [id, e] of [...this.entries]) if (e.params.sessionId !== sessionId) this.remove(id);
	}

	addMany(ps: ReviewRequestedParams[]): void {
		for (const p of ps) this.add(p);
	}

	private resolved(p: ReviewResolvedParams): void {
		const e = this.entries.get(p.reviewId);
		if (!e) return;
		this.remove(p.reviewId);
		if (p.by !== "editor") {
			const why: Record<string, string> = {
				grant: "allowed by a session grant",
				timeout: "timed out and was rejected",
				disconnect: "rejected: no editor could answer",
				turnEnded: "cancelled with the turn",
			};
			this.log.info(`review ${p.reviewId} (${e.params.label}) ${why[p.by] ?? p.by}: ${p.outcome}`);
		}
	}

	private remove(reviewId: string): void {
		const e = this.entries.get(reviewId);
		if (!e) return;
		this.entries.delete(reviewId);
		const closed = this.closeReviewTabs(reviewId);
		e.closeToast?.();
		e.closeToast = undefined;
		// A command proposes several changes under its one call: its card links to one still waiting.
		const sibling = [...this.entries.values()].find((x) => x.params.callId === e.params.callId && x.params.sessionId === e.params.sessionId);
		this._onLink.fire(sibling ? { callId: e.params.callId, reviewId: sibling.params.reviewId, kind: sibling.params.kind, why: sibling.params.why } : { callId: e.params.callId, reviewId: undefined });
		this.update();
		this.renderAll();
		// Show the next queued review of another file. When this one was decided in its editor,
		// the next one takes the focus there (the keys keep working), at its first pending hunk.
		const follow = this.followFocus === reviewId;
		if (follow) this.followFocus = undefined;
		// The focus goes there once the review's diff is closed (closing it would take it back).
		const next = [...this.entries.values()].find((x) => x.uri);
		if (next && e.uri) void closed.then(() => (follow ? this.reveal(next, true) : this.revealIfIdle(next)));
		// The next edit of the turn is often proposed only after this decision: it takes the focus
		// when it arrives (unless the user went to another file meanwhile).
		else if (follow && e.uri) {
			this.focusNextArrival = true;
			this.followedFrom = e.uri;
		}
	}

	private clearAll(reason: string): void {
		for (const id of [...this.entries.keys()]) this.remove(id);
		this.log.info(`pending reviews cleared (${reason})`);
	}

	private update(): void {
		let hunks = 0;
		let files = 0;
		let commands = 0;
		let calls = 0;
		for (const e of this.entries.values()) {
			if (e.uri) {
				files++;
				for (const s of e.states.values()) if (s === "pending") hunks++;
			} else if (e.params.kind === "command") commands++;
			else calls++;
		}
		const parts: string[] = [];
		if (files) parts.push(`${hunks} hunk${hunks === 1 ? "" : "s"}${files > 1 ? ` in ${files} files` : ""}`);
		if (commands) parts.push(`${commands} command${commands === 1 ? "" : "s"}`);
		if (calls) parts.push(`${calls} tool call${calls === 1 ? "" : "s"}`);
		if (parts.length) {
			this.statusItem.text = `$(git-pull-request) agentd: ${parts.join(", ")} to review`;
			this.statusItem.tooltip = new vscode.MarkdownString(
				[...this.entries.values()].map((e) => `- ${e.params.label}${e.uri ? ` — ${pendingCount(e)} of ${e.states.size} hunks pending` : ""}`).join("\n") +
					"\n\nClick to go to the next review.",
			);
			this.statusItem.show();
		} else {
			this.statusItem.hide();
		}
		void vscode.commands.executeCommand("setContext", "agentd.reviewPending", this.entries.size > 0);
		void vscode.commands.executeCommand("setContext", "agentd.commandPending", commands > 0);
		this.updateContext();
		this.lensEmitter.fire();
		this.tree.refresh();
		this._onDidChange.fire();
	}

	get count(): number {
		return this.entries.size;
	}

	/** For the end-to-end tests (stats file): the pending reviews, in arrival order. */
	pendingSummary(): { reviewId: string; path?: string; busy: boolean }[] {
		return [...this.entries.values()].map((e) => ({ reviewId: e.params.reviewId, path: e.params.file?.path, busy: e.busy }));
	}

	/** The running reply's changes that wait for an earlier one (review/waiting.ts), listed in the tree. */
	setWaiting(w: WaitingChange[]): void {
		if (!sameWaiting(w, this.tree.waitingChanges)) this.tree.setWaiting(w);
	}

	/** For the end-to-end tests (stats file): the waiting changes the tree lists. */
	waitingSummary(): { callId: string; label: string; waitsFor: string }[] {
		return this.tree.waitingChanges.map((w) => ({ callId: w.callId, label: w.label, waitsFor: w.waitsFor }));
	}

	private updateContext(): void {
		const ed = vscode.window.activeTextEditor;
		const has = !!ed && this.entriesFor(ed.document.uri).length > 0;
		void vscode.commands.executeCommand("setContext", "agentd.editorHasReview", has);
	}

	// ---- showing ----

	/** The document the review is shown in: the file, or a virtual one for a new file. */
	private displayUri(e: Entry): vscode.Uri {
		if (e.params.file?.created) return vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: "/" + e.params.file.path, query: `review=${e.params.reviewId}&created=1` });
		return e.uri!;
	}

	private async revealIfIdle(e: Entry): Promise<void> {
		const mode = readConfig().revealOnReview;
		if (mode === "never") return;
		// Do not pull the user away from a review they are working on: while a file review that
		// came earlier waits (another file of the same reply, all put up at once), this one waits
		// in the Pending Reviews view and opens when the earlier ones are decided (remove()).
		for (const x of this.entries.values()) {
			if (x === e) break;
			if (x.uri) return;
		}
		await this.reveal(e, mode === "focus");
	}

	private async reveal(e: Entry, focus: boolean): Promise<void> {
		try {
			const uri = this.displayUri(e);
			const visible = vscode.window.visibleTextEditors.find((ed) => sameUri(ed.document.uri, uri));
			const doc = visible?.document ?? (await vscode.workspace.openTextDocument(uri));
			if (!visible) this.lensesAsked.delete(doc.uri.toString());
			const ed = await vscode.window.showTextDocument(doc, {
				preview: false,
				preserveFocus: !focus,
				viewColumn: visible?.viewColumn ?? vscode.ViewColumn.One,
			});
			if (!visible) this.askLenses(doc.uri, e.params.reviewId, 1000);
			const first = e.anchors[0];
			if (first) {
				const line = Math.min(first.start, doc.lineCount - 1);
				if (focus) ed.selection = new vscode.Selection(line, 0, line, 0);
				ed.revealRange(new vscode.Range(line, 0, line, 0), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
			}
			this.render(ed);
		} catch (err) {
			this.log.warn(`opening ${e.uri?.toString()} for review ${e.params.reviewId}: ${errorMessage(err)}`);
		}
	}

	/**
	 * Asks VS Code again for the lenses of a review's document just shown, until it has asked.
	 * Its CodeLens controller asks a debounce delay (250 ms or more) after the editor gets its
	 * document, and cancels that request when the editor's text loses the focus meanwhile: asked
	 * by nothing until the editor is focused or edited again, or the lenses change. A review opened
	 * without the focus gets it for a moment when a quick pick closes (VS Code gives the focus back
	 * to the active editor) and loses it to the command run: a new file's review stayed without
	 * its Accept all / Reject all lenses. Asking again later (1, 2, 4, 8 s: each ask restarts
	 * that delay) is not cancelled by a blur that already happened.
	 */
	private askLenses(uri: vscode.Uri, reviewId: string, wait: number): void {
		const key = uri.toString();
		const timer = setTimeout(() => {
			this.lensTimers.delete(timer);
			if (this.lensesAsked.has(key) || !this.entries.has(reviewId)) return;
			if (!vscode.window.visibleTextEditors.some((ed) => ed.document.uri.toString() === key)) return;
			this.log.info(`review ${reviewId}: VS Code did not ask for the lenses of ${key} in ${wait} ms; asking again`);
			this.lensEmitter.fire();
			if (wait < 8000) this.askLenses(uri, reviewId, wait * 2);
		}, wait);
		this.lensTimers.add(timer);
	}

	private renderAll(): void {
		for (const ed of vscode.window.visibleTextEditors) this.render(ed);
		this.syncThreads();
	}

	/**
	 * One comment thread per multi-line proposal, below its hunk: the proposed text as a fenced
	 * code block in the file's language (real, highlighted lines), with Accept / Reject (or Undo)
	 * in the thread's title bar and in the body. Threads are per document, not per editor.
	 */
	private syncThreads(): void {
		const want = new Set<string>();
		for (const e of this.entries.values()) {
			const file = e.params.file;
			if (!e.uri || !file || file.created) continue;
			const doc = vscode.workspace.textDocuments.find((d) => sameUri(d.uri, e.uri!));
			const plan = planDecorations(file.hunks, e.anchors, e.states, { lineCount: doc?.lineCount ?? Number.MAX_SAFE_INTEGER });
			for (const b of plan.blocks) {
				const id = `${e.params.reviewId}/${b.hunkId}`;
				want.add(id);
				const lang = doc?.languageId ?? "";
				const pending = pendingCount(e);
				const key = JSON.stringify([b.afterLine, b.state, lang, pending, e.busy, this.themeGeneration]);
				const cur = this.threads.get(id);
				if (cur?.key === key) continue;
				const range = new vscode.Range(b.afterLine, 0, b.afterLine, 0);
				const index = file.hunks.findIndex((h) => h.id === b.hunkId);
				const comment = this.blockComment(e, b, index, lang);
				// A thread whose link was clicked is replaced, not updated: VS Code gives the focus
				// back to a clicked comment on each update of its thread, out of the quick input the
				// user opened meanwhile (it closes) or the editor. The new one has none.
				const replace = this.clickedThreads.delete(id);
				if (cur && replace) cur.thread.dispose();
				const thread = cur && !replace ? cur.thread : this.comments.createCommentThread(e.uri, range, [comment]);
				if (cur && !replace) {
					thread.range = range;
					thread.comments = [comment];
				}
				thread.canReply = false;
				thread.collapsibleState = vscode.CommentThreadCollapsibleState.Expanded;
				const n = file.hunks.length;
				const h = file.hunks[index];
				thread.label = `agentd · ${n > 1 ? `hunk ${index + 1}/${n}` : "hunk"} · +${h.added.length} −${h.removed.length}` + (b.state === "accepted" ? " · accepted" : "");
				thread.contextValue = b.state === "pending" ? "agentdHunk" : "agentdHunkDecided";
				this.threadHunks.set(thread, { reviewId: e.params.reviewId, hunkId: b.hunkId });
				this.threads.set(id, { thread, key });
			}
		}
		for (const [id, t] of [...this.threads]) {
			if (want.has(id)) continue;
			this.clickedThreads.delete(id);
			t.thread.dispose();
			this.threads.delete(id);
		}
	}

	private blockComment(e: Entry, b: ProposedBlock, index: number, lang: string): vscode.Comment {
		const md = new vscode.MarkdownString(undefined, true);
		md.isTrusted = { enabledCommands: ["agentd.review.acceptHunk", "agentd.review.rejectHunk", "agentd.review.rejectHunkWithReason", "agentd.review.undoHunk"] };
		const fence = "`".repeat(Math.max(3, longestRun(b.lines.join("\n"), "`") + 1));
		md.appendMarkdown(`${fence}${/^[\w+#.-]*$/.test(lang) ? lang : ""}\n${b.lines.join("\n")}\n${fence}\n\n`);
		const args = encodeURIComponent(JSON.stringify([e.params.reviewId, b.hunkId, "thread"]));
		if (e.busy) md.appendMarkdown("_sending the decision…_");
		else if (b.state === "pending")
			md.appendMarkdown(
				`[$(check) Accept](command:agentd.review.acceptHunk?${args}) \`${KEYS.accept}\` · [$(close) Reject](command:agentd.review.rejectHunk?${args}) \`${KEYS.reject}\` · [$(comment-discussion) Reject with reason…](command:agentd.review.rejectHunkWithReason?${args}) \`${KEYS.rejectReason}\``,
			);
		else {
			const waiting = pendingCount(e);
			md.appendMarkdown(`$(check) Accepted — applied once the file's other ${waiting === 1 ? "hunk is" : `${waiting} hunks are`} decided · [$(discard) Undo](command:agentd.review.undoHunk?${args}) \`${KEYS.undo}\``);
		}
		return {
			body: md,
			mode: vscode.CommentMode.Preview,
			author: { name: b.state === "accepted" ? "✓ accepted" : "proposed" },
			contextValue: b.state === "pending" ? "agentdHunk" : "agentdHunkDecided",
		};
	}

	private render(ed: vscode.TextEditor): void {
		const doc = ed.document;
		const entries = this.entriesFor(doc.uri);
		const removed: vscode.DecorationOptions[] = [];
		const ghosts: vscode.DecorationOptions[] = [];
		const acceptedRemoved: vscode.DecorationOptions[] = [];
		const acceptedGhosts: vscode.DecorationOptions[] = [];
		const added: vscode.DecorationOptions[] = [];
		const reasons: vscode.DecorationOptions[] = [];
		const tabSize = typeof ed.options.tabSize === "number" ? ed.options.tabSize : 4;
		const line = (n: number) => new vscode.Range(n, 0, n, 0);
		for (const e of entries) {
			const file = e.params.file!;
			// A command's hook, a protected path: no grant covers it, and the user reads why it asks.
			if (!e.params.scopes?.length && e.params.why && (file.created || doc.uri.scheme !== PROPOSED_SCHEME)) {
				const end = doc.lineAt(0).range.end;
				reasons.push({ range: new vscode.Range(end, end), renderOptions: { after: { contentText: `agentd · needs review: ${clip(reviewReason(e.params.why), 120)}` } }, hoverMessage: e.params.why });
			}
			if (file.created && doc.uri.scheme === PROPOSED_SCHEME) {
				for (let n = 0; n < doc.lineCount; n++) added.push({ range: line(n) });
				continue;
			}
			// The proposed side of the review's diff: the diff editor shows the changes itself.
			if (doc.uri.scheme === PROPOSED_SCHEME) continue;
			const plan = planDecorations(file.hunks, e.anchors, e.states, { lineCount: doc.lineCount, tabSize });
			const hover = new Map(file.hunks.map((h) => [h.id, this.hoverFor(e, h.id)]));
			const firstOf = new Set<string>();
			for (const r of plan.removed) {
				const opt: vscode.DecorationOptions = { range: line(r.line) };
				if (!firstOf.has(r.hunkId)) {
					firstOf.add(r.hunkId);
					opt.hoverMessage = hover.get(r.hunkId);
				}
				removed.push(opt);
			}
			for (const g of plan.ghosts) {
				const l = doc.lineAt(Math.min(g.line, doc.lineCount - 1));
				const mark = g.accepted ? "✓ " : g.text.startsWith(" ⏎") ? "" : "→ ";
				const hoverMessage = g.accepted ? "Accepted — applied once every hunk of this file is decided" : hover.get(g.hunkId);
				(g.accepted ? acceptedGhosts : ghosts).push(
					g.before
						? { range: new vscode.Range(l.range.start, l.range.start), renderOptions: { before: { contentText: mark + g.text } }, hoverMessage }
						: { range: new vscode.Range(l.range.end, l.range.end), renderOptions: { after: { contentText: mark + g.text } }, hoverMessage },
				);
			}
			for (const a of plan.acceptedRemoved) acceptedRemoved.push({ range: line(a.line), hoverMessage: "Accepted: this line goes once every hunk of this file is decided" });
		}
		ed.setDecorations(this.removedType, removed);
		ed.setDecorations(this.ghostType, ghosts);
		ed.setDecorations(this.acceptedRemovedType, acceptedRemoved);
		ed.setDecorations(this.acceptedGhostType, acceptedGhosts);
		ed.setDecorations(this.addedType, added);
		ed.setDecorations(this.reasonType, reasons);
		const now = Date.now();
		for (const e of entries) {
			if (e.renderedAt === undefined) {
				e.renderedAt = now;
				const t = this.timings.find((x) => x.reviewId === e.params.reviewId);
				if (t) t.renderedAt = now;
			}
		}
	}

	private hoverFor(e: Entry, hunkId: string): vscode.MarkdownString {
		const h = e.params.file!.hunks.find((x) => x.id === hunkId)!;
		const md = new vscode.MarkdownString(undefined, true);
		md.isTrusted = { enabledCommands: ["agentd.review.acceptHunk", "agentd.review.rejectHunk"] };
		md.appendMarkdown(`**agentd** · ${escapeMd(e.params.label)} · proposed\n\n`);
		const fence = "`".repeat(Math.max(3, longestRun(h.added.join("\n"), "`") + 1));
		md.appendMarkdown(h.added.length ? `${fence}\n${h.added.join("\n")}\n${fence}\n\n` : "_removes these lines_\n\n");
		const args = encodeURIComponent(JSON.stringify([e.params.reviewId, hunkId]));
		md.appendMarkdown(`[Accept](command:agentd.review.acceptHunk?${args}) · [Reject](command:agentd.review.rejectHunk?${args})`);
		return md;
	}

	private lenses(doc: vscode.TextDocument): vscode.CodeLens[] {
		const out: vscode.CodeLens[] = [];
		for (const e of this.entriesFor(doc.uri)) {
			const file = e.params.file!;
			const id = e.params.reviewId;
			const { added, removed } = hunkStats(file.hunks);
			const top = new vscode.Range(0, 0, 0, 0);
			const n = file.hunks.length;
			const title = `agentd · ${e.params.label}: ${n} hunk${n === 1 ? "" : "s"} (+${added} −${removed})${e.changed ? " ⚠ file changed since proposed" : ""}`;
			if (e.busy) {
				out.push(new vscode.CodeLens(top, { title: "$(sync~spin) agentd: sending decision…", command: "" }));
				continue;
			}
			out.push(new vscode.CodeLens(top, { title, command: "agentd.review.showDiff", arguments: [id], tooltip: e.params.why }));
			const decided = file.hunks.length - pendingCount(e);
			out.push(new vscode.CodeLens(top, { title: decided ? "Accept the rest" : "Accept all", command: "agentd.review.acceptFile", arguments: [id], tooltip: `Accept every pending hunk (${KEYS.acceptFile})` }));
			out.push(new vscode.CodeLens(top, { title: decided ? "Reject the rest" : "Reject all", command: "agentd.review.rejectFile", arguments: [id], tooltip: `Reject every pending hunk (${KEYS.rejectFile})` }));
			out.push(
				new vscode.CodeLens(top, {
					title: decided ? "Reject the rest with reason…" : "Reject with reason…",
					command: "agentd.review.rejectWithReason",
					arguments: [id],
					tooltip: decided ? "The pending hunks are rejected, the accepted ones applied; the model reads the reason" : "The model reads the reason",
				}),
			);
			if (doc.uri.scheme !== PROPOSED_SCHEME) out.push(new vscode.CodeLens(top, { title: "Diff", command: "agentd.review.showDiff", arguments: [id], tooltip: "Open the proposed file side by side" }));
			out.push(new vscode.CodeLens(top, { title: "Edit proposal", command: "agentd.review.editProposal", arguments: [id], tooltip: "Change the proposed file before accepting it: saving accepts your version" }));
			if (file.created) continue;
			if (doc.uri.scheme === PROPOSED_SCHEME) {
				out.push(...this.proposedLenses(e, doc));
				continue;
			}
			const plan = planDecorations(file.hunks, e.anchors, e.states, { lineCount: doc.lineCount });
			plan.lenses.forEach((l, i) => {
				const range = new vscode.Range(l.line, 0, l.line, 0);
				const label = n > 1 ? `hunk ${i + 1}/${n}` : "hunk";
				if (l.state === "pending") {
					out.push(new vscode.CodeLens(range, { title: `$(check) Accept ${label} ${KEYS.accept}`, command: "agentd.review.acceptHunk", arguments: [id, l.hunkId], tooltip: KEYS.accept }));
					out.push(new vscode.CodeLens(range, { title: `$(close) Reject ${KEYS.reject}`, command: "agentd.review.rejectHunk", arguments: [id, l.hunkId], tooltip: KEYS.reject }));
					out.push(this.reasonLens(range, id, l.hunkId));
					if (l.conflict) out.push(new vscode.CodeLens(range, { title: "⚠ edited since proposed", command: "" }));
				} else {
					const waiting = pendingCount(e);
					out.push(
						new vscode.CodeLens(range, {
							title: `${this.decidedTitle(e, l.hunkId, l.state)} — waiting for ${waiting} more hunk${waiting === 1 ? "" : "s"}`,
							command: "",
							tooltip: e.reasons.get(l.hunkId) && l.state === "rejected" ? `Your reason, sent to the model with this hunk: ${e.reasons.get(l.hunkId)}` : undefined,
						}),
					);
					out.push(new vscode.CodeLens(range, { title: `$(discard) Undo ${KEYS.undo}`, command: "agentd.review.undoHunk", arguments: [id, l.hunkId], tooltip: KEYS.undo }));
				}
			});
		}
		return out;
	}

	private reasonLens(range: vscode.Range, reviewId: string, hunkId: string): vscode.CodeLens {
		return new vscode.CodeLens(range, {
			title: `$(comment-discussion) Reject with reason… ${KEYS.rejectReason}`,
			command: "agentd.review.rejectHunkWithReason",
			arguments: [reviewId, hunkId],
			tooltip: `Reject this hunk and tell the model why (${KEYS.rejectReason})`,
		});
	}

	/** "✓ Accepted", "✗ Rejected", or "✗ Rejected: “reason”" for a hunk decided locally. */
	private decidedTitle(e: Entry, hunkId: string, state: HunkState): string {
		if (state === "accepted") return "$(check) Accepted";
		const reason = e.reasons.get(hunkId);
		return reason ? `$(close) Rejected: “${clip(reason, 60)}”` : "$(close) Rejected";
	}

	/** The hunk lenses of the diff's proposed side: at each hunk's place in the proposed text. */
	private proposedLenses(e: Entry, doc: vscode.TextDocument): vscode.CodeLens[] {
		const out: vscode.CodeLens[] = [];
		const file = e.params.file!;
		const n = file.hunks.length;
		const id = e.params.reviewId;
		const lines = doc.getText().split(/\r?\n/);
		file.hunks.forEach((h, i) => {
			const l = Math.max(0, Math.min(proposedLine(h, lines), doc.lineCount - 1));
			const range = new vscode.Range(l, 0, l, 0);
			const label = n > 1 ? `hunk ${i + 1}/${n}` : "hunk";
			const state = e.states.get(h.id) ?? "pending";
			if (state === "pending") {
				out.push(new vscode.CodeLens(range, { title: `$(check) Accept ${label} ${KEYS.accept}`, command: "agentd.review.acceptHunk", arguments: [id, h.id], tooltip: KEYS.accept }));
				out.push(new vscode.CodeLens(range, { title: `$(close) Reject ${KEYS.reject}`, command: "agentd.review.rejectHunk", arguments: [id, h.id], tooltip: KEYS.reject }));
				out.push(this.reasonLens(range, id, h.id));
			} else {
				const waiting = pendingCount(e);
				out.push(new vscode.CodeLens(range, { title: `${this.decidedTitle(e, h.id, state)} — waiting for ${waiting} more hunk${waiting === 1 ? "" : "s"}`, command: "" }));
				out.push(new vscode.CodeLens(range, { title: `$(discard) Undo ${KEYS.undo}`, command: "agentd.review.undoHunk", arguments: [id, h.id], tooltip: KEYS.undo }));
			}
		});
		return out;
	}

	private onDocChange(ev: vscode.TextDocumentChangeEvent): void {
		if (!ev.contentChanges.length) return;
		const entries = this.entriesFor(ev.document.uri);
		if (!entries.length) return;
		for (const e of entries) {
			if (ev.document.uri.scheme === PROPOSED_SCHEME) continue;
			e.changed = true;
			// contentChanges are ordered so that each applies to the text after the previous ones.
			for (const c of ev.contentChanges) {
				const inserted = (c.text.match(/\r\n|\r|\n/g) ?? []).length;
				e.anchors = shiftAnchors(e.anchors, {
					startLine: c.range.start.line,
					startChar: c.range.start.character,
					endLine: c.range.end.line,
					endChar: c.range.end.character,
					insertedLines: inserted,
				});
			}
		}
		this.lensEmitter.fire();
		// Decorations move with the text by themselves; re-render only for anchors that changed.
		for (const ed of vscode.window.visibleTextEditors) if (sameUri(ed.document.uri, ev.document.uri)) this.render(ed);
	}

	// ---- the proposed file (diff editor, new files) ----

	private async proposedText(uri: vscode.Uri): Promise<string> {
		const q = new URLSearchParams(uri.query);
		const e = this.entries.get(q.get("review") ?? "");
		if (!e?.params.file) return "";
		const file = e.params.file;
		if (file.created) return file.hunks.flatMap((h) => h.added).join("\n") + (file.hunks.length ? "\n" : "");
		try {
			const doc = await vscode.workspace.openTextDocument(e.uri!);
			return applyTextEdits(doc.getText(), file.edit.edits);
		} catch (err) {
			return `agentd: could not compute the proposed text: ${errorMessage(err)}`;
		}
	}

	private async originalText(uri: vscode.Uri): Promise<string> {
		const e = this.entries.get(reviewOf(uri) ?? "");
		if (!e?.uri) return "";
		try {
			return (await vscode.workspace.openTextDocument(e.uri)).getText();
		} catch (err) {
			return `agentd: could not read the file: ${errorMessage(err)}`;
		}
	}

	/**
	 * The review's diff: the file as it is (a read-only copy, without agentd's decorations) on the
	 * left, the proposed file on the right, with the same actions as inline (a lens per hunk, the
	 * file's Accept all / Reject all / Reject with reason… lenses and title actions, the keys). It
	 * closes when the review is settled, here or anywhere else.
	 */
	async showDiff(reviewId?: string): Promise<void> {
		const e = this.pick(reviewId);
		if (!e?.params.file) return;
		const file = e.params.file;
		const right = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: "/" + file.path, query: `review=${e.params.reviewId}` });
		this.proposedEmitter.fire(right);
		if (file.created) {
			await vscode.window.showTextDocument(right, { preview: true });
			return;
		}
		const left = vscode.Uri.from({ scheme: ORIGINAL_SCHEME, path: "/" + file.path, query: `review=${e.params.reviewId}` });
		await vscode.commands.executeCommand("vscode.diff", left, right, `${file.path} ↔ proposed by agentd`, { preview: true });
	}

	/** Whether a document is one of the reviews' (a file under review, a proposal's diff) or the
	 * file whose review was just decided. */
	private isReviewDocument(uri: vscode.Uri): boolean {
		if (uri.scheme === PROPOSED_SCHEME || uri.scheme === ORIGINAL_SCHEME) return true;
		if (this.followedFrom && sameUri(uri, this.followedFrom)) return true;
		return this.entriesFor(uri).length > 0;
	}

	/**
	 * "Edit proposal": the proposed file in an editor of its own (agentd-edit:), to change before
	 * accepting; saving it (Ctrl+S) accepts the user's version (review/decide with content). The
	 * model is told that the user changed its proposal, and how.
	 */
	async editProposal(reviewId?: string): Promise<void> {
		const e = this.pick(reviewId);
		if (!e?.params.file || e.busy) return;
		const right = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: "/" + e.params.file.path, query: `review=${e.params.reviewId}` + (e.params.file.created ? "&created=1" : "") });
		const text = await this.proposedText(right);
		const uri = vscode.Uri.from({ scheme: EDIT_SCHEME, path: `/${e.params.reviewId}/${e.params.file.path}` });
		this.edits.put(uri, text);
		const doc = await vscode.workspace.openTextDocument(uri);
		const lang = vscode.workspace.textDocuments.find((d) => e.uri && sameUri(d.uri, e.uri))?.languageId;
		if (lang && doc.languageId !== lang) await vscode.languages.setTextDocumentLanguage(doc, lang);
		await vscode.window.showTextDocument(doc, { preview: false });
		void vscode.window.setStatusBarMessage("agentd: edit the proposal, then save (Ctrl+S) to accept your version", 10000);
	}

	private async acceptEdited(doc: vscode.TextDocument): Promise<void> {
		const reviewId = doc.uri.path.split("/")[1];
		const e = this.entries.get(reviewId);
		if (!e || e.busy) {
			void vscode.window.showWarningMessage(`agentd: the review of ${doc.uri.path.split("/").slice(2).join("/")} is already settled: your version was not used.`);
			return;
		}
		await this.decide(e, { type: "accept", content: doc.getText() });
	}

	/** Closes the editors that show a settled review's proposal (its diff, a new file's preview). */
	private closeReviewTabs(reviewId: string): Promise<void> {
		const tabs: vscode.Tab[] = [];
		for (const g of vscode.window.tabGroups.all) {
			for (const t of g.tabs) {
				const input = t.input;
				const uris = input instanceof vscode.TabInputTextDiff ? [input.original, input.modified] : input instanceof vscode.TabInputText ? [input.uri] : [];
				if (uris.some((u) => reviewOf(u) === reviewId || (u.scheme === EDIT_SCHEME && u.path.split("/")[1] === reviewId))) tabs.push(t);
			}
		}
		if (!tabs.length) return Promise.resolve();
		this.closingTabs++;
		return Promise.resolve(vscode.window.tabGroups.close(tabs, true)).then(
			() => {
				this.closingTabs--;
			},
			(err: unknown) => {
				this.closingTabs--;
				this.log.warn(`closing the review's diff: ${errorMessage(err)}`);
			},
		);
	}

	// ---- deciding ----

	private pick(reviewId?: string): Entry | undefined {
		if (reviewId) return this.entries.get(reviewId);
		const ed = vscode.window.activeTextEditor;
		if (ed) {
			const here = this.entriesFor(ed.document.uri);
			if (here.length) return here[0];
		}
		return [...this.entries.values()].find((e) => e.uri);
	}

	private hunkArgs(args: HunkArgs): { e?: Entry; hunkId?: string } {
		let [a, hunkId] = args;
		// A link in a thread's comment (see syncThreads).
		if (args[2] === "thread" && typeof a === "string" && hunkId) this.clickedThreads.add(`${a}/${hunkId}`);
		let reviewId: string | undefined;
		const fromThread = a && typeof a === "object" ? this.threadHunks.get(a as vscode.CommentThread) : undefined;
		if (fromThread) {
			reviewId = fromThread.reviewId;
			hunkId = fromThread.hunkId;
		} else if (a && typeof a === "object" && !("uri" in a)) {
			reviewId = a.reviewId;
			hunkId = a.hunkId;
		} else if (typeof a === "string") reviewId = a;
		const e = this.pick(reviewId);
		if (!e || !e.params.file) return {};
		if (!hunkId) {
			const ed = vscode.window.activeTextEditor;
			if (ed && ed.document.uri.scheme === PROPOSED_SCHEME && !e.params.file.created) hunkId = proposedHunkAt(e, ed.selection.active.line, ed.document.getText().split(/\r?\n/));
			else {
				const line = ed && sameUri(ed.document.uri, this.displayUri(e)) ? ed.selection.active.line : 0;
				hunkId = hunkAt(e.anchors, e.states, line);
			}
		}
		return { e, hunkId };
	}

	private async decideHunk(args: HunkArgs, state: HunkState): Promise<void> {
		const { e, hunkId } = this.hunkArgs(args);
		if (!e || !hunkId || e.busy) return;
		if (e.params.file?.created) return state === "accepted" ? this.decide(e, { type: "accept" }) : this.decide(e, { type: "reject" });
		if ((e.states.get(hunkId) ?? "pending") !== "pending") return;
		e.states.set(hunkId, state);
		e.decidedOrder.push(hunkId);
		const d = decisionFor(
			e.params.file!.hunks.map((h) => h.id),
			e.states,
			undefined,
			e.reasons,
		);
		if (d) {
			await this.decide(e, d);
			return;
		}
		this.sendHunkStates(e, [hunkId]);
		this.update();
		this.renderAll();
		this.moveToNextHunk(e);
	}

	/** Undoes a local hunk decision: the one given, else the one at the cursor, else the latest. */
	private undoHunk(args: HunkArgs): void {
		const [a, given] = args;
		let e: Entry | undefined;
		let hunkId: string | undefined;
		const fromThread = a && typeof a === "object" ? this.threadHunks.get(a as vscode.CommentThread) : undefined;
		if (fromThread) {
			e = this.entries.get(fromThread.reviewId);
			hunkId = fromThread.hunkId;
		} else if (typeof a === "string") {
			e = this.entries.get(a);
			hunkId = given;
		} else if (a && typeof a === "object" && !("uri" in a)) {
			e = this.pick(a.reviewId);
			hunkId = a.hunkId;
		} else e = this.pick();
		if (!e || e.busy || !e.params.file) return;
		if (!hunkId) {
			const ed = vscode.window.activeTextEditor;
			if (ed && sameUri(ed.document.uri, this.displayUri(e))) {
				const line = ed.selection.active.line;
				hunkId = e.anchors.find((x) => (e!.states.get(x.id) ?? "pending") !== "pending" && line >= x.start - (x.removed ? 0 : 1) && line <= x.start + Math.max(x.removed, 1) - 1)?.id;
			}
			hunkId ??= e.decidedOrder.at(-1);
		}
		if (!hunkId || (e.states.get(hunkId) ?? "pending") === "pending") return;
		e.states.set(hunkId, "pending");
		e.reasons.delete(hunkId);
		e.decidedOrder = e.decidedOrder.filter((x) => x !== hunkId);
		this.sendHunkStates(e, [hunkId]);
		this.update();
		this.renderAll();
	}

	/**
	 * Tells the daemon this editor's decision on some hunks before the file is settled; it relays
	 * them to the session's other editors (review/hunkState). The decision itself is still the
	 * file's review/decide: a failure here only means the others do not see the hunk decided.
	 */
	private sendHunkStates(e: Entry, ids: string[]): void {
		const hunks = hunkStatesFor(e, ids);
		this.daemon.request(Method.ReviewHunkState, { reviewId: e.params.reviewId, hunks }).then(
			() => this.log.info(`review ${e.params.reviewId}: hunk states ${JSON.stringify(hunks)} sent to the other editors`),
			(err) => {
				const code = errorCode(err);
				const settled = code === ErrorCode.ReviewResolved || code === ErrorCode.UnknownReview;
				(settled ? this.log.info : this.log.warn).call(this.log, `review ${e.params.reviewId}: hunk states not shared: ${errorMessage(err)}`);
			},
		);
	}

	/** Hunk decisions made in another editor of the session (review/hunkStates), for a review shown here. */
	private applyRemoteStates(p: ReviewHunkStatesParams): void {
		const e = this.entries.get(p.reviewId);
		if (!e || e.busy || !e.uri || e.params.sessionId !== p.sessionId) return;
		if (!applyHunkStates(e, p.hunks)) return;
		this.log.info(`review ${p.reviewId}: hunk states from another editor: ${JSON.stringify(p.hunks)}`);
		this.update();
		this.renderAll();
	}

	private moveToNextHunk(e: Entry): void {
		const ed = vscode.window.activeTextEditor;
		if (ed && ed.document.uri.scheme === PROPOSED_SCHEME && reviewOf(ed.document.uri) === e.params.reviewId) {
			const lines = ed.document.getText().split(/\r?\n/);
			const next = proposedHunkAt(e, ed.selection.active.line, lines);
			const h = e.params.file?.hunks.find((x) => x.id === next);
			if (!h) return;
			const pos = new vscode.Position(Math.max(0, Math.min(proposedLine(h, lines), ed.document.lineCount - 1)), 0);
			ed.selection = new vscode.Selection(pos, pos);
			ed.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
			return;
		}
		if (!ed || !sameUri(ed.document.uri, e.uri!)) return;
		const next = hunkAt(e.anchors, e.states, ed.selection.active.line);
		const a = e.anchors.find((x) => x.id === next);
		if (!a) return;
		const pos = new vscode.Position(Math.min(a.start, ed.document.lineCount - 1), 0);
		ed.selection = new vscode.Selection(pos, pos);
		ed.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
	}

	private async decide(e: Entry, decision: Decision, fromEditor = true): Promise<void> {
		if (e.busy) return;
		e.busy = true;
		// Decided in its own editor: the next file's review opens with the focus (keys keep working).
		// Its diff's proposed side counts as its editor.
		const ed = vscode.window.activeTextEditor;
		const own = e.uri && ed && (sameUri(ed.document.uri, this.displayUri(e)) || ((ed.document.uri.scheme === PROPOSED_SCHEME || ed.document.uri.scheme === ORIGINAL_SCHEME) && reviewOf(ed.document.uri) === e.params.reviewId));
		if (fromEditor && e.uri && own) this.followFocus = e.params.reviewId;
		this.lensEmitter.fire();
		this.syncThreads();
		try {
			const r = await this.daemon.request(Method.ReviewDecide, { reviewId: e.params.reviewId, decision });
			this.log.info(`review ${e.params.reviewId}: ${JSON.stringify(decision)} → ${r.outcome}${r.settled?.length ? ` (also settled ${r.settled.join(", ")})` : ""}`);
			this.remove(e.params.reviewId);
			for (const id of r.settled ?? []) this.remove(id);
		} catch (err) {
			const code = errorCode(err);
			if (code === ErrorCode.ReviewResolved || code === ErrorCode.UnknownReview) {
				this.log.info(`review ${e.params.reviewId} was already resolved: ${errorMessage(err)}`);
				this.remove(e.params.reviewId);
				return;
			}
			e.busy = false;
			if (this.followFocus === e.params.reviewId) this.followFocus = undefined;
			for (const id of e.states.keys()) e.states.set(id, "pending");
			e.decidedOrder = [];
			e.reasons.clear();
			this.update();
			this.renderAll();
			showError(`agentd: the decision was not sent: ${errorMessage(err)}`);
		}
	}

	/** Decides every pending hunk of a file the same way; the hunks decided already keep their decision. */
	private async decideRest(e: Entry, state: HunkState): Promise<void> {
		const file = e.params.file;
		if (!file || file.created || e.busy) return this.decide(e, state === "accepted" ? { type: "accept" } : { type: "reject" });
		const ids = file.hunks.map((h) => h.id);
		const states = new Map(e.states);
		for (const id of ids) if ((states.get(id) ?? "pending") === "pending") states.set(id, state);
		const d = decisionFor(ids, states, undefined, e.reasons);
		if (d) await this.decide(e, d);
	}

	async acceptFile(reviewId?: string): Promise<void> {
		const e = this.pick(reviewId);
		if (e) await this.decideRest(e, "accepted");
	}

	async rejectFile(reviewId?: string): Promise<void> {
		const e = this.pick(reviewId);
		if (e) await this.decideRest(e, "rejected");
	}

	async rejectWithReason(reviewId?: string): Promise<void> {
		const e = this.pick(reviewId);
		if (!e) return;
		const reason = await vscode.window.showInputBox({
			title: `Reject: ${e.params.label}`,
			prompt: "Why? The model reads this and tries again.",
			placeHolder: "e.g. keep the clamp out of this change",
			ignoreFocusOut: true,
		});
		if (reason === undefined || !this.entries.has(e.params.reviewId)) return;
		// Only the hunks still pending are rejected: the ones accepted already are applied, and the
		// reason goes with them (a partial accept).
		const file = e.params.file;
		const d = file && !file.created ? rejectRestDecision(file.hunks.map((h) => h.id), e.states, reason, e.reasons) : reason.trim() ? { type: "reject" as const, reason: reason.trim() } : { type: "reject" as const };
		await this.decide(e, d);
	}

	/**
	 * "Reject with reason…" on one hunk (its lens, its comment thread, the tree, the key): asks why,
	 * rejects that hunk and keeps the reason, shown on the hunk until the file is settled and sent
	 * with the file's decision (hunkReasons). An empty answer rejects without a reason; Escape
	 * decides nothing.
	 */
	async rejectHunkWithReason(args: HunkArgs): Promise<void> {
		const { e, hunkId } = this.hunkArgs(args);
		if (!e || !hunkId || e.busy) return;
		const file = e.params.file!;
		if (file.created) return this.rejectWithReason(e.params.reviewId);
		if ((e.states.get(hunkId) ?? "pending") !== "pending") return;
		const n = file.hunks.length;
		const index = file.hunks.findIndex((h) => h.id === hunkId);
		const reason = await vscode.window.showInputBox({
			title: `Reject ${n > 1 ? `hunk ${index + 1}/${n}` : "the hunk"} of ${file.path}`,
			prompt: "Why not this hunk? The model reads it with this hunk.",
			placeHolder: "e.g. keep the old name: other packages use it",
			ignoreFocusOut: true,
		});
		if (reason === undefined || this.entries.get(e.params.reviewId) !== e || e.busy || (e.states.get(hunkId) ?? "pending") !== "pending") return;
		if (reason.trim()) e.reasons.set(hunkId, reason.trim());
		await this.decideHunk([e.params.reviewId, hunkId], "rejected");
	}

	async acceptForSession(reviewId?: string, scope?: GrantScope): Promise<void> {
		const e = this.pick(reviewId) ?? (reviewId ? undefined : [...this.entries.values()][0]);
		if (!e) return;
		const s = scope ?? (await this.pickScope(e));
		if (!s) return;
		// A whole tool for the rest of the session is the broadest grant: say so and ask again.
		if (s.kind === "tool") {
			const yes = `Allow every ${s.tool} call`;
			const ok = await vscode.window.showWarningMessage(
				`Allow every ${s.tool} call for the rest of this session, without asking?`,
				{ modal: true, detail: "Narrower scopes (this exact command, or its program) are offered first in the list." },
				yes,
			);
			if (ok !== yes || !this.entries.has(e.params.reviewId)) return;
		}
		const { label: _label, ...bare } = s;
		await this.decide(e, { type: "acceptForSession", scope: bare });
	}

	private async pickScope(e: Entry): Promise<GrantScope | undefined> {
		const scopes = e.params.scopes ?? [];
		if (!scopes.length) {
			void vscode.window.showInformationMessage("agentd: this review offers no session-wide permission.");
			return undefined;
		}
		if (scopes.length === 1) return scopes[0];
		const picked = await vscode.window.showQuickPick(
			scopes.map((s) => ({ label: s.label || scopeLabel(s), scope: s })),
			{ title: `Allow for this session: ${e.params.label}`, placeHolder: "What should run without asking for the rest of the session?" },
		);
		return picked?.scope;
	}

	async cancelTurn(reviewId?: string): Promise<void> {
		const e = this.pick(reviewId) ?? [...this.entries.values()][0];
		if (e) await this.decide(e, { type: "cancelTurn" });
	}

	// ---- command and tool reviews ----

	private async ask(e: Entry): Promise<void> {
		if (e.asked) return;
		e.asked = true;
		const p = e.params;
		const modal = readConfig().commandApproval === "modal";
		const cmd = p.command;
		const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
		const mcp = p.mcp;
		// Shown to the user: the model's text with its control characters visible (src/visible.ts).
		const message = visible(
			p.kind === "command" && cmd
				? `agentd wants to run: ${commandLine(cmd.argv)} — in ${where(relativeTo(folder, cmd.cwd))}, ${sandboxLabel(cmd.sandbox, cmd.network)}. ${p.why}`
				: mcp
					? `agentd wants to call ${mcpTitle(mcp)} (MCP server ${mcp.server}, tool ${mcp.tool}) — ${toastArgs(mcp.arguments)}. ${p.why}`
					: `agentd wants to use ${p.tool}: ${p.label}. ${p.why}`,
		);
		const detail = visible(cmd
			? [`Command: ${cmd.argv.join(" ")}`, `Directory: ${cmd.cwd}`, `Sandbox: ${cmd.sandbox || "none"}`, `Network: ${cmd.network ? "on" : "off"}`, cmd.timeoutMs ? `Timeout: ${Math.round(cmd.timeoutMs / 1000)} s` : "", `Why: ${p.why}`]
					.filter(Boolean)
					.join("\n")
			: mcp
				? `MCP server: ${mcp.server}\nTool: ${mcp.tool}\nArguments (exactly as sent):\n${prettyArgs(mcp.arguments)}\nWhy: ${p.why}`
				: p.why);
		const run = p.kind === "command" ? "Run once" : "Allow once";
		const sessionLabel = p.scopes?.length === 1 ? `Allow: ${p.scopes[0].label || scopeLabel(p.scopes[0])}` : p.scopes?.length ? "Allow for session…" : undefined;
		if (modal) {
			// A modal cannot be closed from outside: an answer given after the review was settled
			// elsewhere is ignored.
			const buttons = [run, ...(sessionLabel ? [sessionLabel] : []), "Reject…"];
			const choice = await vscode.window.showWarningMessage(message, { modal: true, detail }, ...buttons);
			if (!this.entries.has(p.reviewId)) return; // decided elsewhere meanwhile
			if (choice === run) await this.decide(e, { type: "accept" }, false);
			else if (choice && choice === sessionLabel) await this.acceptForSession(p.reviewId);
			else if (choice === "Reject…") await this.rejectWithReason(p.reviewId);
			return;
		}
		// A notification VS Code lets us close: a progress notification, whose actions are links.
		// It closes when the review is settled, here, in the chat card, in another editor, by a
		// grant, a timeout or the end of the turn (review/resolved), so no stale buttons remain.
		const arg = encodeURIComponent(JSON.stringify([p.reviewId]));
		const links = [
			`[${run}](command:agentd.review.approveCommand?${arg} "${KEYS.run}")`,
			...(sessionLabel ? [`[${sessionLabel.replace(/[[\]]/g, "")}](command:agentd.review.acceptForSession?${arg})`] : []),
			`[Reject…](command:agentd.review.rejectWithReason?${arg})`,
		];
		// The actions first: a collapsed notification shows one line.
		const title = visible(
			p.kind === "command" && cmd ? `agentd wants to run: ${commandLine(cmd.argv)}` : mcp ? `agentd wants to call ${mcpTitle(mcp)}` : `agentd wants to use ${p.tool}: ${p.label}`,
		);
		const rest = message.slice(title.length).replace(/^[\s—.]+/, "");
		void vscode.window.withProgress(
			{ location: vscode.ProgressLocation.Notification, title: title.replace(/[[\]]/g, ""), cancellable: false },
			(progress) =>
				new Promise<void>((resolve) => {
					progress.report({ message: `${links.join(" · ")} (${KEYS.run}) — ${rest.replace(/[[\]]/g, "")}` });
					if (!this.entries.has(p.reviewId)) return resolve();
					e.closeToast = resolve;
				}),
		);
	}

	private reask(e: Entry): Promise<void> {
		e.closeToast?.();
		e.closeToast = undefined;
		e.asked = false;
		return this.ask(e);
	}

	/** Approves the pending command (the key): the one given, else the oldest command review. */
	async approveCommand(reviewId?: string): Promise<void> {
		const e = reviewId ? this.entries.get(reviewId) : [...this.entries.values()].find((x) => !x.uri);
		if (e && !e.uri) await this.decide(e, { type: "accept" }, false);
	}

	/** From the chat's tool card. */
	async answerFromChat(reviewId: string, action: string): Promise<void> {
		const e = this.entries.get(reviewId);
		if (!e) return;
		switch (action) {
			case "accept":
				return this.decide(e, { type: "accept" }, false);
			case "session":
				return this.acceptForSession(reviewId);
			case "reject":
				return this.rejectWithReason(reviewId);
			case "show":
				return e.uri ? this.reveal(e, true) : this.reask(e);
		}
	}

	// ---- navigation ----

	async next(): Promise<void> {
		const list = [...this.entries.values()];
		if (!list.length) return;
		const ed = vscode.window.activeTextEditor;
		const cur = ed ? list.findIndex((e) => e.uri && sameUri(this.displayUri(e), ed.document.uri)) : -1;
		const e = list[(cur + 1) % list.length];
		if (e.uri) await this.reveal(e, true);
		else await this.reask(e);
	}

	private jumpHunk(dir: 1 | -1): void {
		const ed = vscode.window.activeTextEditor;
		if (!ed) return;
		const starts = this.entriesFor(ed.document.uri)
			.flatMap((e) => e.anchors.filter((a) => e.states.get(a.id) === "pending").map((a) => a.start))
			.sort((a, b) => a - b);
		if (!starts.length) return;
		const line = ed.selection.active.line;
		const target = dir > 0 ? (starts.find((s) => s > line) ?? starts[0]) : ([...starts].reverse().find((s) => s < line) ?? starts[starts.length - 1]);
		const pos = new vscode.Position(Math.min(target, ed.document.lineCount - 1), 0);
		ed.selection = new vscode.Selection(pos, pos);
		ed.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
	}

	private registerCommands(): void {
		const reg = (id: string, fn: (...a: any[]) => unknown) => this.disposables.push(registerCommand(id, fn, this.log));
		reg("agentd.review.acceptHunk", (...a: HunkArgs) => this.decideHunk(a, "accepted"));
		reg("agentd.review.rejectHunk", (...a: HunkArgs) => this.decideHunk(a, "rejected"));
		reg("agentd.review.rejectHunkWithReason", (...a: HunkArgs) => this.rejectHunkWithReason(a));
		reg("agentd.review.undoHunk", (...a: HunkArgs) => this.undoHunk(a));
		const id = (a: unknown) => (a && typeof a === "object" ? (a as { reviewId?: string }).reviewId : (a as string | undefined));
		reg("agentd.review.acceptFile", (a?: unknown) => this.acceptFile(id(a)));
		reg("agentd.review.rejectFile", (a?: unknown) => this.rejectFile(id(a)));
		reg("agentd.review.rejectWithReason", (a?: unknown) => this.rejectWithReason(id(a)));
		reg("agentd.review.acceptForSession", (a?: unknown) => this.acceptForSession(id(a)));
		reg("agentd.review.cancelTurn", (a?: unknown) => this.cancelTurn(id(a)));
		reg("agentd.review.approveCommand", (a?: unknown) => this.approveCommand(id(a)));
		reg("agentd.review.showDiff", (a?: unknown) => this.showDiff(id(a)));
		reg("agentd.review.editProposal", (a?: unknown) => this.editProposal(id(a)));
		reg("agentd.review.next", () => this.next());
		reg("agentd.review.nextHunk", () => this.jumpHunk(1));
		reg("agentd.review.previousHunk", () => this.jumpHunk(-1));
		reg("agentd.review.acceptAllFiles", async () => {
			for (const e of [...this.entries.values()]) if (e.uri) await this.decideRest(e, "accepted");
		});
	}

	// ---- the "Pending reviews" tree (review/tree.ts) ----

	private registerTreeCommands(): void {
		this.disposables.push(
			registerCommand(
				"agentd.review.reveal",
				(id: string) => {
					const e = this.entries.get(id);
					return e ? this.reveal(e, true) : undefined;
				},
				this.log,
			),
			registerCommand(
				"agentd.review.ask",
				(id: string) => {
					const e = this.entries.get(id);
					return e ? this.reask(e) : undefined;
				},
				this.log,
			),
			registerCommand("agentd.review.revealHunk", async (id: string, hunkId: string) => {
				const e = this.entries.get(id);
				if (!e) return;
				await this.reveal(e, true);
				const a = e.anchors.find((x) => x.id === hunkId);
				const ed = vscode.window.activeTextEditor;
				if (a && ed) {
					const pos = new vscode.Position(Math.min(a.start, ed.document.lineCount - 1), 0);
					ed.selection = new vscode.Selection(pos, pos);
					ed.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.InCenter);
				}
			}, this.log),
		);
	}

	dispose(): void {
		for (const t of this.lensTimers) clearTimeout(t);
		for (const d of this.disposables) d.dispose();
		this.lensEmitter.dispose();
		this.proposedEmitter.dispose();
		this._onDidChange.dispose();
		this._onLink.dispose();
	}
}

/** A hunk's first line in the proposed text (0-based; a pure deletion: the line after it). */
/** In the proposed text: the pending hunk at `line`, else the next pending one below, else the first. */
function proposedHunkAt(e: Entry, line: number, lines?: readonly string[]): string | undefined {
	const pending = (e.params.file?.hunks ?? []).filter((h) => (e.states.get(h.id) ?? "pending") === "pending");
	const at = pending.find((h) => line >= proposedLine(h, lines) && line <= proposedLine(h, lines) + Math.max(h.newLines, 1) - 1);
	return (at ?? pending.find((h) => proposedLine(h, lines) >= line) ?? pending[0])?.id;
}
