// How MCP tool calls and workspace proposals are shown: pure functions (no `vscode`, no DOM), used
// by the extension host (notifications, dialogs) and the chat webview, and unit-tested.

import type { MCPCall, MCPProposal, ResultImage } from "./protocol";

/** "everything › echo": the server and its tool, as the user configured them. */
export function mcpTitle(m: MCPCall): string {
	return `${m.server} › ${m.tool}`;
}

/** The arguments, pretty-printed in full (never cut). */
export function prettyArgs(args: unknown): string {
	if (args === undefined || args === null) return "{}";
	if (typeof args === "string") {
		// The model's broken arguments arrive as a string.
		try {
			return JSON.stringify(JSON.parse(args), null, 2);
		} catch {
			return args;
		}
	}
	return JSON.stringify(args, null, 2);
}

/**
 * The arguments in a notification, whose text cannot carry brackets (they would read as links) nor
 * be long: shown verbatim when they fit, else it says how long they are and where they are shown
 * whole — never cut silently.
 */
export function toastArgs(args: unknown, max = 300): string {
	const s = args === undefined || args === null ? "{}" : typeof args === "string" ? args : JSON.stringify(args);
	if (s.length <= max && !/[[\]]/.test(s)) return `arguments ${s}`;
	return `arguments of ${fmtBytes(utf8Length(s))}, shown whole in the chat (and with the modal approval setting)`;
}

export function fmtBytes(n: number): string {
	if (n < 1024) return `${n} B`;
	if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
	return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

function utf8Length(s: string): number {
	let n = 0;
	for (const ch of s) {
		const c = ch.codePointAt(0)!;
		n += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
	}
	return n;
}

/** "[image image/png, 1.2 KB]": what an image of a result is shown as (the data goes to the model). */
export function imagePlaceholder(im: ResultImage): string {
	return `[image ${im.mimeType || "of unknown type"}, ${fmtBytes(im.bytes)}]`;
}

/** A shell-like rendering of argv (words with spaces or quotes are quoted). */
export function shellLine(argv: string[]): string {
	return argv.map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(" ");
}

/** What a proposal runs, on one line: "node /srv/index.js stdio" or "http://127.0.0.1:8080/mcp". */
export function proposalTarget(p: MCPProposal): string {
	if (p.transport === "stdio") return shellLine([p.command ?? "", ...(p.args ?? [])]);
	return p.url ?? "";
}

/** The exact definition the user approves, one fact a line. */
export function describeProposal(p: MCPProposal): string {
	const lines = [`Proposed in: ${p.file}`];
	if (p.transport === "stdio") {
		lines.push(`Command: ${p.command ?? ""}`);
		lines.push(`Arguments: ${JSON.stringify(p.args ?? [])}`);
		const env = Object.entries(p.env ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
		lines.push(env.length ? `Environment: ${env.map(([k, v]) => `${k}=${v}`).join(", ")}` : "Environment: (none beyond PATH, HOME, LANG…)");
		if (p.cwd) lines.push(`Working directory: ${p.cwd}`);
		lines.push(`Network: ${p.network ? "on" : "off"} (it runs in agentd's sandbox: it can write the workspace and its own cache only)`);
	} else {
		lines.push(`URL: ${p.url ?? ""}`);
		const headers = Object.keys(p.headers ?? {}).sort();
		if (headers.length) lines.push(`Headers: ${headers.map((k) => `${k}: ${p.headers![k]}`).join(", ")}`);
	}
	lines.push("Approval applies from the next session on: the current session keeps its tools.");
	return lines.join("\n");
}
