// The review defects a new user hit in a walk through VS Code (issue #25), each reproduced as
// described:
//   diffFocus      after a decision in the review's Diff view, the next file's review opens with the
//                  focus in its editor: the review keys work at once (they did nothing until Ctrl+1).
//   contrast       every text colour of every proposal surface (ghost text, the multi-line block,
//                  the lenses, the Diff view's proposed side) against its rendered background, in
//                  the four built-in themes, by contrast ratio (≥ 4.5:1); the Diff view's lenses
//                  sit on their hunks.
//   modelMissing   a model that is not pulled is said when the chat opens (status bar, chat), with
//                  the `ollama pull` fix and the models there are, before any prompt.
//   history        the chat input's prompt history: ↑ and ↓.
//   editProposal   "Edit proposal": the user changes the proposed file, saves; the user's version is
//                  written and the model is told it changed, and how.
import * as fs from "node:fs";
import * as path from "node:path";

// Timeouts only bound how long a failure takes to show; a loaded machine (CI with other jobs)
// is slower, never wrong: every timeout is scaled (E2E_TIMEOUT_SCALE, default 3).
const E2E_SLOW = Number(process.env.E2E_TIMEOUT_SCALE ?? 3);

/**
 * Every piece of text of the proposal surfaces on screen, with its colour, its rendered background
 * and their contrast ratio (WCAG 2). Backgrounds are composited from the editor's background, the
 * line's overlays (line and character decorations, diff backgrounds) and the element's own
 * ancestors; ghost text is the decoration's ::before/::after.
 */
async function measure(page, newFile = false) {
	return page.evaluate((newFile) => {
		const parse = (c) => {
			const m = /rgba?\(([^)]+)\)/.exec(c ?? "");
			if (!m) return undefined;
			const p = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
			return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
		};
		const over = (top, bottom) => {
			const a = top[3];
			return [0, 1, 2].map((i) => top[i] * a + bottom[i] * (1 - a)).concat(1);
		};
		const lum = (c) => {
			const f = (v) => {
				v /= 255;
				return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
			};
			return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
		};
		const ratio = (a, b) => {
			const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
			return (x + 0.05) / (y + 0.05);
		};
		const hex = (c) => "#" + c.slice(0, 3).map((v) => Math.round(v).toString(16).padStart(2, "0")).join("");
		/** The editor's own background (opaque). */
		const editorBg = (el) => {
			const ed = el.closest(".monaco-editor");
			for (const e of [ed?.querySelector(".monaco-editor-background"), ed, document.querySelector(".monaco-workbench")]) {
				const c = e && parse(getComputedStyle(e).backgroundColor);
				if (c && c[3] > 0) return over(c, [255, 255, 255, 1]);
			}
			return [255, 255, 255, 1];
		};
		/** el's background: its ancestors' backgrounds up to the editor, composited. */
		const ancestorsBg = (el, base) => {
			const chain = [];
			for (let e = el; e && !e.classList?.contains("monaco-editor"); e = e.parentElement) chain.push(e);
			let bg = base;
			for (const e of chain.reverse()) {
				const c = parse(getComputedStyle(e).backgroundColor);
				if (c && c[3] > 0) bg = over(c, bg);
			}
			return bg;
		};
		/** The overlays (line/char decorations) drawn under a view line of an editor. */
		const lineBg = (line, base) => {
			let bg = base;
			const ed = line.closest(".monaco-editor");
			const top = line.style.top;
			for (const row of ed?.querySelectorAll(".view-overlays > div") ?? []) {
				if (row.style.top !== top) continue;
				for (const d of row.children) {
					// Not the proposal's: the selection and the highlights of the word at the cursor.
					if (/selected-text|wordHighlight|selectionHighlight|findMatch|rangeHighlight/.test(d.className)) continue;
					const c = parse(getComputedStyle(d).backgroundColor);
					if (c && c[3] > 0) bg = over(c, bg);
				}
			}
			return bg;
		};
		const out = [];
		const add = (surface, text, fg, bg, opacity = 1) => {
			text = text.replace(/\u00a0/g, " ").trim();
			if (!text || !fg || fg[3] === 0) return;
			const eff = over([fg[0], fg[1], fg[2], fg[3] * opacity], bg);
			out.push({ surface, text: text.slice(0, 40), fg: hex(eff), bg: hex(bg), ratio: Math.round(ratio(eff, bg) * 100) / 100 });
		};
		// 1. Ghost text: the proposed text of a one-line change, at the end of (or before) a line.
		for (const line of document.querySelectorAll(".editor-group-container .monaco-editor .view-lines .view-line")) {
			const base = lineBg(line, editorBg(line));
			for (const sp of line.querySelectorAll("span")) {
				for (const pseudo of ["::after", "::before"]) {
					const cs = getComputedStyle(sp, pseudo);
					if (!cs.content || cs.content === "none" || cs.content === "normal" || cs.content === '""') continue;
					let bg = base;
					const own = parse(cs.backgroundColor);
					if (own && own[3] > 0) bg = over(own, bg);
					add("ghost text", cs.content.replace(/^"|"$/g, ""), parse(cs.color), bg);
				}
			}
		}
		// 2. The multi-line proposal block (a comment thread below its hunk): every token.
		for (const w of document.querySelectorAll(".review-widget")) {
			const base = editorBg(w);
			for (const el of w.querySelectorAll(".comment-body *, .head *")) {
				const own = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join("");
				if (!own.trim()) continue;
				add("proposal block", own, parse(getComputedStyle(el).color), ancestorsBg(el, base));
			}
		}
		// 3. The lenses (Accept / Reject / Diff …) above the hunks.
		for (const el of document.querySelectorAll(".editor-group-container .codelens-decoration a, .editor-group-container .codelens-decoration span")) {
			const own = [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join("");
			if (!own.trim()) continue;
			add("lens", own, parse(getComputedStyle(el).color), ancestorsBg(el, editorBg(el)));
		}
		// 4. A new file's proposal (the agentd-proposed document): every token of the active editor.
		if (newFile)
			for (const line of document.querySelectorAll(".editor-group-container.active .monaco-editor .view-lines .view-line")) {
				const base = lineBg(line, editorBg(line));
				// Bracket pair colours are the theme's (editorBracketHighlight.*), as in any editor.
				for (const sp of line.querySelectorAll("span > span")) add(/bracket-highlighting/.test(sp.className) ? "bracket pairs (theme)" : "new file", sp.textContent, parse(getComputedStyle(sp).color), base);
			}
		// 5. The Diff view's proposed side: every token on its (inserted-line) background.
		for (const line of document.querySelectorAll(".monaco-diff-editor .editor.modified .view-lines .view-line")) {
			const base = lineBg(line, editorBg(line));
			for (const sp of line.querySelectorAll("span > span")) add("diff (proposed side)", sp.textContent, parse(getComputedStyle(sp).color), base);
		}
		return out;
	}, newFile);
}

/** The lenses of the Diff view's proposed side, each with the lines right below and above it and
 * whether the diff editor draws them as inserted. */
async function lensPlacement(page) {
	return page.evaluate(() => {
		const ed = document.querySelector(".editor-group-container.active .monaco-diff-editor .editor.modified");
		if (!ed) return { error: "no diff editor" };
		const inserted = new Set();
		for (const row of ed.querySelectorAll(".view-overlays > div")) if (row.querySelector(".line-insert, .char-insert")) inserted.add(row.style.top);
		const lines = [...ed.querySelectorAll(".view-lines .view-line")]
			.map((l) => ({ top: l.getBoundingClientRect().top, text: l.textContent.replace(/\u00a0/g, " "), inserted: inserted.has(l.style.top) }))
			.sort((a, b) => a.top - b.top);
		const out = [];
		for (const z of ed.querySelectorAll(".codelens-decoration")) {
			const r = z.getBoundingClientRect();
			const below = lines.find((l) => l.top >= r.bottom - 1);
			const above = [...lines].reverse().find((l) => l.top < r.top);
			out.push({
				lens: z.textContent.replace(/\u00a0/g, " ").trim().slice(0, 60),
				below: below?.text ?? "",
				belowInserted: !!below?.inserted,
				above: above?.text ?? "",
				aboveInserted: !!above?.inserted,
				gap: below ? Math.round(below.top - r.bottom) : -1,
			});
		}
		return { lensCount: out.length, lenses: out };
	});
}

export async function diffFocusScenario({ page, chat, fake }, h) {
	const { WS, CART, GREET, scripts, palette, newSession, send, fakeReset, waitFor, lens, readStats } = h;
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	fs.writeFileSync(path.join(WS, "greet.go"), GREET);
	await palette(page, "View: Close All Editors");
	await fakeReset(fake, scripts.queue);
	await newSession(chat);
	await send(chat, "Please touch both files");
	await lens(page, "Accept all").first().waitFor({ timeout: 30000 * E2E_SLOW });
	const first = await waitFor("the first review in the stats", () => readStats()?.pending?.find((p) => p.path), 10000);
	const other = first.path === "cart.go" ? "greet.go" : "cart.go";
	const changed = { "cart.go": "// Cart keeps", "greet.go": "// Greet warmly" };
	// The first file in its Diff view, decided there with the keyboard.
	await page.locator(".codelens-decoration a").filter({ hasText: /^\s*Diff\s*$/ }).first().click();
	const diff = page.locator(".editor-group-container.active .monaco-diff-editor").first();
	await diff.locator(".editor.modified .codelens-decoration a", { hasText: "Accept all" }).waitFor({ timeout: 20000 * E2E_SLOW });
	await diff.locator(".editor.modified .view-lines").first().click();
	await diff.locator(".editor.modified .monaco-editor.focused, .editor.modified.focused").first().waitFor({ timeout: 20000 * E2E_SLOW }).catch(async () => {
		await page.locator(".editor-group-container.active .monaco-editor.focused").first().waitFor({ timeout: 10000 * E2E_SLOW });
	});
	await page.keyboard.press("Control+Alt+Shift+y");
	await waitFor(`${first.path} on disk with the accepted change`, () => fs.readFileSync(path.join(WS, first.path), "utf8").includes(changed[first.path]), 20000);
	// The next file's review opens with the focus in its editor, without Ctrl+1.
	await page.locator(".tabs-container .tab.active", { hasText: other }).waitFor({ timeout: 20000 * E2E_SLOW });
	await lens(page, "Accept all").first().waitFor({ timeout: 20000 * E2E_SLOW });
	await waitFor(`the focus in ${other}'s editor (not on the page body)`, () =>
		page.evaluate((name) => {
			const ed = document.activeElement?.closest(".monaco-editor");
			return !!ed && ed.closest(".editor-group-container.active") !== null && document.querySelector(".tabs-container .tab.active")?.textContent?.includes(name);
		}, other), 20000);
	await page.keyboard.press("Control+Alt+y");
	await waitFor(`${other} on disk with the accepted change (the key worked at once)`, () => fs.readFileSync(path.join(WS, other), "utf8").includes(changed[other]), 20000);
	await chat.locator(".item.assistant", { hasText: "Both files are updated" }).waitFor({ timeout: 20000 * E2E_SLOW });
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	fs.writeFileSync(path.join(WS, "greet.go"), GREET);
}

export async function contrastScenario({ page, chat, fake }, h) {
	const { WS, OUT_DIR, CART, scripts, palette, newSession, send, fakeReset, waitFor, lens, editorTab, themedShots, say } = h;
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	await palette(page, "View: Close All Editors");
	await fakeReset(fake, scripts.multiline);
	await newSession(chat);
	await send(chat, "Please add a farewell function");
	await editorTab(page, "cart.go");
	await page.locator(".review-widget", { hasText: "Farewell says goodbye" }).waitFor({ timeout: 30000 * E2E_SLOW });
	const all = [];
	const low = [];
	// agentd draws these (their colours are its choice); the lenses and the diff editor's own
	// rendering are coloured by the theme alone: measured and kept in contrast.json, not asserted.
	const OURS = new Set(["ghost text", "proposal block", "new file"]);
	const check = async (where, shortTheme, need) => {
		// The blocks are rendered again in a new theme: measure until that happened (or the deadline).
		let got = [];
		const lowOf = (ms) => ms.filter((m) => OURS.has(m.surface) && m.ratio < 4.5);
		await waitFor(`the proposal surfaces in ${shortTheme} (${where})`, async () => {
			got = await measure(page, need.includes("new file"));
			return need.every((s) => got.some((m) => m.surface === s)) && lowOf(got).length === 0;
		}, 5000).catch(() => undefined);
		for (const s of need) if (!got.some((m) => m.surface === s)) throw new Error(`${where} (${shortTheme}): no text of the surface "${s}" was measured`);
		for (const m of got) all.push({ theme: shortTheme, where, ...m });
		for (const m of lowOf(got)) low.push(`${shortTheme} · ${m.surface} · "${m.text}" ${m.fg} on ${m.bg}: ${m.ratio}:1`);
	};
	// Inline: the block (a comment thread), the one-line change's ghost text, the lenses.
	await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
	await page.keyboard.press("Control+End");
	await waitFor("the one-line proposal's ghost text on screen", async () => (await measure(page)).some((m) => m.surface === "ghost text"));
	await themedShots(page, "31-contrast-inline-end", (t) => check("inline, end of file", t, ["ghost text", "lens"]));
	await page.keyboard.press("Control+Home");
	await page.locator(".review-widget .comment-body", { hasText: "Farewell says goodbye" }).waitFor({ timeout: 10000 * E2E_SLOW });
	await themedShots(page, "32-contrast-inline-block", (t) => check("inline, the block", t, ["proposal block", "lens"]));
	// The Diff view: its proposed side, and its lenses on their hunks.
	await lens(page, "Diff").first().click();
	const diff = page.locator(".editor-group-container.active .monaco-diff-editor").first();
	await diff.locator(".editor.modified .codelens-decoration a", { hasText: "Accept hunk 1/2" }).waitFor({ timeout: 20000 * E2E_SLOW });
	const placement = [];
	await themedShots(page, "33-contrast-diff", async (t) => {
		await check("diff view", t, ["diff (proposed side)", "lens"]);
		placement.push({ theme: t, ...(await lensPlacement(page)) });
	});
	// A new file's proposal. First the diff's review is rejected from its file lens, at the top (a
	// click while the lenses are laid out again can miss: click until the review is settled).
	await diff.locator(".editor.modified .view-lines").first().click();
	await page.keyboard.press("Control+Home");
	const diffClosed = async () => (await page.locator(".tabs-container .tab", { hasText: "proposed by agentd" }).count()) === 0;
	for (let i = 0; !(await diffClosed()); i++) {
		if (i === 5) throw new Error("the diff's review was not settled by its Reject all lens");
		await diff.locator(".editor.modified .codelens-decoration a", { hasText: "Reject all" }).first().click({ timeout: 5000 * E2E_SLOW }).catch(() => undefined);
		await waitFor("the review's diff closed once settled", diffClosed, 5000).catch(() => undefined);
	}
	await chat.locator(".item.assistant", { hasText: "Added Farewell" }).waitFor({ timeout: 20000 * E2E_SLOW });
	await fakeReset(fake, newFileScript(scripts.multiline.models));
	await send(chat, "Please create the farewell file");
	await editorTab(page, "farewell.go");
	await lens(page, "Accept all").first().waitFor({ timeout: 30000 * E2E_SLOW });
	await themedShots(page, "35-contrast-new-file", (t) => check("new file", t, ["new file"]));
	await lens(page, "Reject all").first().click();
	await chat.locator(".item.assistant", { hasText: "Left it out" }).waitFor({ timeout: 20000 * E2E_SLOW });
	if (fs.existsSync(path.join(WS, "farewell.go"))) throw new Error("farewell.go was written although rejected");
	fs.writeFileSync(path.join(OUT_DIR, "contrast.json"), JSON.stringify({ measured: all, lensPlacement: placement }, null, 1));
	const lowest = (f) => Math.min(...all.filter(f).map((m) => m.ratio));
	say(`contrast: ${all.length} text colours measured; the lowest of agentd's surfaces ${lowest((m) => OURS.has(m.surface))}:1, of the theme's lenses ${lowest((m) => m.surface === "lens")}:1, of the diff editor's proposed side ${lowest((m) => m.surface.startsWith("diff"))}:1`);
	if (low.length) throw new Error(`${low.length} text colour(s) of the proposal surfaces below 4.5:1 (all measures in contrast.json):\n  ${[...new Set(low)].join("\n  ")}`);
	// Each hunk's lens sits right on its hunk as the diff editor draws it: the line below is the
	// first inserted one, the line above is not inserted.
	for (const p of placement) {
		for (const l of ["Accept hunk 1/2", "Accept hunk 2/2"]) {
			const got = p.lenses?.find((x) => x.lens.includes(l));
			if (!got) throw new Error(`${p.theme}: no lens "${l}" in the Diff view: ${JSON.stringify(p)}`);
			if (!got.belowInserted || got.aboveInserted)
				throw new Error(`${p.theme}: the lens "${l}" is not on the top of its hunk: above it ${JSON.stringify(got.above)} (${got.aboveInserted ? "inserted" : "unchanged"}), below it ${JSON.stringify(got.below)} (${got.belowInserted ? "inserted" : "unchanged"})`);
		}
	}
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
}

/** A reply that creates farewell.go. */
function newFileScript(models) {
	const content = "package shop\n\n// Farewell says goodbye to a customer.\nfunc Farewell(name string) string {\n\tif name == \"\" {\n\t\tname = \"customer\"\n\t}\n\treturn \"Goodbye, \" + name + \"!\"\n}\n";
	return {
		models,
		turns: [
			{ name: "write", when: { lastUserContains: "create the farewell file" }, reply: { toolCalls: [{ name: "write", arguments: { path: "farewell.go", content } }] } },
			{ name: "after", when: { lastRole: "tool" }, repeat: true, reply: { text: "Left it out." } },
			{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
		],
	};
}

export async function modelMissingScenario({ page, chat, fake }, h) {
	const { MODEL, scripts, palette, fakeReset, waitFor, themedShots, say } = h;
	// Ollama without the configured model: say so at once, when the connection (re)starts.
	await fakeReset(fake, { models: [{ name: "llama3.2:3b", capabilities: ["completion", "tools"], contextLength: 8192 }], turns: [] });
	await palette(page, "agentd: Restart Daemon Connection");
	const banner = chat.locator("#conn.bad");
	await banner.locator(".err-msg", { hasText: `ollama pull ${MODEL}` }).waitFor({ timeout: 30000 * E2E_SLOW });
	const text = await banner.innerText();
	say("model banner:", JSON.stringify(text));
	if (!text.includes("llama3.2:3b")) throw new Error(`the banner does not name the models Ollama has: ${text}`);
	if (!text.includes(`${MODEL} is not pulled`)) throw new Error(`the banner does not say the model is not pulled: ${text}`);
	const item = page.locator(".statusbar-item", { hasText: "not pulled" }).first();
	await item.waitFor({ timeout: 10000 * E2E_SLOW });
	await themedShots(page, "34-model-not-pulled");
	// Pulled meanwhile: "Check again" clears it.
	await fakeReset(fake, scripts.chat);
	await banner.locator("button", { hasText: "Check again" }).click();
	await waitFor("the model warning gone after Check again", async () => (await chat.locator("#conn.bad").count()) === 0 && (await page.locator(".statusbar-item", { hasText: "not pulled" }).count()) === 0, 30000);
	await page.locator(".statusbar-item", { hasText: MODEL }).first().waitFor({ timeout: 30000 * E2E_SLOW });
}

export async function historyScenario({ chat, fake }, h) {
	const { scripts, newSession, send, fakeReset } = h;
	await fakeReset(fake, scripts.chat);
	await newSession(chat);
	for (const p of ["first prompt of the history", "second prompt of the history"]) {
		await send(chat, p);
		await chat.locator(".item.turnEnd").nth((await chat.locator(".item.user").count()) - 1).waitFor({ state: "attached", timeout: 20000 * E2E_SLOW });
	}
	const input = chat.locator("#input");
	await input.click();
	await input.pressSequentially("a draft");
	const steps = [
		["ArrowUp", "second prompt of the history"],
		["ArrowUp", "first prompt of the history"],
		["ArrowDown", "second prompt of the history"],
		["ArrowDown", "a draft"],
	];
	for (const [key, want] of steps) {
		await input.press(key);
		const got = await input.inputValue();
		if (got !== want) throw new Error(`after ${key} the input holds ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
	}
	// A multi-line prompt: ↑ moves the caret within it until the first line.
	await input.fill("line one\nline two");
	await input.press("End");
	await input.press("ArrowUp");
	if ((await input.inputValue()) !== "line one\nline two") throw new Error("↑ on the second line replaced the prompt instead of moving the caret");
	await input.fill("");
}

export async function editProposalScenario({ page, chat, fake }, h) {
	const { WS, CART, scripts, palette, newSession, send, fakeReset, waitFor, lens, editorTab, themedShots, fakeRequests, toolMessages } = h;
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	await palette(page, "View: Close All Editors");
	await fakeReset(fake, scripts.review);
	await newSession(chat);
	await send(chat, "Please fix the double discount in cart.go");
	await editorTab(page, "cart.go");
	await lens(page, "Accept hunk 1/2").waitFor({ timeout: 30000 * E2E_SLOW });
	await lens(page, "Edit proposal").first().click();
	// The proposed file, editable, in its own tab.
	const ed = page.locator(".editor-group-container.active .monaco-editor").first();
	await ed.locator(".view-line", { hasText: "items, not quantities" }).waitFor({ timeout: 20000 * E2E_SLOW });
	const proposed = CART.replace("\ttotal -= c.Discount\n\ttotal -= c.Discount\n", "\ttotal -= c.Discount\n").replace("\treturn len(c.Prices)\n", "\treturn len(c.Prices) // items, not quantities\n");
	await ed.locator(".view-lines").click();
	await page.locator(".editor-group-container.active .monaco-editor.focused").first().waitFor({ timeout: 20000 * E2E_SLOW });
	await page.keyboard.press("Control+End");
	await page.keyboard.type("\n// Edited by the user before accepting.\n");
	await themedShots(page, "36-edit-proposal");
	if (fs.readFileSync(path.join(WS, "cart.go"), "utf8") !== CART) throw new Error("cart.go changed before the edited proposal was saved");
	await page.keyboard.press("Control+s");
	const users = proposed + "\n// Edited by the user before accepting.\n";
	await waitFor("cart.go on disk with the user's version", () => fs.readFileSync(path.join(WS, "cart.go"), "utf8") === users, 30000);
	await chat.locator(".item.assistant", { hasText: "applied once" }).waitFor({ timeout: 20000 * E2E_SLOW });
	const tools = toolMessages(await fakeRequests(fake));
	const result = tools.find((m) => m.includes("with the user's version"));
	if (!result) throw new Error(`the model was not told the user changed the proposal: ${JSON.stringify(tools)}`);
	if (!result.includes("+// Edited by the user before accepting.")) throw new Error(`the model's result does not show the user's change: ${result}`);
	await waitFor("the edited proposal's tab closed once accepted", async () => (await page.locator(".tabs-container .tab.dirty").count()) === 0 && (await lens(page, "Edit proposal").count()) === 0);
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
}
