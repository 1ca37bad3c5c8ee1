// "agentd: Changes": a turn's changes after the fact (docs/protocol.md, turn/list, turn/changes,
// turn/undo). A tree of the session's turns that changed files (newest first) → their files → the
// hunks; opening a file shows its diff against the turn's checkpoint (a read-only virtual document
// of the pre-image on the left, the file on the right); undo a whole turn, a file or a hunk. Files
// changed since the turn are shown as such, and what an undo skipped is shown with the reason.
// Refreshed when a call of the running turn changed files (TurnChangeWatch: a completed edit or
// command, a command that asks about its hooks after applying the rest), when a turn of the
// session ends, when the session changes, and by hand.

import * as fs from "node:fs/promises";
import * as vscode from "vscode";
import { errorCode, errorMessage, sameUri, type DaemonClient } from "../daemon/client";
import { Method, type TurnChangesResult, type TurnChange, type TurnHunk, type TurnSummary } from "../protocol";
import { registerCommand, showError } from "../testmode";
import { diffStats, preImage, turnLabel, TurnChangeWatch, undoSummary } from "./turnmodel";

export const TURN_SCHEME = "agentd-turn";
const METHOD_NOT_FOUND = -32601;

type Node =
	| { kind: "turn"; turn: TurnSummary }
	| { kind: "file"; turnId: string; file: TurnChange }
	| { kind: "hunk"; turnId: string; file: TurnChange; hunk: TurnHunk; index: number }
	| { kind: "info"; text: string; detail?: string; icon?: string };

export interface SessionSource {
	readonly sessionId: string | undefined;
	readonly onSessionChanged: vscode.Event<string | undefined>;
	/** Every change of the turn was undone here: the chat no longer offers to revert it. */
	markTurnReverted(turnId: string, summary: string): void;
}

export class ChangesView implements vscode.Disposable {
	private readonly disposables: vscode.Disposable[] = [];
	private readonly emitter = new vscode.EventEmitter<Node | undefined>();
	private readonly docEmitter = new vscode.EventEmitter<vscode.Uri>();
	private turns: TurnSummary[] | undefined;
	private listError: string | undefined;
	private readonly changes = new Map<string, Promise<TurnChangesResult>>();
	/** What the last undo of a turn skipped: turnId → path → reason. */
	private readonly skipped = new Map<string, Map<string, string>>();
	private generation = 0;
	private readonly watch = new TurnChangeWatch();
	private readonly _onDidRefresh = new vscode.EventEmitter<number>();
	/** Fires after each refresh with the number of turns listed (the end-to-end tests read it). */
	readonly onDidRefresh = this._onDidRefresh.event;
	readonly stats = { refreshes: 0, turns: 0, undos: 0 };

	constructor(
		private readonly daemon: DaemonClient,
		private readonly session: SessionSource,
		private readonly log: vscode.LogOutputChannel,
	) {
		const view = vscode.window.createTreeView("agentd.changes", { treeDataProvider: this.provider(), showCollapseAll: true });
		this.disposables.push(
			view,
			vscode.workspace.registerTextDocumentContentProvider(TURN_SCHEME, {
				onDidChange: this.docEmitter.event,
				provideTextDocumentContent: (uri) => this.content(uri),
			}),
			session.onSessionChanged(() => this.refresh()),
			daemon.onDidStart(() => this.refresh()),
			daemon.onUpdate((p) => {
				if (p.sessionId !== this.session.sessionId) return;
				// A call of the running turn applied files: listed now, not only at the turn's end.
				if (this.watch.update(p.update.type, p.update.toolCall)) this.refresh();
			}),
		);
		const reg = (id: string, fn: (...a: any[]) => unknown) => this.disposables.push(registerCommand(id, fn, log));
		reg("agentd.changes.refresh", () => this.refresh());
		reg("agentd.showChanges", async () => {
			this.refresh();
			await vscode.commands.executeCommand("agentd.changes.focus");
		});
		reg("agentd.changes.open", (n?: Node) => this.open(n));
		reg("agentd.changes.undoTurn", (n?: Node) => this.undo(n, "turn"));
		reg("agentd.changes.undoFile", (n?: Node) => this.undo(n, "file"));
		reg("agentd.changes.undoHunk", (n?: Node) => this.undo(n, "hunk"));
	}

	refresh(): void {
		this.generation++;
		this.turns = undefined;
		this.listError = undefined;
		this.changes.clear();
		this.emitter.fire(undefined);
	}

	// ---- the tree ----

	private provider(): vscode.TreeDataProvider<Node> {
		return {
			onDidChangeTreeData: this.emitter.event,
			getChildren: (n?: Node) => this.children(n),
			getTreeItem: (n: Node) => this.item(n),
		};
	}

	private async children(n?: Node): Promise<Node[]> {
		const sessionId = this.session.sessionId;
		if (!n) {
			if (!sessionId) return [{ kind: "info", text: "No session yet", detail: "Start a session in the chat; the turns that change files are listed here." }];
			if (!this.daemon.running) return [{ kind: "info", text: "agentd is not connected" }];
			const gen = this.generation;
			if (!this.turns && !this.listError) {
				try {
					const r = await this.daemon.request(Method.TurnList, { sessionId });
					if (gen !== this.generation) return [];
					this.turns = r.turns ?? [];
				} catch (err) {
					if (gen !== this.generation) return [];
					this.listError = errorCode(err) === METHOD_NOT_FOUND ? "This agentd does not list a turn's changes (turn/list): update agentd." : `turn/list failed: ${errorMessage(err)}`;
					this.log.warn(this.listError);
				}
				this.stats.refreshes++;
				this.stats.turns = this.turns?.length ?? 0;
				this._onDidRefresh.fire(this.stats.turns);
			}
			if (this.listError) return [{ kind: "info", text: this.listError, icon: "warning" }];
			if (!this.turns!.length) return [{ kind: "info", text: "No turn has changed files in this session yet." }];
			return this.turns!.map((turn) => ({ kind: "turn", turn }));
		}
		if (n.kind === "turn") {
			if (!sessionId) return [];
			try {
				const r = await this.changesOf(sessionId, n.turn.turnId);
				return r.files.map((file) => ({ kind: "file", turnId: n.turn.turnId, file }));
			} catch (err) {
				return [{ kind: "info", text: `turn/changes failed: ${errorMessage(err)}`, icon: "warning" }];
			}
		}
		if (n.kind === "file") return n.file.hunks.map((hunk, index) => ({ kind: "hunk", turnId: n.turnId, file: n.file, hunk, index }));
		return [];
	}

	private changesOf(sessionId: string, turnId: string): Promise<TurnChangesResult> {
		let p = this.changes.get(turnId);
		if (!p) {
			p = this.daemon.request(Method.TurnChanges, { sessionId, turnId });
			this.changes.set(turnId, p);
			p.catch(() => this.changes.delete(turnId));
		}
		return p;
	}

	private item(n: Node): vscode.TreeItem {
		switch (n.kind) {
			case "info": {
				const it = new vscode.TreeItem(n.text);
				it.tooltip = n.detail ?? n.text;
				if (n.icon) it.iconPath = new vscode.ThemeIcon(n.icon);
				it.contextValue = "agentdChangesInfo";
				return it;
			}
			case "turn": {
				const t = n.turn;
				const it = new vscode.TreeItem(turnLabel(t), t.reverted ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.Expanded);
				it.id = `turn/${t.turnId}`;
				it.description = `${t.files} file${t.files === 1 ? "" : "s"}${t.reverted ? " · reverted" : ""} · ${when(t.createdAt)}`;
				it.tooltip = `${t.prompt}\n\nTurn ${t.turnId}, ${t.createdAt}${t.reverted ? "\nAlready reverted." : ""}`;
				it.iconPath = new vscode.ThemeIcon(t.reverted ? "discard" : "history");
				it.contextValue = t.reverted ? "agentdTurnReverted" : "agentdTurn";
				return it;
			}
			case "file": {
				const f = n.file;
				const it = new vscode.TreeItem(f.path, f.hunks.length > 1 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
				it.id = `turn/${n.turnId}/${f.path}`;
				const skipped = this.skipped.get(n.turnId)?.get(f.path);
				let s = { added: 0, removed: 0 };
				try {
					s = diffStats(f.diff);
				} catch {
					// shown as +0 −0; opening the file says what is wrong
				}
				const parts = [f.status, `+${s.added} −${s.removed}`];
				if (f.changedSince) parts.push(f.reason ? `undo skips it: ${f.reason}` : "changed since — undo skips it");
				if (skipped) parts.push(`skipped: ${skipped}`);
				it.description = parts.join(" · ");
				it.tooltip = `${f.path} (${f.status})${f.changedSince ? "\nYou changed this file after the turn: the diff is against its current content, and undo skips it." : ""}${skipped ? `\nThe last undo skipped it: ${skipped}` : ""}`;
				it.iconPath = new vscode.ThemeIcon(skipped || f.changedSince ? "warning" : f.status === "created" ? "new-file" : f.status === "deleted" ? "trash" : "diff");
				it.resourceUri = vscode.Uri.parse(f.uri);
				it.contextValue = f.changedSince ? "agentdTurnChanged" : "agentdTurnFile";
				it.command = { title: "Open the turn's diff", command: "agentd.changes.open", arguments: [n] };
				return it;
			}
			case "hunk": {
				const h = n.hunk;
				const it = new vscode.TreeItem(h.header || `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`);
				it.id = `turn/${n.turnId}/${n.file.path}/${h.id}`;
				it.description = `hunk ${n.index + 1}/${n.file.hunks.length}`;
				it.iconPath = new vscode.ThemeIcon("git-commit");
				it.contextValue = n.file.changedSince ? "agentdTurnHunkChanged" : "agentdTurnHunk";
				it.command = { title: "Go to the hunk", command: "agentd.changes.open", arguments: [n] };
				return it;
			}
		}
	}

	// ---- the diff ----

	private preUri(turnId: string, f: TurnChange, side: "pre" | "post"): vscode.Uri {
		return vscode.Uri.from({ scheme: TURN_SCHEME, path: "/" + f.path, query: new URLSearchParams({ turn: turnId, side }).toString() });
	}

	private async content(uri: vscode.Uri): Promise<string> {
		const q = new URLSearchParams(uri.query);
		const turnId = q.get("turn") ?? "";
		const sessionId = this.session.sessionId;
		if (!sessionId) return "";
		const path = uri.path.replace(/^\//, "");
		const r = await this.changesOf(sessionId, turnId);
		const f = r.files.find((x) => x.path === path);
		if (!f) return "";
		if (q.get("side") === "post" || f.status === "created") return "";
		const current = f.status === "deleted" ? "" : await this.currentText(vscode.Uri.parse(f.uri));
		try {
			return preImage(current, f.diff);
		} catch (err) {
			return `agentd: the file's content does not match the turn's diff (${errorMessage(err)}); refresh the Changes view.\n`;
		}
	}

	private async currentText(uri: vscode.Uri): Promise<string> {
		const doc = vscode.workspace.textDocuments.find((d) => sameUri(d.uri, uri));
		if (doc) return doc.getText();
		try {
			return await fs.readFile(uri.fsPath, "utf8");
		} catch {
			return "";
		}
	}

	async open(n?: Node): Promise<void> {
		if (!n || (n.kind !== "file" && n.kind !== "hunk")) return;
		const f = n.file;
		const left = this.preUri(n.turnId, f, "pre");
		const right = f.status === "deleted" ? this.preUri(n.turnId, f, "post") : vscode.Uri.parse(f.uri);
		this.docEmitter.fire(left);
		const turn = this.turns?.find((t) => t.turnId === n.turnId);
		const title = `${f.path} (before “${truncate(turn ? turnLabel(turn) : n.turnId, 40)}”) ↔ ${f.status === "deleted" ? "deleted" : "now"}`;
		const opts: vscode.TextDocumentShowOptions = { preview: true };
		if (n.kind === "hunk") {
			const line = Math.max(0, n.hunk.newStart - 1);
			opts.selection = new vscode.Range(line, 0, line, 0);
		}
		await vscode.commands.executeCommand("vscode.diff", left, right, title, opts);
	}

	// ---- undo ----

	private async undo(n: Node | undefined, what: "turn" | "file" | "hunk"): Promise<void> {
		const sessionId = this.session.sessionId;
		if (!n || !sessionId) return;
		let turnId: string;
		const params: { sessionId: string; turnId: string; files?: string[]; hunks?: Record<string, string[]> } = { sessionId, turnId: "" };
		if (what === "turn" && n.kind === "turn") {
			turnId = n.turn.turnId;
			const ok = await vscode.window.showWarningMessage(
				`Undo every change of “${truncate(turnLabel(n.turn), 60)}” (${n.turn.files} file${n.turn.files === 1 ? "" : "s"})?`,
				{ modal: true, detail: "Files you changed since the turn are skipped." },
				"Undo the turn",
			);
			if (!ok) return;
		} else if (what === "file" && n.kind === "file") {
			turnId = n.turnId;
			params.files = [n.file.uri];
		} else if (what === "hunk" && n.kind === "hunk") {
			turnId = n.turnId;
			params.hunks = { [n.file.uri]: [n.hunk.id] };
		} else return;
		params.turnId = turnId;
		try {
			const r = await this.daemon.request(Method.TurnUndo, params);
			this.stats.undos++;
			const skipped = new Map(this.skipped.get(turnId) ?? []);
			for (const p of r.undone) skipped.delete(p);
			for (const s of r.skipped) skipped.set(s.path, s.reason);
			this.skipped.set(turnId, skipped);
			const msg = `agentd: ${undoSummary(r)}.`;
			this.log.info(`turn/undo ${turnId} ${JSON.stringify({ files: params.files, hunks: params.hunks })}: ${msg}`);
			// Every change of the turn undone: the chat's "Revert this turn" has nothing left to do.
			const turns = await this.daemon.request(Method.TurnList, { sessionId }).catch(() => undefined);
			if (turns?.turns.find((t) => t.turnId === turnId)?.reverted) this.session.markTurnReverted(turnId, `Undone from the Changes view: ${undoSummary(r)}`);
			if (r.skipped.length) void vscode.window.showWarningMessage(msg);
			else void vscode.window.showInformationMessage(msg);
		} catch (err) {
			showError(`agentd: undo failed: ${errorMessage(err)}`);
		}
		this.refresh();
	}

	dispose(): void {
		for (const d of this.disposables) d.dispose();
		this.emitter.dispose();
		this.docEmitter.dispose();
		this._onDidRefresh.dispose();
	}
}

function truncate(s: string, n: number): string {
	return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

function when(iso: string): string {
	const d = new Date(iso);
	if (Number.isNaN(d.getTime())) return iso;
	return d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit" });
}
