// The proposals being edited before they are accepted ("Edit proposal"): an in-memory file
// system for the agentd-edit: scheme.
import * as vscode from "vscode";

/** The proposals being edited (agentd-edit:): in memory; a save keeps the text (and accepts it). */
export class EditedProposals implements vscode.FileSystemProvider {
	private readonly files = new Map<string, { data: Uint8Array; mtime: number }>();
	private readonly emitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
	readonly onDidChangeFile = this.emitter.event;

	put(uri: vscode.Uri, text: string): void {
		this.files.set(uri.path, { data: new TextEncoder().encode(text), mtime: Date.now() });
		this.emitter.fire([{ type: vscode.FileChangeType.Changed, uri }]);
	}
	watch(): vscode.Disposable {
		return new vscode.Disposable(() => undefined);
	}
	stat(uri: vscode.Uri): vscode.FileStat {
		const f = this.files.get(uri.path);
		if (!f) throw vscode.FileSystemError.FileNotFound(uri);
		return { type: vscode.FileType.File, ctime: 0, mtime: f.mtime, size: f.data.byteLength };
	}
	readDirectory(): [string, vscode.FileType][] {
		return [];
	}
	createDirectory(): void {
		throw vscode.FileSystemError.NoPermissions("agentd proposals have no folders");
	}
	readFile(uri: vscode.Uri): Uint8Array {
		const f = this.files.get(uri.path);
		if (!f) throw vscode.FileSystemError.FileNotFound(uri);
		return f.data;
	}
	writeFile(uri: vscode.Uri, content: Uint8Array): void {
		this.files.set(uri.path, { data: content, mtime: Date.now() });
	}
	delete(uri: vscode.Uri): void {
		this.files.delete(uri.path);
	}
	rename(): void {
		throw vscode.FileSystemError.NoPermissions("agentd proposals cannot be renamed");
	}
}
