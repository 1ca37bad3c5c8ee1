// A reason per rejected hunk (issue #13), in the real editor: "Reject with reason…" on one hunk,
// by its key (Ctrl+Alt+R, the hunk at the cursor) and by its lens, records that hunk's reason;
// the hunk shows "Rejected: “reason”" until the file is settled; Undo forgets the reason; the
// file's decision carries it (hunkReasons) and the model reads it next to that hunk's ID.
import * as fs from "node:fs";
import * as path from "node:path";

// Timeouts only bound how long a failure takes to show; a loaded machine (CI with other jobs)
// is slower, never wrong: every timeout is scaled (E2E_TIMEOUT_SCALE, default 3).
const E2E_SLOW = Number(process.env.E2E_TIMEOUT_SCALE ?? 3);

export async function hunkReasonScenario({ page, chat, fake }, h) {
	const { WS, OUT_DIR, CART, scripts, palette, newSession, send, fakeReset, fakeRequests, waitFor, lens, lensRow, editorTab, focusEditorTop, toolMessages, themedShots } = h;
	const FIRST = "the second subtraction is the loyalty discount";
	const SECOND = "two discounts are intended: loyalty and coupon";
	const onlySecond = CART.replace("\treturn len(c.Prices)\n", "\treturn len(c.Prices) // items, not quantities\n");
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	await palette(page, "View: Close All Editors");
	await fakeReset(fake, scripts.review);
	await newSession(chat);
	await send(chat, "Please fix the double discount in cart.go");
	await editorTab(page, "cart.go");
	await lens(page, "Accept hunk 1/2").waitFor({ timeout: 30000 * E2E_SLOW });
	const input = page.locator(".quick-input-widget input");

	// The key rejects the hunk at the cursor (hunk 1, at the top) with a reason.
	await focusEditorTop(page);
	await page.keyboard.press("Control+Alt+r");
	await input.waitFor({ state: "visible", timeout: 10000 * E2E_SLOW });
	await input.fill(FIRST);
	await input.press("Enter");
	await lensRow(page, `Rejected: “${FIRST}”`).waitFor({ timeout: 10000 * E2E_SLOW });
	// Undo forgets the decision and its reason.
	await lens(page, "Undo").first().click();
	await waitFor("the rejected hunk's reason gone after Undo", async () => (await lensRow(page, "Rejected:").count()) === 0 && (await lens(page, "Accept hunk 1/2").count()) === 1);

	// The hunk's own lens does the same; the reason stays on the hunk until the file is settled.
	await lensRow(page, "Accept hunk 1/2").locator("a", { hasText: "Reject with reason…" }).click();
	await input.waitFor({ state: "visible", timeout: 10000 * E2E_SLOW });
	await input.fill(SECOND);
	await input.press("Enter");
	await lensRow(page, `Rejected: “${SECOND}” — waiting for 1 more hunk`).waitFor({ timeout: 10000 * E2E_SLOW });
	if (fs.readFileSync(path.join(WS, "cart.go"), "utf8") !== CART) throw new Error("cart.go changed before the file was settled");
	await themedShots(page, "14-hunk-reason");
	await lens(page, "Accept hunk 2/2").click();

	await waitFor("cart.go on disk with only hunk 2", () => fs.readFileSync(path.join(WS, "cart.go"), "utf8") === onlySecond, 20000);
	await waitFor("the review's lenses cleared", async () => (await lensRow(page, "Rejected:").count()) === 0 && (await lens(page, "Accept hunk").count()) === 0);
	await chat.locator(".item.assistant", { hasText: "applied once" }).waitFor({ timeout: 20000 * E2E_SLOW });
	const tools = toolMessages(await fakeRequests(fake));
	const result = tools.find((m) => m.includes("applied 1 of 2 hunks"));
	if (!result) throw new Error(`no partial edit result reached the model: ${JSON.stringify(tools)}`);
	const m = /Why the user rejected hunk (h[0-9a-f]+): (.*)/.exec(result);
	if (!m || m[2] !== SECOND) throw new Error(`the model was not told the rejected hunk's reason: ${result}`);
	if (!new RegExp(`rejected: ${m[1]} \\(`).test(result)) throw new Error(`the reason names ${m[1]}, which the result does not list as rejected: ${result}`);
	if (result.includes(FIRST)) throw new Error(`the undone reason reached the model: ${result}`);
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
}
