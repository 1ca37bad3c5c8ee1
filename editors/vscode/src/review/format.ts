// Small pure formatting helpers shared by the extension and the webview.
import type { GrantScope } from "../protocol";

/** The command as the user would type it: `bash -c "<line>"` shows as the line itself. */
export function commandLine(argv: readonly string[]): string {
	if (argv.length === 3 && /(^|\/)(ba|z|da)?sh$/.test(argv[0]) && (argv[1] === "-c" || argv[1] === "-lc")) return argv[2];
	return argv.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`)).join(" ");
}

/** "sandboxed, no network" from a command preview. */
export function sandboxLabel(sandbox: string, network: boolean): string {
	const s = sandbox ? "sandboxed" : "NOT sandboxed";
	return `${s}, ${network ? "network ON" : "no network"}`;
}

/** A path shown relative to a folder when it is inside it. */
export function relativeTo(folder: string | undefined, p: string): string {
	if (!folder) return p;
	const f = folder.endsWith("/") ? folder.slice(0, -1) : folder;
	if (p === f) return ".";
	if (p.startsWith(f + "/")) return p.slice(f.length + 1);
	return p;
}

/** A folder as the user reads it: "." is the workspace folder. */
export function where(rel: string): string {
	return rel === "." ? "the workspace folder" : rel;
}

export function scopeLabel(s: GrantScope): string {
	if (s.kind === "command") return `commands starting with \`${(s.commandPrefix ?? []).join(" ")}\``;
	if (s.kind === "path") return `edits under ${s.pathPrefix}`;
	return `all ${s.tool} calls`;
}

/** s on one line, cut to n characters with an ellipsis. */
export function clip(s: string, n: number): string {
	const one = s.replace(/\s+/g, " ").trim();
	return one.length > n ? one.slice(0, n - 1) + "…" : one;
}

export function escapeMd(s: string): string {
	return s.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, "\\$&");
}

export function longestRun(s: string, ch: string): number {
	let best = 0;
	let cur = 0;
	for (const c of s) {
		cur = c === ch ? cur + 1 : 0;
		best = Math.max(best, cur);
	}
	return best;
}

/**
 * Why a change needs the user's review, short, for the review's lens: a change a command made
 * says "<origin> changed <path>, and it needs your review: <reason>" (the daemon's
 * Permission.Reason, sent as the review's `why`), of which the reason is kept ("writes under
 * .husky/ install git hooks, which run code on commit"); any other `why` is kept whole.
 */
export function reviewReason(why: string): string {
	const marker = "needs your review: ";
	const i = why.indexOf(marker);
	return (i >= 0 ? why.slice(i + marker.length) : why).trim();
}
