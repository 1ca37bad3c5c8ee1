// agentd for VS Code: renders and forwards. The daemon does the work (see docs/protocol.md).
import { MentionResolver } from "./mentionsHost";
import { unsupportedPlatform } from "./platform";
import { activateUnsupported } from "./unsupported";
import * as fs from "node:fs";
import * as vscode from "vscode";
import { ChatViewProvider } from "./chat/view";
import { RESTART_SETTINGS } from "./config";
import { bundledDaemon } from "./daemon/args";
import { DaemonClient } from "./daemon/client";
import { registerDiagnostics } from "./diagnostics";
import { McpProposals } from "./mcp";
import { InlineCompletion } from "./completion";
import { ChangesView } from "./review/changes";
import { ReviewManager } from "./review/manager";
import { waitingChanges } from "./review/waiting";
import { SessionController } from "./session";
import { rewind } from "./rewind";
import { StatusBar } from "./status";
import { activateTestMode, registerCommand, watchLog } from "./testmode";

const loadedAt = Date.now();
let daemonRef: DaemonClient | undefined;

export interface Stats {
	/** Wall clock (ms since the epoch) when the module was loaded, activate() returned, the daemon connected. */
	loadedAt: number;
	activatedAt: number;
	connectedAt?: number;
	activationMs: number;
	loadToActivatedMs: number;
	daemonStartMs?: number;
	reviews: { reviewId: string; receivedAt: number; renderedAt?: number }[];
	/** The reviews waiting for a decision (ids and file paths). */
	pending: { reviewId: string; path?: string; busy: boolean }[];
	/** The running reply's changes the Pending Reviews view lists as waiting for an earlier one. */
	waiting: { callId: string; label: string; waitsFor: string }[];
	connection: string;
	sessionId?: string;
	items: number;
	/** The Changes view: refreshes done, turns listed at the last one, undos sent. */
	changes: { refreshes: number; turns: number; undos: number };
}

export function activate(context: vscode.ExtensionContext) {
	const unsupported = unsupportedPlatform(process.platform);
	if (unsupported) {
		activateUnsupported(context, unsupported);
		return;
	}
	const t0 = Date.now();
	const version = (context.extension.packageJSON as { version?: string }).version ?? "0.0.0";
	const channel = vscode.window.createOutputChannel("agentd", { log: true });
	// In the end-to-end tests, errors logged here also go to the harness (testmode.ts).
	const log = watchLog(channel);
	const trace = vscode.window.createOutputChannel("agentd (protocol trace)");
	const daemon = new DaemonClient(log, trace, version);
	daemonRef = daemon;
	daemon.bundledPath = bundledDaemon(context.extensionPath);
	const mentions = new MentionResolver(log);
	const session = new SessionController(daemon, context.workspaceState, log, mentions);
	const reviews = new ReviewManager(daemon, log);
	const mcpProposals = new McpProposals(daemon, log);
	// Hunks decided in one window show as decided in the others on the same review.
	const chat = new ChatViewProvider(context.extensionUri, session, reviews, log, mentions);
	const changes = new ChangesView(daemon, session, log);
	const status = new StatusBar(session);

	context.subscriptions.push(
		mentions,
		channel,
		trace,
		daemon,
		session,
		reviews,
		changes,
		chat,
		status,
		vscode.window.registerWebviewViewProvider(ChatViewProvider.viewId, chat, { webviewOptions: { retainContextWhenHidden: true } }),
		reviews.onDidChange(() => {
			session.setPendingReviewCount(reviews.count);
			daemon.setWaiting(reviews.count > 0);
		}),
		reviews.onLink((l) => session.linkReview(l.callId, l.reviewId, l.kind, l.why, l.mcpArgs)),
		session.onPendingReviews((ps) => reviews.addMany(ps)),
		// The reply's changes that wait for an earlier one are listed beside the reviews.
		session.onChanges((cs) => {
			if (cs.some((c) => c.op === "reset" || c.op === "remove" || ((c.op === "add" || c.op === "set") && (c.item.kind === "tool" || c.item.kind === "turnEnd")))) reviews.setWaiting(waitingChanges(session.chatState));
		}),
		session.onSessionChanged((id) => reviews.retainSession(id)),
		// A session started (or resumed) in a workspace that proposes MCP servers: offer them.
		session.onSessionChanged((id) => {
			if (id) void mcpProposals.sessionStarted(session.workspaceFolderUri);
		}),
	);

	context.subscriptions.push(registerDiagnostics(daemon));
	const completion = new InlineCompletion(daemon, log);
	context.subscriptions.push(completion);
	activateTestMode(context, log);
	const cmd = (id: string, fn: (...args: any[]) => unknown) => context.subscriptions.push(registerCommand(id, fn, log));
	cmd("agentd.focusChat", () => chat.reveal(true));
	cmd("agentd.newSession", async () => {
		await session.newSession();
		await chat.reveal(true);
	});
	cmd("agentd.pickSession", () => session.pickSession());
	cmd("agentd.pickModel", () => session.pickModel());
	cmd("agentd.pickMode", () => session.pickMode());
	cmd("agentd.stop", () => session.cancel());
	cmd("agentd.revertLastTurn", () => session.revert());
	cmd("agentd.rewind", (turnId?: string) => rewind({ daemon, session, chat }, typeof turnId === "string" ? turnId : undefined));
	cmd("agentd.manageGrants", () => session.manageGrants());
	cmd("agentd.approveMcpServers", () => mcpProposals.approveCommand());
	cmd("agentd.restart", () => daemon.restart());
	cmd("agentd.toggleCompletion", () => completion.toggle());
	cmd("agentd.toggleCompletionForLanguage", () => completion.toggleLanguage());
	cmd("agentd.showLog", () => log.show(true));
	cmd("agentd.askAboutSelection", async (prompt?: string) => {
		const ed = vscode.window.activeTextEditor;
		if (!ed) {
			void vscode.window.showInformationMessage("agentd: open a file and select the code to ask about.");
			return;
		}
		session.addSelection(ed);
		if (typeof prompt === "string" && prompt.trim()) {
			await session.send(prompt);
			await chat.reveal(false);
			return;
		}
		await chat.reveal(true);
	});
	cmd("agentd.send", async (text: string) => {
		if (typeof text === "string") await session.send(text);
	});
	// For the end-to-end tests and benchmarks: numbers, ids and file paths, no file content.
	const stats = (): Stats => ({
		loadedAt,
		activatedAt,
		connectedAt: daemon.connectedAt,
		activationMs,
		loadToActivatedMs,
		daemonStartMs: daemon.lastStartMs,
		reviews: reviews.timings.slice(),
		pending: reviews.pendingSummary(),
		waiting: reviews.waitingSummary(),
		connection: daemon.connectionState.kind,
		sessionId: session.sessionId,
		items: session.chatState.items.length,
		changes: { ...changes.stats },
	});
	cmd("agentd._stats", async (): Promise<Stats> => stats());
	// The end-to-end tests read the numbers from a file (AGENTD_VSCODE_STATS), as they cannot
	// run hidden commands through the UI.
	const statsFile = process.env.AGENTD_VSCODE_STATS;
	if (statsFile) {
		let last = "";
		const timer = setInterval(() => {
			const s = JSON.stringify(stats());
			if (s === last) return;
			last = s;
			fs.writeFile(statsFile, s, () => undefined);
		}, 100);
		context.subscriptions.push({ dispose: () => clearInterval(timer) });
	}
	cmd("agentd._webviewPerf", () => chat.perf());
	cmd("agentd._webviewPerfReset", () => chat.resetPerf());

	context.subscriptions.push(
		vscode.workspace.onDidChangeConfiguration(async (e) => {
			if (!RESTART_SETTINGS.some((s) => e.affectsConfiguration(s))) return;
			const choice = await vscode.window.showInformationMessage("agentd: the new settings apply after a reconnect.", "Reconnect");
			if (choice) await daemon.restart();
		}),
	);

	void daemon.start();
	const activatedAt = Date.now();
	const activationMs = activatedAt - t0;
	const loadToActivatedMs = Date.now() - loadedAt;
	log.info(`activated in ${activationMs} ms`);
}

/** Stops the daemon connection (a shared daemon keeps running; its sessions live on). */
export function deactivate(): Thenable<void> | undefined {
	return daemonRef?.stop();
}
