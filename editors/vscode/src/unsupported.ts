// The extension on a platform agentd does not run on (platform.ts): a notice, and the way to WSL.
import * as vscode from "vscode";

/** The command that reopens the folder in WSL (from the WSL extension). */
export const reopenInWsl = "remote-wsl.reopenInWSL";

/**
 * Activates the extension as a notice only: every contributed command and the chat view say why
 * agentd does not run and offer to reopen the folder in WSL.
 */
export function activateUnsupported(context: vscode.ExtensionContext, why: string): void {
	const offer = async () => {
		const reopen = "Reopen Folder in WSL";
		const pick = await vscode.window.showErrorMessage(why, reopen);
		if (pick !== reopen) return;
		try {
			await vscode.commands.executeCommand(reopenInWsl);
		} catch {
			// The WSL extension is not installed: show it.
			await vscode.commands.executeCommand("workbench.extensions.search", "ms-vscode-remote.remote-wsl");
		}
	};
	const contributed = (context.extension.packageJSON as { contributes?: { commands?: { command: string }[] } })
		.contributes?.commands ?? [];
	for (const c of contributed) context.subscriptions.push(vscode.commands.registerCommand(c.command, offer));
	const item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left);
	item.text = "$(warning) agentd: needs WSL";
	item.tooltip = why;
	item.command = contributed[0]?.command;
	item.show();
	context.subscriptions.push(
		item,
		vscode.window.registerWebviewViewProvider("agentd.chat", {
			resolveWebviewView(view) {
				view.webview.options = { enableScripts: false };
				const esc = (s: string) => s.replace(/[&<>"]/g, (ch) => `&#${ch.charCodeAt(0)};`);
				view.webview.html = `<!DOCTYPE html><html><head><meta charset="utf-8">` +
					`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'"></head>` +
					`<body style="padding:0 1em;font-family:var(--vscode-font-family);color:var(--vscode-foreground)">` +
					`<p>${esc(why)}</p></body></html>`;
			},
		}),
	);
	void offer();
}
