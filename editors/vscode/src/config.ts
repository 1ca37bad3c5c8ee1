import * as vscode from "vscode";

export type RevealOnReview = "background" | "focus" | "never";
export type CommandApprovalStyle = "notification" | "modal";

export interface Config {
	path: string;
	/** agentd.path was set by the user (else the bundled daemon is used when the extension has one). */
	pathSet: boolean;
	serverArgs: string[];
	model: string;
	ollamaHost: string;
	approvalMode: string;
	contextLength: number;
	revealOnReview: RevealOnReview;
	commandApproval: CommandApprovalStyle;
	includeActiveFile: boolean;
	/** agentd.completion.model: the inline completion model ("" : the daemon's). */
	completionModel: string;
}

export function readConfig(): Config {
	const c = vscode.workspace.getConfiguration("agentd");
	const i = c.inspect<string>("path");
	const set = i?.workspaceFolderValue ?? i?.workspaceValue ?? i?.globalValue;
	return {
		path: c.get<string>("path", "agentd") || "agentd",
		pathSet: typeof set === "string" && set !== "",
		serverArgs: c.get<string[]>("serverArgs", []) ?? [],
		model: c.get<string>("model", "") ?? "",
		ollamaHost: c.get<string>("ollamaHost", "") ?? "",
		approvalMode: c.get<string>("approvalMode", "ask") || "ask",
		contextLength: c.get<number>("contextLength", 0) ?? 0,
		revealOnReview: c.get<RevealOnReview>("revealOnReview", "background") ?? "background",
		commandApproval: c.get<CommandApprovalStyle>("commandApproval", "notification") ?? "notification",
		includeActiveFile: c.get<boolean>("includeActiveFile", true) ?? true,
		completionModel: c.get<string>("completion.model", "") ?? "",
	};
}

/** Settings that are sent in initializationOptions: changing them needs a reconnect. */
export const RESTART_SETTINGS = ["agentd.path", "agentd.serverArgs", "agentd.ollamaHost", "agentd.contextLength", "agentd.model", "agentd.completion.model"];
