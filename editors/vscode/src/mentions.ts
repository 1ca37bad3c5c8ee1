// Mentions in the chat prompt: `@open` (all open files), `@path/to/file`, `@path/to/folder/` and
// `@#Symbol`. Pure functions (no vscode import) shared by the webview (completion while typing) and
// the extension host (resolving the tokens of a sent prompt into context items). The prompt text
// keeps the tokens as typed; see docs/protocol.md, "session/prompt".

export type MentionKind = "open" | "file" | "folder" | "symbol";

/** One row of the completion list. `token` is what picking it inserts (with the leading `@`). */
export interface MentionItem {
	kind: MentionKind;
	token: string;
	label: string;
	detail?: string;
	/** Symbols: the host's id of the offered symbol, so the picked one (not a namesake) is sent. */
	id?: string;
}

/** A mention found in a prompt: `value` is the token without `@` (and without `#` for symbols). */
export interface MentionToken {
	kind: "open" | "path" | "symbol";
	value: string;
	raw: string;
	start: number;
	end: number;
}

export const OPEN_TOKEN = "@open";

/** Characters that may precede an `@` for it to start a mention (so `a@b.c` is not one). */
function startsMention(text: string, at: number): boolean {
	return at === 0 || /[\s([{"'`]/.test(text[at - 1]);
}

/** Punctuation that ends a sentence after a mention ("look at @cart.go.") and is not part of it. */
const TRAILING = /[.,;:!?)\]}'"`]+$/;

/** The mentions in a prompt, in order. */
export function findMentions(text: string): MentionToken[] {
	const out: MentionToken[] = [];
	for (const m of text.matchAll(/@(\S+)/g)) {
		const start = m.index ?? 0;
		if (!startsMention(text, start)) continue;
		let body = m[1];
		const trimmed = body.replace(TRAILING, "");
		// Keep a trailing dot etc. only if nothing is left without it.
		if (trimmed) body = trimmed;
		const raw = `@${body}`;
		const end = start + raw.length;
		if (body === "open") out.push({ kind: "open", value: "open", raw, start, end });
		else if (body.startsWith("#")) {
			if (body.length > 1) out.push({ kind: "symbol", value: body.slice(1), raw, start, end });
		} else out.push({ kind: "path", value: body, raw, start, end });
	}
	return out;
}

/** The mention being typed at the caret: where its `@` is and the query after it. */
export function activeMention(text: string, caret: number): { start: number; query: string } | undefined {
	let i = caret - 1;
	while (i >= 0 && !/\s/.test(text[i])) {
		if (text[i] === "@" && startsMention(text, i)) return { start: i, query: text.slice(i + 1, caret) };
		i--;
	}
	return undefined;
}

/** Replaces the mention being typed (from its `@` to the end of the word at the caret) with a token. */
export function insertMention(text: string, start: number, caret: number, token: string): { text: string; caret: number } {
	let end = caret;
	while (end < text.length && !/\s/.test(text[end])) end++;
	// A folder keeps the list open for its files: no space after it.
	const sep = token.endsWith("/") ? "" : " ";
	const after = text.slice(end);
	const ins = token + (sep && !after.startsWith(" ") ? sep : "");
	return { text: text.slice(0, start) + ins + after, caret: start + token.length + sep.length };
}

/** The folders of a list of workspace-relative files ("a/b/c.go" gives "a/" and "a/b/"). */
export function foldersOf(files: readonly string[]): string[] {
	const set = new Set<string>();
	for (const f of files) {
		const parts = f.split("/");
		for (let i = 1; i < parts.length; i++) set.add(parts.slice(0, i).join("/") + "/");
	}
	return [...set].sort();
}

/** How well a path matches a query: lower is better, undefined is no match. */
export function pathScore(path: string, query: string): number | undefined {
	const p = path.toLowerCase();
	const q = query.toLowerCase();
	if (!q) return path.split("/").length * 10 + path.length / 1000;
	const trimmed = p.endsWith("/") ? p.slice(0, -1) : p;
	const base = trimmed.slice(trimmed.lastIndexOf("/") + 1);
	const len = path.length / 1000; // shorter paths first among equals
	if (base === q) return 0 + len;
	if (base.startsWith(q)) return 1 + len;
	if (p.startsWith(q)) return 2 + len;
	if (base.includes(q)) return 3 + len;
	if (p.includes(q)) return 4 + len;
	// In-order letters ("crtg" matches "cart.go").
	let j = 0;
	for (let i = 0; i < p.length && j < q.length; i++) if (p[i] === q[j]) j++;
	return j === q.length ? 5 + len : undefined;
}

/** The completion list for `@query`: `@open`, then files and folders (symbols come from the host). */
export function pathItems(query: string, files: readonly string[], limit = 30): MentionItem[] {
	const out: MentionItem[] = [];
	if ("open".startsWith(query.toLowerCase())) out.push({ kind: "open", token: OPEN_TOKEN, label: "open", detail: "all open files" });
	const scored: { s: number; path: string; folder: boolean }[] = [];
	for (const f of files) {
		const s = pathScore(f, query);
		if (s !== undefined) scored.push({ s, path: f, folder: false });
	}
	for (const d of foldersOf(files)) {
		const s = pathScore(d, query);
		if (s !== undefined) scored.push({ s, path: d, folder: true });
	}
	scored.sort((a, b) => a.s - b.s || a.path.localeCompare(b.path));
	for (const { path, folder } of scored.slice(0, Math.max(0, limit - out.length))) {
		const trimmed = folder ? path.slice(0, -1) : path;
		const slash = trimmed.lastIndexOf("/");
		out.push({
			kind: folder ? "folder" : "file",
			token: `@${path}`,
			label: trimmed.slice(slash + 1) + (folder ? "/" : ""),
			detail: slash >= 0 ? trimmed.slice(0, slash) : undefined,
		});
	}
	return out;
}

/** A path token that may name a workspace path: relative, no `..` segment, no empty segment. */
export function safeRelPath(value: string): string | undefined {
	const v = value.replace(/\/+$/, "");
	if (!v || v.startsWith("/") || v.includes("\\")) return undefined;
	const parts = v.split("/");
	if (parts.some((p) => p === "" || p === "." || p === "..")) return undefined;
	return v;
}
