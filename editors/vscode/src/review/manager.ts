// Reviews: the editor is the approval gate (docs/protocol.md §5).
//
// Edit reviews are shown inline over the untouched buffer (see review/model.ts for the rendering
// model): removed lines struck through in red, proposed lines as green ghost text, a CodeLens row
// per hunk (Accept / Reject) and one per file (Accept all / Reject all / Reject with reason… /
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
	type ReviewRequestedParams,
	type ReviewResolvedParams,
} from "../protocol";
import { registerCommand, showError } from "../testmode";
import { applyTextEdits } from "./apply";
import { commandLine, relativeTo, sandboxLabel } from "./format";
import { anchorsOf, decisionFor, hunkAt, hunkStats, planDecorations, shiftAnchors, type HunkAnchor, type HunkState } from "./model";

export const PROPOSED_SCHEME = "agentd-proposed";

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
}

export interface ReviewTiming {
	reviewId: string;
	receivedAt: number;
	renderedAt?: number;
}

type HunkArgs = [reviewId?: string | { reviewId?: string; hunkId?: string }, hunkId?: string];

export class ReviewManager implements vscode.Disposable {
	private readonly entries = new Map<string, Entry>();
	private readonly disposables: vscode.Disposable[] = [];
	private readonly removedType: vscode.TextEditorDecorationType;
	private readonly ghostType: vscode.TextEditorDecorationType;
	private readonly acceptedType: vscode.TextEditorDecorationType;
	private readonly rejectedType: vscode.TextEditorDecorationType;
	private readonly addedType: vscode.TextEditorDecorationType;
	private readonly statusItem: vscode.StatusBarItem;
	private readonly lensEmitter = new vscode.EventEmitter<void>();
	private readonly treeEmitter = new vscode.EventEmitter<TreeNode | undefined>();
	private readonly proposedEmitter = new vscode.EventEmitter<vscode.Uri>();
	private readonly _onDidChange = new vscode.EventEmitter<void>();
	/** Fires when the set of pending reviews changes. */
	readonly onDidChange = this._onDidChange.event;
	private readonly _onLink = new vscode.EventEmitter<{ callId: string; reviewId?: string; kind?: string; why?: string }>();
	/** Links a review to its tool call in the chat (and unlinks it when resolved). */
	readonly onLink = this._onLink.event;
	readonly timings: ReviewTiming[] = [];

	constructor(
		private readonly daemon: DaemonClient,
		private readonly log: vscode.LogOutputChannel,
	) {
		this.removedType = vscode.window.createTextEditorDecorationType({
			isWholeLine: true,
			backgroundColor: new vscode.ThemeColor("diffEditor.removedLineBackground"),
			textDecoration: "line-through",
			overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.deletedForeground"),
			overviewRulerLane: vscode.OverviewRulerLane.Left,
		});
		this.ghostType = vscode.window.createTextEditorDecorationType({
			after: {
				color: new vscode.ThemeColor("gitDecoration.addedResourceForeground"),
				backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground"),
				margin: "0 0 0 1.5em",
			},
			before: {
				color: new vscode.ThemeColor("gitDecoration.addedResourceForeground"),
				backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground"),
			},
			overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.addedForeground"),
			overviewRulerLane: vscode.OverviewRulerLane.Left,
		});
		this.acceptedType = vscode.window.createTextEditorDecorationType({
			isWholeLine: true,
			backgroundColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
			borderWidth: "0 0 0 3px",
			borderStyle: "solid",
			borderColor: new vscode.ThemeColor("editorOverviewRuler.addedForeground"),
		});
		this.rejectedType = vscode.window.createTextEditorDecorationType({
			isWholeLine: true,
			borderWidth: "0 0 0 3px",
			borderStyle: "dashed",
			borderColor: new vscode.ThemeColor("editorOverviewRuler.deletedForeground"),
		});
		this.addedType = vscode.window.createTextEditorDecorationType({
			isWholeLine: true,
			backgroundColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
		});
		this.statusItem = vscode.window.createStatusBarItem("agentd.reviews", vscode.StatusBarAlignment.Left, 1000);
		this.statusItem.name = "agentd reviews";
		this.statusItem.command = "agentd.review.next";
		this.statusItem.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");

		this.disposables.push(
			this.removedType,
			this.ghostType,
			this.acceptedType,
			this.rejectedType,
			this.addedType,
			this.statusItem,
			daemon.onReviewRequested((p) => this.add(p)),
			daemon.onReviewResolved((p) => this.resolved(p)),
			vscode.window.onDidChangeVisibleTextEditors(() => this.renderAll()),
			vscode.window.onDidChangeActiveTextEditor(() => this.updateContext()),
			vscode.workspace.onDidChangeTextDocument((e) => this.onDocChange(e)),
			vscode.languages.registerCodeLensProvider([{ scheme: "file" }, { scheme: PROPOSED_SCHEME }], {
				onDidChangeCodeLenses: this.lensEmitter.event,
				provideCodeLenses: (doc) => this.lenses(doc),
			}),
			vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, {
				onDidChange: this.proposedEmitter.event,
				provideTextDocumentContent: (uri) => this.proposedText(uri),
			}),
			vscode.window.createTreeView("agentd.reviews", { treeDataProvider: this.treeProvider(), showCollapseAll: false }),
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
		for (const e of this.entries.values()) {
			if (e.uri && (sameUri(e.uri, uri) || sameUri(this.displayUri(e), uri))) out.push(e);
		}
		return out;
	}

	pending(): ReviewRequestedParams[] {
		return [...this.entries.values()].map((e) => e.params);
	}

	add(p: ReviewRequestedParams): void {
		if (this.entries.has(p.reviewId)) return;
		const e: Entry = { params: p, receivedAt: Date.now(), anchors: [], states: new Map(), changed: false, busy: false };
		if (p.kind === "edit" && p.file) {
			e.uri = vscode.Uri.parse(p.file.uri);
			e.anchors = anchorsOf(p.file);
			for (const h of p.file.hunks) e.states.set(h.id, "pending");
			// The buffer may already differ from the version the proposal was computed on.
			const doc = vscode.workspace.textDocuments.find((d) => sameUri(d.uri, e.uri!));
			if (doc && p.file.version && doc.version !== p.file.version) e.changed = true;
		}
		this.entries.set(p.reviewId, e);
		this.timings.push({ reviewId: p.reviewId, receivedAt: e.receivedAt });
		if (this.timings.length > 200) this.timings.shift();
		this._onLink.fire({ callId: p.callId, reviewId: p.reviewId, kind: p.kind, why: p.why });
		this.update();
		if (e.uri) {
			void this.revealIfIdle(e);
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
		this._onLink.fire({ callId: e.params.callId, reviewId: undefined });
		this.update();
		this.renderAll();
		// Show the next queued review of another file.
		const next = [...this.entries.values()].find((x) => x.uri);
		if (next && e.uri) void this.revealIfIdle(next);
	}

	private clearAll(reason: string): void {
		for (const id of [...this.entries.keys()]) this.remove(id);
		this.log.info(`pending reviews cleared (${reason})`);
	}

	private update(): void {
		let hunks = 0;
		let files = 0;
		let commands = 0;
		for (const e of this.entries.values()) {
			if (e.uri) {
				files++;
				for (const s of e.states.values()) if (s === "pending") hunks++;
			} else commands++;
		}
		const parts: string[] = [];
		if (files) parts.push(`${hunks} hunk${hunks === 1 ? "" : "s"}${files > 1 ? ` in ${files} files` : ""}`);
		if (commands) parts.push(`${commands} command${commands === 1 ? "" : "s"}`);
		if (parts.length) {
			this.statusItem.text = `$(git-pull-request) agentd: ${parts.join(", ")} to review`;
			this.statusItem.tooltip = new vscode.MarkdownString(
				[...this.entries.values()].map((e) => `- ${e.params.label}${e.uri ? ` — ${this.pendingCount(e)} of ${e.states.size} hunks pending` : ""}`).join("\n") +
					"\n\nClick to go to the next review.",
			);
			this.statusItem.show();
		} else {
			this.statusItem.hide();
		}
		void vscode.commands.executeCommand("setContext", "agentd.reviewPending", this.entries.size > 0);
		this.updateContext();
		this.lensEmitter.fire();
		this.treeEmitter.fire(undefined);
		this._onDidChange.fire();
	}

	get count(): number {
		return this.entries.size;
	}

	/** For the end-to-end tests (stats file): the pending reviews, in arrival order. */
	pendingSummary(): { reviewId: string; path?: string; busy: boolean }[] {
		return [...this.entries.values()].map((e) => ({ reviewId: e.params.reviewId, path: e.params.file?.path, busy: e.busy }));
	}

	private pendingCount(e: Entry): number {
		let n = 0;
		for (const s of e.states.values()) if (s === "pending") n++;
		return n;
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
		// Do not pull the user away from a review they are working on.
		const active = vscode.window.activeTextEditor;
		if (active && this.entriesFor(active.document.uri).some((x) => x !== e && x.receivedAt < e.receivedAt)) return;
		await this.reveal(e, mode === "focus");
	}

	private async reveal(e: Entry, focus: boolean): Promise<void> {
		try {
			const uri = this.displayUri(e);
			const visible = vscode.window.visibleTextEditors.find((ed) => sameUri(ed.document.uri, uri));
			const doc = visible?.document ?? (await vscode.workspace.openTextDocument(uri));
			const ed = await vscode.window.showTextDocument(doc, {
				preview: false,
				preserveFocus: !focus,
				viewColumn: visible?.viewColumn ?? vscode.ViewColumn.One,
			});
			const first = e.anchors[0];
			if (first) {
				const line = Math.min(first.start, doc.lineCount - 1);
				ed.revealRange(new vscode.Range(line, 0, line, 0), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
			}
			this.render(ed);
		} catch (err) {
			this.log.warn(`opening ${e.uri?.toString()} for review ${e.params.reviewId}: ${errorMessage(err)}`);
		}
	}

	private renderAll(): void {
		for (const ed of vscode.window.visibleTextEditors) this.render(ed);
	}

	private render(ed: vscode.TextEditor): void {
		const doc = ed.document;
		const entries = this.entriesFor(doc.uri);
		const removed: vscode.DecorationOptions[] = [];
		const ghosts: vscode.DecorationOptions[] = [];
		const accepted: vscode.DecorationOptions[] = [];
		const rejected: vscode.DecorationOptions[] = [];
		const added: vscode.DecorationOptions[] = [];
		const tabSize = typeof ed.options.tabSize === "number" ? ed.options.tabSize : 4;
		const line = (n: number) => new vscode.Range(n, 0, n, 0);
		for (const e of entries) {
			const file = e.params.file!;
			if (file.created && doc.uri.scheme === PROPOSED_SCHEME) {
				for (let n = 0; n < doc.lineCount; n++) added.push({ range: line(n) });
				continue;
			}
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
				ghosts.push(
					g.before
						? { range: new vscode.Range(l.range.start, l.range.start), renderOptions: { before: { contentText: g.text } }, hoverMessage: hover.get(g.hunkId) }
						: { range: new vscode.Range(l.range.end, l.range.end), renderOptions: { after: { contentText: (g.text.startsWith(" ⏎") ? "" : "→ ") + g.text } }, hoverMessage: hover.get(g.hunkId) },
				);
			}
			for (const a of plan.accepted) accepted.push({ range: line(a.line), hoverMessage: "Accepted — applied once every hunk of this file is decided" });
			for (const r of plan.rejected) rejected.push({ range: line(r.line), hoverMessage: "Rejected — this hunk will not be applied" });
		}
		ed.setDecorations(this.removedType, removed);
		ed.setDecorations(this.ghostType, ghosts);
		ed.setDecorations(this.acceptedType, accepted);
		ed.setDecorations(this.rejectedType, rejected);
		ed.setDecorations(this.addedType, added);
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
			out.push(new vscode.CodeLens(top, { title: "Accept all", command: "agentd.review.acceptFile", arguments: [id], tooltip: "Accept every hunk (Ctrl+Alt+Shift+Y)" }));
			out.push(new vscode.CodeLens(top, { title: "Reject all", command: "agentd.review.rejectFile", arguments: [id], tooltip: "Reject every hunk (Ctrl+Alt+Shift+N)" }));
			out.push(new vscode.CodeLens(top, { title: "Reject with reason…", command: "agentd.review.rejectWithReason", arguments: [id], tooltip: "The model reads the reason" }));
			out.push(new vscode.CodeLens(top, { title: "Diff", command: "agentd.review.showDiff", arguments: [id], tooltip: "Open the proposed file side by side" }));
			if (file.created) continue;
			const plan = planDecorations(file.hunks, e.anchors, e.states, { lineCount: doc.lineCount });
			plan.lenses.forEach((l, i) => {
				const range = new vscode.Range(l.line, 0, l.line, 0);
				const label = n > 1 ? `hunk ${i + 1}/${n}` : "hunk";
				if (l.state === "pending") {
					out.push(new vscode.CodeLens(range, { title: `$(check) Accept ${label}`, command: "agentd.review.acceptHunk", arguments: [id, l.hunkId], tooltip: "Ctrl+Alt+Y" }));
					out.push(new vscode.CodeLens(range, { title: "$(close) Reject", command: "agentd.review.rejectHunk", arguments: [id, l.hunkId], tooltip: "Ctrl+Alt+N" }));
					if (l.conflict) out.push(new vscode.CodeLens(range, { title: "⚠ edited since proposed", command: "" }));
				} else {
					const waiting = this.pendingCount(e);
					out.push(
						new vscode.CodeLens(range, {
							title: `${l.state === "accepted" ? "$(check) Accepted" : "$(close) Rejected"} — waiting for ${waiting} more hunk${waiting === 1 ? "" : "s"}`,
							command: "",
						}),
					);
					out.push(new vscode.CodeLens(range, { title: "Undo", command: "agentd.review.undoHunk", arguments: [id, l.hunkId] }));
				}
			});
		}
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
		await vscode.commands.executeCommand("vscode.diff", e.uri, right, `${file.path} ↔ proposed by agentd (${e.params.reviewId})`, { preview: true });
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
		let reviewId: string | undefined;
		if (a && typeof a === "object") {
			reviewId = a.reviewId;
			hunkId = a.hunkId;
		} else reviewId = a;
		const e = this.pick(reviewId);
		if (!e || !e.params.file) return {};
		if (!hunkId) {
			const ed = vscode.window.activeTextEditor;
			const line = ed && sameUri(ed.document.uri, this.displayUri(e)) ? ed.selection.active.line : 0;
			hunkId = hunkAt(e.anchors, e.states, line);
		}
		return { e, hunkId };
	}

	private async decideHunk(args: HunkArgs, state: HunkState): Promise<void> {
		const { e, hunkId } = this.hunkArgs(args);
		if (!e || !hunkId || e.busy) return;
		if (e.params.file?.created) return state === "accepted" ? this.decide(e, { type: "accept" }) : this.decide(e, { type: "reject" });
		e.states.set(hunkId, state);
		const d = decisionFor(
			e.params.file!.hunks.map((h) => h.id),
			e.states,
		);
		if (d) {
			await this.decide(e, d);
			return;
		}
		this.update();
		this.renderAll();
		this.moveToNextHunk(e);
	}

	private moveToNextHunk(e: Entry): void {
		const ed = vscode.window.activeTextEditor;
		if (!ed || !sameUri(ed.document.uri, e.uri!)) return;
		const next = hunkAt(e.anchors, e.states, ed.selection.active.line);
		const a = e.anchors.find((x) => x.id === next);
		if (!a) return;
		const pos = new vscode.Position(Math.min(a.start, ed.document.lineCount - 1), 0);
		ed.selection = new vscode.Selection(pos, pos);
		ed.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
	}

	private async decide(e: Entry, decision: Decision): Promise<void> {
		if (e.busy) return;
		e.busy = true;
		this.lensEmitter.fire();
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
			for (const id of e.states.keys()) e.states.set(id, "pending");
			this.update();
			this.renderAll();
			showError(`agentd: the decision was not sent: ${errorMessage(err)}`);
		}
	}

	async acceptFile(reviewId?: string): Promise<void> {
		const e = this.pick(reviewId);
		if (e) await this.decide(e, { type: "accept" });
	}

	async rejectFile(reviewId?: string, reason?: string): Promise<void> {
		const e = this.pick(reviewId);
		if (e) await this.decide(e, reason ? { type: "reject", reason } : { type: "reject" });
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
		if (reason === undefined) return;
		await this.decide(e, reason.trim() ? { type: "reject", reason: reason.trim() } : { type: "reject" });
	}

	async acceptForSession(reviewId?: string, scope?: GrantScope): Promise<void> {
		const e = this.pick(reviewId) ?? (reviewId ? undefined : [...this.entries.values()][0]);
		if (!e) return;
		const s = scope ?? (await this.pickScope(e));
		if (!s) return;
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
		const message =
			p.kind === "command" && cmd
				? `agentd wants to run: ${commandLine(cmd.argv)} — in ${where(relativeTo(folder, cmd.cwd))}, ${sandboxLabel(cmd.sandbox, cmd.network)}. ${p.why}`
				: `agentd wants to use ${p.tool}: ${p.label}. ${p.why}`;
		const detail = cmd
			? [`Command: ${cmd.argv.join(" ")}`, `Directory: ${cmd.cwd}`, `Sandbox: ${cmd.sandbox || "none"}`, `Network: ${cmd.network ? "on" : "off"}`, cmd.timeoutMs ? `Timeout: ${Math.round(cmd.timeoutMs / 1000)} s` : "", `Why: ${p.why}`]
					.filter(Boolean)
					.join("\n")
			: p.why;
		const run = p.kind === "command" ? "Run once" : "Allow once";
		const buttons = [run];
		const session = p.scopes?.length === 1 ? `Allow: ${p.scopes[0].label || scopeLabel(p.scopes[0])}` : p.scopes?.length ? "Allow for session…" : undefined;
		if (session) buttons.push(session);
		buttons.push("Reject…");
		const choice = modal
			? await vscode.window.showWarningMessage(message, { modal: true, detail }, ...buttons)
			: await vscode.window.showInformationMessage(message, ...buttons);
		if (!this.entries.has(p.reviewId)) return; // decided elsewhere meanwhile
		if (choice === run) await this.decide(e, { type: "accept" });
		else if (choice && choice === session) await this.acceptForSession(p.reviewId);
		else if (choice === "Reject…") await this.rejectWithReason(p.reviewId);
	}

	/** From the chat's tool card. */
	async answerFromChat(reviewId: string, action: string): Promise<void> {
		const e = this.entries.get(reviewId);
		if (!e) return;
		switch (action) {
			case "accept":
				return this.decide(e, { type: "accept" });
			case "session":
				return this.acceptForSession(reviewId);
			case "reject":
				return this.rejectWithReason(reviewId);
			case "show":
				return e.uri ? this.reveal(e, true) : this.ask({ ...e, asked: false });
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
		else await this.ask({ ...e, asked: false });
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
		reg("agentd.review.undoHunk", (...a: HunkArgs) => {
			const { e, hunkId } = this.hunkArgs(a);
			if (!e || !hunkId || e.busy) return;
			e.states.set(hunkId, "pending");
			this.update();
			this.renderAll();
		});
		const id = (a: unknown) => (a && typeof a === "object" ? (a as { reviewId?: string }).reviewId : (a as string | undefined));
		reg("agentd.review.acceptFile", (a?: unknown) => this.acceptFile(id(a)));
		reg("agentd.review.rejectFile", (a?: unknown) => this.rejectFile(id(a)));
		reg("agentd.review.rejectWithReason", (a?: unknown) => this.rejectWithReason(id(a)));
		reg("agentd.review.acceptForSession", (a?: unknown) => this.acceptForSession(id(a)));
		reg("agentd.review.cancelTurn", (a?: unknown) => this.cancelTurn(id(a)));
		reg("agentd.review.showDiff", (a?: unknown) => this.showDiff(id(a)));
		reg("agentd.review.next", () => this.next());
		reg("agentd.review.nextHunk", () => this.jumpHunk(1));
		reg("agentd.review.previousHunk", () => this.jumpHunk(-1));
		reg("agentd.review.acceptAllFiles", async () => {
			for (const e of [...this.entries.values()]) if (e.uri) await this.decide(e, { type: "accept" });
		});
	}

	// ---- the "Pending reviews" tree ----

	private treeProvider(): vscode.TreeDataProvider<TreeNode> {
		return {
			onDidChangeTreeData: this.treeEmitter.event,
			getChildren: (node?: TreeNode): TreeNode[] => {
				if (!node) return [...this.entries.values()].map((e) => ({ reviewId: e.params.reviewId }));
				const e = this.entries.get(node.reviewId);
				if (!e?.params.file || node.hunkId) return [];
				return e.params.file.hunks.map((h) => ({ reviewId: node.reviewId, hunkId: h.id }));
			},
			getTreeItem: (node: TreeNode): vscode.TreeItem => {
				const e = this.entries.get(node.reviewId);
				if (!e) return new vscode.TreeItem("(resolved)");
				const p = e.params;
				if (!node.hunkId) {
					const file = p.file;
					const item = new vscode.TreeItem(file ? file.path : p.command ? commandLine(p.command.argv) : p.label, file && file.hunks.length > 1 ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.None);
					item.id = p.reviewId;
					item.description = file ? `${this.pendingCount(e)}/${file.hunks.length} hunks pending` : p.kind;
					item.tooltip = `${p.label}\n${p.why}`;
					item.iconPath = new vscode.ThemeIcon(file ? (file.created ? "new-file" : file.deleted ? "trash" : "diff") : p.kind === "command" ? "terminal" : "shield");
					item.contextValue = file ? "agentdEditReview" : "agentdToolReview";
					item.command = file
						? { title: "Show", command: "agentd.review.reveal", arguments: [p.reviewId] }
						: { title: "Answer", command: "agentd.review.ask", arguments: [p.reviewId] };
					if (file && e.uri) item.resourceUri = e.uri;
					return item;
				}
				const h = p.file!.hunks.find((x) => x.id === node.hunkId)!;
				const st = e.states.get(h.id) ?? "pending";
				const item = new vscode.TreeItem(`@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`);
				item.id = `${p.reviewId}/${h.id}`;
				item.description = st === "pending" ? `+${h.added.length} −${h.removed.length}` : st;
				item.tooltip = [...h.removed.map((l) => "- " + l), ...h.added.map((l) => "+ " + l)].join("\n");
				item.iconPath = new vscode.ThemeIcon(st === "accepted" ? "check" : st === "rejected" ? "close" : "circle-outline");
				item.contextValue = st === "pending" ? "agentdHunk" : "agentdHunkDecided";
				item.command = { title: "Go to hunk", command: "agentd.review.revealHunk", arguments: [p.reviewId, h.id] };
				return item;
			},
		};
	}

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
					return e ? this.ask({ ...e, asked: false }) : undefined;
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
		for (const d of this.disposables) d.dispose();
		this.lensEmitter.dispose();
		this.treeEmitter.dispose();
		this.proposedEmitter.dispose();
		this._onDidChange.dispose();
		this._onLink.dispose();
	}
}

interface TreeNode {
	reviewId: string;
	hunkId?: string;
}

function where(rel: string): string {
	return rel === "." ? "the workspace folder" : rel;
}

function scopeLabel(s: GrantScope): string {
	if (s.kind === "command") return `commands starting with \`${(s.commandPrefix ?? []).join(" ")}\``;
	if (s.kind === "path") return `edits under ${s.pathPrefix}`;
	return `all ${s.tool} calls`;
}

function escapeMd(s: string): string {
	return s.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, "\\$&");
}

function longestRun(s: string, ch: string): number {
	let best = 0;
	let cur = 0;
	for (const c of s) {
		cur = c === ch ? cur + 1 : 0;
		best = Math.max(best, cur);
	}
	return best;
}
