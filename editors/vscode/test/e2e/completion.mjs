// Inline completion in a real VS Code: off by default (no completion model configured), turned on
// with the status bar's Completion item; typing shows the fake Ollama's streamed completion as
// ghost text, from the editor's unsaved text, and Tab accepts it.
import * as fs from "node:fs";
import * as path from "node:path";

// Timeouts only bound how long a failure takes to show; a loaded machine (CI with other jobs)
// is slower, never wrong: every timeout is scaled (E2E_TIMEOUT_SCALE, default 3).
const E2E_SLOW = Number(process.env.E2E_TIMEOUT_SCALE ?? 3);

const CODER = "qwen2.5-coder:1.5b-base";

const script = (models) => ({
	models: [...models, { name: CODER, capabilities: ["completion", "insert"], architecture: "qwen2" }],
	turns: [{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } }],
	generates: [{ name: "bye", repeat: true, when: { promptSuffix: "func Bye(" }, reply: { text: "name string) string {", chunkDelay: 5 } }],
});

/** The editors' text as shown (Monaco renders spaces as no-break spaces). */
async function shown(page, selector) {
	const texts = await page.locator(selector).allTextContents();
	return texts.join("\n").replace(/\u00a0/g, " ");
}

export async function completionScenario({ page, fake }, h) {
	const { WS, models, OUT_DIR, palette, openFile, fakeReset, waitFor, focusEditor, themedShots, say } = h;
	const file = path.join(WS, "bye.go");
	fs.writeFileSync(file, "package shop\n\n");
	await fakeReset(fake, script(models));
	const item = page.locator(".statusbar-item", { hasText: "Completion" });
	try {
		await openFile(page, "bye.go");
		await item.first().waitFor({ timeout: 20000 * E2E_SLOW });
		if (!(await item.first().innerHTML()).includes("circle-slash")) throw new Error("inline completion is on without a configured completion model");
		await item.first().click();
		await waitFor("the status bar to say completion is on", async () => (await item.first().innerHTML()).includes("codicon-sparkle"));
		await focusEditor(page);
		await page.keyboard.press("Control+End");
		await page.keyboard.type("func Bye(");
		// Ghost text is drawn inside the line, after the cursor: the line shows the completion while
		// the cursor stays after "func Bye(" (column 10); Tab moves it to the end (column 31).
		const line = "func Bye(name string) string {";
		const at = (col) => page.locator(".statusbar-item", { hasText: `Ln 3, Col ${col}` });
		try {
			await waitFor("the ghost text of the completion", async () => (await shown(page, ".monaco-editor .view-lines")).includes(line) && (await at(10).count()) > 0, 30000);
		} catch (err) {
			await page.screenshot({ path: path.join(OUT_DIR, "completion-no-ghost.png") });
			const gens = await (await fetch(`${fake}/_fake/generates`)).json();
			throw new Error(`${err.message}; generate requests: ${JSON.stringify(gens.map((g) => ({ prompt: g.body.prompt, clientGone: g.clientGone })))}; editor: ${await shown(page, ".monaco-editor .view-lines")}`);
		}
		await page.screenshot({ path: path.join(OUT_DIR, "completion-ghost.png") });
		const gens = await (await fetch(`${fake}/_fake/generates`)).json();
		const req = gens.at(-1)?.body ?? {};
		say("generate request:", JSON.stringify({ prompt: req.prompt, suffix: req.suffix, model: req.model }));
		if (req.prompt !== "package shop\n\nfunc Bye(" || req.model !== CODER) throw new Error(`the generate request is not the buffer before the cursor: ${JSON.stringify(req)}`);
		await page.keyboard.press("Tab");
		await waitFor("Tab to accept the ghost text (the cursor after it)", async () => (await shown(page, ".monaco-editor .view-lines")).includes(line) && (await at(31).count()) > 0);
		await themedShots(page, "completion");
		await item.first().click();
		await waitFor("the status bar to say completion is off", async () => (await item.first().innerHTML()).includes("circle-slash"));
	} finally {
		await palette(page, "File: Revert File").catch(() => undefined);
		await palette(page, "View: Close All Editors");
		fs.rmSync(file, { force: true });
	}
}
