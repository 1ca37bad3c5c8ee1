// MCP servers a workspace proposes (.agentd/mcp.json, .mcp.json): when a session starts in a
// trusted workspace whose proposals are not approved yet, say so once and offer to approve each
// one, showing its exact definition; the command "agentd: Approve Workspace MCP Servers…" offers
// them at any time. An approval (mcp/approve, the record `agentd mcp approve` writes) applies from
// the next session on. An untrusted workspace gets nothing offered (the daemon lists none).

import * as vscode from "vscode";
import { errorMessage, type DaemonClient } from "./daemon/client";
import { Method, type MCPProposal } from "./protocol";
import { describeProposal, proposalTarget } from "./mcpFormat";

export class McpProposals {
	/** Definitions already offered after a session start (by hash): offered once per window. */
	private readonly offered = new Set<string>();

	constructor(
		private readonly daemon: DaemonClient,
		private readonly log: vscode.LogOutputChannel,
	) {}

	private async pending(workspaceFolder?: string): Promise<{ trusted: boolean; pending: MCPProposal[]; folder: string } | undefined> {
		try {
			const r = await this.daemon.request(Method.MCPProposals, workspaceFolder ? { workspaceFolder } : {});
			return { trusted: r.trusted, pending: r.proposals.filter((p) => p.state === "needsApproval"), folder: r.workspaceFolder };
		} catch (err) {
			this.log.warn(`mcp/proposals: ${errorMessage(err)}`);
			return undefined;
		}
	}

	/** After a session started: tell the user about proposals not approved yet (once each). */
	async sessionStarted(workspaceFolder?: string): Promise<void> {
		const r = await this.pending(workspaceFolder);
		if (!r || !r.trusted) return;
		const fresh = r.pending.filter((p) => p.hash && !this.offered.has(p.hash));
		if (!fresh.length) return;
		for (const p of fresh) this.offered.add(p.hash!);
		const names = fresh.map((p) => p.name).join(", ");
		const review = "Review…";
		const choice = await vscode.window.showInformationMessage(
			`agentd: this workspace proposes ${fresh.length === 1 ? "an MCP server" : `${fresh.length} MCP servers`} not approved yet: ${names}. ` +
				"Starting one runs the repository's code (in agentd's sandbox); approve each to use it from the next session on.",
			review,
			"Not now",
		);
		if (choice === review) await this.approveEach(fresh, r.folder);
	}

	/** The command: pick a proposal not approved yet, see its definition, approve it. */
	async approveCommand(): Promise<void> {
		const folder = vscode.workspace.workspaceFolders?.find((f) => f.uri.scheme === "file")?.uri.toString();
		const r = await this.pending(folder);
		if (!r) {
			void vscode.window.showWarningMessage("agentd: could not read this workspace's MCP proposals (see the log).");
			return;
		}
		if (!r.trusted) {
			void vscode.window.showInformationMessage("agentd: this workspace is not trusted, so the MCP servers it proposes are ignored and cannot be approved.");
			return;
		}
		if (!r.pending.length) {
			void vscode.window.showInformationMessage("agentd: this workspace proposes no MCP server that needs your approval.");
			return;
		}
		const picked = await vscode.window.showQuickPick(
			r.pending.map((p) => ({ label: p.name, description: p.file, detail: proposalTarget(p), p })),
			{ title: "Approve a workspace MCP server", placeHolder: "Which proposed server? Its exact definition is shown before you approve." },
		);
		if (picked) await this.approveEach([picked.p], r.folder);
	}

	private async approveEach(ps: MCPProposal[], folder: string): Promise<void> {
		for (const p of ps) {
			const approve = `Approve ${p.name}`;
			const choice = await vscode.window.showWarningMessage(
				`Approve the MCP server "${p.name}" that this workspace proposes? It runs: ${proposalTarget(p)}`,
				{ modal: true, detail: describeProposal(p) },
				approve,
			);
			if (choice !== approve) continue;
			try {
				const r = await this.daemon.request(Method.MCPApprove, { workspaceFolder: folder, name: p.name, hash: p.hash ?? "" });
				void vscode.window.showInformationMessage(`agentd: ${r.note}.`);
			} catch (err) {
				void vscode.window.showErrorMessage(`agentd: ${p.name} was not approved: ${errorMessage(err)}`);
			}
		}
	}
}
