// Inline completion: ghost text from the daemon's completion model (textDocument/inlineCompletion,
// docs/protocol.md §2). VS Code shows the items and Tab accepts them; this file decides when to
// ask, and carries the status-bar toggle and the per-language switch.
//
// Off by default: on when agentd.completion.enabled is "on", or when it is "auto" and a completion
// model is configured (agentd.completion.model, or the daemon's completion-model).
import * as vscode from "vscode";
import type { DaemonClient } from "./daemon/client";
import { completionOn, type CompletionSetting } from "./completionSwitch";
import type { InlineCompletionList, ServerInfo } from "./protocol";


function settings(): { setting: CompletionSetting; languages: Record<string, boolean> } {
	const c = vscode.workspace.getConfiguration("agentd.completion");
	const setting = c.get<string>("enabled", "auto");
	return {
		setting: setting === "on" || setting === "off" ? setting : "auto",
		languages: c.get<Record<string, boolean>>("languages", {}) ?? {},
	};
}

export class InlineCompletion implements vscode.InlineCompletionItemProvider, vscode.Disposable {
	private readonly item: vscode.StatusBarItem;
	private readonly disposables: vscode.Disposable[] = [];

	constructor(
		private readonly daemon: DaemonClient,
		private readonly log: vscode.LogOutputChannel,
	) {
		this.item = vscode.window.createStatusBarItem("agentd.completion", vscode.StatusBarAlignment.Right, 100);
		this.item.name = "agentd inline completion";
		this.item.command = "agentd.toggleCompletion";
		this.disposables.push(
			this.item,
			vscode.languages.registerInlineCompletionItemProvider({ scheme: "file" }, this),
			daemon.onDidChangeState(() => this.render()),
			vscode.window.onDidChangeActiveTextEditor(() => this.render()),
			vscode.workspace.onDidChangeConfiguration((e) => {
				if (e.affectsConfiguration("agentd.completion")) this.render();
			}),
		);
		this.render();
	}

	private info(): ServerInfo | undefined {
		const s = this.daemon.connectionState;
		return s.kind === "running" ? s.info : undefined;
	}

	/** Whether completion is on for a language (the active editor's when none is given). */
	enabledFor(languageId = vscode.window.activeTextEditor?.document.languageId ?? ""): boolean {
		const { setting, languages } = settings();
		return completionOn(setting, languages, languageId, this.info()?.completionConfigured === true);
	}

	private render(): void {
		const info = this.info();
		if (!info) {
			this.item.hide();
			return;
		}
		const lang = vscode.window.activeTextEditor?.document.languageId;
		const on = this.enabledFor(lang ?? "");
		this.item.text = on ? "$(sparkle) Completion" : "$(circle-slash) Completion";
		const md = new vscode.MarkdownString(undefined, true);
		md.isTrusted = { enabledCommands: ["agentd.toggleCompletion", "agentd.toggleCompletionForLanguage"] };
		md.appendText(`agentd inline completion is ${on ? "on" : "off"}${lang ? ` for ${lang}` : ""}: model ${info.completionModel || "?"}.`);
		md.appendMarkdown("\n\n[Turn it " + (on ? "off" : "on") + "](command:agentd.toggleCompletion)");
		if (lang) md.appendMarkdown(` · [${on ? "Off" : "On"} for ${lang} only](command:agentd.toggleCompletionForLanguage)`);
		this.item.tooltip = md;
		this.item.show();
	}

	/** Turns completion on or off everywhere (the user setting; per-language switches stay). */
	async toggle(): Promise<void> {
		const on = this.enabledFor();
		await vscode.workspace.getConfiguration("agentd.completion").update("enabled", on ? "off" : "on", vscode.ConfigurationTarget.Global);
		this.render();
	}

	/** Turns completion on or off for the active editor's language only. */
	async toggleLanguage(): Promise<void> {
		const lang = vscode.window.activeTextEditor?.document.languageId;
		if (!lang) {
			void vscode.window.showInformationMessage("agentd: open a file to switch inline completion for its language.");
			return;
		}
		const on = this.enabledFor(lang);
		const { languages } = settings();
		await vscode.workspace.getConfiguration("agentd.completion").update("languages", { ...languages, [lang]: !on }, vscode.ConfigurationTarget.Global);
		this.render();
	}

	async provideInlineCompletionItems(
		document: vscode.TextDocument,
		position: vscode.Position,
		context: vscode.InlineCompletionContext,
		token: vscode.CancellationToken,
	): Promise<vscode.InlineCompletionItem[]> {
		if (!this.daemon.running || !this.enabledFor(document.languageId)) return [];
		let list: InlineCompletionList;
		try {
			list = await this.daemon.lspRequest<InlineCompletionList>(
				"textDocument/inlineCompletion",
				{
					textDocument: { uri: document.uri.toString() },
					position: { line: position.line, character: position.character },
					context: { triggerKind: context.triggerKind === vscode.InlineCompletionTriggerKind.Invoke ? 1 : 2 },
				},
				token,
			);
		} catch (err) {
			// A newer keystroke cancelled it (-32800), or the connection is restarting: nothing to show.
			if (!token.isCancellationRequested) this.log.debug(`inline completion: ${String(err)}`);
			return [];
		}
		if (token.isCancellationRequested) return [];
		return (list?.items ?? []).map(
			(it) =>
				new vscode.InlineCompletionItem(
					it.insertText,
					new vscode.Range(it.range.start.line, it.range.start.character, it.range.end.line, it.range.end.character),
				),
		);
	}

	dispose(): void {
		for (const d of this.disposables) d.dispose();
	}
}
