// Errors the extension sees, made visible to the end-to-end harness (test/e2e/run.mjs).
//
// Always: a command handler that throws or rejects is logged as an error in the agentd output
// channel (and rethrown, so VS Code reports it as before).
//
// Test mode (AGENTD_VSCODE_E2E_ERRORS=<file>, set by the harness): every error the extension
// logs (failed commands included), every error notification it shows, and every unhandled
// rejection or uncaught exception whose stack runs through this extension's files is appended to
// <file> as one JSON object per line, synchronously — so the harness can fail the scenario during
// which it happened. Test mode also registers the agentd.test.* commands that inject such errors,
// to test the harness itself. Without the variable nothing is recorded or registered.
import * as fs from "node:fs";
import * as vscode from "vscode";

export interface RecordedError {
	/** Wall clock, ms since the epoch. */
	at: number;
	/** "log", "error notification", "unhandledRejection", "uncaughtException". */
	source: string;
	message: string;
	stack?: string;
}

const errorsFile = process.env.AGENTD_VSCODE_E2E_ERRORS || undefined;

/** True when the end-to-end harness started this extension host. */
export const testMode = errorsFile !== undefined;

const recorded = new Set<(e: RecordedError) => void>();

export function recordError(source: string, err: unknown, at = Date.now()): void {
	if (!errorsFile) return;
	const e: RecordedError = { at, source, message: messageOf(err) };
	if (err instanceof Error && err.stack) e.stack = err.stack;
	try {
		fs.appendFileSync(errorsFile, JSON.stringify(e) + "\n");
	} catch {
		// Nothing to do: the harness's self-test (scenario "harness") fails when nothing arrives.
	}
	for (const f of recorded) f(e);
}

function messageOf(err: unknown): string {
	if (err instanceof Error) return err.message;
	if (typeof err === "string") return err;
	try {
		return JSON.stringify(err) ?? String(err);
	} catch {
		return String(err);
	}
}

/**
 * An error notification. In test mode it is recorded too: a scenario that does not expect it
 * fails (the harness cannot tell a notification's origin from its text alone).
 */
export function showError(message: string): void {
	recordError("error notification", message);
	void vscode.window.showErrorMessage(message);
}

/** Text of a log call's arguments, as the output channel shows them. */
function logText(message: string | Error, args: unknown[]): string {
	return [message instanceof Error ? (message.stack ?? message.message) : message, ...args.map(messageOf)].join(" ");
}

/**
 * The output channel the extension logs to. In test mode, its error() calls and the error lines
 * vscode-languageclient writes with appendLine ("[Error - 10:00:00] …") are also recorded.
 */
export function watchLog(log: vscode.LogOutputChannel): vscode.LogOutputChannel {
	if (!testMode) return log;
	return {
		get name() {
			return log.name;
		},
		get logLevel() {
			return log.logLevel;
		},
		onDidChangeLogLevel: log.onDidChangeLogLevel,
		trace: (m, ...a) => log.trace(m, ...a),
		debug: (m, ...a) => log.debug(m, ...a),
		info: (m, ...a) => log.info(m, ...a),
		warn: (m, ...a) => log.warn(m, ...a),
		error: (m, ...a) => {
			recordError("log", logText(m, a));
			log.error(m, ...a);
		},
		append: (v) => log.append(v),
		appendLine: (v) => {
			if (/^\[Error\b/.test(v)) recordError("log", v);
			log.appendLine(v);
		},
		replace: (v) => log.replace(v),
		clear: () => log.clear(),
		show: (a?: unknown, b?: boolean) => (typeof a === "boolean" || a === undefined ? log.show(a) : log.show(a as vscode.ViewColumn, b)),
		hide: () => log.hide(),
		dispose: () => log.dispose(),
	};
}

/**
 * registerCommand, with failures logged (and recorded in test mode). The error still reaches
 * VS Code, which shows it to whoever ran the command.
 */
export function registerCommand(id: string, fn: (...args: any[]) => unknown, log: vscode.LogOutputChannel): vscode.Disposable {
	// In test mode `log` is the watched channel (watchLog): the error line is recorded.
	const failed = (err: unknown) => log.error(`command ${id} failed: ${err instanceof Error ? (err.stack ?? err.message) : messageOf(err)}`);
	return vscode.commands.registerCommand(id, (...args: unknown[]) => {
		let r: unknown;
		try {
			r = fn(...args);
		} catch (err) {
			failed(err);
			throw err;
		}
		if (r && typeof (r as PromiseLike<unknown>).then === "function") {
			return Promise.resolve(r).catch((err: unknown) => {
				failed(err);
				throw err;
			});
		}
		return r;
	});
}

/**
 * Test mode only: records unhandled rejections and uncaught exceptions that come from this
 * extension (their stack names a file under extensionPath; the extension host is shared with
 * other extensions, whose errors are not ours to report), and registers the agentd.test.*
 * commands that inject errors for the harness's own test.
 */
export function activateTestMode(context: vscode.ExtensionContext, log: vscode.LogOutputChannel): void {
	if (!testMode) return;
	const ours = (err: unknown) => err instanceof Error && typeof err.stack === "string" && err.stack.includes(context.extensionPath);
	// A rejection not handled within half a second (recorded with the time it happened). The
	// extension host's own handler attaches a catch after one second (and logs it): ours runs
	// first, as rejectionHandled cannot tell the two apart.
	const unhandled = new Map<Promise<unknown>, NodeJS.Timeout>();
	const onRejection = (reason: unknown, p: Promise<unknown>) => {
		if (!ours(reason)) return;
		const at = Date.now();
		unhandled.set(
			p,
			setTimeout(() => {
				unhandled.delete(p);
				recordError("unhandledRejection", reason, at);
			}, 500),
		);
	};
	const onHandled = (p: Promise<unknown>) => {
		clearTimeout(unhandled.get(p));
		unhandled.delete(p);
	};
	const onException = (err: unknown) => {
		if (ours(err)) recordError("uncaughtException", err);
	};
	process.on("unhandledRejection", onRejection);
	process.on("rejectionHandled", onHandled);
	process.on("uncaughtExceptionMonitor", onException);
	context.subscriptions.push({
		dispose: () => {
			process.off("unhandledRejection", onRejection);
			process.off("rejectionHandled", onHandled);
			process.off("uncaughtExceptionMonitor", onException);
			for (const t of unhandled.values()) clearTimeout(t);
		},
	});
	void vscode.commands.executeCommand("setContext", "agentd.testMode", true);
	context.subscriptions.push(
		registerCommand(
			"agentd.test.throw",
			() => {
				throw new Error("agentd-e2e-injected-command-error");
			},
			log,
		),
		registerCommand(
			"agentd.test.reject",
			() => {
				// The message shows once the rejection was recorded (the harness waits for it).
				const done = (e: RecordedError) => {
					if (e.message !== INJECTED_REJECTION) return;
					recorded.delete(done);
					void vscode.window.showInformationMessage("agentd: injected an unhandled rejection");
				};
				recorded.add(done);
				void injectedRejection();
			},
			log,
		),
	);
}

const INJECTED_REJECTION = "agentd-e2e-injected-rejection";

async function injectedRejection(): Promise<void> {
	await Promise.resolve();
	throw new Error(INJECTED_REJECTION);
}
