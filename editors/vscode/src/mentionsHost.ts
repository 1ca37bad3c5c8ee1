// The extension side of prompt mentions: completion candidates (workspace files and folders, open
// files, workspace symbols) and the resolution of a sent prompt's `@` tokens into context items
// (docs/protocol.md, "session/prompt"). The token grammar is in mentions.ts.

import * as vscode from "vscode";
import type { ContextItem } from "./protocol";
import { findMentions, pathItems, safeRelPath, type MentionItem } from "./mentions";

/** Files listed for completion at most (findFiles with the user's files.exclude). */
const MAX_FILES = 5000;
/** Symbols offered for one `@#query`. */
const MAX_SYMBOLS = 30;
/** A symbol's text is capped here too (the daemon caps it again). */
const MAX_SYMBOL_CHARS = 32 * 1024;

interface SymbolRef {
	name: string;
	kind: vscode.SymbolKind;
	uri: vscode.Uri;
	range: vscode.Range;
}

export class MentionResolver implements vscode.Disposable {
	private files: Promise<Map<string, vscode.Uri>> | undefined;
	/** Symbols of the last completion list, by item id. */
	private offered = new Map<string, SymbolRef>();
	/** Symbols the user picked from the list, by token: sent instead of a namesake. */
	private picked = new Map<string, SymbolRef>();
	private nextId = 1;
	private readonly disposables: vscode.Disposable[] = [];

	constructor(private readonly log: vscode.LogOutputChannel) {
		const w = vscode.workspace.createFileSystemWatcher("**/*", false, true, false);
		const drop = () => (this.files = undefined);
		this.disposables.push(w, w.onDidCreate(drop), w.onDidDelete(drop), vscode.workspace.onDidChangeWorkspaceFolders(drop));
	}

	/** Workspace-relative paths (prefixed with the folder's name in a multi-root workspace). */
	private fileMap(): Promise<Map<string, vscode.Uri>> {
		if (!this.files) {
			this.files = (async () => {
				const map = new Map<string, vscode.Uri>();
				const uris = await vscode.workspace.findFiles("**/*", undefined, MAX_FILES);
				for (const u of uris) map.set(vscode.workspace.asRelativePath(u, (vscode.workspace.workspaceFolders?.length ?? 0) > 1), u);
				return map;
			})();
			this.files.catch(() => (this.files = undefined));
		}
		return this.files;
	}

	/** The completion list for what follows an `@`. */
	async complete(query: string): Promise<MentionItem[]> {
		if (query.startsWith("#")) return this.symbolItems(query.slice(1));
		const files = [...(await this.fileMap()).keys()];
		return pathItems(query, files);
	}

	private async symbolItems(query: string): Promise<MentionItem[]> {
		const syms = await this.symbols(query);
		this.offered.clear();
		return syms.slice(0, MAX_SYMBOLS).map((s) => {
			const id = `s${this.nextId++}`;
			this.offered.set(id, s);
			return { kind: "symbol", token: `@#${s.name}`, label: s.name, detail: `${kindName(s.kind)} · ${vscode.workspace.asRelativePath(s.uri, false)}:${s.range.start.line + 1}`, id };
		});
	}

	/** The webview picked a symbol row: remember which one its token means. */
	pick(token: string, id: string | undefined): void {
		const s = id ? this.offered.get(id) : undefined;
		if (s) this.picked.set(token, s);
	}

	private async symbols(query: string): Promise<SymbolRef[]> {
		if (!query) return [];
		let found: vscode.SymbolInformation[] | undefined;
		try {
			found = await vscode.commands.executeCommand<vscode.SymbolInformation[]>("vscode.executeWorkspaceSymbolProvider", query);
		} catch (err) {
			this.log.warn(`workspace symbols for ${query}: ${String(err)}`);
		}
		const out: SymbolRef[] = [];
		for (const s of found ?? []) {
			if (!s?.location?.uri || s.location.uri.scheme !== "file" || !vscode.workspace.getWorkspaceFolder(s.location.uri)) continue;
			out.push({ name: s.name, kind: s.kind, uri: s.location.uri, range: s.location.range });
		}
		return out;
	}

	/**
	 * The context items of a prompt's mentions. Unknown tokens are left alone (an `@` in prose is
	 * not an error); `problems` names the mentions that look meant but could not be resolved.
	 */
	async resolve(text: string): Promise<{ items: ContextItem[]; problems: string[] }> {
		const items: ContextItem[] = [];
		const problems: string[] = [];
		const seen = new Set<string>();
		const add = (it: ContextItem) => {
			const key = `${it.kind}:${it.uri}:${it.name ?? ""}`;
			if (!seen.has(key)) {
				seen.add(key);
				items.push(it);
			}
		};
		for (const m of findMentions(text)) {
			if (m.kind === "open") {
				for (const uri of openFiles()) add({ kind: "file", uri: uri.toString() });
			} else if (m.kind === "path") {
				const r = await this.resolvePath(m.value);
				if (r) add(r);
			} else {
				const s = this.picked.get(m.raw) ?? (await this.symbols(m.value)).find((x) => x.name === m.value);
				if (!s) {
					problems.push(m.raw);
					continue;
				}
				const it = await this.symbolItem(s);
				if (it) add(it);
				else problems.push(m.raw);
			}
		}
		this.picked.clear();
		return { items, problems };
	}

	private async resolvePath(value: string): Promise<ContextItem | undefined> {
		const rel = safeRelPath(value);
		if (!rel) return undefined;
		const known = (await this.fileMap()).get(rel);
		if (known) return { kind: "file", uri: known.toString() };
		const folders = vscode.workspace.workspaceFolders ?? [];
		for (const f of folders) {
			// Multi-root: "name/rest" names a folder's path.
			const sub = folders.length > 1 && rel.startsWith(`${f.name}/`) ? rel.slice(f.name.length + 1) : rel;
			const uri = vscode.Uri.joinPath(f.uri, sub);
			try {
				const st = await vscode.workspace.fs.stat(uri);
				if (st.type & vscode.FileType.Directory) return { kind: "folder", uri: uri.toString() };
				if (st.type & vscode.FileType.File) return { kind: "file", uri: uri.toString() };
			} catch {
				// not in this folder
			}
		}
		return undefined;
	}

	/** A symbol with its source text: the whole declaration when the document's symbols give it. */
	private async symbolItem(s: SymbolRef): Promise<ContextItem | undefined> {
		let doc: vscode.TextDocument;
		try {
			doc = await vscode.workspace.openTextDocument(s.uri);
		} catch {
			return undefined;
		}
		let range = s.range;
		try {
			const docSyms = await vscode.commands.executeCommand<(vscode.DocumentSymbol | vscode.SymbolInformation)[]>("vscode.executeDocumentSymbolProvider", s.uri);
			const full = enclosing(docSyms ?? [], s.name, s.range.start);
			if (full) range = full;
		} catch {
			// the workspace symbol's own range
		}
		// Whole lines.
		range = new vscode.Range(range.start.line, 0, range.end.line, doc.lineAt(Math.min(range.end.line, doc.lineCount - 1)).range.end.character);
		let text = doc.getText(range);
		if (text.length > MAX_SYMBOL_CHARS) text = text.slice(0, MAX_SYMBOL_CHARS);
		return {
			kind: "symbol",
			uri: s.uri.toString(),
			range: { start: { line: range.start.line, character: range.start.character }, end: { line: range.end.line, character: range.end.character } },
			text,
			name: s.name,
			symbolKind: kindName(s.kind),
		};
	}

	dispose(): void {
		for (const d of this.disposables) d.dispose();
	}
}

/** The document symbol named `name` whose range contains `at` (the innermost one). */
function enclosing(syms: (vscode.DocumentSymbol | vscode.SymbolInformation)[], name: string, at: vscode.Position): vscode.Range | undefined {
	let best: vscode.Range | undefined;
	const visit = (list: (vscode.DocumentSymbol | vscode.SymbolInformation)[]) => {
		for (const s of list) {
			const range = "range" in s ? s.range : s.location.range;
			if (!range.contains(at)) continue;
			if (s.name === name || s.name.endsWith(`.${name}`) || s.name.endsWith(`)${name}`)) best = range;
			if ("children" in s && s.children) visit(s.children);
		}
	};
	visit(syms);
	return best;
}

/** Every file open in a tab that belongs to the workspace. */
function openFiles(): vscode.Uri[] {
	const out = new Map<string, vscode.Uri>();
	for (const g of vscode.window.tabGroups.all) {
		for (const t of g.tabs) {
			const input = t.input;
			if (input instanceof vscode.TabInputText && input.uri.scheme === "file" && vscode.workspace.getWorkspaceFolder(input.uri)) out.set(input.uri.toString(), input.uri);
		}
	}
	return [...out.values()];
}

export function kindName(k: vscode.SymbolKind): string {
	return (vscode.SymbolKind[k] ?? "symbol").toLowerCase();
}
