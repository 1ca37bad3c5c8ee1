// The chat webview view in the agentd side bar. The extension host owns the state
// (session.ts + chat/model.ts); the webview receives a snapshot once and then batches of changes,
// at most one message per ~16 ms, with consecutive text deltas merged (coalesceChanges).

import * as vscode from "vscode";
import type { SessionController, SessionViewState } from "../session";
import type { ReviewManager } from "../review/manager";
import { coalesceChanges, type ChatChange } from "./model";
import type { FromWebview, ToWebview } from "../webview/messages";
import type { MentionResolver } from "../mentionsHost";

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
	static readonly viewId = "agentd.chat";
	private view: vscode.WebviewView | undefined;
	private queue: ChatChange[] = [];
	private flushTimer: NodeJS.Timeout | undefined;
	private ready = false;
	private readonly disposables: vscode.Disposable[] = [];
	/** Resolvers of pending webview perf queries (benchmarks). */
	private perfWaiters: ((v: unknown) => void)[] = [];

	constructor(
		private readonly extensionUri: vscode.Uri,
		private readonly session: SessionController,
		private readonly reviews: ReviewManager,
		private readonly log: vscode.LogOutputChannel,
		private readonly mentions: MentionResolver,
	) {
		this.disposables.push(
			session.onChanges((c) => this.enqueue(c)),
			session.onDidChangeState((s) => this.post({ type: "state", state: s })),
		);
	}

	resolveWebviewView(view: vscode.WebviewView): void {
		this.view = view;
		this.ready = false;
		const media = vscode.Uri.joinPath(this.extensionUri, "media");
		const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
		view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
		view.webview.html = this.html(view.webview);
		this.disposables.push(
			view.webview.onDidReceiveMessage((m: FromWebview) => void this.onMessage(m)),
			view.onDidDispose(() => {
				if (this.view === view) this.view = undefined;
			}),
		);
	}

	get visible(): boolean {
		return !!this.view?.visible;
	}

	async reveal(focusInput: boolean): Promise<void> {
		await vscode.commands.executeCommand(`${ChatViewProvider.viewId}.focus`);
		if (focusInput) this.post({ type: "focusInput" });
	}

	prefill(text: string): void {
		this.post({ type: "prefill", text });
	}

	/** Asks the webview for its performance counters (benchmarks). */
	perf(): Promise<unknown> {
		return new Promise((resolve) => {
			this.perfWaiters.push(resolve);
			this.post({ type: "perf" });
			setTimeout(() => resolve(undefined), 3000);
		});
	}

	resetPerf(): void {
		this.post({ type: "perfReset" });
	}

	private enqueue(changes: ChatChange[]): void {
		for (const c of changes) this.queue.push(c);
		if (!this.flushTimer) this.flushTimer = setTimeout(() => this.flush(), 16);
	}

	private flush(): void {
		this.flushTimer = undefined;
		if (!this.ready || !this.view) return; // the snapshot on "ready" covers what is queued
		const ops = coalesceChanges(this.queue);
		this.queue = [];
		if (ops.length) this.post({ type: "changes", changes: ops });
	}

	private post(m: ToWebview): void {
		if (!this.view || (!this.ready && m.type !== "snapshot")) return;
		void this.view.webview.postMessage(m);
	}

	private sendSnapshot(): void {
		this.queue = [];
		this.post({ type: "snapshot", items: this.session.items, state: this.session.viewState(), history: this.session.promptHistory });
	}

	private async onMessage(m: FromWebview): Promise<void> {
		switch (m.type) {
			case "ready":
				this.ready = true;
				this.sendSnapshot();
				break;
			case "send":
				await this.session.send(m.text, m.includeActiveFile);
				break;
			case "stop":
				await this.session.cancel();
				break;
			case "mentionQuery": {
				let items: Awaited<ReturnType<MentionResolver["complete"]>> = [];
				try {
					items = await this.mentions.complete(m.query);
				} catch (err) {
					this.log.warn(`mention completion: ${String(err)}`);
				}
				this.post({ type: "mentionItems", seq: m.seq, items });
				break;
			}
			case "mentionPick":
				this.mentions.pick(m.token, m.id);
				break;
			case "newSession":
				await this.session.newSession();
				break;
			case "pickSession":
				await this.session.pickSession();
				break;
			case "pickModel":
				await this.session.pickModel();
				break;
			case "pickMode":
				await this.session.pickMode();
				break;
			case "revert":
				await this.session.revert(m.turnId);
				break;
			case "removeContext":
				this.session.removeContext(m.id);
				break;
			case "toggleActiveFile":
				this.session.toggleActiveFile(m.on);
				break;
			case "review":
				await this.reviews.answerFromChat(m.reviewId, m.action);
				break;
			case "nextReview":
				await this.reviews.next();
				break;
			case "copy":
				await vscode.env.clipboard.writeText(m.text);
				void vscode.window.setStatusBarMessage("Copied", 1500);
				break;
			case "openLink":
				await openLink(m.href);
				break;
			case "restart":
				await vscode.commands.executeCommand("agentd.restart");
				break;
			case "showLog":
				this.log.show(true);
				break;
			case "openSettings":
				await vscode.commands.executeCommand("workbench.action.openSettings", "@ext:agentd.agentd");
				break;
			case "perf":
				for (const w of this.perfWaiters.splice(0)) w(m.data);
				break;
			case "error":
				this.log.error(`chat view: ${m.message}`);
				break;
		}
	}

	private html(webview: vscode.Webview): string {
		const nonce = makeNonce();
		const css = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", "chat.css"));
		const js = webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "dist", "webview.js"));
		const csp = [
			"default-src 'none'",
			`style-src ${webview.cspSource}`,
			`font-src ${webview.cspSource}`,
			`img-src ${webview.cspSource} data:`,
			`script-src 'nonce-${nonce}'`,
		].join("; ");
		return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${css}">
<title>agentd</title>
</head>
<body>
<div id="app">
  <header id="bar">
    <button id="session" class="pill" title="Sessions: resume or start one"><span class="ico">☰</span><span id="session-title">New session</span></button>
    <button id="model" class="pill" title="Model for new sessions"></button>
    <button id="mode" class="pill" title="Approval mode"></button>
    <button id="new" class="icon" title="New session">+</button>
  </header>
  <div id="conn" hidden></div>
  <main id="log" tabindex="-1" aria-live="polite">
    <div id="older" hidden><button id="load-older">Show earlier messages</button></div>
    <div id="items"></div>
    <div id="empty">
      <h2>agentd</h2>
      <p>Ask about your code, or ask for a change. Proposed edits appear in the editor as inline diffs: accept or reject each hunk there.</p>
      <p class="hint">Enter sends · Shift+Enter for a new line · Esc stops a running turn · @ mentions a file, a folder, <code>@open</code> files or a <code>@#symbol</code></p>
    </div>
  </main>
  <div id="reviews" hidden><button id="reviews-btn"></button></div>
  <footer id="composer">
    <div id="chips"></div>
    <div id="mentions" role="listbox" aria-label="Mentions" hidden></div>
    <div class="input-row">
      <textarea id="input" rows="1" placeholder="Ask agentd… (@ to mention a file, folder or symbol)" aria-label="Prompt" aria-autocomplete="list" aria-controls="mentions"></textarea>
      <button id="send" class="primary" title="Send (Enter)">Send</button>
      <button id="stop" class="danger" title="Stop the turn (Esc)" hidden>Stop</button>
    </div>
    <div id="status"><span id="activity"></span><span id="usage"></span></div>
  </footer>
</div>
<script nonce="${nonce}" src="${js}"></script>
</body>
</html>`;
	}

	dispose(): void {
		clearTimeout(this.flushTimer);
		for (const d of this.disposables) d.dispose();
	}
}

export type { SessionViewState };

function makeNonce(): string {
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	let s = "";
	for (let i = 0; i < 32; i++) s += chars[Math.floor(Math.random() * chars.length)];
	return s;
}

async function openLink(href: string): Promise<void> {
	if (/^https?:\/\//i.test(href)) {
		await vscode.env.openExternal(vscode.Uri.parse(href));
		return;
	}
	let uri: vscode.Uri | undefined;
	let line: number | undefined;
	if (/^file:\/\//i.test(href)) uri = vscode.Uri.parse(href);
	else {
		const m = /^(.*?)(?::(\d+)(?::\d+)?|#L(\d+))?$/.exec(href);
		const rel = m?.[1] ?? href;
		line = m?.[2] ? Number(m[2]) : m?.[3] ? Number(m[3]) : undefined;
		const folder = vscode.workspace.workspaceFolders?.[0];
		if (folder) uri = vscode.Uri.joinPath(folder.uri, rel);
	}
	if (!uri) return;
	try {
		const doc = await vscode.workspace.openTextDocument(uri);
		const ed = await vscode.window.showTextDocument(doc, { preview: true });
		if (line) {
			const pos = new vscode.Position(Math.max(0, line - 1), 0);
			ed.selection = new vscode.Selection(pos, pos);
			ed.revealRange(new vscode.Range(pos, pos), vscode.TextEditorRevealType.InCenter);
		}
	} catch {
		void vscode.window.showWarningMessage(`agentd: cannot open ${href}`);
	}
}
