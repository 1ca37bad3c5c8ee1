// A command's changes that need review (issue #22 item 2, issue #25 item 1), in the real editor:
// in yolo the scripted model runs one command that writes an ordinary file, a git hook
// (.husky/pre-commit) and an editor config (.vscode/settings.json). The ordinary file applies at
// once; the hook and the config come as two ordinary file reviews (inline lenses, the Pending
// Reviews view) labelled with the command, even in yolo. One is accepted, the other rejected: the
// accepted file is written with the command's content, the rejected one is not; the chat card
// links to the review still pending after the first decision; the model reads both outcomes.
// Before the kernel proposed a command's changes (6f7793e) no review comes: the changes are held
// ("NOT applied … nobody approved them") and the wait for the two reviews times out. Before the
// card's fix the card had no button left after the first decision.
import * as fs from "node:fs";
import * as path from "node:path";

// Timeouts only bound how long a failure takes to show; a loaded machine (CI with other jobs)
// is slower, never wrong: every timeout is scaled (E2E_TIMEOUT_SCALE, default 3).
const E2E_SLOW = Number(process.env.E2E_TIMEOUT_SCALE ?? 3);

const HOOK = ".husky/pre-commit";
const CONFIG = ".vscode/settings.json";
const ORDINARY = "cmdreview-ordinary.txt";
const HOOK_TEXT = "#!/bin/sh\nnpm test\n";
const CONFIG_TEXT = '{ "agentd.cmdreview": true }\n';
// Computed names: the command classifier does not see the hook and the config, so yolo runs the
// command without a question, and the sandbox's view of what it wrote is what asks.
const COMMAND =
	"d=.hus; v=.vsc; mkdir -p ${d}ky ${v}ode && printf '#!/bin/sh\\nnpm test\\n' > ${d}ky/pre-commit" +
	` && printf '${CONFIG_TEXT.replace(/\n/g, "\\n")}' > \${v}ode/settings.json && echo ordinary > ${ORDINARY}`;

const script = (models) => ({
	models,
	turns: [
		{ name: "hello", when: { lastUserContains: "say hello first" }, reply: { text: "Hello, the session is open." } },
		{ name: "run", when: { lastUserContains: "set up the hook", lastRole: "user" }, reply: { text: "Running the setup.", toolCalls: [{ name: "bash", arguments: { command: COMMAND } }] } },
		{ name: "done", when: { lastUserContains: "set up the hook", lastRole: "tool" }, repeat: true, reply: { text: "The setup is done as you decided." } },
		{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
	],
});

export async function cmdReviewScenario({ page, chat, fake }, h) {
	const { WS, OUT_DIR, models, palette, newSession, send, fakeReset, fakeRequests, toolMessages, waitFor, readStats, themedShots, say } = h;
	const file = (p) => path.join(WS, p);
	const read = (p) => (fs.existsSync(file(p)) ? fs.readFileSync(file(p), "utf8") : undefined);
	// The workspace may have a settings file of its own (code-server writes none, but keep it).
	const configBefore = read(CONFIG);
	const hadVscodeDir = fs.existsSync(file(".vscode"));
	// Each theme's screenshot without the theme picker over the review's lens: a style hides it
	// for the shot only (the picker stays open: closing it restores the theme).
	const shots = (name) =>
		themedShots(page, "", async (short) => {
			// The card's key hint is drawn in its button's colour (it was dark on High Contrast
			// Light's dark blue button).
			const keys = await chat.locator(".item.tool .actions button.primary").evaluateAll((bs) =>
				bs.map((b) => ({ text: b.textContent, button: getComputedStyle(b).color, kbd: b.querySelector("kbd") && getComputedStyle(b.querySelector("kbd")).color })),
			);
			for (const k of keys) if (k.kbd && k.kbd !== k.button) throw new Error(`${short}: the key of "${k.text}" is ${k.kbd} on a button whose text is ${k.button}`);
			// The command's code block (it wraps: the command is long) has one frame around it, not
			// one per wrapped line (High Contrast outlined each line box of an inline <code>).
			const frames = await chat.locator(".item.tool .cmd code, .md pre code").evaluateAll((els) =>
				els.map((el) => ({ text: (el.textContent ?? "").slice(0, 30), outline: getComputedStyle(el).outlineStyle, boxes: el.getClientRects().length, height: Math.round(el.getBoundingClientRect().height) })),
			);
			if (!frames.length) throw new Error(`${short}: the command's card shows no command block`);
			for (const f of frames) if (f.outline !== "none" && f.boxes > 1) throw new Error(`${short}: the code block "${f.text}…" has ${f.boxes} frames (one per wrapped line), want one around the block`);
			say(`${short}: command block frames ${JSON.stringify(frames)}`);
			const style = await page.addStyleTag({ content: ".quick-input-widget { opacity: 0 !important; }" });
			try {
				await page.screenshot({ path: path.join(OUT_DIR, `${name}-${short}.png`) });
			} finally {
				await style.evaluate((el) => el.remove());
			}
		});
	try {
		await palette(page, "View: Close All Editors");
		await fakeReset(fake, script(models));
		await newSession(chat);
		// The session exists after the first turn; yolo is set on it (not in the user settings).
		await send(chat, "Please say hello first");
		await chat.locator(".item.assistant", { hasText: "the session is open" }).waitFor({ timeout: 30000 * E2E_SLOW });
		await palette(page, "agentd: Set Approval Mode…");
		await page.locator(".quick-input-list .monaco-list-row", { hasText: "yolo" }).first().click();
		await chat.locator("#mode", { hasText: "yolo" }).waitFor({ timeout: 10000 * E2E_SLOW });

		// The Changes view is open (and listed, nothing yet) before the command runs: it refreshes by itself.
		const changes = page.locator(".pane").filter({ has: page.locator(".pane-header", { hasText: /^\s*changes/i }) });
		await palette(page, "agentd: Focus on Changes View");
		await changes.locator(".monaco-list-row", { hasText: /No turn has changed files/ }).waitFor({ timeout: 20000 * E2E_SLOW });
		await send(chat, "Please set up the hook");
		// Both changes come for review, in yolo: the status bar, the stats, the Pending Reviews view.
		const pending = await waitFor("both of the command's changes pending for review", () => {
			const p = readStats()?.pending ?? [];
			const hook = p.find((x) => x.path === HOOK);
			const config = p.find((x) => x.path === CONFIG);
			return hook && config ? { hook, config } : undefined;
		}, 30000);
		say(`reviews: ${HOOK} ${pending.hook.reviewId}, ${CONFIG} ${pending.config.reviewId}`);
		// The ordinary file applied at once, without a question; the two others wait.
		if (read(ORDINARY) !== "ordinary\n") throw new Error(`${ORDINARY} is not on disk while the reviews wait: ${JSON.stringify(read(ORDINARY))}`);
		if (read(HOOK) !== undefined) throw new Error(`${HOOK} was written before its review`);
		if (read(CONFIG) !== configBefore) throw new Error(`${CONFIG} was written before its review`);
		// The Changes view lists the running turn with the file the command applied, while its other
		// changes wait for review (it said "No turn has changed files" until the turn ended).
		await changes.locator(".monaco-list-row[aria-level='2']", { hasText: ORDINARY }).waitFor({ timeout: 20000 * E2E_SLOW });
		if (!(readStats()?.pending ?? []).some((x) => x.path === HOOK)) throw new Error("the hook's review was decided before the Changes view was checked");
		await palette(page, "agentd: Focus on Pending Reviews View");
		for (const p of [HOOK, CONFIG]) {
			await page.locator(".pane-body .monaco-list-row", { hasText: path.basename(p) }).first().waitFor({ timeout: 15000 * E2E_SLOW });
		}
		await page.locator(".statusbar-item", { hasText: "to review" }).first().waitFor({ timeout: 10000 * E2E_SLOW });

		// The first review opens by itself in the editor, with its lenses; its lens names the
		// command and the file. Before the manager asked for the lenses again (askLenses) this new
		// file's review had none in most fresh windows: the palette above, closing, focused it for
		// a moment and VS Code cancelled its lens request when the Pending Reviews view took the focus.
		await page.locator(".tabs-container .tab", { hasText: "pre-commit" }).first().waitFor({ timeout: 30000 * E2E_SLOW });
		const titleLens = page.locator(".codelens-decoration", { hasText: "from the command" });
		await titleLens.first().waitFor({ timeout: 30000 * E2E_SLOW }).catch(async () => {
			const editors = await page.locator(".editor-instance .monaco-editor").evaluateAll((els) => els.map((el) => `${el.getAttribute("data-uri")}: ${el.querySelectorAll(".view-zones > div").length} view zones`));
			throw new Error(`the review that opened by itself has no lenses (editors: ${JSON.stringify(editors)})`);
		});
		const title = await titleLens.first().innerText();
		if (!title.includes("d=.hus; v=.vsc; mkdir")) throw new Error(`the review's lens does not name the command: ${title}`);
		const first = title.includes(HOOK) ? HOOK : title.includes(CONFIG) ? CONFIG : undefined;
		if (!first) throw new Error(`the review's lens names neither ${HOOK} nor ${CONFIG}: ${title}`);
		const second = first === HOOK ? CONFIG : HOOK;
		say(`shown first: ${first}; lens: ${title}`);
		// The review says why the change needs review (it was only in the lens's tooltip and the chat
		// card), after the file's first line, in view: the lens row is full with the path, the command
		// and Accept all / Reject all on a 1500 px window.
		const want = first === HOOK ? "needs review: writes under .husky/ install git hooks" : "needs review: writes under .vscode/";
		const reason = await waitFor(`the review's reason "${want}" shown in the editor`, () =>
			page.evaluate((want) => {
				for (const el of document.querySelectorAll(".editor-instance .view-lines span")) {
					const c = getComputedStyle(el, "::after").content;
					if (!c || !c.includes(want)) continue;
					const editor = el.closest(".monaco-editor").getBoundingClientRect();
					const box = el.getBoundingClientRect();
					return { text: c, left: Math.round(box.left), editorRight: Math.round(editor.right) };
				}
				return undefined;
			}, want), 10000);
		if (reason.left >= reason.editorRight) throw new Error(`the review's reason starts outside the editor (${reason.left} ≥ ${reason.editorRight}): ${reason.text}`);
		const lensRow = await titleLens.first().evaluate((el) => {
			const editor = el.closest(".monaco-editor").getBoundingClientRect();
			const accept = [...el.querySelectorAll("a")].find((a) => a.textContent?.includes("Reject all"))?.getBoundingClientRect();
			return { editorRight: editor.right, rejectRight: accept?.right ?? Infinity };
		});
		if (lensRow.rejectRight > lensRow.editorRight) throw new Error(`the lens row's Reject all is cut off (${lensRow.rejectRight} > ${lensRow.editorRight})`);
		say(`reason: ${reason.text} (at ${reason.left} of ${reason.editorRight} px); lens Reject all ends at ${Math.round(lensRow.rejectRight)}`);
		// The chat's card of the command offers the review.
		const card = chat.locator(".item.tool", { hasText: "d=.hus" }).last();
		await card.locator(".actions button", { hasText: "Review in editor" }).waitFor({ timeout: 10000 * E2E_SLOW });
		await shots("40-command-review");

		// Decide the hook: accept; the config: reject. Whichever is shown first is decided first.
		const decide = async (p) => {
			const row = page.locator(".codelens-decoration", { hasText: p });
			await row.locator("a", { hasText: p === HOOK ? "Accept all" : "Reject all" }).first().click();
			const id = (p === HOOK ? pending.hook : pending.config).reviewId;
			await waitFor(`review ${id} of ${p} no longer pending`, () => !readStats()?.pending?.some((x) => x.reviewId === id), 20000);
		};
		await decide(first);
		if (first === HOOK) await waitFor(`${HOOK} written when accepted`, () => read(HOOK) === HOOK_TEXT, 20000);
		// The review that waits opens by itself (it takes the focus: wait for it before the shots).
		await page.locator(".tabs-container .tab.active", { hasText: path.basename(second) }).waitFor({ timeout: 20000 * E2E_SLOW });
		// The card still links to the review that waits, and the link shows it in the editor.
		const left = (second === HOOK ? pending.hook : pending.config).reviewId;
		const link = card.locator(`.actions button[data-do="show"][data-review="${left}"]`);
		await link.waitFor({ timeout: 10000 * E2E_SLOW }).catch(async () => {
			const buttons = await card.locator(".actions button").evaluateAll((bs) => bs.map((b) => `${b.textContent} (${b.dataset.review})`));
			throw new Error(`after ${first} was decided the command's chat card does not link to the review of ${second} (${left}); its buttons: ${JSON.stringify(buttons)}`);
		});
		await shots("41-command-review-second");
		await palette(page, "View: Close All Editors");
		await link.click();
		await page.locator(".codelens-decoration", { hasText: second }).first().waitFor({ timeout: 20000 * E2E_SLOW });
		await decide(second);

		await chat.locator(".item.assistant", { hasText: "The setup is done as you decided." }).waitFor({ timeout: 30000 * E2E_SLOW });
		if (read(HOOK) !== HOOK_TEXT) throw new Error(`the accepted ${HOOK} is not the command's: ${JSON.stringify(read(HOOK))}`);
		if (read(CONFIG) !== configBefore) throw new Error(`the rejected ${CONFIG} was written: ${JSON.stringify(read(CONFIG))}`);
		if (read(ORDINARY) !== "ordinary\n") throw new Error(`${ORDINARY} is gone after the reviews`);
		await waitFor("the review count gone", async () => (await page.locator(".statusbar-item", { hasText: "to review" }).count()) === 0);
		// The model reads both outcomes in the command's result.
		const result = toolMessages(await fakeRequests(fake)).find((m) => m.includes(HOOK) && m.includes(CONFIG));
		if (!result) throw new Error(`no command result names both files: ${JSON.stringify(toolMessages(await fakeRequests(fake)))}`);
		say("command result for the model:", JSON.stringify(result));
		const lineOf = (p) => result.split("\n").find((l) => l.startsWith("[") && l.includes(p)) ?? "";
		if (!/accepted by the user and written/.test(lineOf(HOOK))) throw new Error(`the model is not told ${HOOK} was accepted and written: ${result}`);
		if (!/NOT applied: the user rejected it/.test(lineOf(CONFIG))) throw new Error(`the model is not told ${CONFIG} was rejected: ${result}`);
	} finally {
		fs.rmSync(file(".husky"), { recursive: true, force: true });
		fs.rmSync(file(ORDINARY), { force: true });
		if (configBefore !== undefined) fs.writeFileSync(file(CONFIG), configBefore);
		else if (!hadVscodeDir) fs.rmSync(file(".vscode"), { recursive: true, force: true });
		else fs.rmSync(file(CONFIG), { force: true });
	}
}
