// The status bar item: connection state, model, and what the agent is doing now.
import * as vscode from "vscode";
import { WAITING_ACTIVITY } from "./chat/model";
import type { SessionController, SessionViewState } from "./session";

export class StatusBar implements vscode.Disposable {
	private readonly item: vscode.StatusBarItem;
	private readonly disposables: vscode.Disposable[] = [];

	constructor(session: SessionController) {
		this.item = vscode.window.createStatusBarItem("agentd.status", vscode.StatusBarAlignment.Left, 999);
		this.item.name = "agentd";
		this.item.command = "agentd.focusChat";
		this.disposables.push(this.item, session.onDidChangeState((s) => this.render(s)));
		this.render(session.viewState());
		this.item.show();
	}

	private render(s: SessionViewState): void {
		const it = this.item;
		const c = s.connection;
		it.backgroundColor = undefined;
		const md = new vscode.MarkdownString(undefined, true);
		md.isTrusted = { enabledCommands: ["agentd.restart", "agentd.showLog", "agentd.pickModel", "agentd.pickMode"] };
		switch (c.kind) {
			case "starting":
				it.text = "$(loading~spin) agentd";
				md.appendMarkdown("Starting agentd…");
				break;
			case "stopped":
				it.text = "$(circle-slash) agentd";
				md.appendMarkdown("agentd is stopped. [Start](command:agentd.restart)");
				break;
			case "waiting":
				it.text = "$(debug-disconnect) agentd";
				it.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");
				md.appendText(c.message ?? "reconnecting");
				md.appendMarkdown("\n\n[Reconnect now](command:agentd.restart) · [Log](command:agentd.showLog)");
				break;
			case "failed":
				it.text = "$(error) agentd";
				it.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
				md.appendText(c.message ?? "agentd failed");
				if (c.fix) md.appendMarkdown(`\n\n**Fix:** ${c.fix}`);
				md.appendMarkdown("\n\n[Retry](command:agentd.restart) · [Log](command:agentd.showLog)");
				break;
			case "running": {
				const model = s.model || "agentd";
				if (s.running && s.activity === WAITING_ACTIVITY) it.text = `$(bell) ${model}: ${s.activity}`;
				else if (s.running) it.text = `$(loading~spin) ${model}: ${trim(s.activity ?? "working", 40)}`;
				else it.text = `$(sparkle) ${model}`;
				if (c.ollama && c.ollama !== "ok") {
					it.text = `$(warning) ${model}`;
					it.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");
					md.appendMarkdown(`**Model server:** ${escape(c.ollama)}\n\n`);
				} else if (c.modelProblem) {
					it.text = `$(warning) ${model}: not pulled`;
					it.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");
					md.appendMarkdown("**Model:** ");
					md.appendText(c.modelProblem);
					md.appendMarkdown(" · [Pick a model](command:agentd.pickModel)\n\n");
				}
				md.appendMarkdown(`**agentd** ${c.version ?? ""} · sandbox: ${c.sandbox || "none"}\n\n`);
				if (c.engine) md.appendMarkdown(`Engine: ${escape(c.engine)}\n\n`);
				md.appendMarkdown(`Model: [${model}](command:agentd.pickModel) · Mode: [${s.approvalMode}](command:agentd.pickMode)\n\n`);
				if (s.session) md.appendMarkdown(`Session: ${escape(s.session.title)}\n\n`);
				if (s.session?.instructions) md.appendText(`Using ${instructionsLabel(s.session.instructions)}\n\n`);
				for (const w of s.session?.warnings ?? []) md.appendText(`⚠ ${w}\n\n`);
				if (s.usage) md.appendMarkdown(`Context: ${s.usage.contextPercent}% of ${s.usage.contextLength.toLocaleString("en-US")} tokens\n\n`);
				md.appendMarkdown("Click to open the chat.");
				break;
			}
		}
		it.tooltip = md;
	}

	dispose(): void {
		for (const d of this.disposables) d.dispose();
	}
}

function trim(s: string, n: number): string {
	return s.length > n ? s.slice(0, n - 1) + "…" : s;
}

function escape(s: string): string {
	return s.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, "\\$&");
}

/** "AGENTS.md (1.2 KB)", as `agentd run` prints it. */
export function instructionsLabel(i: { path: string; bytes: number; truncated: boolean }): string {
	const size = i.bytes < 1024 ? `${i.bytes} B` : `${(i.bytes / 1024).toFixed(1)} KB`;
	return `${i.path} (${size}${i.truncated ? ", truncated to 8 KB" : ""})`;
}
