// Two VS Code windows on one review (issue #13, defect 11): a second browser page on the same
// code-server is a second window with its own extension host, connected to the same shared daemon
// (`agentd connect`); it attaches to the first window's session with the session picker. A hunk
// accepted in window A must show as accepted in window B (no "Accept hunk 1/2" left there); an undo
// in A is undone in B; a hunk rejected with a reason in A shows in B with that reason; and the file
// settled in B must carry A's decisions: on disk, exactly the accepted hunk, and the model reads A's
// reason. The windows share per-hunk decisions through the daemon (review/hunkState, relayed as
// review/hunkStates). B's chat card for the edit shows it waiting for the review (as A's does)
// until the review is settled.
import * as fs from "node:fs";
import * as path from "node:path";

// Timeouts only bound how long a failure takes to show; a loaded machine (CI with other jobs)
// is slower, never wrong: every timeout is scaled (E2E_TIMEOUT_SCALE, default 3).
const E2E_SLOW = Number(process.env.E2E_TIMEOUT_SCALE ?? 3);

const PROMPT = "Please fix the double discount in cart.go, seen from two windows";

export async function twoWindowsScenario({ page, chat, fake }, d) {
	const { WS, CART, CART_ACCEPTED, script, url, MODEL, OUT_DIR, watchBrowser, palette, chatFrame, newSession, send, fakeReset, fakeRequests, toolMessages, waitFor, lens, lensRow, editorTab, openFile, say } = d;
	const REASON = "the second subtraction is the coupon, seen from window A";
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	await palette(page, "View: Close All Editors");
	await fakeReset(fake, script);
	await newSession(chat);
	await send(chat, PROMPT);
	await editorTab(page, "cart.go");
	await lens(page, "Accept hunk 1/2").waitFor({ timeout: 30000 * E2E_SLOW });
	// The chat card's approval buttons show their keys (as the lenses do).
	const reviewBtn = chat.locator(".item.tool.st-awaitingApproval .actions button", { hasText: "Review in editor" });
	await reviewBtn.waitFor();
	const key = (await reviewBtn.locator("kbd").innerText()).trim();
	if (key !== "Ctrl+Alt+.") throw new Error(`the "Review in editor" button shows the key "${key}", want Ctrl+Alt+. (agentd.review.next)`);

	// Window B: the same folder in a second page, attached to A's session.
	const pageB = await page.context().newPage();
	try {
		watchBrowser(pageB);
		await pageB.goto(url, { waitUntil: "commit", timeout: 120000 });
		await pageB.locator(".monaco-workbench").waitFor({ timeout: 60000 * E2E_SLOW });
		await pageB.locator(".statusbar-item", { hasText: MODEL }).first().waitFor({ timeout: 60000 * E2E_SLOW });
		await palette(pageB, "agentd: Open Chat");
		const chatB = chatFrame(pageB);
		await chatB.locator("#input").waitFor({ timeout: 30000 * E2E_SLOW });
		// B may have re-attached to A's session by itself (the workspace remembers the last one);
		// otherwise pick it.
		const attached = await pageB.locator(".statusbar-item", { hasText: "2 hunks to review" }).first().waitFor({ timeout: 3000 * E2E_SLOW }).then(() => true, () => false);
		if (!attached) {
			await palette(pageB, "agentd: Switch Session…");
			await pageB.locator(".quick-input-widget input").fill("seen from two windows");
			await pageB.locator(".quick-input-list .monaco-list-row", { hasText: "seen from two windows" }).first().click();
		}
		await pageB.locator(".statusbar-item", { hasText: "2 hunks to review" }).first().waitFor({ timeout: 20000 * E2E_SLOW });
		// (B may have restored cart.go's tab in the background: bring it to the front.)
		await openFile(pageB, "cart.go");
		await lens(pageB, "Accept hunk 1/2").waitFor({ timeout: 20000 * E2E_SLOW });
		// B's chat card for the edit says what A's says: waiting for the review, under the
		// daemon's label — not done (B attached mid-turn, from the session's history).
		const editCardB = chatB.locator(".item.tool", { hasText: "cart.go" }).filter({ has: chatB.locator(".actions button", { hasText: "Review in editor" }) });
		await editCardB.waitFor({ timeout: 10000 * E2E_SLOW });
		const cardState = async (card) => ({ cls: (await card.getAttribute("class")) ?? "", title: (await card.locator(".tlabel").innerText()).trim(), text: await card.innerText() });
		let b1 = await cardState(editCardB);
		if (!b1.cls.includes("st-awaitingApproval") || b1.title !== "Edit cart.go" || !b1.text.includes("Waiting for your approval in the editor")) {
			throw new Error(`window B's card for the edit waiting for review: class "${b1.cls}", title "${b1.title}", text ${JSON.stringify(b1.text)}; want st-awaitingApproval, "Edit cart.go", "Waiting for your approval in the editor…"`);
		}
		say("window B's card shows the edit waiting for review");

		// Accept hunk 1 in A: B shows it accepted, and offers it no more.
		await lens(page, "Accept hunk 1/2").click();
		await lensRow(page, "Accepted — waiting for 1 more hunk").waitFor({ timeout: 10000 * E2E_SLOW });
		await lensRow(pageB, "Accepted — waiting for 1 more hunk").waitFor({ timeout: 10000 * E2E_SLOW });
		await waitFor("window B to stop offering \"Accept hunk 1/2\"", async () => (await lens(pageB, "Accept hunk 1/2").count()) === 0, 10000);
		await pageB.locator(".statusbar-item", { hasText: "1 hunk to review" }).first().waitFor({ timeout: 10000 * E2E_SLOW });
		await pageB.screenshot({ path: path.join(OUT_DIR, "25-two-windows-b-after-a-accepted.png") });
		// One hunk accepted, one still to review: the call still waits, in B too.
		b1 = await cardState(editCardB);
		if (!b1.cls.includes("st-awaitingApproval")) throw new Error(`window B's card for the edit after A accepted one of two hunks: class "${b1.cls}", want st-awaitingApproval`);

		// Undo in A: B offers hunk 1 again.
		await lens(page, "Undo").first().click();
		await lens(page, "Accept hunk 1/2").waitFor({ timeout: 10000 * E2E_SLOW });
		await lens(pageB, "Accept hunk 1/2").waitFor({ timeout: 10000 * E2E_SLOW });
		await pageB.locator(".statusbar-item", { hasText: "2 hunks to review" }).first().waitFor({ timeout: 10000 * E2E_SLOW });

		// Reject hunk 2 in A with a reason: B shows it rejected, with A's reason.
		await lensRow(page, "Accept hunk 2/2").locator("a", { hasText: "Reject with reason…" }).click();
		const input = page.locator(".quick-input-widget input");
		await input.waitFor({ state: "visible", timeout: 10000 * E2E_SLOW });
		await input.fill(REASON);
		await input.press("Enter");
		const rejected = `Rejected: “${REASON.slice(0, 40)}`;
		await lensRow(page, rejected).waitFor({ timeout: 10000 * E2E_SLOW });
		await lensRow(pageB, rejected).waitFor({ timeout: 10000 * E2E_SLOW });
		await pageB.screenshot({ path: path.join(OUT_DIR, "26-two-windows-b-after-a-rejected-with-reason.png") });

		// Settle the file in B by accepting hunk 1: the hunk rejected in A is not applied, and the
		// model reads A's reason for it.
		await lens(pageB, "Accept hunk 1/2").click();
		await waitFor("cart.go on disk with exactly the hunk accepted in window B", () => fs.readFileSync(path.join(WS, "cart.go"), "utf8") === CART_ACCEPTED, 20000);
		await waitFor("window A's review lenses cleared", async () => (await lens(page, "Accept").count()) === 0 && (await lensRow(page, "waiting for").count()) === 0, 20000);
		await waitFor("window B's review lenses cleared", async () => (await lens(pageB, "Accept").count()) === 0 && (await lensRow(pageB, "waiting for").count()) === 0, 20000);
		await chat.locator(".item.assistant", { hasText: "applied once" }).waitFor({ timeout: 20000 * E2E_SLOW });
		const result = toolMessages(await fakeRequests(fake)).find((m) => m.includes("applied 1 of 2 hunks"));
		if (!result || !/Why the user rejected hunk h[0-9a-f]+: /.test(result) || !result.includes(REASON)) {
			throw new Error(`the model was not told window A's reason for the hunk rejected there: ${result}`);
		}
		// Only now, in B too, the edit is done.
		await chatB.locator(".item.tool.st-completed", { hasText: "Edit cart.go" }).waitFor({ timeout: 10000 * E2E_SLOW });
		const left = await chatB.locator(".item.tool.st-awaitingApproval").count();
		if (left !== 0) throw new Error(`window B still shows ${left} call(s) waiting for approval after the review was settled`);
	} catch (err) {
		await pageB.screenshot({ path: path.join(OUT_DIR, "fail-twoWindows-b.png") }).catch(() => undefined);
		throw err;
	} finally {
		await pageB.close();
		fs.writeFileSync(path.join(WS, "cart.go"), CART);
	}
}
