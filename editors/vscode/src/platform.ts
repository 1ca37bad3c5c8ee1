// agentd runs on Linux (and, without a sandbox, macOS): its sandbox, its file locks and the shared
// daemon's Unix socket have no Windows build. On native Windows the extension says so once and
// points at WSL, where the whole extension runs on the Linux side (extensionKind "workspace"),
// instead of failing obscurely when the daemon does not start.

/** The reason agentd cannot run in this extension host, or undefined when it can. */
export function unsupportedPlatform(platform: NodeJS.Platform): string | undefined {
	if (platform !== "win32") return undefined;
	return "agentd does not run on Windows itself: its daemon needs Linux. Install WSL and open this folder in WSL " +
		"(the WSL extension, ms-vscode-remote.remote-wsl: “WSL: Reopen Folder in WSL”); agentd then runs inside WSL, " +
		"with its sandbox.";
}
