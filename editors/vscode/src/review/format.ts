// Small pure formatting helpers shared by the extension and the webview.

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
