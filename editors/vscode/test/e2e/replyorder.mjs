// One model reply that changes three files (issue 25): the three reviews are pending at once, the
// chat shows the reply's cards in the model's call order, deciding them last file first (3, 2, 1)
// works, and the model's next request carries the three results in its call order. Then a reply
// that changes one file twice: the second change's card says it waits for the earlier change of
// that file, and is reviewed, against what the first left, once the first is decided.
import * as fs from "node:fs";
import * as path from "node:path";

// Timeouts only bound how long a failure takes to show; a loaded machine (CI with other jobs)
// is slower, never wrong: every timeout is scaled (E2E_TIMEOUT_SCALE, default 3).
const E2E_SLOW = Number(process.env.E2E_TIMEOUT_SCALE ?? 3);

const NOTE = "cart_note.txt";
const NOTE_TEXT = "Carts keep their prices in cents.\n";
const REASON = "leave the greeting as it is";

function replyOrderScript(models) {
	return {
		models,
		turns: [
			{ name: "read both", when: { lastUserContains: "three files at once", lastRole: "user" }, reply: { toolCalls: [{ name: "read", arguments: { path: "cart.go" } }, { name: "read", arguments: { path: "greet.go" } }] } },
			{
				name: "three files",
				when: { lastUserContains: "three files at once", lastRole: "tool" },
				reply: {
					toolCalls: [
						{ name: "edit", arguments: { path: "cart.go", old_string: "// Cart holds", new_string: "// Cart keeps" } },
						{ name: "edit", arguments: { path: "greet.go", old_string: "// Greet welcomes", new_string: "// Greet warmly welcomes" } },
						{ name: "write", arguments: { path: NOTE, content: NOTE_TEXT } },
					],
				},
			},
			{ name: "read cart", when: { lastUserContains: "cart.go twice", lastRole: "user" }, reply: { toolCalls: [{ name: "read", arguments: { path: "cart.go" } }] } },
			{
				name: "one file twice",
				when: { lastUserContains: "cart.go twice", lastRole: "tool" },
				reply: {
					toolCalls: [
						{ name: "edit", arguments: { path: "cart.go", old_string: "// Cart holds", new_string: "// Cart keeps" } },
						{ name: "edit", arguments: { path: "cart.go", old_string: "items in a cart, in cents.", new_string: "items in a cart, in euro cents." } },
					],
				},
			},
			{ name: "after", when: { lastRole: "tool" }, repeat: true, reply: { text: "Done with the files." } },
			{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
		],
	};
}

/** The tool messages of the last request to the model, in order. */
async function lastToolResults(fake, fakeRequests) {
	const reqs = await fakeRequests(fake);
	const last = reqs[reqs.length - 1];
	return (last?.body?.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content ?? ""));
}

/** The titles of the chat's tool cards, top to bottom, in lower case ("edit cart.go" before its
 * preview, "Edit cart.go" after). */
async function cardTitles(chat) {
	return (await chat.locator(".item.tool .tlabel").allInnerTexts()).map((t) => t.trim().toLowerCase());
}

export async function replyOrderScenario({ page, chat, fake }, h) {
	const { WS, OUT_DIR, CART, GREET, models, palette, newSession, send, fakeReset, fakeRequests, waitFor, readStats, say, themedShots } = h;
	const read = (f) => fs.readFileSync(path.join(WS, f), "utf8");
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	fs.writeFileSync(path.join(WS, "greet.go"), GREET);
	fs.rmSync(path.join(WS, NOTE), { force: true });
	await palette(page, "View: Close All Editors");
	await fakeReset(fake, replyOrderScript(models));
	await newSession(chat);
	await send(chat, "Please change three files at once");

	// All three reviews pending at once, before any is decided.
	const pending = await waitFor("the three reviews pending at once", () => {
		const p = readStats()?.pending ?? [];
		const byPath = (f) => p.find((x) => x.path === f);
		return byPath("cart.go") && byPath("greet.go") && byPath(NOTE) ? p : undefined;
	}, 30000);
	say(`pending: ${pending.map((p) => `${p.path} (${p.reviewId})`).join(", ")}`);
	// The cards in the model's call order (a batch once showed greet.go's card above cart.go's).
	const want = ["edit cart.go", "edit greet.go", `write ${NOTE}`];
	await waitFor(`three awaiting cards`, async () => (await chat.locator(".item.tool.st-awaitingApproval").count()) === 3, 20000);
	const titles = await cardTitles(chat);
	if (JSON.stringify(titles.slice(-3)) !== JSON.stringify(want)) throw new Error(`the reply's cards are ${JSON.stringify(titles)}, want ${JSON.stringify(want)} (the model's call order)`);
	await page.screenshot({ path: path.join(OUT_DIR, "40-reply-three-pending.png") });

	const card = (f) => chat.locator(".item.tool.st-awaitingApproval", { hasText: f });
	const gone = (f) => waitFor(`the review of ${f} decided`, () => !(readStats()?.pending ?? []).some((p) => p.path === f), 20000);
	// 3: the new file, accepted first.
	await card(NOTE).locator("button", { hasText: "Accept all" }).click();
	await gone(NOTE);
	await waitFor(`${NOTE} created`, () => fs.existsSync(path.join(WS, NOTE)) && read(NOTE) === NOTE_TEXT, 20000);
	if (read("cart.go") !== CART || read("greet.go") !== GREET) throw new Error("deciding the third file changed another file");
	// 2: greet.go, rejected with a reason.
	await card("greet.go").locator("button", { hasText: "Reject…" }).click();
	const input = page.locator(".quick-input-widget input");
	await input.waitFor({ state: "visible", timeout: 10000 * E2E_SLOW });
	await input.fill(REASON);
	await input.press("Enter");
	await gone("greet.go");
	// 1: cart.go, accepted last.
	await card("cart.go").locator("button", { hasText: "Accept all" }).click();
	await gone("cart.go");
	await waitFor("cart.go changed", () => read("cart.go").includes("// Cart keeps"), 20000);
	await chat.locator(".item.assistant", { hasText: "Done with the files." }).waitFor({ timeout: 30000 * E2E_SLOW });
	if (read("greet.go") !== GREET) throw new Error("the rejected greet.go changed");
	// The three results, in the model's call order (not the order decided).
	const results = (await lastToolResults(fake, fakeRequests)).slice(-3);
	const checks = [["cart.go", (r) => r.includes("cart.go") && !/rejected/i.test(r)], ["greet.go", (r) => r.includes(REASON)], [NOTE, (r) => r.includes(NOTE) && !/rejected/i.test(r)]];
	for (const [i, [f, ok]] of checks.entries()) {
		if (!results[i] || !ok(results[i])) throw new Error(`result ${i + 1} (${f}) is not in the model's call order: ${JSON.stringify(results)}`);
	}
	if (JSON.stringify((await cardTitles(chat)).slice(-3)) !== JSON.stringify(want)) throw new Error(`the cards moved after the decisions: ${JSON.stringify(await cardTitles(chat))}`);

	// A second change of the same file waits for the first, and says so on its card.
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	await newSession(chat);
	await send(chat, "Please change cart.go twice");
	await waitFor("the first change of cart.go pending", () => (readStats()?.pending ?? []).some((p) => p.path === "cart.go"), 30000);
	// Card 0 is the read.
	const first = chat.locator(".item.tool").nth(1);
	const second = chat.locator(".item.tool").nth(2);
	await second.locator(".activity.waits", { hasText: "Waits for the earlier change of cart.go" }).waitFor({ timeout: 10000 * E2E_SLOW });
	if ((readStats()?.pending ?? []).length !== 1) throw new Error(`more than the first change is pending: ${JSON.stringify(readStats()?.pending)}`);
	// The Pending Reviews view lists the whole reply: the first change's review, and the second
	// change marked as waiting, with what it waits for (it listed nothing for it before).
	const waiting = await waitFor("the second change listed as waiting", () => (readStats()?.waiting ?? []).find((w) => w.label === "cart.go"), 10000);
	say(`waiting: ${JSON.stringify(waiting)}`);
	await palette(page, "agentd: Focus on Pending Reviews View");
	const reviewsPane = page.locator(".pane").filter({ has: page.locator(".pane-header", { hasText: /pending reviews/i }) });
	const waitRow = reviewsPane.locator(".monaco-list-row", { hasText: "waiting for its earlier change" });
	await waitRow.waitFor({ timeout: 10000 * E2E_SLOW });
	if (!/cart\.go/.test(await waitRow.innerText())) throw new Error(`the waiting change's row does not name its file: ${await waitRow.innerText()}`);
	if ((await reviewsPane.locator(".monaco-list-row").count()) !== 2) throw new Error(`the Pending Reviews view does not list exactly the review and the waiting change: ${JSON.stringify(await reviewsPane.locator(".monaco-list-row").allInnerTexts())}`);
	await themedShots(page, "41-reply-change-waits");
	await first.locator("button", { hasText: "Accept all" }).click();
	// The second is reviewed next, against what the first left; its card no longer waits.
	await second.locator("button", { hasText: "Accept all" }).waitFor({ timeout: 20000 * E2E_SLOW });
	if ((await second.locator(".activity.waits").count()) !== 0) throw new Error("the second change still says it waits once it is up for review");
	await waitRow.waitFor({ state: "detached", timeout: 10000 * E2E_SLOW });
	if ((readStats()?.waiting ?? []).length) throw new Error(`a change is still listed as waiting once it is up for review: ${JSON.stringify(readStats()?.waiting)}`);
	await second.locator("button", { hasText: "Accept all" }).click();
	await waitFor("cart.go with both changes", () => read("cart.go").includes("// Cart keeps the prices of the items in a cart, in euro cents."), 20000);
	await chat.locator(".item.assistant", { hasText: "Done with the files." }).waitFor({ timeout: 30000 * E2E_SLOW });

	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	fs.writeFileSync(path.join(WS, "greet.go"), GREET);
	fs.rmSync(path.join(WS, NOTE), { force: true });
}
