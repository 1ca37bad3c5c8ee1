// Issue 24: rewind from the chat. Two turns; "agentd: Rewind to Before a Turn…" lists the
// session's prompts; picking the second goes back to before it: the chat shows the session that
// continues (the first turn only), the file the second turn wrote is gone, the file the user
// changed since keeps the user's text, and the prompt box holds the second prompt, which is sent
// again from there.
import * as fs from "node:fs";
import * as path from "node:path";

// Timeouts only bound how long a failure takes to show; a loaded machine (CI with other jobs)
// is slower, never wrong: every timeout is scaled (E2E_TIMEOUT_SCALE, default 3).
const E2E_SLOW = Number(process.env.E2E_TIMEOUT_SCALE ?? 3);

export async function rewindScenario({ page, chat, fake }, d) {
	const { WS, models, OUT_DIR, palette, newSession, send, fakeReset, fakeRequests, waitFor } = d;
	const file = (n) => path.join(WS, n);
	for (const n of ["rewind-a.txt", "rewind-b.txt", "rewind-c.txt"]) fs.rmSync(file(n), { force: true });
	const write = (p, content) => ({ toolCalls: [{ name: "write", arguments: { path: p, content } }] });
	await fakeReset(fake, {
		models,
		turns: [
			{ name: "a", when: { lastUserContains: "rewind one" }, reply: write("rewind-a.txt", "a\n") },
			{ name: "a done", when: { lastUserContains: "rewind one", lastRole: "tool" }, reply: { text: "Wrote a." } },
			{ name: "b", when: { lastUserContains: "rewind two" }, reply: write("rewind-b.txt", "b\n") },
			{ name: "c", when: { lastUserContains: "rewind two", lastRole: "tool", lastContains: "rewind-b" }, reply: write("rewind-c.txt", "c\n") },
			{ name: "b done", when: { lastUserContains: "rewind two", lastRole: "tool" }, reply: { text: "Wrote b and c." } },
			{ name: "fallback", repeat: true, reply: { text: "Again from here." } },
		],
	});
	// Each write is accepted from its card in the chat.
	const accept = async (name) => {
		const card = chat.locator(".item.tool", { hasText: `Write ${name}` }).last();
		await card.locator("button", { hasText: "Accept all" }).first().click({ timeout: 30000 * E2E_SLOW });
	};
	await newSession(chat);
	await send(chat, "Please rewind one");
	await accept("rewind-a.txt");
	await chat.locator(".item.assistant", { hasText: "Wrote a." }).waitFor({ timeout: 30000 * E2E_SLOW });
	await send(chat, "Please rewind two");
	await accept("rewind-b.txt");
	await accept("rewind-c.txt");
	await chat.locator(".item.assistant", { hasText: "Wrote b and c." }).waitFor({ timeout: 30000 * E2E_SLOW });
	await waitFor("rewind-c.txt", () => fs.existsSync(file("rewind-c.txt")) || undefined);
	fs.writeFileSync(file("rewind-c.txt"), "mine\n");

	await palette(page, "agentd: Rewind to Before a Turn");
	const row = page.locator(".quick-input-list .monaco-list-row", { hasText: "Please rewind two" }).first();
	await row.waitFor({ timeout: 15000 * E2E_SLOW });
	await page.screenshot({ path: path.join(OUT_DIR, "29-rewind-picker.png") });
	await row.click();
	const input = chat.locator("#input");
	await waitFor("the prompt box to hold the rewound prompt", async () => (await input.inputValue()) === "Please rewind two" || undefined, 20000);
	await waitFor("the chat to show the session before the turn", async () => {
		const users = await chat.locator(".item.user").allInnerTexts();
		return users.length === 1 && users[0].includes("Please rewind one") ? true : undefined;
	}, 20000);
	if (fs.existsSync(file("rewind-b.txt"))) throw new Error("rewind-b.txt, written by the rewound turn, is still there");
	if (fs.readFileSync(file("rewind-c.txt"), "utf8") !== "mine\n") throw new Error("the user's change to rewind-c.txt was overwritten");
	if (fs.readFileSync(file("rewind-a.txt"), "utf8") !== "a\n") throw new Error("the first turn's file changed");
	await page.locator(".notifications-toasts .notification-list-item", { hasText: "rewind-c.txt left as it is" }).first().waitFor({ timeout: 15000 * E2E_SLOW });
	await page.screenshot({ path: path.join(OUT_DIR, "30-rewound.png") });
	await input.press("Enter");
	await chat.locator(".item.assistant", { hasText: "Again from here." }).waitFor({ timeout: 30000 * E2E_SLOW });
	const reqs = await fakeRequests(fake);
	const last = reqs[reqs.length - 1].body.messages;
	if (!String(last[last.length - 1].content).includes("Please rewind two")) throw new Error("the prompt sent again is not the rewound one");
	await palette(page, "Notifications: Clear All Notifications");
}
