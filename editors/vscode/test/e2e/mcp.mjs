// MCP in VS Code, with the real @modelcontextprotocol/server-everything (.ci/run installs it into
// $AGENTD_MCP_SERVERS, default /opt/agentd-e2e/mcp) proposed by the workspace's .agentd/mcp.json:
//   0. the workspace is not trusted: nothing is offered, and "Approve Workspace MCP Servers…"
//      says nothing can be approved;
//   1. a session starts in the trusted workspace: the editor says the workspace proposes a server
//      not approved yet, shows its exact definition in a dialog, and approves it through
//      mcp/approve (the record `agentd mcp approve` writes), for the next session;
//   2. in the next session the fake Ollama calls everything__echo: the notification and the chat
//      card show "everything › echo" and the exact arguments; approved, the card shows the result;
//      then everything__get-tiny-image: the card shows an image placeholder with its size.
import * as fs from "node:fs";
import * as path from "node:path";

// Timeouts only bound how long a failure takes to show; a loaded machine (CI with other jobs)
// is slower, never wrong: every timeout is scaled (E2E_TIMEOUT_SCALE, default 3).
const E2E_SLOW = Number(process.env.E2E_TIMEOUT_SCALE ?? 3);

const MARKER = "agentd-mcp-marker";
// Each run (E2E_REPEAT) proposes a new definition: the extension offers a definition once per window.
let runs = 0;

const script = (models) => ({
	models,
	turns: [
		{ name: "first", when: { lastUserContains: "say hello first" }, reply: { text: "Hello from the first session." } },
		{ name: "echo", when: { lastUserContains: "echo through mcp", lastRole: "user" }, reply: { text: "Calling the echo tool.", toolCalls: [{ name: "everything__echo", arguments: { message: MARKER } }] } },
		{ name: "image", when: { lastRole: "tool", lastContains: `Echo: ${MARKER}` }, reply: { toolCalls: [{ name: "everything__get-tiny-image", arguments: {} }] } },
		{ name: "after", when: { lastRole: "tool" }, repeat: true, reply: { text: "The echo and the image came back." } },
		{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
	],
});

/** The installed server's entry point, or undefined (with the reason) when it is not installed. */
function everythingEntry() {
	const dir = process.env.AGENTD_MCP_SERVERS || "/opt/agentd-e2e/mcp";
	const entry = path.join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js");
	return fs.existsSync(entry) ? { entry } : { why: `${entry} is missing (.ci/run installs it; set AGENTD_MCP_SERVERS)` };
}

export async function mcpScenario({ page, chat, fake }, h) {
	const { WS, RUN, OUT_DIR, models, palette, newSession, send, fakeReset, fakeRequests, waitFor, themedShots, say } = h;
	const { entry, why } = everythingEntry();
	if (!entry) {
		if (process.env.CI === "true") throw new Error(`the everything MCP server is not installed: ${why}`);
		say(`SKIP mcp: ${why}`);
		return;
	}
	const state = path.join(RUN, "xdg", "state", "agentd");
	const trust = path.join(state, "trusted-workspaces");
	const approvals = path.join(state, "mcp-approvals.json");
	const proposal = path.join(WS, ".agentd", "mcp.json");
	fs.mkdirSync(path.dirname(proposal), { recursive: true });
	fs.writeFileSync(proposal, JSON.stringify({ mcpServers: { everything: { command: "node", args: [entry], env: { GREETING: `from the workspace, run ${++runs}` } } } }, null, 2));
	fs.mkdirSync(state, { recursive: true });
	try {
		await fakeReset(fake, script(models));
		// 0. Not trusted yet: nothing is offered, and the command says why nothing can be approved.
		await newSession(chat);
		await send(chat, "Please say hello first");
		await chat.locator(".item.assistant", { hasText: "Hello from the first session." }).waitFor({ timeout: 30000 * E2E_SLOW });
		await palette(page, "agentd: Approve Workspace MCP Servers…");
		await page.locator(".notifications-toasts .notification-list-item", { hasText: "this workspace is not trusted" }).first().waitFor({ timeout: 15000 * E2E_SLOW });
		if (await page.locator(".notifications-toasts .notification-list-item", { hasText: "proposes an MCP server" }).count()) {
			throw new Error("an untrusted workspace's proposal was offered");
		}
		if (fs.existsSync(approvals)) throw new Error("an approval was recorded in an untrusted workspace");
		await palette(page, "Notifications: Clear All Notifications");

		// 1. Trusted, a session starts: the proposal is offered, with its exact definition.
		fs.writeFileSync(trust, fs.realpathSync(WS) + "\n");
		await fakeReset(fake, script(models));
		await newSession(chat);
		await send(chat, "Please say hello first");
		await chat.locator(".item.assistant", { hasText: "Hello from the first session." }).waitFor({ timeout: 30000 * E2E_SLOW });
		const offer = page.locator(".notifications-toasts .notification-list-item", { hasText: "proposes an MCP server not approved yet: everything" });
		await offer.waitFor({ timeout: 30000 * E2E_SLOW });
		await page.screenshot({ path: path.join(OUT_DIR, "30-mcp-proposal.png") });
		await offer.locator(".monaco-button", { hasText: "Review…" }).click();
		const dialog = page.locator(".monaco-dialog-box", { hasText: 'Approve the MCP server "everything"' });
		await dialog.waitFor({ timeout: 15000 * E2E_SLOW });
		const text = await dialog.innerText();
		for (const want of ["Proposed in: .agentd/mcp.json", "Command: node", entry, `Environment: GREETING=from the workspace, run ${runs}`, "Network: off", "next session"]) {
			if (!text.includes(want)) throw new Error(`the approval dialog does not show ${JSON.stringify(want)}:\n${text}`);
		}
		await page.screenshot({ path: path.join(OUT_DIR, "31-mcp-proposal-dialog.png") });
		await dialog.locator(".monaco-button", { hasText: "Approve everything" }).click();
		await page.locator(".notifications-toasts .notification-list-item", { hasText: "starts in new sessions" }).first().waitFor({ timeout: 15000 * E2E_SLOW });
		const recorded = await waitFor("the approval in mcp-approvals.json", () => fs.existsSync(approvals) && JSON.parse(fs.readFileSync(approvals, "utf8")), 10000);
		if (!recorded[fs.realpathSync(WS)]?.everything?.startsWith("sha256:")) throw new Error(`the approval was not recorded for the workspace: ${JSON.stringify(recorded)}`);
		await palette(page, "Notifications: Clear All Notifications");

		// 2. The next session has the server's tools: an MCP call is reviewed like a built-in one.
		await newSession(chat);
		await send(chat, "Please echo through mcp");
		const toast = page.locator(".notifications-toasts .notification-list-item", { hasText: "agentd wants to call everything › echo" });
		await toast.waitFor({ timeout: 60000 * E2E_SLOW });
		const toastText = await toast.innerText();
		if (!toastText.includes(`arguments {"message":"${MARKER}"}`)) throw new Error(`the notification does not show the exact arguments: ${toastText}`);
		const card = chat.locator(".item.tool", { hasText: "everything › echo" }).last();
		await card.locator(".badge.mcp").waitFor({ timeout: 10000 * E2E_SLOW });
		const args = await card.locator(".mcp-args pre").innerText();
		if (JSON.stringify(JSON.parse(args)) !== JSON.stringify({ message: MARKER }) || !args.includes("\n")) {
			throw new Error(`the chat card does not show the exact arguments pretty-printed: ${args}`);
		}
		await page.locator(".statusbar-item", { hasText: "1 tool call to review" }).first().waitFor({ timeout: 10000 * E2E_SLOW });
		await themedShots(page, "32-mcp-call-waiting");
		await toast.locator("a", { hasText: "Allow once" }).click();
		await toast.waitFor({ state: "detached", timeout: 20000 * E2E_SLOW });
		await card.locator(".result pre", { hasText: `Echo: ${MARKER}` }).waitFor({ timeout: 30000 * E2E_SLOW });

		// The image tool: approved in the chat card, its result shows a placeholder with the size.
		const imgCard = chat.locator(".item.tool", { hasText: "everything › get-tiny-image" }).last();
		await imgCard.locator(".actions button", { hasText: "Allow" }).first().click();
		const ph = imgCard.locator(".result-images .image-ph");
		await ph.first().waitFor({ timeout: 30000 * E2E_SLOW });
		const phText = await ph.first().innerText();
		if (!/^\[image image\/png, \d+(\.\d)? (B|KB)\]$/.test(phText)) throw new Error(`the image placeholder is ${JSON.stringify(phText)}`);
		await chat.locator(".item.assistant", { hasText: "The echo and the image came back." }).waitFor({ timeout: 30000 * E2E_SLOW });
		const toolMsgs = (await fakeRequests(fake)).flatMap((r) => (r.body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content ?? "")));
		if (!toolMsgs.some((m) => m.includes(`Echo: ${MARKER}`))) throw new Error(`the echo result did not reach the model: ${JSON.stringify(toolMsgs)}`);
		await themedShots(page, "33-mcp-results");
	} finally {
		fs.rmSync(path.join(WS, ".agentd"), { recursive: true, force: true });
		fs.rmSync(trust, { force: true });
		fs.rmSync(approvals, { force: true });
	}
}
