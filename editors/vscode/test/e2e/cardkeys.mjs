// The chat card's approval buttons show their keys (issue #13: "show the keys where the actions
// are"), and the key shown works where the button is: Ctrl+Alt+Enter with the focus in the chat's
// input runs the pending command, and does not send what the user was typing there.
import * as path from "node:path";

// Timeouts only bound how long a failure takes to show; a loaded machine (CI with other jobs)
// is slower, never wrong: every timeout is scaled (E2E_TIMEOUT_SCALE, default 3).
const E2E_SLOW = Number(process.env.E2E_TIMEOUT_SCALE ?? 3);

export async function cardKeysScenario({ page, chat, fake }, d) {
	const { script, OUT_DIR, themedShots, newSession, send, fakeReset, fakeRequests, toolMessages, waitFor } = d;
	await fakeReset(fake, script);
	await newSession(chat);
	await send(chat, "Please run the marker command");
	const run = chat.locator(".item.tool.st-awaitingApproval .actions button", { hasText: "Run" }).first();
	await run.waitFor({ timeout: 30000 * E2E_SLOW });
	const key = (await run.locator("kbd").innerText()).trim();
	if (key !== "Ctrl+Alt+Enter") throw new Error(`the Run button shows the key "${key}", want Ctrl+Alt+Enter (agentd.review.approveCommand)`);
	await themedShots(page, "26-card-keys");
	// Type into the chat's input, then press the key there.
	const input = chat.locator("#input");
	await input.click();
	await input.fill("a draft I am still writing");
	await waitFor("the focus in the chat input", () => input.evaluate((el) => document.activeElement === el && document.hasFocus()), 10000);
	await page.keyboard.press("Control+Alt+Enter");
	const card = chat.locator(".item.tool", { hasText: "agentd-e2e-marker" }).last();
	await card.locator("pre", { hasText: "agentd-e2e-marker-42" }).first().waitFor({ timeout: 30000 * E2E_SLOW });
	await chat.locator(".item.assistant", { hasText: "printed the marker" }).waitFor({ timeout: 20000 * E2E_SLOW });
	if ((await input.inputValue()) !== "a draft I am still writing") throw new Error(`the key changed the chat input: ${JSON.stringify(await input.inputValue())}`);
	const users = await chat.locator(".item.user").count();
	if (users !== 1) throw new Error(`the key sent the draft: ${users} user messages`);
	const tools = toolMessages(await fakeRequests(fake));
	if (!tools.some((m) => m.includes("agentd-e2e-marker-42"))) throw new Error(`the command's output did not reach the model: ${JSON.stringify(tools)}`);
	await input.fill("");
	await page.screenshot({ path: path.join(OUT_DIR, "27-card-keys-ran.png") });
}
