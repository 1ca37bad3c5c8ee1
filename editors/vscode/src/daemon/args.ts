// Pure helpers of the daemon connection: restart back-off, finding the binary, the words of the
// error messages. No `vscode` import: unit tested in node.

import * as fs from "node:fs";
import * as path from "node:path";

/** Restart delays: 1 s, 2 s, 4 s, … capped at 30 s. `attempt` counts from 0. */
export function backoffDelay(attempt: number, baseMs = 1000, capMs = 30000): number {
	return Math.min(capMs, baseMs * 2 ** Math.max(0, Math.min(attempt, 16)));
}

/** After this many failed starts in a row, stop retrying and ask the user. */
export const MAX_RESTARTS = 8;
/** A connection that stayed up this long resets the back-off. */
export const STABLE_MS = 60_000;

/** Finds an executable: an explicit path as given (with ~ expanded), or a name on PATH. */
export function resolveExecutable(cmd: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
	if (!cmd) return undefined;
	let p = cmd;
	if (p.startsWith("~/") && env.HOME) p = path.join(env.HOME, p.slice(2));
	const isExec = (f: string) => {
		try {
			const st = fs.statSync(f);
			if (!st.isFile()) return false;
			fs.accessSync(f, fs.constants.X_OK);
			return true;
		} catch {
			return false;
		}
	};
	if (p.includes("/") || p.includes(path.sep)) return isExec(p) ? path.resolve(p) : undefined;
	for (const dir of (env.PATH ?? "").split(path.delimiter)) {
		if (!dir) continue;
		const f = path.join(dir, p);
		if (isExec(f)) return f;
	}
	return undefined;
}

/** Where a platform-specific .vsix carries the daemon and its sandbox helper (`make vsix`). */
export const BUNDLED_DIR = "server";

/** The bundled daemon of an extension installed from a platform-specific .vsix, if it has one. */
export function bundledDaemon(extensionPath: string | undefined): string | undefined {
	if (!extensionPath) return undefined;
	return resolveExecutable(path.join(extensionPath, BUNDLED_DIR, process.platform === "win32" ? "agentd.exe" : "agentd"));
}

/**
 * The daemon to start: agentd.path when the user set it, else the daemon bundled in the
 * extension, else `agentd` on PATH (as rust-analyzer does with its server).
 */
export function daemonCommand(configured: { path: string; pathSet: boolean }, bundled: string | undefined): string {
	if (configured.pathSet) return configured.path;
	return bundled ?? configured.path;
}

/** The argv to start the daemon with: `agentd connect` (shared daemon), or what the user set. */
export function serverArgs(configured: readonly string[] | undefined): string[] {
	return configured && configured.length ? [...configured] : ["connect"];
}

/** The fallback when `connect` is not available: a private daemon on stdio. */
export const FALLBACK_ARGS = ["serve", "--stdio"];

export function missingBinaryMessage(cmd: string): string {
	return cmd === "agentd"
		? "agentd was not found on PATH. Install it (`make build` in the agentd repository puts it in bin/), then set \"agentd.path\" to the binary or add it to PATH."
		: `agentd was not found at "${cmd}". Fix the "agentd.path" setting (an absolute path to the agentd binary, or a name on PATH).`;
}

/** Formats an ErrorInfo-like value for a notification: the message, then the fix. */
export function withFix(message: string, fix?: string): string {
	if (!fix) return message;
	const m = message.replace(/[.\s]+$/, "");
	return `${m}. Fix: ${fix}`;
}

/** daemon/status says Ollama is "ok" or what is wrong (with the fix). */
export function ollamaProblem(status: string | undefined): string | undefined {
	if (!status || status === "ok") return undefined;
	return status;
}
