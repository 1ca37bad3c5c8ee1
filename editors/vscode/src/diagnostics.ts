// document/diagnostics (server → client request): after an applied edit the daemon asks for a
// file's diagnostics, to tell the model about the errors its change introduced. The answer waits
// (at most settleMs) until the language servers have published diagnostics for the document's
// current text: onDidChangeDiagnostics records the document's version each time the file's
// diagnostics change, and they are fresh when that is the document's current version.
// See docs/protocol.md §5.
import * as vscode from "vscode";
import type { DaemonClient } from "./daemon/client";
import { Method, type DocumentDiagnostic, type DocumentDiagnosticsParams, type DocumentDiagnosticsResult } from "./protocol";

/** At most this long, whatever the daemon asks (the daemon's own bound is shorter). */
const MAX_SETTLE_MS = 10_000;

export class DiagnosticsResponder implements vscode.Disposable {
	/** The document version at the last diagnostics change, by URI string (-1: a closed file). */
	private readonly fresh = new Map<string, number>();
	private readonly changed = new vscode.EventEmitter<string>();
	private readonly disposables: vscode.Disposable[] = [this.changed];

	constructor() {
		this.disposables.push(
			vscode.languages.onDidChangeDiagnostics((e) => {
				for (const uri of e.uris) {
					const key = uri.toString();
					this.fresh.set(key, this.documentOf(key)?.version ?? -1);
					this.changed.fire(key);
				}
			}),
			vscode.workspace.onDidCloseTextDocument((d) => this.fresh.delete(d.uri.toString())),
		);
	}

	private documentOf(key: string): vscode.TextDocument | undefined {
		return vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
	}

	private isFresh(key: string): boolean {
		const doc = this.documentOf(key);
		const v = this.fresh.get(key);
		return v !== undefined && v === (doc ? doc.version : -1);
	}

	async answer(p: DocumentDiagnosticsParams): Promise<DocumentDiagnosticsResult> {
		let uri: vscode.Uri;
		try {
			uri = vscode.Uri.parse(p.uri, true);
		} catch {
			return { diagnostics: [] };
		}
		const key = uri.toString();
		const settle = Math.min(Math.max(Number(p.settleMs) || 0, 0), MAX_SETTLE_MS);
		if (settle > 0 && !this.isFresh(key)) {
			// A closed file: any change of its diagnostics after the question will do.
			const closed = !this.documentOf(key);
			await new Promise<void>((resolve) => {
				const timer = setTimeout(done, settle);
				const sub = this.changed.event((k) => {
					if (k === key && (closed || this.isFresh(key))) done();
				});
				function done() {
					clearTimeout(timer);
					sub.dispose();
					resolve();
				}
			});
		}
		return { diagnostics: vscode.languages.getDiagnostics(uri).flatMap(toWire) };
	}

	dispose(): void {
		for (const d of this.disposables) d.dispose();
	}
}

/** Errors and warnings only (the daemon wants no more); lines and characters zero-based. */
function toWire(d: vscode.Diagnostic): DocumentDiagnostic[] {
	let severity: string;
	if (d.severity === vscode.DiagnosticSeverity.Error) severity = "error";
	else if (d.severity === vscode.DiagnosticSeverity.Warning) severity = "warning";
	else return [];
	const out: DocumentDiagnostic = { line: d.range.start.line, character: d.range.start.character, severity, message: d.message };
	if (d.source) out.source = d.source;
	return [out];
}

/** Answers document/diagnostics on the daemon's connection (and declares it in initialize). */
export function registerDiagnostics(daemon: DaemonClient): vscode.Disposable {
	const responder = new DiagnosticsResponder();
	daemon.requestHandlers.set(Method.DocumentDiagnostics, (p) => responder.answer(p as DocumentDiagnosticsParams));
	return new vscode.Disposable(() => {
		daemon.requestHandlers.delete(Method.DocumentDiagnostics);
		responder.dispose();
	});
}
