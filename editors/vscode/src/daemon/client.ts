// The connection to agentd: a vscode-languageclient LanguageClient over the daemon's stdio
// (`agentd connect`, falling back to `agentd serve --stdio`), restarted with a capped back-off.
// It forwards agentd's notifications as events and answers document/save. workspace/applyEdit and
// $/progress (with cancel) are handled by vscode-languageclient itself.

import { spawn, type ChildProcess } from "node:child_process";
import * as vscode from "vscode";
import {
	CloseAction,
	ErrorAction,
	LanguageClient,
	RevealOutputChannelOn,
	State,
	type LanguageClientOptions,
	type ServerOptions,
} from "vscode-languageclient/node";
import { readConfig } from "../config";
import {
	Method,
	PROTOCOL_VERSION,
	type DaemonStatusResult,
	type DocumentSaveParams,
	type DocumentSaveResult,
	type InitializationOptions,
	type RequestTypes,
	type ReviewRequestedParams,
	type ReviewResolvedParams,
	type ReviewHunkStatesParams,
	type ServerInfo,
	type SessionUpdateParams,
} from "../protocol";
import { backoffDelay, daemonCommand, FALLBACK_ARGS, MAX_RESTARTS, missingBinaryMessage, resolveExecutable, serverArgs, STABLE_MS } from "./args";

export type ConnectionState =
	| { kind: "starting" }
	| { kind: "running"; info?: ServerInfo; status?: DaemonStatusResult }
	| { kind: "waiting"; retryAt: number; message: string }
	| { kind: "failed"; message: string; fix?: string }
	| { kind: "stopped" };

export const CLIENT_NAME = "agentd-vscode";
export const WAITING_MESSAGE = "Waiting for your review";

export class DaemonClient implements vscode.Disposable {
	private client: LanguageClient | undefined;
	private state: ConnectionState = { kind: "stopped" };
	private attempt = 0;
	private startedAt = 0;
	private retryTimer: NodeJS.Timeout | undefined;
	private disposed = false;
	private stopping = false;
	private useFallback = false;
	private generation = 0;

	private readonly _onState = new vscode.EventEmitter<ConnectionState>();
	readonly onDidChangeState = this._onState.event;
	private readonly _onStart = new vscode.EventEmitter<void>();
	/** Fires after every successful (re)start: re-attach sessions here. */
	readonly onDidStart = this._onStart.event;
	private readonly _onUpdate = new vscode.EventEmitter<SessionUpdateParams>();
	readonly onUpdate = this._onUpdate.event;
	private readonly _onReviewRequested = new vscode.EventEmitter<ReviewRequestedParams>();
	readonly onReviewRequested = this._onReviewRequested.event;
	private readonly _onReviewResolved = new vscode.EventEmitter<ReviewResolvedParams>();
	readonly onReviewResolved = this._onReviewResolved.event;
	private readonly _onReviewHunkStates = new vscode.EventEmitter<ReviewHunkStatesParams>();
	/** Another editor of the session changed a pending review's per-hunk decisions. */
	readonly onReviewHunkStates = this._onReviewHunkStates.event;

	/** The daemon's work-done progress (a running turn), by token: the message it last reported. */
	private readonly progress = new Map<string, { next: () => void; params: { kind: string; message?: string }; message?: string }>();
	private waiting = false;
	/** Server → client requests answered by other modules (diagnostics.ts), registered on every start. */
	readonly requestHandlers = new Map<string, (params: unknown) => unknown>();
	/** The daemon bundled in a platform-specific .vsix (used when agentd.path is not set). */
	bundledPath: string | undefined;

	/** Shows "Waiting for your review" in the turn's progress while reviews wait (and the daemon's message after). */
	setWaiting(waiting: boolean): void {
		if (waiting === this.waiting) return;
		this.waiting = waiting;
		for (const p of this.progress.values()) {
			try {
				p.params.kind = "report";
				p.params.message = waiting ? WAITING_MESSAGE : (p.message ?? "Thinking…");
				p.next();
			} catch (err) {
				this.log.warn(`progress report: ${errorMessage(err)}`);
			}
		}
	}

	/** Milliseconds from start() to a running connection, for the benchmarks. */
	lastStartMs: number | undefined;
	/** When the first connection was up (ms since the epoch). */
	connectedAt: number | undefined;

	constructor(
		private readonly log: vscode.LogOutputChannel,
		private readonly trace: vscode.OutputChannel,
		private readonly version: string,
	) {}

	get connectionState(): ConnectionState {
		return this.state;
	}

	get running(): boolean {
		return this.state.kind === "running";
	}

	private setState(s: ConnectionState): void {
		this.state = s;
		this._onState.fire(s);
	}

	async start(): Promise<void> {
		if (this.disposed) return;
		clearTimeout(this.retryTimer);
		this.retryTimer = undefined;
		const gen = ++this.generation;
		const cfg = readConfig();
		const cmd = daemonCommand(cfg, this.bundledPath);
		const exe = resolveExecutable(cmd);
		if (!exe) {
			this.setState({ kind: "failed", message: missingBinaryMessage(cmd), fix: "Set agentd.path" });
			return;
		}
		this.log.info(`daemon: ${exe}${cmd === this.bundledPath ? " (bundled with the extension)" : ""}`);
		this.setState({ kind: "starting" });
		const t0 = Date.now();
		const env: NodeJS.ProcessEnv = { ...process.env };
		if (cfg.ollamaHost) env.OLLAMA_HOST = cfg.ollamaHost;
		const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.scheme === "file" ? vscode.workspace.workspaceFolders[0].uri.fsPath : undefined;

		const serverOptions: ServerOptions = async () => {
			const args = this.useFallback ? FALLBACK_ARGS : serverArgs(cfg.serverArgs);
			let child = spawnDaemon(exe, args, env, cwd, this.log);
			// `agentd connect` may not exist (an older daemon): if it dies at once, use a private
			// daemon on stdio instead.
			if (!this.useFallback && args[0] === "connect" && !cfg.serverArgs.length) {
				const early = await exitedWithin(child, 400);
				if (early !== undefined && early !== 0) {
					this.log.warn(`"${exe} connect" exited with ${early}; falling back to "${exe} ${FALLBACK_ARGS.join(" ")}"`);
					this.useFallback = true;
					child = spawnDaemon(exe, FALLBACK_ARGS, env, cwd, this.log);
				}
			}
			return child;
		};

		const clientOptions: LanguageClientOptions = {
			// The overlay: every file-backed document, so the agent reads unsaved text.
			documentSelector: [{ scheme: "file" }],
			outputChannel: this.log,
			traceOutputChannel: this.trace,
			// Our own notifications (with the fix) instead of the library's generic ones.
			revealOutputChannelOn: RevealOutputChannelOn.Never,
			initializationOptions: () => this.initializationOptions(),
			errorHandler: {
				error: () => ({ action: ErrorAction.Continue, handled: true }),
				closed: () => {
					if (!this.stopping && gen === this.generation) this.scheduleRestart("agentd stopped");
					return { action: CloseAction.DoNotRestart, handled: true };
				},
			},
			initializationFailedHandler: (err) => {
				this.log.error(`initialize failed: ${String(err)}`);
				return false;
			},
			markdown: { isTrusted: false, supportHtml: false },
			middleware: {
				// The turn's progress ("Thinking…") says "Waiting for your review" while a review or
				// an approval waits for the user (the daemon does not report that; see setWaiting).
				handleWorkDoneProgress: (token, params, next) => {
					const key = String(token);
					if (params.kind === "end") {
						this.progress.delete(key);
						return next(token, params);
					}
					// vscode-languageclient's `next` hands its own `params` object to the progress, so
					// the message is changed in that object (and it is kept to report again later).
					const p = { next: () => next(token, params), params: params as { kind: string; message?: string }, message: this.progress.get(key)?.message };
					if (params.message !== undefined) p.message = params.message;
					this.progress.set(key, p);
					if (this.waiting) params.message = WAITING_MESSAGE;
					return next(token, params);
				},
			},
		};

		const client = new LanguageClient("agentd", "agentd", serverOptions, clientOptions);
		this.client = client;
		client.onNotification(Method.SessionUpdate, (p: SessionUpdateParams) => this._onUpdate.fire(p));
		client.onNotification(Method.ReviewRequested, (p: ReviewRequestedParams) => this._onReviewRequested.fire(p));
		client.onNotification(Method.ReviewResolved, (p: ReviewResolvedParams) => this._onReviewResolved.fire(p));
		client.onNotification(Method.ReviewHunkStates, (p: ReviewHunkStatesParams) => this._onReviewHunkStates.fire(p));
		client.onRequest(Method.DocumentSave, (p: DocumentSaveParams) => saveDocument(p, this.log));
		for (const [method, handler] of this.requestHandlers) client.onRequest(method, handler);
		try {
			await client.start();
		} catch (err) {
			if (gen !== this.generation) return;
			this.log.error(`starting agentd failed: ${String(err)}`);
			this.client = undefined;
			void client.dispose().catch(() => undefined);
			this.scheduleRestart(`agentd did not start: ${errorMessage(err)}`);
			return;
		}
		if (gen !== this.generation) return;
		this.lastStartMs = Date.now() - t0;
		this.connectedAt ??= Date.now();
		this.startedAt = Date.now();
		const info = (client.initializeResult?.capabilities as { experimental?: { agentd?: ServerInfo } } | undefined)?.experimental?.agentd;
		if (!info) this.log.warn("initialize result has no capabilities.experimental.agentd (docs/protocol.md §1)");
		else if (info.protocolVersion !== PROTOCOL_VERSION) this.log.warn(`agentd speaks protocol ${info.protocolVersion}, this extension ${PROTOCOL_VERSION}`);
		this.setState({ kind: "running", info });
		this._onStart.fire();
		// Ollama's health, with the fix, from daemon/status.
		try {
			const status = await this.request(Method.DaemonStatus, {});
			if (gen === this.generation && this.state.kind === "running") this.setState({ kind: "running", info, status });
		} catch (err) {
			this.log.warn(`daemon/status failed: ${errorMessage(err)}`);
		}
	}

	private initializationOptions(): InitializationOptions {
		const cfg = readConfig();
		const o: InitializationOptions = {
			protocolVersion: PROTOCOL_VERSION,
			client: `${CLIENT_NAME} ${this.version}`,
			reviews: true,
			documentSave: true,
			diagnostics: this.requestHandlers.has(Method.DocumentDiagnostics),
		};
		if (cfg.model) o.model = cfg.model;
		if (cfg.approvalMode) o.approvalMode = cfg.approvalMode;
		if (cfg.ollamaHost) o.ollamaHost = cfg.ollamaHost;
		if (cfg.contextLength > 0) o.contextLength = cfg.contextLength;
		if (cfg.completionModel) o.completionModel = cfg.completionModel;
		return o;
	}

	private scheduleRestart(message: string): void {
		if (this.disposed || this.stopping) return;
		if (this.startedAt && Date.now() - this.startedAt > STABLE_MS) this.attempt = 0;
		this.startedAt = 0;
		const old = this.client;
		this.client = undefined;
		if (old) void old.dispose().catch(() => undefined);
		if (this.attempt >= MAX_RESTARTS) {
			this.setState({ kind: "failed", message: `${message}. Gave up after ${MAX_RESTARTS} restarts.`, fix: "See the agentd output, then run \"agentd: Restart\"." });
			return;
		}
		const delay = backoffDelay(this.attempt++);
		this.log.info(`${message}; restarting in ${delay} ms`);
		this.setState({ kind: "waiting", retryAt: Date.now() + delay, message });
		this.retryTimer = setTimeout(() => void this.start(), delay);
	}

	async restart(): Promise<void> {
		this.attempt = 0;
		this.useFallback = false;
		await this.stop();
		await this.start();
	}

	async stop(): Promise<void> {
		clearTimeout(this.retryTimer);
		this.retryTimer = undefined;
		this.generation++;
		const c = this.client;
		this.client = undefined;
		if (c) {
			this.stopping = true;
			try {
				if (c.state === State.Running) await c.stop(2000);
				else await c.dispose(1000);
			} catch (err) {
				this.log.warn(`stopping agentd: ${errorMessage(err)}`);
			} finally {
				this.stopping = false;
			}
		}
		this.setState({ kind: "stopped" });
	}

	/** A typed agentd request. Throws when not connected. */
	async request<M extends keyof RequestTypes>(method: M, params: RequestTypes[M][0], token?: vscode.CancellationToken): Promise<RequestTypes[M][1]> {
		const c = this.client;
		if (!c || this.state.kind !== "running") throw new NotConnectedError(this.state);
		return token ? c.sendRequest(method, params, token) : c.sendRequest(method, params);
	}

	/** A standard LSP request agentd serves (textDocument/inlineCompletion). Throws when not connected. */
	async lspRequest<R>(method: string, params: unknown, token: vscode.CancellationToken): Promise<R> {
		const c = this.client;
		if (!c || this.state.kind !== "running") throw new NotConnectedError(this.state);
		return c.sendRequest<R>(method, params, token);
	}

	dispose(): void {
		this.disposed = true;
		void this.stop();
		this._onState.dispose();
		this._onStart.dispose();
		this._onUpdate.dispose();
		this._onReviewRequested.dispose();
		this._onReviewResolved.dispose();
		this._onReviewHunkStates.dispose();
	}
}

export class NotConnectedError extends Error {
	constructor(state: ConnectionState) {
		super(
			state.kind === "failed"
				? state.message
				: state.kind === "waiting"
					? `agentd is not connected (${state.message}); it restarts by itself`
					: state.kind === "starting"
						? "agentd is still starting"
						: "agentd is not running",
		);
	}
}

export function errorMessage(err: unknown): string {
	if (err instanceof Error) return err.message;
	if (err && typeof err === "object" && "message" in err) return String((err as { message: unknown }).message);
	return String(err);
}

export function errorCode(err: unknown): number | undefined {
	if (err && typeof err === "object" && "code" in err && typeof (err as { code: unknown }).code === "number") return (err as { code: number }).code;
	return undefined;
}

function spawnDaemon(exe: string, args: string[], env: NodeJS.ProcessEnv, cwd: string | undefined, log: vscode.LogOutputChannel): ChildProcess {
	log.info(`starting ${exe} ${args.join(" ")}`);
	const child = spawn(exe, args, { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
	child.on("error", (err) => log.error(`agentd process: ${err.message}`));
	return child;
}

/** Resolves with the exit code if the process exits within `ms`, else undefined. */
function exitedWithin(child: ChildProcess, ms: number): Promise<number | undefined> {
	return new Promise((resolve) => {
		if (child.exitCode !== null) return resolve(child.exitCode);
		const t = setTimeout(() => {
			child.off("exit", onExit);
			resolve(undefined);
		}, ms);
		const onExit = (code: number | null) => {
			clearTimeout(t);
			resolve(code ?? 1);
		};
		child.once("exit", onExit);
	});
}

async function saveDocument(p: DocumentSaveParams, log: vscode.LogOutputChannel): Promise<DocumentSaveResult> {
	const uri = vscode.Uri.parse(p.uri);
	const doc = vscode.workspace.textDocuments.find((d) => sameUri(d.uri, uri));
	if (!doc) {
		log.warn(`document/save: ${p.uri} is not open`);
		return { saved: false };
	}
	if (!doc.isDirty) return { saved: true };
	try {
		return { saved: await doc.save() };
	} catch (err) {
		log.error(`document/save ${p.uri}: ${errorMessage(err)}`);
		return { saved: false };
	}
}

export function sameUri(a: vscode.Uri, b: vscode.Uri): boolean {
	if (a.scheme === "file" && b.scheme === "file") return a.fsPath === b.fsPath;
	return a.toString() === b.toString();
}
