// End-to-end tests of the agentd VS Code extension in a real VS Code (code-server in headless
// Debian Chromium, driven by playwright-core), with the real agentd binary and the scripted fake
// Ollama (ollama/ollamatest/cmd/fakeollama). Started by scripts/test-e2e.sh, which passes:
//
//   CS_BIN        code-server binary          AGENTD_BIN     agentd binary
//   FAKEOLLAMA    fakeollama binary           VSIX           the packaged extension
//   OUT_DIR       screenshots and results     CHROMIUM       /usr/bin/chromium
//   VSIX_PLATFORM the platform .vsix bundling the daemon (the "vsix" scenario)
//   BENCH=1       also run the benchmarks     E2E_ONLY       comma-separated scenario names
//   E2E_REPEAT=N  runs the scenarios N times in the same VS Code (not harness, bench, ollamaDown,
//                 missingBinary)
//
// Every run uses fresh user-data, extensions, XDG and workspace directories under a temp dir, and
// kills its process groups at the end. Prints "N passed, M failed" and exits non-zero on failure.
//
// Scenarios synchronise on state (DOM, editor, files, the extension's stats file, the fake's
// requests), each wait with a deadline that names what it waited for; never on fixed sleeps.
//
// Errors fail the scenario during which they happened (even when its steps passed):
//   - what the extension records in test mode (src/testmode.ts; AGENTD_VSCODE_E2E_ERRORS): its
//     error logs (including the chat webview's errors, which it forwards, and vscode-languageclient's
//     "[Error - …]" lines), failed commands, and unhandled rejections / uncaught exceptions whose
//     stack runs through the extension's files;
//   - Chromium: uncaught exceptions and console errors of the chat webview's frames (the webview
//     iframe whose URL carries extensionId=agentd.agentd, and its inner frame), and main-page
//     errors whose text or source names the extension (agentd.agentd or its install dir);
//   - code-server's extension host logs: [error] entries naming the extension.
// Everything else (workbench noise, other extensions) is counted and listed in the logs, not
// failed. A scenario declares the errors it provokes on purpose (`expect`); the harness tests
// itself first ("harness"): injected errors must be reported as failures naming them.

import { spawn, execFileSync } from "node:child_process";
import { once } from "node:events";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import readline from "node:readline";
import { createRequire } from "node:module";
import { buildFixture, diagnosticsScenario } from "./diagnostics.mjs";
import { mcpScenario } from "./mcp.mjs";
import { hunkReasonScenario } from "./hunkreason.mjs";
import { twoWindowsScenario } from "./windows.mjs";
import { cardKeysScenario } from "./cardkeys.mjs";
import { escapesScenario } from "./escapes.mjs";
import { rewindScenario } from "./rewind.mjs";
import { vsixScenario } from "./vsix.mjs";
import { contrastScenario, diffFocusScenario, editProposalScenario, historyScenario, modelMissingScenario } from "./walk.mjs";
import { completionScenario } from "./completion.mjs";
import { replyOrderScenario } from "./replyorder.mjs";
import { cmdReviewScenario } from "./cmdreview.mjs";

// Timeouts only bound how long a failure takes to show; a loaded machine (CI with other jobs)
// is slower, never wrong: every timeout is scaled (E2E_TIMEOUT_SCALE, default 3).
const E2E_SLOW = Number(process.env.E2E_TIMEOUT_SCALE ?? 3);

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");

const env = (k, d) => process.env[k] ?? d;
const CS_BIN = env("CS_BIN");
const AGENTD_BIN = env("AGENTD_BIN");
const FAKEOLLAMA = env("FAKEOLLAMA");
const VSIX = env("VSIX");
// The platform-specific .vsix with the bundled daemon (scripts/package-platform.mjs): the "vsix" scenario.
const VSIX_PLATFORM = env("VSIX_PLATFORM");
const OUT_DIR = env("OUT_DIR", path.resolve("out/vscode-e2e"));
const CHROMIUM = env("CHROMIUM", "/usr/bin/chromium");
const BENCH = env("BENCH", "") === "1";
const ONLY = env("E2E_ONLY", "").split(",").filter(Boolean);
const REPEAT = Math.max(1, Number(env("E2E_REPEAT", "1")) || 1);
const PORT = Number(env("E2E_PORT", String(18100 + Math.floor(Math.random() * 800))));
const MODEL = "qwen3:8b";

for (const [k, v] of Object.entries({ CS_BIN, AGENTD_BIN, FAKEOLLAMA, VSIX })) {
	if (!v || !fs.existsSync(v)) {
		console.error(`e2e: ${k} is not set or missing: ${v}`);
		process.exit(2);
	}
}
fs.mkdirSync(OUT_DIR, { recursive: true });

const RUN = fs.mkdtempSync(path.join(os.tmpdir(), "agentd-vscode-e2e-"));
const WS = path.join(RUN, "ws");
const RT = path.join(RUN, "rt");
const STATS = path.join(RUN, "stats.json");
const ERRORS = path.join(RUN, "extension-errors.jsonl");
const EXT_ID = "agentd.agentd";
const children = [];
const t = () => new Date().toISOString().slice(11, 23);
const say = (...a) => console.log(`[e2e ${t()}]`, ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- fixtures

const CART = `package shop

// Cart holds the prices of the items in a cart, in cents.
type Cart struct {
	Prices   []int
	Discount int
}

// Total is the sum of the prices minus the discount.
func Total(c *Cart) int {
	total := 0
	for _, p := range c.Prices {
		total += p
	}
	total -= c.Discount
	total -= c.Discount
	return clamp(total)
}

// clamp keeps a total from going below zero.
func clamp(total int) int {
	if total < 0 {
		return 0
	}
	return total
}

// Count is the number of items in the cart.
func Count(c *Cart) int {
	return len(c.Prices)
}
`;
const CART_ACCEPTED = CART.replace("\ttotal -= c.Discount\n\ttotal -= c.Discount\n", "\ttotal -= c.Discount\n");

const GREET = `package shop

// Greet welcomes a customer.
func Greet(name string) string {
	return "Good morning, " + name
}
`;

function writeWorkspace() {
	fs.mkdirSync(WS, { recursive: true });
	fs.writeFileSync(path.join(WS, "go.mod"), "module example.com/shop\n\ngo 1.22\n");
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	fs.writeFileSync(path.join(WS, "greet.go"), GREET);
	fs.writeFileSync(path.join(WS, "notes.md"), "# Notes\n\nNothing yet.\n");
}

const models = [{ name: MODEL, capabilities: ["completion", "tools"], contextLength: 32768 }];

const scripts = {
	chat: {
		models,
		turns: [
			{
				name: "answer",
				when: { lastUserContains: "explain the cart" },
				reply: {
					thinking: "The user wants a one sentence summary of cart.go.",
					text: "The cart sums the **prices** and subtracts the discount.\n\nFor example:\n\n```go\ntotal := Total(&Cart{Prices: []int{100, 250}})\n```\n\nThat is all.",
					chunkDelay: 15,
				},
			},
			{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
		],
	},
	review: {
		models,
		turns: [
			{ name: "read", when: { lastUserContains: "fix the double discount" }, reply: { text: "Let me read cart.go.", toolCalls: [{ name: "read", arguments: { path: "cart.go" } }] } },
			{
				name: "edit",
				when: { lastRole: "tool", lastContains: "package shop" },
				reply: {
					text: "I will remove the second subtraction and document Count.",
					toolCalls: [
						{
							name: "edit",
							arguments: {
								path: "cart.go",
								edits: [
									{ old_string: "\ttotal -= c.Discount\n\ttotal -= c.Discount\n", new_string: "\ttotal -= c.Discount\n" },
									{ old_string: "\treturn len(c.Prices)\n", new_string: "\treturn len(c.Prices) // items, not quantities\n" },
								],
							},
						},
					],
				},
			},
			{ name: "after edit", when: { lastRole: "tool" }, repeat: true, reply: { text: "Done: the discount is applied once." } },
			{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
		],
	},
	// The review's turn, with a second reply that changes greet.go: the turn still runs (that review
	// waits) after cart.go's change was applied.
	changesLive: {
		models,
		turns: [
			{ name: "read", when: { lastUserContains: "fix the double discount" }, reply: { text: "Let me read the files.", toolCalls: [{ name: "read", arguments: { path: "cart.go" } }, { name: "read", arguments: { path: "greet.go" } }] } },
			{
				name: "edit",
				when: { lastRole: "tool", lastContains: "package shop" },
				reply: {
					toolCalls: [
						{
							name: "edit",
							arguments: {
								path: "cart.go",
								edits: [
									{ old_string: "\ttotal -= c.Discount\n\ttotal -= c.Discount\n", new_string: "\ttotal -= c.Discount\n" },
									{ old_string: "\treturn len(c.Prices)\n", new_string: "\treturn len(c.Prices) // items, not quantities\n" },
								],
							},
						},
					],
				},
			},
			{ name: "greet", when: { lastRole: "tool" }, reply: { toolCalls: [{ name: "edit", arguments: { path: "greet.go", old_string: "Good morning, ", new_string: "Hello, " } }] } },
			{ name: "after edit", when: { lastRole: "tool" }, repeat: true, reply: { text: "Done: the discount is applied once." } },
			{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
		],
	},
	rejectReason: {
		models,
		turns: [
			{ name: "read", when: { lastUserContains: "make the greeting casual" }, reply: { toolCalls: [{ name: "read", arguments: { path: "greet.go" } }] } },
			{
				name: "edit",
				when: { lastRole: "tool", lastContains: "package shop" },
				reply: { toolCalls: [{ name: "edit", arguments: { path: "greet.go", old_string: "Good morning, ", new_string: "Hey, " } }] },
			},
			{ name: "after reject", when: { lastRole: "tool" }, repeat: true, reply: { text: "Understood, I keep the greeting formal." } },
			{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
		],
	},
	command: {
		models,
		turns: [
			{
				name: "run",
				when: { lastUserContains: "run the marker command" },
				reply: { text: "Running it.", toolCalls: [{ name: "bash", arguments: { command: "echo agentd-e2e-marker-$((40+2))", description: "print a marker" } }] },
			},
			{ name: "after run", when: { lastRole: "tool" }, repeat: true, reply: { text: "The command printed the marker." } },
			{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
		],
	},
	stop: {
		models,
		turns: [
			{
				name: "slow",
				when: { lastUserContains: "write a long essay" },
				reply: { text: "Here is a long essay that will take a while to write, one slow word at a time, and it never ends", chunkDelay: 150, hang: true },
			},
			{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
		],
	},
	mentions: {
		models,
		turns: [
			{ name: "answer", when: { lastUserContains: "what is in @cart.go" }, reply: { text: "The cart and its total." } },
			{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
		],
	},
	context: {
		models,
		turns: [
			{ name: "answer", when: { lastUserContains: "What does this do" }, reply: { text: "It greets the customer." } },
			{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
		],
	},
};

const benchReviewScript = {
	models,
	turns: [
		{ name: "read", when: { lastUserContains: "bench the review" }, reply: { toolCalls: [{ name: "read", arguments: { path: "notes.md" } }] } },
		{
			name: "edit",
			when: { lastRole: "tool", lastContains: "# Notes" },
			reply: { toolCalls: [{ name: "edit", arguments: { path: "notes.md", old_string: "Nothing yet.", new_string: "Benchmarks ran." } }] },
		},
		{ name: "after", when: { lastRole: "tool" }, repeat: true, reply: { text: "Ok." } },
		{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
	],
};

scripts.failure = {
	models,
	turns: [
		{ name: "model gone", when: { lastUserContains: "use the missing model" }, reply: { status: 404, error: `model '${MODEL}' not found` } },
		{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
	],
};
scripts.dirty = {
	models,
	turns: [
		{ name: "read", when: { lastUserContains: "say good day" }, reply: { toolCalls: [{ name: "read", arguments: { path: "greet.go" } }] } },
		{ name: "edit", when: { lastRole: "tool", lastContains: "package shop" }, reply: { toolCalls: [{ name: "edit", arguments: { path: "greet.go", old_string: "Good morning, ", new_string: "Good day, " } }] } },
		{ name: "after", when: { lastRole: "tool" }, repeat: true, reply: { text: "Changed the greeting." } },
		{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
	],
};

scripts.queue = {
	models,
	turns: [
		{ name: "read both", when: { lastUserContains: "touch both files" }, reply: { toolCalls: [{ name: "read", arguments: { path: "cart.go" } }, { name: "read", arguments: { path: "greet.go" } }] } },
		{
			name: "edit both",
			when: { lastRole: "tool", lastContains: "Greet" },
			reply: {
				toolCalls: [
					{ name: "edit", arguments: { path: "cart.go", old_string: "// Cart holds", new_string: "// Cart keeps" } },
					{ name: "edit", arguments: { path: "greet.go", old_string: "// Greet welcomes", new_string: "// Greet warmly welcomes" } },
				],
			},
		},
		{ name: "after", when: { lastRole: "tool" }, repeat: true, reply: { text: "Both files are updated." } },
		{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
	],
};

scripts.grant = {
	models,
	turns: [
		// touch writes, so it asks (echo alone is read-only and would just run).
		{ name: "first", when: { lastUserContains: "count twice" }, reply: { toolCalls: [{ name: "bash", arguments: { command: "touch count-one.txt" } }] } },
		{ name: "second", when: { lastRole: "tool" }, reply: { toolCalls: [{ name: "bash", arguments: { command: "touch count-two.txt" } }] } },
		{ name: "after", when: { lastRole: "tool" }, repeat: true, reply: { text: "Counted twice." } },
		{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
	],
};

// A 13-line insertion and a one-line change in one file (issue 13).
const FAREWELL = [
	"",
	"// Farewell says goodbye to a customer, politely, with the shop's name.",
	"func Farewell(name string) string {",
	"	if name == \"\" {",
	"		name = \"customer\"",
	"	}",
	"	msg := \"Goodbye, \" + name",
	"	msg += \", and thank you for shopping with us\"",
	"	msg += \" at the corner shop\"",
	"	msg += \"; come back soon\"",
	"	// farewell-line-12",
	"	return msg + \"!\"",
	"}",
];
scripts.multiline = {
	models,
	turns: [
		{ name: "read", when: { lastUserContains: "add a farewell" }, reply: { toolCalls: [{ name: "read", arguments: { path: "cart.go" } }] } },
		{
			name: "edit",
			when: { lastRole: "tool", lastContains: "package shop" },
			reply: {
				toolCalls: [
					{
						name: "edit",
						arguments: {
							path: "cart.go",
							edits: [
								{ old_string: "\treturn clamp(total)\n}\n", new_string: "\treturn clamp(total)\n}\n" + FAREWELL.join("\n") + "\n" },
								{ old_string: "\treturn len(c.Prices)\n", new_string: "\treturn len(c.Prices) // items, not quantities\n" },
							],
						},
					},
				],
			},
		},
		{ name: "after", when: { lastRole: "tool" }, repeat: true, reply: { text: "Added Farewell." } },
		{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
	],
};

scripts.approvals = {
	models,
	turns: [
		{ name: "first", when: { lastUserContains: "touch two files" }, reply: { toolCalls: [{ name: "bash", arguments: { command: "touch approval-one.txt" } }] } },
		{ name: "second", when: { lastRole: "tool" }, reply: { toolCalls: [{ name: "bash", arguments: { command: "touch approval-two.txt" } }] } },
		{ name: "after", when: { lastRole: "tool" }, repeat: true, reply: { text: "Touched both." } },
		{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
	],
};

function benchScript(tokens) {
	const words = [];
	for (let i = 0; i < tokens; i++) {
		if (i % 400 === 200) words.push("\n\n```go\nfunc f" + i + "() int {\n\treturn " + i + "\n}\n```\n\n");
		else if (i % 60 === 59) words.push("word" + i + ".\n\n");
		else if (i % 25 === 0) words.push("**bold" + i + "**");
		else words.push("word" + i);
	}
	return {
		models,
		turns: [
			{ name: "long", when: { lastUserContains: "stream ten thousand tokens" }, reply: { text: words.join(" "), chunkDelay: 1 } },
			{ name: "fallback", repeat: true, reply: { text: "Nothing is scripted for that." } },
		],
	};
}

// ---------------------------------------------------------------- processes

function startGroup(cmd, args, opts, logName) {
	const logFile = fs.openSync(path.join(RUN, logName), "a");
	const p = spawn(cmd, args, { ...opts, detached: true, stdio: opts.stdio ?? ["ignore", logFile, logFile] });
	children.push(p);
	return p;
}

async function startFake() {
	const p = spawn(FAKEOLLAMA, ["-script", writeJson("script-chat.json", scripts.chat), "-exit-with-stdin"], { stdio: ["pipe", "pipe", "pipe"], detached: true });
	children.push(p);
	p.stderr.on("data", (b) => fs.appendFileSync(path.join(RUN, "fakeollama.log"), b));
	const [url] = await once(readline.createInterface({ input: p.stdout }), "line");
	return url.trim();
}

function writeJson(name, obj) {
	const f = path.join(RUN, name);
	fs.writeFileSync(f, JSON.stringify(obj, null, 1));
	return f;
}

async function fakeReset(url, script) {
	const r = await fetch(`${url}/_fake/reset`, { method: "POST", body: JSON.stringify(script) });
	if (!r.ok) throw new Error(`fake reset: ${r.status} ${await r.text()}`);
}

async function fakeRequests(url) {
	const r = await fetch(`${url}/_fake/requests`);
	return r.json();
}

function killAll() {
	for (const p of children) {
		if (p.exitCode !== null || p.pid === undefined) continue;
		try {
			process.kill(-p.pid, "SIGTERM");
		} catch {
			// already gone
		}
	}
	// The shared daemon `agentd connect` started runs in its own session; it is identified by the
	// socket under this run's private runtime dir, so only our own daemon matches.
	try {
		const pids = execFileSync("pgrep", ["-f", `${RT}/agentd/`], { encoding: "utf8" }).split("\n").filter(Boolean);
		for (const pid of pids) {
			try {
				process.kill(Number(pid), "SIGTERM");
			} catch {
				// gone
			}
		}
	} catch {
		// pgrep exits 1 when nothing matches
	}
}

process.on("exit", killAll);
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => process.exit(130));

// ---------------------------------------------------------------- VS Code helpers

async function palette(page, title) {
	const input = page.locator(".quick-input-widget input");
	const row = page.locator(".quick-input-widget .quick-input-list .monaco-list-row", { hasText: title }).first();
	// The palette can close at any step when the workbench moves the focus: between opening and
	// typing, or after the row was listed and before the click (the row is then still in the DOM
	// but hidden). Open it again then, up to three times. (A review's thread whose link was clicked
	// took the focus back on each of its updates, a theme previewed included, until the review
	// manager replaced such threads: pickerKeepsFocus checks that without retrying.)
	for (let attempt = 1; ; attempt++) {
		try {
			await page.keyboard.press("F1");
			// F1 can be swallowed where the focus is (a link in a review's comment thread just
			// clicked): then the title bar's command center opens the same quick input.
			const shown = await input.waitFor({ state: "visible", timeout: 5000 * E2E_SLOW }).then(() => true, () => false);
			if (!shown) {
				say(`F1 did not open the command palette for "${title}": using the command center`);
				await page.locator(".command-center-center").first().click();
				await input.waitFor({ state: "visible", timeout: 5000 * E2E_SLOW });
			}
			await input.fill(`>${title}`, { timeout: 5000 * E2E_SLOW });
			await row.waitFor({ state: "visible", timeout: 15000 * E2E_SLOW });
			await row.click({ timeout: 5000 * E2E_SLOW });
			return;
		} catch (err) {
			if (attempt === 3) throw err;
			say(`the command palette closed before "${title}" was chosen (attempt ${attempt}): opening it again`);
			// Whatever is left open (a half-typed palette) goes before the next attempt; an Escape
			// with nothing open would reach the editor, so only then.
			if (await input.isVisible()) {
				await page.keyboard.press("Escape");
				await page.locator(".quick-input-widget").waitFor({ state: "hidden", timeout: 5000 * E2E_SLOW }).catch(() => {});
			}
		}
	}
}

function chatFrame(page) {
	return page.frameLocator("iframe.webview.ready").frameLocator("#active-frame");
}

async function webviewFrame(page) {
	for (let i = 0; i < 100; i++) {
		for (const f of page.frames()) {
			try {
				if (await f.evaluate(() => typeof window.__agentdPerf === "object")) return f;
			} catch {
				// cross-origin frames that are not ours, or detached ones
			}
		}
		await sleep(100);
	}
	throw new Error("chat webview frame not found");
}

async function newSession(chat) {
	await chat.locator("#new").click();
	await chat.locator("#empty").waitFor({ state: "visible" });
}

async function send(chat, text) {
	const input = chat.locator("#input");
	await input.click();
	await input.fill(text);
	await input.press("Enter");
}

function readStats() {
	try {
		return JSON.parse(fs.readFileSync(STATS, "utf8"));
	} catch {
		return undefined;
	}
}

async function waitFor(what, fn, timeoutMs = 20000, everyMs = 100) {
	const t0 = Date.now();
	let last;
	while (Date.now() - t0 < timeoutMs * E2E_SLOW) {
		try {
			last = await fn();
			if (last) return last;
		} catch (err) {
			last = err;
		}
		await sleep(everyMs);
	}
	throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ""}`);
}

/** Text of decoration ::after/::before pseudo elements in the editors (ghost text). */
async function ghostTexts(page) {
	return page.evaluate(() => {
		const out = [];
		for (const el of document.querySelectorAll(".view-lines span")) {
			for (const pseudo of ["::after", "::before"]) {
				const c = getComputedStyle(el, pseudo).content;
				if (c && c !== "none" && c !== "normal" && c !== '""') out.push(c);
			}
		}
		return out;
	});
}

/**
 * Whether some rendered editor line containing `text` has the given style: `st` gets
 * { line: text-decoration is line-through, opacity } of the line's text spans.
 */
async function lineStyle(page, text, pred) {
	const styles = await page.evaluate((text) => {
		const out = [];
		for (const l of document.querySelectorAll(".view-lines .view-line")) {
			if (!l.textContent.replace(/\u00a0/g, " ").includes(text)) continue;
			for (const sp of l.querySelectorAll("span span")) {
				const cs = getComputedStyle(sp);
				out.push({ line: cs.textDecorationLine.includes("line-through"), opacity: Number(cs.opacity) });
			}
		}
		return out;
	}, text);
	return styles.some(pred);
}

// The four built-in themes: name, the workbench's class, the screenshot suffix.
const THEMES = [
	["Default Light Modern", "vs", "light"],
	["Default High Contrast", "hc-black", "hc"],
	["Default High Contrast Light", "hc-light", "hclight"],
	["Default Dark Modern", "vs-dark", "dark"],
];

/** Opens the theme picker and moves down to `theme` so that it previews (the workbench gets `cls`).
 * The picker can close under the keys when the workbench moves the focus: then it is opened
 * again, up to three times. */
async function previewTheme(page, theme, cls) {
	const input = page.locator(".quick-input-widget input");
	for (let attempt = 1; ; attempt++) {
		await palette(page, "Preferences: Color Theme");
		try {
			await input.fill(theme, { timeout: 5000 * E2E_SLOW });
			await page.locator(".quick-input-widget .quick-input-list .monaco-list-row", { hasText: theme }).first().waitFor({ state: "visible", timeout: 15000 * E2E_SLOW });
			// The first row is "Browse Additional Color Themes…": move down to the theme (it previews).
			// "Default High Contrast" also lists "Default High Contrast Light".
			for (let i = 0; i < 6; i++) {
				await page.keyboard.press("ArrowDown");
				let previewed = await page.locator(`.monaco-workbench.${cls}`).waitFor({ timeout: 3000 * E2E_SLOW }).then(() => true, () => false);
				if (previewed && cls === "hc-black") previewed = (await page.locator(".monaco-workbench.hc-light").count()) === 0;
				if (previewed) return;
				if (!(await input.isVisible())) break;
			}
			throw new Error(`the theme picker did not preview ${theme}`);
		} catch (err) {
			if (attempt === 3) throw err;
			say(`the theme picker closed or did not preview ${theme} (attempt ${attempt}): opening it again`);
			if (await input.isVisible()) {
				await page.keyboard.press("Escape");
				await page.locator(".quick-input-widget").waitFor({ state: "hidden", timeout: 10000 * E2E_SLOW });
			}
			await page.locator(".monaco-workbench.vs-dark").waitFor({ timeout: 20000 * E2E_SLOW });
		}
	}
}

/**
 * Screenshots in light, both high contrasts and dark; `fn(short)` (optional) runs in each theme
 * before its screenshot (name "": none). The theme is previewed in the theme picker and the
 * picker is closed again (Escape restores the theme): choosing a theme would rewrite the user
 * settings, and code-server then drops the machine-scoped agentd.path the harness set.
 */
async function themedShots(page, name, fn) {
	for (const [theme, cls, short] of THEMES) {
		await previewTheme(page, theme, cls);
		try {
			if (fn) await fn(short);
			if (name) await page.screenshot({ path: path.join(OUT_DIR, `${name}-${short}.png`) });
		} finally {
			await page.keyboard.press("Escape");
			await page.locator(".quick-input-widget").waitFor({ state: "hidden", timeout: 10000 * E2E_SLOW });
			await page.locator(".monaco-workbench.vs-dark").waitFor({ timeout: 20000 * E2E_SLOW });
		}
	}
}

/** Focuses the active editor and puts the cursor on its first line, waiting for each (a key pressed
 * before the editor has focus is lost). */
async function focusEditorTop(page) {
	// The extension may still move the cursor to the next pending hunk after a decision (focus
	// follows the review): press again until the cursor stays on the first line.
	const top = page.locator(".statusbar-item", { hasText: "Ln 1, Col 1" });
	const deadline = Date.now() + 20000;
	for (;;) {
		await focusEditor(page);
		await page.keyboard.press("Control+Home");
		if (await top.waitFor({ timeout: 2000 * E2E_SLOW }).then(() => true, () => false)) return;
		if (Date.now() > deadline) throw new Error("timed out waiting for the cursor on the first line of the active editor");
	}
}

/** A clickable CodeLens by its text. */
function lens(page, text) {
	return page.locator(".codelens-decoration a", { hasText: text });
}

/** A CodeLens row containing the text (lenses without a command are not links). */
function lensRow(page, text) {
	return page.locator(".codelens-decoration", { hasText: text });
}

async function editorTab(page, name) {
	await page.locator(".tabs-container .tab", { hasText: name }).first().waitFor({ timeout: 20000 * E2E_SLOW });
}

/** The tool message agentd sent to the model after the given marker appeared. */
function toolMessages(reqs) {
	const out = [];
	for (const r of reqs) {
		const last = r.body.messages?.[r.body.messages.length - 1];
		if (last?.role === "tool") out.push(String(last.content ?? ""));
	}
	return out;
}

// ---------------------------------------------------------------- scenarios

const results = [];
const bench = {};

// ---------------------------------------------------------------- errors

/** Every scenario run, counted or not (the harness's injected ones), in order: errors are
 * attributed by time to the run whose window [t0, next run's t0) contains them. */
const runs = [];
/** Errors that belong to the extension, and the noise that does not. */
const problems = [];
const ignored = [];
/** Errors before the first scenario (activation) or that no run claimed. */
const orphanProblems = [];
let extErrorsOffset = 0;
const logOffsets = new Map();
/** The `id` query parameters of the chat webview's frames (outer iframe and its inner frame). */
const ourWebviewIds = new Set();
let extInstallDir = "";

function addProblem(p) {
	problems.push(p);
	const r = [...runs].reverse().find((x) => x.t0 <= p.at);
	if (r) r.problems.push(p);
	else orphanProblems.push(p);
}

/** What the extension recorded (src/testmode.ts), since the last read. */
function collectExtensionErrors() {
	let buf;
	try {
		buf = fs.readFileSync(ERRORS);
	} catch {
		return;
	}
	const text = buf.subarray(extErrorsOffset).toString("utf8");
	const end = text.lastIndexOf("\n");
	if (end < 0) return;
	extErrorsOffset += Buffer.byteLength(text.slice(0, end + 1));
	for (const line of text.slice(0, end).split("\n")) {
		if (!line.trim()) continue;
		try {
			const e = JSON.parse(line);
			addProblem({ at: e.at, source: `extension ${e.source}`, message: e.message + (e.stack && !e.message.includes(e.stack) ? `\n${e.stack}` : "") });
		} catch {
			addProblem({ at: Date.now(), source: "extension error file", message: `unparsable line: ${line}` });
		}
	}
}

/** Names the extension: its id, or a file of its install dir. */
function namesUs(text) {
	return text.includes(EXT_ID) || (extInstallDir !== "" && text.includes(extInstallDir));
}

function webviewIdOf(url) {
	try {
		return new URL(url).searchParams.get("id") ?? "";
	} catch {
		return "";
	}
}

function isOurFrame(frame) {
	for (let f = frame; f; f = f.parentFrame()) {
		const url = f.url();
		if (url.includes(`extensionId=${EXT_ID}`)) return true;
		const id = webviewIdOf(url);
		if (id && ourWebviewIds.has(id)) return true;
	}
	return false;
}

/** Chromium: console errors and uncaught exceptions, ours or noise. */
function watchBrowser(page) {
	const noteFrame = (f) => {
		if (f.url().includes(`extensionId=${EXT_ID}`)) {
			const id = webviewIdOf(f.url());
			if (id) ourWebviewIds.add(id);
		}
	};
	page.on("frameattached", noteFrame);
	page.on("framenavigated", noteFrame);
	page.on("console", (msg) => {
		if (msg.type() !== "error") return;
		const url = msg.location()?.url ?? "";
		const text = msg.text();
		const inWebview = ourWebviewIds.has(webviewIdOf(url)) || url.includes(`extensionId=${EXT_ID}`);
		const p = { at: Date.now(), source: inWebview ? "chat webview console" : "workbench console", message: `${text}${url ? ` (${url})` : ""}` };
		if (inWebview || namesUs(text) || namesUs(url)) addProblem(p);
		else ignored.push(p);
	});
	page.on("pageerror", (err) => {
		const stack = String(err?.stack ?? err);
		fs.appendFileSync(path.join(RUN, "page-errors.log"), `${stack}\n`);
		const inWebview = [...ourWebviewIds].some((id) => stack.includes(`id=${id}`));
		const p = { at: Date.now(), source: inWebview ? "chat webview exception" : "workbench exception", message: stack };
		if (inWebview || namesUs(stack)) addProblem(p);
		else ignored.push(p);
	});
}

function logFiles(dir, out = []) {
	let ents = [];
	try {
		ents = fs.readdirSync(dir, { withFileTypes: true });
	} catch {
		return out;
	}
	for (const e of ents) {
		const f = path.join(dir, e.name);
		// The extension's own output channel: its errors are already recorded (synchronously).
		if (e.isDirectory() && e.name !== EXT_ID) logFiles(f, out);
		else if (e.isFile() && /exthost.*\.log$/.test(e.name)) out.push(f);
	}
	return out;
}

/** code-server's extension host logs: [error] entries that name the extension. */
function collectExtHostLog() {
	for (const f of logFiles(path.join(RUN, "data", "logs"))) {
		let buf;
		try {
			buf = fs.readFileSync(f);
		} catch {
			continue;
		}
		const from = logOffsets.get(f) ?? 0;
		const text = buf.subarray(from).toString("utf8");
		// Entries start with a timestamp; read complete ones only (up to the last entry start).
		const starts = [...text.matchAll(/^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \[(\w+)\]/gm)];
		if (starts.length < 2 && !text.endsWith("\n")) continue;
		let consumed = 0;
		for (let i = 0; i < starts.length; i++) {
			const m = starts[i];
			const last = i === starts.length - 1;
			const entry = text.slice(m.index, last ? text.length : starts[i + 1].index);
			if (last && !entry.endsWith("\n")) break;
			consumed = m.index + entry.length;
			if (m[2] !== "error") continue;
			const at = new Date(m[1].replace(" ", "T")).getTime();
			const p = { at, source: `extension host log ${path.basename(f)}`, message: entry.trim() };
			if (namesUs(entry)) addProblem(p);
			else ignored.push(p);
		}
		logOffsets.set(f, from + Buffer.byteLength(text.slice(0, consumed)));
	}
}

function collectErrors() {
	collectExtensionErrors();
	collectExtHostLog();
}

function describeProblem(p) {
	return `[${p.source}] ${p.message.split("\n").slice(0, 6).join("\n    ")}`;
}

/**
 * Marks a run failed when errors not declared in its `expect` list were attributed to it. Runs
 * again at the end of the suite: an error logged late fails the run it belongs to.
 */
function settle(r) {
	const unexpected = r.problems.filter((p) => !r.expect.some((re) => re.test(p.message)));
	if (!unexpected.length || r.reportedProblems === unexpected.length) return;
	r.reportedProblems = unexpected.length;
	const msg = `${unexpected.length} error${unexpected.length === 1 ? "" : "s"} from the extension while it ran:\n  ${unexpected.map(describeProblem).join("\n  ")}`;
	if (r.result.ok) {
		r.result.ok = false;
		r.result.error = msg;
		console.log(`${r.injected ? "expected FAIL" : "FAIL"} ${r.name}${r.ended ? " (error reported after it ended)" : ""}: ${msg}`);
	} else if (!r.result.error.includes(msg)) {
		r.result.error += `\n${msg}`;
		console.log(`     ${r.name} also: ${msg}`);
	}
}

/**
 * Runs one scenario. `expect`: regexps of errors the scenario provokes on purpose. `injected`:
 * the harness's self-test; its result is returned, not counted.
 */
async function scenario(name, fn, ctx, { expect = [], injected = false } = {}) {
	if (!injected && ONLY.length && !ONLY.includes(name.replace(/#\d+$/, ""))) return undefined;
	collectErrors();
	for (const r of runs) settle(r);
	const t0 = Date.now();
	const run = { name, t0, expect, injected, problems: [], result: { name, ok: true, ms: 0 } };
	runs.push(run);
	if (!injected) results.push(run.result);
	say(`--- ${name}`);
	try {
		await fn(ctx);
		run.result.ms = Date.now() - t0;
		collectErrors();
		settle(run);
		if (run.result.ok) console.log(`${injected ? "unexpected ok" : "ok  "} ${name} (${run.result.ms} ms)`);
	} catch (err) {
		run.result.ms = Date.now() - t0;
		run.result.ok = false;
		run.result.error = String(err?.stack ?? err);
		run.bodyError = run.result.error;
		console.log(`FAIL ${name} (${run.result.ms} ms): ${err?.message ?? err}`);
		collectErrors();
		settle(run);
		try {
			await ctx.page.screenshot({ path: path.join(OUT_DIR, `fail-${name}.png`) });
		} catch {
			// the page may be gone
		}
		try {
			await ctx.page.keyboard.press("Escape");
		} catch {
			// ignore
		}
	}
	run.ended = true;
	return run;
}

/**
 * The harness's own test: errors injected into the extension (a command that throws, an
 * unhandled rejection, an uncaught exception in the chat webview) must each fail the scenario
 * they happen in, with a message naming the error. Those scenarios are not counted; this one is.
 */
async function harnessScenario(ctx) {
	const { page } = ctx;
	const injections = [
		{
			name: "injected-command-error",
			errors: [
				{ source: "extension", text: "agentd-e2e-injected-command-error" },
				{ source: "extension host log", text: "agentd-e2e-injected-command-error" },
			],
			fn: async () => {
				await palette(page, "agentd: Test: Throw an Error");
				// VS Code reports the failed command in a dialog with the error's message.
				const dialog = page.locator(".monaco-dialog-box", { hasText: "agentd-e2e-injected-command-error" });
				await dialog.waitFor({ timeout: 20000 * E2E_SLOW });
				await dialog.locator(".monaco-button", { hasText: "OK" }).click();
				await dialog.waitFor({ state: "detached", timeout: 10000 * E2E_SLOW });
				await waitFor("the extension host's log of the failed command", () => {
					collectExtHostLog();
					return problems.some((p) => p.source.startsWith("extension host log") && p.message.includes("agentd-e2e-injected-command-error"));
				}, 10000);
			},
		},
		{
			name: "injected-unhandled-rejection",
			errors: [
				{ source: "extension", text: "agentd-e2e-injected-rejection" },
				// VS Code itself reports it one second later, in its log and the workbench's console.
				{ source: "extension host log", text: "agentd-e2e-injected-rejection" },
				{ source: "workbench console", text: "agentd-e2e-injected-rejection" },
			],
			fn: async () => {
				await palette(page, "agentd: Test: Leave a Promise Rejection Unhandled");
				// Shown once the extension recorded the rejection.
				await page.locator(".notifications-toasts .notification-list-item", { hasText: "injected an unhandled rejection" }).first().waitFor({ timeout: 20000 * E2E_SLOW });
				await waitFor("VS Code's own reports of the rejection (extension host log, workbench console)", () => {
					collectExtHostLog();
					const seen = (src) => problems.some((p) => p.source.startsWith(src) && p.message.includes("agentd-e2e-injected-rejection"));
					return seen("extension host log") && seen("workbench console");
				}, 10000);
			},
		},
		{
			name: "injected-webview-error",
			errors: [
				// Forwarded by the view's error listener to the extension's log.
				{ source: "extension", text: "agentd-e2e-injected-webview-error" },
				// Chromium's console error of the webview frame (its Content-Security-Policy).
				{ source: "chat webview", text: "agentd-e2e-injected-csp-violation" },
			],
			fn: async () => {
				const frame = await webviewFrame(page);
				await frame.evaluate(() => {
					const img = document.createElement("img");
					img.src = "http://127.0.0.1:9/agentd-e2e-injected-csp-violation.png";
					document.body.append(img);
					setTimeout(() => {
						throw new Error("agentd-e2e-injected-webview-error");
					}, 0);
				});
				// Both reports arrive asynchronously: wait for them (the harness's collection of them
				// is what this scenario tests; the checks below make sure they failed it).
				await waitFor("the extension's record of the webview's exception", () => {
					collectExtensionErrors();
					return problems.some((p) => p.source.startsWith("extension") && p.message.includes("agentd-e2e-injected-webview-error"));
				}, 10000);
				await waitFor("Chromium's console error of the webview's CSP violation", () => problems.some((p) => p.source.startsWith("chat webview") && p.message.includes("agentd-e2e-injected-csp-violation")), 10000);
			},
		},
	];
	const wrong = [];
	for (const inj of injections) {
		const r = await scenario(inj.name, inj.fn, ctx, { injected: true });
		if (r.bodyError) wrong.push(`${inj.name}: the injection itself failed: ${r.bodyError}`);
		else if (r.result.ok) wrong.push(`${inj.name}: counted as a pass`);
		for (const e of inj.errors) {
			const reported = r.problems.some((p) => p.source.startsWith(e.source) && p.message.includes(e.text));
			if (!reported || !r.result.error?.includes(e.text)) wrong.push(`${inj.name}: its failure does not name "${e.text}" (from ${e.source}): ${r.result.error}`);
		}
	}
	await palette(page, "Notifications: Clear All Notifications");
	await page.locator(".notifications-toasts .notification-list-item").first().waitFor({ state: "detached", timeout: 10000 * E2E_SLOW });
	if (wrong.length) throw new Error(`the harness does not report injected errors:\n${wrong.join("\n")}`);
}

async function chatScenario({ page, chat, fake }) {
	await fakeReset(fake, scripts.chat);
	await newSession(chat);
	// The answer streams: first a partial message, then the finished one with rendered markdown. A
	// watcher in the webview records a streaming message when it appears, however briefly (a
	// loaded machine may show it for less than a poll).
	await chat.locator("body").evaluate(() => {
		window.__sawStreaming = false;
		const seen = () => {
			if (document.querySelector(".item.assistant.streaming")) window.__sawStreaming = true;
		};
		new MutationObserver(seen).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ["class"] });
	});
	await send(chat, "Please explain the cart in one sentence");
	const done = chat.locator(".item.assistant:not(.streaming)").last();
	await done.locator("strong", { hasText: "prices" }).waitFor({ timeout: 20000 * E2E_SLOW });
	await done.locator(".code pre code", { hasText: "Total(&Cart" }).waitFor();
	await chat.locator(".item.turnEnd").last().waitFor({ state: "attached" });
	if (!(await chat.locator("body").evaluate(() => window.__sawStreaming))) throw new Error("the answer never showed as streaming");
	// Thinking is there, collapsed.
	const thinking = done.locator("details.thinking");
	await thinking.waitFor();
	if (await thinking.evaluate((d) => d.open)) throw new Error("thinking should start collapsed");
	await thinking.locator("summary").click();
	await thinking.locator(".thinking-body", { hasText: "one sentence summary" }).waitFor();
	const userItems = await chat.locator(".item.user").count();
	if (userItems !== 1) throw new Error(`expected 1 user message, got ${userItems}`);
	// The prompt reached the model with the active-file context chip off (no editor open yet).
	const reqs = await fakeRequests(fake);
	const last = reqs.at(-1)?.body.messages.filter((m) => m.role === "user").at(-1)?.content ?? "";
	if (!String(last).includes("explain the cart")) throw new Error(`model did not get the prompt: ${last}`);
	await page.screenshot({ path: path.join(OUT_DIR, "01-chat-answer.png") });
}

async function reviewScenario({ page, chat, fake }) {
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	await fakeReset(fake, scripts.review);
	await newSession(chat);
	await send(chat, "Please fix the double discount in cart.go");
	// The file opens by itself (agentd.revealOnReview = background) with the inline review.
	await editorTab(page, "cart.go");
	await lens(page, "Accept hunk 1/2").waitFor({ timeout: 30000 * E2E_SLOW });
	const reviewSeenAt = Date.now();
	const ghosts = await waitFor("the proposed line as ghost text", async () => {
		const g = await ghostTexts(page);
		return g.some((c) => c.includes("items, not quantities")) ? g : undefined;
	});
	say("ghost text:", JSON.stringify(ghosts.filter((g) => g.includes("quantities"))));
	// The focus stayed in the chat input.
	const focusInChat = await chat.locator("#input").evaluate((el) => document.activeElement === el);
	if (!focusInChat) throw new Error("the review stole the focus from the chat input");
	// Nothing is written before a decision.
	if (fs.readFileSync(path.join(WS, "cart.go"), "utf8") !== CART) throw new Error("cart.go changed before the decision");
	// The status bar counts the pending hunks; the tool card offers to review in the editor.
	await page.locator(".statusbar-item", { hasText: "2 hunks to review" }).waitFor();
	await chat.locator(".item.tool.st-awaitingApproval .actions button", { hasText: "Review in editor" }).waitFor();
	await page.screenshot({ path: path.join(OUT_DIR, "02-review-inline.png") });
	const stats = readStats();
	const timing = stats?.reviews?.at(-1);
	if (timing?.renderedAt) bench.reviewToDecorationsMs = timing.renderedAt - timing.receivedAt;
	if (timing) bench.reviewToVisibleMs = reviewSeenAt - timing.receivedAt;

	// Accept the first hunk, reject the second.
	await lens(page, "Accept hunk 1/2").click();
	await lensRow(page, "Accepted — waiting for 1 more hunk").waitFor();
	await page.screenshot({ path: path.join(OUT_DIR, "03-review-one-accepted.png") });
	// The accepted deletion is shown truthfully: the line is struck through and faded (it goes away).
	await waitFor("the accepted deletion struck through and faded", () => lineStyle(page, "total -= c.Discount", (st) => st.line && st.opacity < 1));
	await page.locator(".codelens-decoration a").filter({ hasText: /^\s*Reject Ctrl\+Alt\+N\s*$/ }).first().click();
	await waitFor("cart.go on disk with exactly the accepted hunk", () => fs.readFileSync(path.join(WS, "cart.go"), "utf8") === CART_ACCEPTED, 20000);
	// The decorations are gone, and the model was told which hunk was applied and which not.
	await waitFor("review lenses cleared", async () => (await lens(page, "Accept").count()) === 0);
	await waitFor("ghost text cleared", async () => !(await ghostTexts(page)).some((c) => c.includes("quantities")));
	await chat.locator(".item.assistant", { hasText: "applied once" }).waitFor({ timeout: 20000 * E2E_SLOW });
	const tools = toolMessages(await fakeRequests(fake));
	const editResult = tools.find((m) => /hunk/i.test(m));
	if (!editResult) throw new Error(`no edit result sent to the model; tool messages: ${JSON.stringify(tools)}`);
	say("edit result for the model:", JSON.stringify(editResult));
	if (!/1 of 2/.test(editResult) || !/reject/i.test(editResult)) throw new Error(`the model was not told that 1 of 2 hunks was applied and one rejected: ${editResult}`);
	// The buffer is saved (document/save): no dirty marker on the tab.
	const dirty = await page.locator(".tabs-container .tab.dirty", { hasText: "cart.go" }).count();
	if (dirty) throw new Error("cart.go is left dirty after the accepted edit");
	await page.screenshot({ path: path.join(OUT_DIR, "04-review-decided.png") });

	// Undo in the editor is one step (workspace/applyEdit): not asserted here, it would change
	// the file again. Revert the turn from the chat instead: the file is restored.
	await chat.locator(".item.turnEnd button", { hasText: "Revert this turn" }).last().click();
	await waitFor("cart.go restored by revert", () => fs.readFileSync(path.join(WS, "cart.go"), "utf8") === CART, 20000);
	await chat.locator(".item.notice", { hasText: "restored cart.go" }).waitFor();
	await page.screenshot({ path: path.join(OUT_DIR, "05-reverted.png") });
}

/** A thread (comment widget) of the review, by a text it contains. */
function thread(page, text) {
	return page.locator(".review-widget", { hasText: text });
}

/**
 * A quick input the user opened keeps the focus while the extension re-renders a review's thread
 * on its own. A thread that was clicked (its Accept link) is given the focus back by VS Code each
 * time the extension updates it in place, which closes an open quick input: here the theme picker
 * previewing a theme, for which the extension re-renders the thread (its highlighting). Opened once
 * (palette() would retry), synchronized on the thread's re-rendered comment in the page.
 */
async function pickerKeepsFocus(page, threadText) {
	const marked = await page.evaluate((text) => {
		const w = [...document.querySelectorAll(".review-widget")].find((x) => x.textContent.includes(text));
		const c = w?.querySelector(".review-comment");
		if (c) c.dataset.agentdRendered = "before";
		return !!c;
	}, threadText);
	if (!marked) throw new Error(`no comment in the thread "${threadText}"`);
	await focusEditor(page);
	const input = page.locator(".quick-input-widget input");
	const row = (t) => page.locator(".quick-input-widget .quick-input-list .monaco-list-row", { hasText: t }).first();
	await page.keyboard.press("F1");
	await input.waitFor({ state: "visible", timeout: 5000 * E2E_SLOW });
	await input.fill(">Preferences: Color Theme");
	await row("Preferences: Color Theme").click({ timeout: 15000 * E2E_SLOW });
	await input.fill("Default Light Modern");
	await row("Default Light Modern").waitFor({ state: "visible", timeout: 15000 * E2E_SLOW });
	for (let i = 0; ; i++) {
		await page.keyboard.press("ArrowDown");
		if (await page.locator(".monaco-workbench.vs").waitFor({ timeout: 3000 * E2E_SLOW }).then(() => true, () => false)) break;
		if (i === 5) throw new Error("the theme picker did not preview Default Light Modern");
	}
	await page.waitForFunction(
		(text) => {
			const w = [...document.querySelectorAll(".review-widget")].find((x) => x.textContent.includes(text));
			const c = w?.querySelector(".review-comment");
			return c && c.dataset.agentdRendered !== "before";
		},
		threadText,
		{ timeout: 20000 * E2E_SLOW },
	);
	const stolen = await page.evaluate(() => {
		const a = document.activeElement;
		if (a?.closest(".quick-input-widget")) return "";
		return `${a?.tagName.toLowerCase()}.${[...(a?.classList ?? [])].join(".")} (${a?.closest(".review-widget") ? "in the review's thread" : "elsewhere"})`;
	});
	if (stolen) throw new Error(`re-rendering the review's thread took the focus from the theme picker (now on ${stolen}): the picker closes`);
	await page.keyboard.press("Escape");
	await page.locator(".quick-input-widget").waitFor({ state: "hidden", timeout: 10000 * E2E_SLOW });
	await page.locator(".monaco-workbench.vs-dark").waitFor({ timeout: 20000 * E2E_SLOW });
}

async function multilineScenario({ page, chat, fake, data }) {
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	await palette(page, "View: Close All Editors");
	await fakeReset(fake, scripts.multiline);
	await newSession(chat);
	await send(chat, "Please add a farewell function");
	await editorTab(page, "cart.go");
	// The 13-line proposal is real lines below its hunk, readable without hovering, highlighted.
	const block = thread(page, "Farewell says goodbye");
	await block.waitFor({ timeout: 30000 * E2E_SLOW });
	const text = await block.innerText();
	for (const l of FAREWELL.filter(Boolean)) if (!text.includes(l.trim())) throw new Error(`the proposal's line is not shown: ${l}\n${text}`);
	const focusInChat = await chat.locator("#input").evaluate((el) => document.activeElement === el);
	if (!focusInChat) throw new Error("the multi-line review stole the focus from the chat input");
	const colors = await block.locator(".comment-body span").evaluateAll((els) => new Set(els.map((e) => getComputedStyle(e).color)).size);
	if (colors < 2) throw new Error(`the proposed lines are not syntax-highlighted (${colors} color)`);
	// Nothing joined with ⏎ or glued to a line's end; the one-line change (at the end of the
	// file) stays ghost text.
	await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
	await page.keyboard.press("Control+End");
	const ghosts = await waitFor("the one-line proposal as ghost text", async () => {
		const g = await ghostTexts(page);
		return g.some((c) => c.includes("items, not quantities")) ? g : undefined;
	});
	if (ghosts.some((g) => g.includes("⏎") || g.includes("Farewell"))) throw new Error(`a multi-line proposal leaked into ghost text: ${JSON.stringify(ghosts)}`);
	await page.locator(".statusbar-item", { hasText: "2 hunks to review" }).waitFor();
	await page.keyboard.press("Control+Home");
	await themedShots(page, "19-review-multiline");

	// Accept the block from its thread; it stays shown, marked accepted, with Undo.
	await block.locator(".comment-body a", { hasText: "Accept" }).first().click();
	await thread(page, "Farewell says goodbye").locator(".comment-body", { hasText: "Accepted" }).waitFor({ timeout: 10000 * E2E_SLOW });
	await page.locator(".statusbar-item", { hasText: "1 hunk to review" }).waitFor();
	await pickerKeepsFocus(page, "Farewell says goodbye");
	await themedShots(page, "20-review-one-accepted");
	// Undo with the key, in the editor.
	await focusEditor(page);
	await page.keyboard.press("Control+Alt+u");
	await page.locator(".statusbar-item", { hasText: "2 hunks to review" }).waitFor({ timeout: 10000 * E2E_SLOW });
	await thread(page, "Farewell says goodbye").locator(".comment-body a", { hasText: "Accept" }).first().click();
	await page.locator(".statusbar-item", { hasText: "1 hunk to review" }).waitFor();
	// Reject the rest with a reason: the accepted hunk is applied, the other is not, the model reads why.
	const REASON = "no comments on Count please";
	// The file's lens (at the top) now offers to reject the rest. (If the extension moves the
	// cursor to the pending hunk after we went to the top, the lens scrolls away: go up again.)
	const rejectRest = lens(page, "Reject the rest with reason…");
	for (let tries = 0; ; tries++) {
		await focusEditorTop(page);
		if (await rejectRest.click({ timeout: 3000 * E2E_SLOW }).then(() => true, () => false)) break;
		if (tries >= 5) throw new Error("the file's lens 'Reject the rest with reason…' never became clickable at the top of cart.go");
	}
	const input = page.locator(".quick-input-widget input");
	await input.waitFor({ state: "visible" });
	await input.fill(REASON);
	await input.press("Enter");
	await waitFor("cart.go on disk with the farewell and without the comment", () => {
		const t = fs.readFileSync(path.join(WS, "cart.go"), "utf8");
		return t.includes("// farewell-line-12") && !t.includes("items, not quantities");
	}, 20000);
	await chat.locator(".item.assistant", { hasText: "Added Farewell" }).waitFor({ timeout: 20000 * E2E_SLOW });
	const tools = toolMessages(await fakeRequests(fake));
	const result = tools.find((m) => /hunk/i.test(m)) ?? "";
	if (!result.includes(REASON) || !/1 of 2/.test(result)) throw new Error(`the model was not told that 1 of 2 hunks was applied, and why not the other: ${JSON.stringify(tools)}`);
	await waitFor("the review's thread gone", async () => (await thread(page, "Farewell says goodbye").count()) === 0);
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
}

/** The review's diff is a review surface: the proposed side carries the hunk actions, the left side no decorations; it closes when settled. */
async function diffReviewScenario({ page, chat, fake }) {
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	await palette(page, "View: Close All Editors");
	await fakeReset(fake, scripts.review);
	await newSession(chat);
	await send(chat, "Please fix the double discount in cart.go");
	await editorTab(page, "cart.go");
	await lens(page, "Accept hunk 1/2").waitFor({ timeout: 30000 * E2E_SLOW });
	await page.locator(".codelens-decoration a").filter({ hasText: /^\s*Diff\s*$/ }).first().click();
	const diff = page.locator(".editor-group-container.active .monaco-diff-editor").first();
	await diff.waitFor({ timeout: 20000 * E2E_SLOW });
	const modified = diff.locator(".editor.modified");
	const original = diff.locator(".editor.original");
	await modified.locator(".codelens-decoration a", { hasText: "Accept hunk 1/2" }).waitFor({ timeout: 20000 * E2E_SLOW });
	await original.locator(".view-line", { hasText: "total -= c.Discount" }).first().waitFor({ timeout: 20000 * E2E_SLOW });
	const struck = await original.evaluate((el) => [...el.querySelectorAll(".view-line span span")].some((sp) => getComputedStyle(sp).textDecorationLine.includes("line-through")));
	if (struck) throw new Error("the diff's left (read-only) side carries agentd's review decorations");
	const leftLenses = await original.locator(".codelens-decoration").count();
	if (leftLenses) throw new Error(`the diff's left side has ${leftLenses} agentd lens(es)`);
	await themedShots(page, "22-review-diff");
	await modified.locator(".codelens-decoration a", { hasText: "Accept hunk 1/2" }).click();
	await modified.locator(".codelens-decoration", { hasText: "Accepted — waiting for 1 more hunk" }).waitFor({ timeout: 10000 * E2E_SLOW });
	await modified.locator(".codelens-decoration a").filter({ hasText: /^\s*Reject Ctrl\+Alt\+N\s*$/ }).first().click();
	await waitFor("cart.go on disk with exactly the accepted hunk (decided in the diff)", () => fs.readFileSync(path.join(WS, "cart.go"), "utf8") === CART_ACCEPTED, 20000);
	await waitFor("the review's diff closed once settled", async () => (await page.locator(".tabs-container .tab", { hasText: "proposed by agentd" }).count()) === 0);
	await chat.locator(".item.assistant", { hasText: "applied once" }).waitFor({ timeout: 20000 * E2E_SLOW });
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
}

/** The Changes view of the Changes pane. */
function changesPane(page) {
	return page.locator(".pane").filter({ has: page.locator(".pane-header", { hasText: /^\s*changes/i }) });
}

/** A turn's changes after the fact: the tree (turn → file → hunks), the diff against the checkpoint, undo a hunk, then the file. */
async function changesScenario({ page, chat, fake }) {
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	await palette(page, "View: Close All Editors");
	fs.writeFileSync(path.join(WS, "greet.go"), GREET);
	await fakeReset(fake, scripts.changesLive);
	await newSession(chat);
	// The view is open before the turn: it refreshes by itself when a call of the turn changed
	// files (while the turn runs) and when the turn ends.
	await palette(page, "agentd: Show a Turn's Changes");
	const pane = changesPane(page);
	await pane.locator(".monaco-list-row", { hasText: /No session yet|No turn has changed files/ }).waitFor({ timeout: 20000 * E2E_SLOW });
	await send(chat, "Please fix the double discount in cart.go");
	await lens(page, "Accept all").first().waitFor({ timeout: 30000 * E2E_SLOW });
	await lens(page, "Accept all").first().click();
	await waitFor("cart.go written with both hunks", () => fs.readFileSync(path.join(WS, "cart.go"), "utf8").includes("items, not quantities"), 20000);
	// The turn still runs (greet.go's review waits): the view lists it and cart.go already (it said
	// "No turn has changed files" until the turn ended).
	await waitFor("greet.go's review pending", () => (readStats()?.pending ?? []).some((p) => p.path === "greet.go"), 30000);
	const turnRow = pane.locator(".monaco-list-row[aria-level='1']", { hasText: "fix the double discount" });
	await turnRow.waitFor({ timeout: 20000 * E2E_SLOW });
	await pane.locator(".monaco-list-row[aria-level='2']", { hasText: "cart.go" }).waitFor({ timeout: 20000 * E2E_SLOW });
	if (await chat.locator(".item.assistant", { hasText: "applied once" }).count()) throw new Error("the turn ended before the Changes view was checked");
	if (!(readStats()?.pending ?? []).some((p) => p.path === "greet.go")) throw new Error("greet.go's review was decided before the Changes view was checked");
	await page.screenshot({ path: path.join(OUT_DIR, "22-turn-changes-running.png") });
	await lensRow(page, "greet.go").locator("a", { hasText: "Reject all" }).first().click();
	await waitFor("greet.go's review decided", () => !(readStats()?.pending ?? []).some((p) => p.path === "greet.go"), 20000);
	await chat.locator(".item.assistant", { hasText: "applied once" }).waitFor({ timeout: 20000 * E2E_SLOW });
	if (fs.readFileSync(path.join(WS, "greet.go"), "utf8") !== GREET) throw new Error("the rejected greet.go changed");
	await turnRow.waitFor({ timeout: 20000 * E2E_SLOW });
	const fileRow = pane.locator(".monaco-list-row[aria-level='2']", { hasText: "cart.go" });
	await fileRow.waitFor({ timeout: 20000 * E2E_SLOW });
	if (!/modified/.test(await fileRow.innerText())) throw new Error(`the file row does not say modified: ${await fileRow.innerText()}`);
	// Opening the file shows its diff against the turn's checkpoint: the pre-image on the left.
	await fileRow.click();
	await editorTab(page, "(before");
	const diff = page.locator(".editor-group-container.active .monaco-diff-editor").first();
	await waitFor("the pre-image on the left (the discount subtracted twice)", async () => (await diff.locator(".editor.original .view-line", { hasText: "total -= c.Discount" }).count()) === 2, 20000);
	await themedShots(page, "23-turn-changes");
	// Undo the second hunk only.
	const twistie = fileRow.locator(".monaco-tl-twistie.collapsible.collapsed");
	if (await twistie.count()) await twistie.click();
	const hunkRow = pane.locator(".monaco-list-row", { hasText: "hunk 2/2" });
	await hunkRow.waitFor({ timeout: 10000 * E2E_SLOW });
	await hunkRow.hover();
	await hunkRow.locator(".action-label[aria-label^='Undo This Hunk']").click();
	await waitFor("cart.go without the undone hunk, with the other", () => {
		const t = fs.readFileSync(path.join(WS, "cart.go"), "utf8");
		return !t.includes("items, not quantities") && t === CART_ACCEPTED;
	}, 20000);
	await page.locator(".notifications-toasts .notification-list-item", { hasText: "restored cart.go" }).first().waitFor({ timeout: 10000 * E2E_SLOW });
	// Then the rest of the file.
	const fileRow2 = pane.locator(".monaco-list-row[aria-level='2']", { hasText: "cart.go" }).first();
	await fileRow2.waitFor({ timeout: 20000 * E2E_SLOW });
	await fileRow2.hover();
	await fileRow2.locator(".action-label[aria-label^=\"Undo This File\"]").click();
	await waitFor("cart.go restored to its pre-image", () => fs.readFileSync(path.join(WS, "cart.go"), "utf8") === CART, 20000);
	// Every change of the turn is undone: the chat no longer offers "Revert this turn" (it failed).
	const end = chat.locator(".item.turnEnd").last();
	await end.locator(".reverted", { hasText: "Undone from the Changes view" }).waitFor({ timeout: 10000 * E2E_SLOW });
	if (await end.locator("button", { hasText: "Revert this turn" }).count()) throw new Error("the chat still offers to revert a turn undone from the Changes view");
	await palette(page, "Notifications: Clear All Notifications");
	await palette(page, "View: Close All Editors");
}

async function approvalsScenario({ page, chat, fake, data }) {
	await fakeReset(fake, scripts.approvals);
	await newSession(chat);
	await send(chat, "Please touch two files");
	const toast = page.locator(".notifications-toasts .notification-list-item", { hasText: "touch approval-one.txt" });
	await toast.waitFor({ timeout: 30000 * E2E_SLOW });
	// While the approval waits, the turn says so (status bar and chat), not "Thinking…".
	await page.locator(".statusbar-item", { hasText: "waiting for your review" }).first().waitFor({ timeout: 10000 * E2E_SLOW });
	await chat.locator("#activity", { hasText: "waiting for your review" }).waitFor({ timeout: 10000 * E2E_SLOW });
	await themedShots(page, "21-command-waiting");
	// Approved in the chat card: the notification closes (no stale buttons).
	await chat.locator(".item.tool .actions button", { hasText: "Run" }).first().click();
	await toast.waitFor({ state: "detached", timeout: 20000 * E2E_SLOW });
	await waitFor("approval-one.txt created", () => fs.existsSync(path.join(WS, "approval-one.txt")), 20000);
	// The second one is approved with the key (the workbench has the focus, not the chat input).
	const toast2 = page.locator(".notifications-toasts .notification-list-item", { hasText: "touch approval-two.txt" });
	await toast2.waitFor({ timeout: 30000 * E2E_SLOW });
	if (!(await toast2.innerText()).includes("Ctrl+Alt+Enter")) throw new Error("the notification does not show the approval key");
	await openFile(page, "notes.md");
	await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
	await page.locator(".editor-group-container.active .monaco-editor.focused").first().waitFor({ timeout: 20000 * E2E_SLOW });
	await page.keyboard.press("Control+Alt+Enter");
	await toast2.waitFor({ state: "detached", timeout: 20000 * E2E_SLOW });
	await waitFor("approval-two.txt created", () => fs.existsSync(path.join(WS, "approval-two.txt")), 20000);
	await chat.locator(".item.assistant", { hasText: "Touched both" }).waitFor({ timeout: 20000 * E2E_SLOW });
	await waitFor("no agentd notification left", async () => (await page.locator(".notifications-toasts .notification-list-item", { hasText: "agentd wants" }).count()) === 0);
	for (const f of ["approval-one.txt", "approval-two.txt"]) fs.rmSync(path.join(WS, f), { force: true });
}

async function keyboardScenario({ page, chat, fake }) {
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
	// Decide the first file with the keyboard in its editor.
	await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
	await page.locator(".editor-group-container.active .monaco-editor.focused").first().waitFor({ timeout: 20000 * E2E_SLOW });
	await page.keyboard.press("Control+Alt+y");
	await waitFor(`${first.path} on disk with the accepted change`, () => fs.readFileSync(path.join(WS, first.path), "utf8").includes(changed[first.path]), 20000);
	// The next file's review opens with the focus in its editor: the key works at once.
	await page.locator(".tabs-container .tab.active", { hasText: other }).waitFor({ timeout: 20000 * E2E_SLOW });
	await page.locator(".editor-group-container.active .monaco-editor.focused").first().waitFor({ timeout: 20000 * E2E_SLOW });
	await lens(page, "Accept all").first().waitFor({ timeout: 20000 * E2E_SLOW });
	await page.keyboard.press("Control+Alt+y");
	await waitFor(`${other} on disk with the accepted change`, () => fs.readFileSync(path.join(WS, other), "utf8").includes(changed[other]), 20000);
	await chat.locator(".item.assistant", { hasText: "Both files are updated" }).waitFor({ timeout: 20000 * E2E_SLOW });
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	fs.writeFileSync(path.join(WS, "greet.go"), GREET);
}

async function rejectReasonScenario({ page, chat, fake }) {
	const REASON = "keep the greeting formal, customers are adults";
	await fakeReset(fake, scripts.rejectReason);
	await newSession(chat);
	await send(chat, "Please make the greeting casual");
	await editorTab(page, "greet.go");
	// The file's lens (each hunk has its own "Reject with reason… Ctrl+Alt+R").
	const fileLens = lens(page, "Reject with reason…").filter({ hasNotText: "Ctrl+Alt+R" });
	await fileLens.waitFor({ timeout: 30000 * E2E_SLOW });
	await fileLens.click();
	const input = page.locator(".quick-input-widget input");
	await input.waitFor({ state: "visible" });
	await input.fill(REASON);
	await page.screenshot({ path: path.join(OUT_DIR, "06-reject-with-reason.png") });
	await input.press("Enter");
	await chat.locator(".item.assistant", { hasText: "keep the greeting formal" }).waitFor({ timeout: 20000 * E2E_SLOW });
	if (fs.readFileSync(path.join(WS, "greet.go"), "utf8") !== GREET) throw new Error("greet.go changed after reject");
	const tools = toolMessages(await fakeRequests(fake));
	if (!tools.some((m) => m.includes(REASON))) throw new Error(`the reason did not reach the model: ${JSON.stringify(tools)}`);
	await waitFor("review lenses cleared", async () => (await lens(page, "Reject with reason…").count()) === 0);
}

async function commandScenario({ page, chat, fake }) {
	await fakeReset(fake, scripts.command);
	await newSession(chat);
	await send(chat, "Please run the marker command");
	const toast = page.locator(".notifications-toasts .notification-list-item", { hasText: "agentd wants to run" });
	await toast.waitFor({ timeout: 30000 * E2E_SLOW });
	const text = await toast.innerText();
	if (!text.includes("echo agentd-e2e-marker")) throw new Error(`the notification does not show the exact command: ${text}`);
	// The chat's tool card shows the same approval.
	await chat.locator(".item.tool .actions button", { hasText: "Run" }).first().waitFor();
	await page.screenshot({ path: path.join(OUT_DIR, "07-command-approval.png") });
	await toast.locator("a", { hasText: "Run once" }).click();
	await toast.waitFor({ state: "detached", timeout: 20000 * E2E_SLOW });
	const card = chat.locator(".item.tool", { hasText: "agentd-e2e-marker" }).last();
	await card.locator("pre", { hasText: "agentd-e2e-marker-42" }).first().waitFor({ timeout: 30000 * E2E_SLOW });
	await chat.locator(".item.assistant", { hasText: "printed the marker" }).waitFor({ timeout: 20000 * E2E_SLOW });
	const tools = toolMessages(await fakeRequests(fake));
	if (!tools.some((m) => m.includes("agentd-e2e-marker-42"))) throw new Error(`the output did not reach the model: ${JSON.stringify(tools)}`);
	await page.screenshot({ path: path.join(OUT_DIR, "08-command-output.png") });
}

async function grantScenario({ page, chat, fake }) {
	await fakeReset(fake, scripts.grant);
	await newSession(chat);
	await send(chat, "Please count twice");
	// Allow for the session from the chat's tool card: the scope picker offers the review's scopes.
	// The whole tool first: it needs a confirmation; dismissing it leaves the review pending.
	await chat.locator(".item.tool .actions button", { hasText: "Allow for session" }).first().click();
	await page.locator(".quick-input-list .monaco-list-row", { hasText: "all bash calls" }).first().click();
	const confirm = page.locator(".monaco-dialog-box", { hasText: "Allow every bash call" });
	await confirm.waitFor({ timeout: 15000 * E2E_SLOW });
	await page.keyboard.press("Escape");
	await confirm.waitFor({ state: "hidden", timeout: 10000 * E2E_SLOW });
	if (fs.existsSync(path.join(WS, "count-one.txt"))) throw new Error("the command ran although the whole-tool grant was not confirmed");
	await chat.locator(".item.tool .actions button", { hasText: "Allow for session" }).first().click();
	// Narrowest first: this exact command, then `touch` (which also covers the next command).
	const row = page.locator(".quick-input-list .monaco-list-row", { hasText: "`touch`" }).first();
	await row.waitFor({ timeout: 15000 * E2E_SLOW });
	await row.click();
	// The second command is covered by the grant: it runs without asking.
	await chat.locator(".item.assistant", { hasText: "Counted twice" }).waitFor({ timeout: 30000 * E2E_SLOW });
	await waitFor("the second command ran without asking", () => fs.existsSync(path.join(WS, "count-two.txt")), 10000);
	fs.rmSync(path.join(WS, "count-one.txt"), { force: true });
	fs.rmSync(path.join(WS, "count-two.txt"), { force: true });
	// The grant is listed, and can be revoked.
	await palette(page, "agentd: Session Permissions…");
	const g = page.locator(".quick-input-list .monaco-list-row").first();
	await g.waitFor({ timeout: 15000 * E2E_SLOW });
	await page.screenshot({ path: path.join(OUT_DIR, "18-session-permissions.png") });
	await g.click();
	await chat.locator(".item.notice", { hasText: "Revoked" }).waitFor({ timeout: 15000 * E2E_SLOW });
}

async function stopScenario({ page, chat, fake }) {
	await fakeReset(fake, scripts.stop);
	await newSession(chat);
	await send(chat, "Please write a long essay");
	await chat.locator(".item.assistant.streaming", { hasText: "long essay" }).waitFor({ timeout: 20000 * E2E_SLOW });
	await chat.locator("#stop").waitFor({ state: "visible" });
	await page.locator(".statusbar-item", { hasText: "writing" }).first().waitFor({ timeout: 10000 * E2E_SLOW });
	await chat.locator("#stop").click();
	await chat.locator(".item.turnEnd .reason", { hasText: "Stopped" }).waitFor({ timeout: 15000 * E2E_SLOW });
	await chat.locator("#stop").waitFor({ state: "hidden" });
	await chat.locator(".item.assistant.streaming").waitFor({ state: "detached" }).catch(() => undefined);
	if ((await chat.locator(".item.assistant.streaming").count()) !== 0) throw new Error("the message still streams after stop");
	await page.screenshot({ path: path.join(OUT_DIR, "09-stopped.png") });
}

async function contextScenario({ page, chat, fake }) {
	await fakeReset(fake, scripts.context);
	await newSession(chat);
	// Open greet.go and select the function.
	await palette(page, "Go to File");
	await page.locator(".quick-input-widget input").fill("greet.go");
	await page.locator(".quick-input-list .monaco-list-row", { hasText: "greet.go" }).first().click();
	await editorTab(page, "greet.go");
	await focusEditorTop(page);
	for (let i = 0; i < 3; i++) await page.keyboard.press("ArrowDown");
	await page.keyboard.press("Shift+ArrowDown");
	await page.keyboard.press("Shift+ArrowDown");
	await page.keyboard.press("Shift+End");
	await palette(page, "agentd: Ask about Selection");
	await chat.locator("#chips .chip", { hasText: "greet.go:4-6" }).waitFor();
	await send(chat, "What does this do?");
	await chat.locator(".item.assistant", { hasText: "greets the customer" }).waitFor({ timeout: 20000 * E2E_SLOW });
	const reqs = await fakeRequests(fake);
	const body = JSON.stringify(reqs.at(-1)?.body.messages ?? []);
	if (!body.includes("Good morning")) throw new Error(`the selection did not reach the model: ${body.slice(0, 2000)}`);
	await page.screenshot({ path: path.join(OUT_DIR, "10-ask-about-selection.png") });
	// The user card shows the words and the selection's chip, live and when the session is picked
	// again (its history from session/attach), never the context the model read.
	const userCard = async (when) => {
		const card = chat.locator(".item.user", { hasText: "What does this do?" }).last();
		await card.locator(".chip", { hasText: "greet.go:4-6" }).waitFor({ timeout: 15000 * E2E_SLOW });
		const text = await card.innerText();
		if (text.includes("Selected in") || text.includes("Good morning")) throw new Error(`${when}, the user card shows the context the model read: ${text}`);
	};
	await userCard("live");
	await newSession(chat);
	await chat.locator("#session").click();
	await page.locator(".quick-input-widget input").fill("What does this do");
	await page.locator(".quick-input-list .monaco-list-row", { hasText: "What does this do" }).first().click({ timeout: 15000 * E2E_SLOW });
	await chat.locator(".item.assistant", { hasText: "greets the customer" }).waitFor({ timeout: 15000 * E2E_SLOW });
	await userCard("in the history");
}

/** The @ list: type "@car", pick cart.go with the keyboard, send; the model gets cart.go's content. */
async function mentionsScenario({ page, chat, fake }) {
	await fakeReset(fake, scripts.mentions);
	await newSession(chat);
	// No editor open: cart.go can reach the model only through the mention.
	await palette(page, "View: Close All Editors");
	await chat.locator("#chips .chip.toggle").waitFor({ state: "detached", timeout: 10000 * E2E_SLOW });
	const input = chat.locator("#input");
	const list = chat.locator("#mentions");
	// The list in each theme (the picker takes the focus, so the theme is applied first).
	for (const [theme, cls, short] of THEMES) {
		await palette(page, "Preferences: Color Theme");
		const q = page.locator(".quick-input-widget input");
		await q.fill(theme);
		// The row of that name: "Default High Contrast" also lists "Default High Contrast Light".
		await page.locator(".quick-input-list .monaco-list-row", { hasText: new RegExp(`${theme}(?! Light)`) }).first().click();
		await page.locator(`.monaco-workbench.${cls}`).waitFor({ timeout: 20000 * E2E_SLOW });
		await input.click();
		await input.fill("");
		await input.pressSequentially("look at @");
		await list.locator(".mention", { hasText: "open" }).first().waitFor({ timeout: 10000 * E2E_SLOW });
		await page.screenshot({ path: path.join(OUT_DIR, `11-mentions-${short}.png`) });
		await input.press("Escape");
		await list.waitFor({ state: "hidden", timeout: 5000 * E2E_SLOW });
		await input.fill("");
	}
	await input.click();
	await input.pressSequentially("what is in @car");
	await list.locator(".mention.sel", { hasText: "cart.go" }).waitFor({ timeout: 10000 * E2E_SLOW });
	const rows = await list.locator(".mention").allTextContents();
	if (rows.length < 1 || !rows[0].includes("cart.go")) throw new Error(`the @car list: ${JSON.stringify(rows)}`);
	// Keyboard: down and back up, then Enter picks (and does not send).
	if (rows.length > 1) {
		await input.press("ArrowDown");
		await list.locator(".mention.sel", { hasText: rows[1].trim() }).waitFor({ timeout: 5000 * E2E_SLOW });
		await input.press("ArrowUp");
		await list.locator(".mention.sel", { hasText: "cart.go" }).waitFor({ timeout: 5000 * E2E_SLOW });
	}
	await input.press("Enter");
	await list.waitFor({ state: "hidden", timeout: 5000 * E2E_SLOW });
	const value = await input.inputValue();
	if (value !== "what is in @cart.go ") throw new Error(`the pick inserted ${JSON.stringify(value)}`);
	await input.press("Enter");
	await chat.locator(".item.assistant", { hasText: "The cart and its total" }).waitFor({ timeout: 20000 * E2E_SLOW });
	const reqs = await fakeRequests(fake);
	const body = JSON.stringify(reqs.at(-1)?.body.messages ?? []);
	const marker = CART.split("\n").find((l) => l.includes("func "));
	if (!marker || !body.includes(JSON.stringify(marker).slice(1, -1))) throw new Error(`cart.go's content did not reach the model (looked for ${JSON.stringify(marker)}): ${body.slice(0, 2000)}`);
	if (!body.includes("what is in @cart.go")) throw new Error("the prompt lost its @ token");
}

/** Time from the daemon's review/requested (as the extension received it) to the review on screen. */
async function reviewLatency(page, chat, fake, label) {
	await fakeReset(fake, benchReviewScript);
	await newSession(chat);
	// Watch the page for the first frame that shows the review's lens and its ghost text.
	await page.evaluate(() => {
		window.__ghostSeenAt = 0;
		window.__lensSeenAt = 0;
		const check = () => {
			if (!window.__ghostSeenAt && [...document.querySelectorAll(".view-lines span")].some((el) => getComputedStyle(el, "::after").content.includes("Benchmarks ran"))) window.__ghostSeenAt = Date.now();
			if (!window.__lensSeenAt && [...document.querySelectorAll(".codelens-decoration a")].some((a) => a.textContent.includes("Accept hunk"))) window.__lensSeenAt = Date.now();
			if (!window.__ghostSeenAt || !window.__lensSeenAt) requestAnimationFrame(check);
		};
		requestAnimationFrame(check);
	});
	const before = readStats()?.reviews?.length ?? 0;
	await send(chat, "Please bench the review");
	const seen = await waitFor("review on screen", () => page.evaluate(() => window.__ghostSeenAt && window.__lensSeenAt && { ghost: window.__ghostSeenAt, lens: window.__lensSeenAt }), 30000, 50);
	const timing = await waitFor("review timing", () => {
		const r = readStats()?.reviews;
		return r && r.length > before && r.at(-1).renderedAt ? r.at(-1) : undefined;
	});
	bench[`review_${label}`] = {
		toSetDecorationsMs: timing.renderedAt - timing.receivedAt,
		toGhostTextVisibleMs: seen.ghost - timing.receivedAt,
		toCodeLensVisibleMs: seen.lens - timing.receivedAt,
	};
	await lens(page, "Reject all").first().click();
	await waitFor("review cleared", async () => (await lens(page, "Reject all").count()) === 0);
}

async function queueScenario({ page, chat, fake }) {
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	fs.writeFileSync(path.join(WS, "greet.go"), GREET);
	await palette(page, "View: Close All Editors");
	await fakeReset(fake, scripts.queue);
	await newSession(chat);
	await send(chat, "Please touch both files");
	// The first review opens; the status bar and the Pending Reviews view show what waits.
	await lens(page, "Accept all").first().waitFor({ timeout: 30000 * E2E_SLOW });
	await page.locator(".statusbar-item", { hasText: "to review" }).first().waitFor();
	await palette(page, "agentd: Focus on Pending Reviews View");
	await page.locator(".pane-body .monaco-list-row", { hasText: "cart.go" }).first().waitFor({ timeout: 15000 * E2E_SLOW });
	// One reply's two files are up for review at once, before either is decided (issue 25).
	await waitFor("both files pending at once", () => {
		const p = readStats()?.pending ?? [];
		return p.some((x) => x.path === "cart.go") && p.some((x) => x.path === "greet.go");
	}, 20000);
	await page.locator(".pane-body .monaco-list-row", { hasText: "greet.go" }).first().waitFor({ timeout: 15000 * E2E_SLOW });
	await page.screenshot({ path: path.join(OUT_DIR, "17-review-queue.png") });
	// Accept whatever is shown until both files are done: the next one opens by itself. Each step
	// waits until the review it accepted is gone (stats), its file is written and its lens is
	// gone, so the next click is on the next file's review, never on a lens that is going away.
	const changed = { "cart.go": "// Cart keeps", "greet.go": "// Greet warmly" };
	const done = new Set();
	for (let i = 0; i < 2; i++) {
		const file = await waitFor(`the review lens of a file not yet accepted (accepted: ${[...done].join(", ") || "none"})`, async () => {
			const rows = await page.locator(".codelens-decoration", { hasText: "Accept all" }).allInnerTexts();
			return Object.keys(changed).find((f) => !done.has(f) && rows.some((r) => r.includes(f)));
		}, 30000);
		const pending = await waitFor(`the pending review of ${file} in the stats`, () => readStats()?.pending?.find((p) => p.path === file), 10000);
		say(`accepting ${file} (review ${pending.reviewId})`);
		await page.locator(".codelens-decoration", { hasText: file }).locator("a", { hasText: "Accept all" }).first().click();
		await waitFor(`review ${pending.reviewId} of ${file} no longer pending after Accept all`, () => !readStats()?.pending?.some((p) => p.reviewId === pending.reviewId), 20000);
		await waitFor(`${file} on disk with the accepted change`, () => fs.readFileSync(path.join(WS, file), "utf8").includes(changed[file]), 20000);
		await waitFor(`the review lens of ${file} gone`, async () => (await page.locator(".codelens-decoration", { hasText: file }).locator("a", { hasText: "Accept all" }).count()) === 0);
		done.add(file);
	}
	await waitFor("both files changed", () => fs.readFileSync(path.join(WS, "cart.go"), "utf8").includes("// Cart keeps") && fs.readFileSync(path.join(WS, "greet.go"), "utf8").includes("// Greet warmly"), 30000);
	await chat.locator(".item.assistant", { hasText: "Both files are updated" }).waitFor({ timeout: 20000 * E2E_SLOW });
	await waitFor("the review count gone", async () => (await page.locator(".statusbar-item", { hasText: "to review" }).count()) === 0);
	fs.writeFileSync(path.join(WS, "cart.go"), CART);
	fs.writeFileSync(path.join(WS, "greet.go"), GREET);
}

async function resumeScenario({ page, chat }) {
	// The session picker lists the sessions of this folder (session/list); picking one attaches
	// to it and shows its history (session/attach).
	await newSession(chat);
	await chat.locator("#session").click();
	// The list is virtualized and other scenarios' sessions come first: filter it.
	await page.locator(".quick-input-widget input").fill("explain the cart");
	const row = page.locator(".quick-input-list .monaco-list-row", { hasText: "Please explain the cart" }).first();
	await row.waitFor({ timeout: 15000 * E2E_SLOW });
	await page.screenshot({ path: path.join(OUT_DIR, "16-session-picker.png") });
	await row.click();
	await chat.locator(".item.user", { hasText: "explain the cart" }).waitFor({ timeout: 15000 * E2E_SLOW });
	await chat.locator(".item.assistant strong", { hasText: "prices" }).waitFor();
	await chat.locator("#session-title", { hasText: "Please explain the cart" }).waitFor();
	// The model picker lists Ollama's models (model/list).
	await chat.locator("#model").click();
	await page.locator(".quick-input-list .monaco-list-row", { hasText: MODEL }).first().waitFor({ timeout: 15000 * E2E_SLOW });
	await page.keyboard.press("Escape");
}

async function failureScenario({ page, chat, fake }) {
	await fakeReset(fake, scripts.failure);
	await newSession(chat);
	await send(chat, "Please use the missing model");
	const err = chat.locator(".item.error").last();
	await err.waitFor({ timeout: 20000 * E2E_SLOW });
	const text = await err.innerText();
	if (!text.includes("not found") || !/ollama pull/.test(text)) throw new Error(`the error card lacks the message or the fix: ${text}`);
	await page.locator(".notifications-toasts .notification-list-item", { hasText: "ollama pull" }).first().waitFor();
	await page.screenshot({ path: path.join(OUT_DIR, "12-turn-failed-with-fix.png") });
	await palette(page, "Notifications: Clear All Notifications");
}

/** The active editor's text as rendered (spaces normalized). */
async function editorText(page) {
	return page.evaluate(() => {
		const ed = document.querySelector(".editor-group-container.active .monaco-editor .view-lines") ?? document.querySelector(".monaco-editor .view-lines");
		return [...(ed?.querySelectorAll(".view-line") ?? [])]
			.sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))
			.map((l) => l.textContent.replace(/\u00a0/g, " "))
			.join("\n");
	});
}

async function openFile(page, name) {
	await palette(page, "Go to File");
	// By its absolute path: Quick Open lists an existing file by path at once, while a file just
	// written may not be in its file index yet.
	await page.locator(".quick-input-widget input").fill(path.join(WS, name));
	await page.locator(".quick-input-list .monaco-list-row", { hasText: path.basename(name) }).first().click();
	await editorTab(page, path.basename(name));
}

/** Focuses the editor of the active group with the keyboard (a click may land on a review's
 * comment thread inside it) and waits until it has the focus, pressing again while it has not: on
 * a loaded machine a key pressed while the workbench is busy can be lost (a soak run timed out
 * after one press). */
async function focusEditor(page) {
	const focused = page.locator(".editor-group-container.active .monaco-editor.focused").first();
	const deadline = Date.now() + 20000;
	for (;;) {
		await page.keyboard.press("Control+1");
		if (await focused.waitFor({ timeout: 2000 * E2E_SLOW }).then(() => true, () => false)) return;
		if (Date.now() > deadline) throw new Error("timed out waiting for the active editor to have the focus (Ctrl+1 pressed every 2 s for 20 s)");
	}
}

async function instructionsScenario({ page, chat, fake }) {
	// A trusted workspace with an AGENTS.md: the session uses it, and the status bar says so; its
	// tooltip also names the engine.
	const agentsMd = path.join(WS, "AGENTS.md");
	const trust = path.join(RUN, "xdg", "state", "agentd", "trusted-workspaces");
	fs.writeFileSync(agentsMd, "# Project rules\nUse tabs. Run go test before you answer.\n");
	fs.mkdirSync(path.dirname(trust), { recursive: true });
	fs.writeFileSync(trust, fs.realpathSync(WS) + "\n");
	try {
		await fakeReset(fake, scripts.grant);
		await newSession(chat);
		await send(chat, "hello there");
		await chat.locator(".item.assistant", { hasText: "Nothing is scripted" }).waitFor({ timeout: 30000 * E2E_SLOW });
		const reqs = await fakeRequests(fake);
		if (!JSON.stringify(reqs).includes("Run go test before you answer")) throw new Error("AGENTS.md did not reach the model");
		await page.locator('.statusbar-item[id$="agentd.status"]').first().hover();
		await page.locator(".monaco-hover", { hasText: "Using AGENTS.md" }).first().waitFor({ timeout: 15000 * E2E_SLOW });
		// The tooltip names the engine and its address (daemon/status).
		await page.locator(".monaco-hover", { hasText: "Engine: ollama http://127.0.0.1:" }).first().waitFor({ timeout: 15000 * E2E_SLOW });
		await page.screenshot({ path: path.join(OUT_DIR, "24-instructions-tooltip.png") });
		await page.mouse.move(600, 400);
	} finally {
		fs.rmSync(agentsMd, { force: true });
		fs.rmSync(trust, { force: true });
	}
}

async function dirtyBufferScenario({ page, chat, fake }) {
	fs.writeFileSync(path.join(WS, "greet.go"), GREET);
	await openFile(page, "greet.go");
	await focusEditorTop(page);
	await page.keyboard.type("// draft, not saved\n");
	await page.locator(".tabs-container .tab.dirty", { hasText: "greet.go" }).waitFor();
	await fakeReset(fake, scripts.dirty);
	await newSession(chat);
	await send(chat, "Please say good day instead");
	await lens(page, "Accept all").waitFor({ timeout: 30000 * E2E_SLOW });
	// Accept with the keyboard: Ctrl+Alt+Y accepts the hunk at the cursor (or the next one).
	await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
	await page.locator(".editor-group-container.active .monaco-editor.focused").first().waitFor({ timeout: 20000 * E2E_SLOW });
	await page.keyboard.press("Control+Alt+y");
	await chat.locator(".item.assistant", { hasText: "Changed the greeting" }).waitFor({ timeout: 20000 * E2E_SLOW });
	// The accepted change went into the buffer on top of the unsaved text; the disk is untouched.
	await waitFor("buffer with both the draft and the change", async () => {
		const t = await editorText(page);
		return t.includes("// draft, not saved") && t.includes("Good day, ");
	});
	if (fs.readFileSync(path.join(WS, "greet.go"), "utf8") !== GREET) throw new Error("greet.go on disk changed although the buffer had unsaved changes");
	await page.locator(".tabs-container .tab.dirty", { hasText: "greet.go" }).waitFor();
	const tools = toolMessages(await fakeRequests(fake));
	say("edit result for the model:", JSON.stringify(tools.at(-1)));
	// One Ctrl+Z takes the whole accepted change back, and only it. The key goes to the focused
	// widget: wait until the editor has focus (under load the click takes effect late).
	await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
	await page.locator(".editor-group-container.active .monaco-editor.focused").first().waitFor({ timeout: 20000 * E2E_SLOW });
	await page.keyboard.press("Control+z");
	// editorText reads the rendered lines: bring the top of the file back into view.
	await page.keyboard.press("Control+Home");
	await waitFor("undo of the accepted change", async () => {
		const t = await editorText(page);
		return t.includes("// draft, not saved") && t.includes("Good morning, ");
	});
	await page.screenshot({ path: path.join(OUT_DIR, "13-unsaved-buffer-kept.png") });
	await palette(page, "File: Revert File");
	await page.locator(".tabs-container .tab.dirty", { hasText: "greet.go" }).waitFor({ state: "detached" });
}

async function ollamaDownScenario({ page, chat, ctx }) {
	// Stop the fake Ollama: agentd reports it, with the fix, after a reconnect and on a prompt.
	ctx.stopFake();
	await palette(page, "agentd: Restart Daemon Connection");
	const banner = chat.locator("#conn.bad");
	await banner.waitFor({ timeout: 30000 * E2E_SLOW });
	const text = await banner.innerText();
	say("ollama banner:", JSON.stringify(text));
	if (!/ollama/i.test(text)) throw new Error(`the banner does not name Ollama: ${text}`);
	await page.screenshot({ path: path.join(OUT_DIR, "14-ollama-down.png") });
}

async function missingBinaryScenario({ page, chat, ctx }) {
	// Change the setting the way a user of a remote VS Code does: in the remote (machine)
	// settings.json, where the harness set it, saved from the editor.
	await palette(page, "Preferences: Open Remote Settings (JSON)");
	await editorTab(page, "settings.json");
	await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
	await page.locator(".editor-group-container.active .monaco-editor.focused").first().waitFor({ timeout: 20000 * E2E_SLOW });
	await page.keyboard.press("Control+a");
	await page.keyboard.insertText(JSON.stringify({ "agentd.path": "/nonexistent/agentd" }, null, 1));
	await page.keyboard.press("Control+s");
	const toast = page.locator(".notifications-toasts .notification-list-item", { hasText: "apply after a reconnect" });
	await toast.waitFor({ timeout: 30000 * E2E_SLOW });
	await toast.locator(".monaco-button", { hasText: "Reconnect" }).click();
	const banner = chat.locator("#conn.bad");
	// (whether code-server has re-read the machine settings yet or not, the message names the
	// missing binary: the new path, or agentd on PATH.)
	await banner.locator(".err-msg", { hasText: "agentd was not found" }).waitFor({ timeout: 20000 * E2E_SLOW });
	await banner.locator("button", { hasText: "Settings" }).waitFor();
	await page.locator(".statusbar-item", { hasText: "agentd" }).first().waitFor();
	await page.screenshot({ path: path.join(OUT_DIR, "15-binary-missing.png") });
}

/**
 * CPU time of the renderer's main-thread tasks while streaming, from a Chromium trace: the
 * webview shares its renderer thread with the workbench, so these are all the tasks the user's
 * typing would wait behind. CPU time (tdur), unlike wall time, does not count the time the
 * process waited for a core.
 */
function traceSummary(file) {
	const t = JSON.parse(fs.readFileSync(file, "utf8"));
	const ev = t.traceEvents ?? t;
	const tids = new Set(ev.filter((e) => e.name === "FireAnimationFrame").map((e) => `${e.pid}/${e.tid}`));
	const out = {};
	for (const id of tids) {
		const tasks = ev.filter((e) => e.name === "RunTask" && `${e.pid}/${e.tid}` === id && typeof e.dur === "number");
		const cpu = tasks.map((e) => (e.tdur ?? e.dur) / 1000);
		const wall = tasks.map((e) => e.dur / 1000);
		out[id] = {
			tasks: tasks.length,
			maxTaskCpuMs: Math.round(Math.max(0, ...cpu) * 10) / 10,
			tasksOver50msCpu: cpu.filter((x) => x > 50).length,
			maxTaskWallMs: Math.round(Math.max(0, ...wall) * 10) / 10,
			tasksOver50msWall: wall.filter((x) => x > 50).length,
		};
	}
	return out;
}

async function benchScenario({ page, chat, fake }) {
	// Review latency with the file closed (it has to open) and open.
	await palette(page, "View: Close All Editors");
	await page.locator(".tabs-container .tab").first().waitFor({ state: "detached" }).catch(() => undefined);
	await reviewLatency(page, chat, fake, "fileClosed");
	await reviewLatency(page, chat, fake, "fileOpen");
	const frame = await webviewFrame(page);
	// A 2,000-message session in the view, then 10,000 tokens streamed on top of it.
	await fakeReset(fake, benchScript(10000));
	await newSession(chat);
	const loadMs = await frame.evaluate(() => window.__agentdBench.load(2000));
	bench.load2000ItemsMs = Math.round(loadMs);
	await frame.evaluate(() => {
		const p = window.__agentdPerf;
		Object.assign(p, { longTasks: [], frames: 0, maxFrameMs: 0, totalFrameMs: 0, maxFullFrameMs: 0, fullFramesOver50: 0, maxFrameWhat: "", changes: 0, messages: 0, since: performance.now() });
	});
	const traceFile = path.join(RUN, "stream-trace.json");
	await page.context().browser().startTracing(page, { path: traceFile, categories: ["devtools.timeline", "disabled-by-default-devtools.timeline", "toplevel"] });
	const t0 = Date.now();
	await send(chat, "Please stream ten thousand tokens");
	await chat.locator(".item.assistant:not(.streaming)", { hasText: "word9999" }).waitFor({ timeout: 240000 * E2E_SLOW });
	const streamMs = Date.now() - t0;
	await page.context().browser().stopTracing();
	bench.stream10kTokensTrace = traceSummary(traceFile);
	const perf = await frame.evaluate(() => ({ ...window.__agentdPerf, domItems: document.getElementById("items").childElementCount }));
	bench.stream10kTokens = {
		wallMs: streamMs,
		frames: perf.frames,
		maxFrameMs: Math.round(perf.maxFrameMs * 10) / 10,
		maxFrameWhat: perf.maxFrameWhat,
		maxFullFrameMs: Math.round(perf.maxFullFrameMs * 10) / 10,
		fullFramesOver50: perf.fullFramesOver50,
		meanFrameMs: Math.round((perf.totalFrameMs / Math.max(1, perf.frames)) * 100) / 100,
		longTasks: perf.longTasks.length,
		longestTaskMs: perf.longTasks.length ? Math.max(...perf.longTasks) : 0,
		messagesFromExtension: perf.messages,
		changesApplied: perf.changes,
		domItems: perf.domItems,
	};
	await page.screenshot({ path: path.join(OUT_DIR, "11-bench-stream.png") });
	// Long tasks here include the workbench's own (the webview shares its renderer) and time the
	// process was not scheduled: reported, not asserted. test/e2e/webview-bench.mjs measures the
	// view's own CPU time per task.
}

// ---------------------------------------------------------------- main

async function main() {
	writeWorkspace();
	fs.mkdirSync(RT, { recursive: true, mode: 0o700 });
	const fake = await startFake();
	say(`fake Ollama at ${fake}; run dir ${RUN}`);

	const data = path.join(RUN, "data");
	const ext = path.join(RUN, "ext");
	fs.mkdirSync(path.join(data, "User"), { recursive: true });
	fs.mkdirSync(ext, { recursive: true });
	const settings = {
		"security.workspace.trust.enabled": false,
		"workbench.startupEditor": "none",
		"workbench.tips.enabled": false,
		"workbench.welcomePage.walkthroughs.openOnInstall": false,
		"telemetry.telemetryLevel": "off",
		"update.mode": "none",
		"extensions.autoUpdate": false,
		"extensions.autoCheckUpdates": false,
		"extensions.ignoreRecommendations": true,
		"git.enabled": false,
		"workbench.colorTheme": "Default Dark Modern",
		"chat.commandCenter.enabled": false,
		"workbench.secondarySideBar.defaultVisibility": "hidden",
		"files.autoSave": "off",
		// The tests type text: keep the editor from adding brackets, indentation and comment leaders.
		"editor.autoClosingBrackets": "never",
		"editor.autoClosingQuotes": "never",
		"editor.autoIndent": "none",
		"editor.formatOnType": false,
		"editor.acceptSuggestionOnEnter": "off",
		"editor.quickSuggestions": { "other": false, "comments": false, "strings": false },
		"agentd.path": AGENTD_BIN,
		"agentd.ollamaHost": fake,
		"agentd.model": MODEL,
		"agentd.approvalMode": "ask",
		// connect starts the shared daemon; it exits shortly after the last editor left.
		"agentd.serverArgs": ["connect", "--idle-timeout", "5s"],
		"agentd.includeActiveFile": true,
	};
	fs.writeFileSync(path.join(data, "User", "settings.json"), JSON.stringify(settings, null, 1));
	// agentd.path is machine-overridable: code-server reads such a setting from the user settings
	// only at startup, and drops it at the first reload of that file (a theme preview rewrites it).
	// The remote machine's settings keep it, as a user of a remote VS Code would set it.
	fs.mkdirSync(path.join(data, "Machine"), { recursive: true });
	fs.writeFileSync(path.join(data, "Machine", "settings.json"), JSON.stringify({ "agentd.path": AGENTD_BIN }, null, 1));
	fs.writeFileSync(path.join(RUN, "config.yaml"), `bind-addr: 127.0.0.1:${PORT}\nauth: none\ncert: false\n`);
	const xdg = {
		XDG_CONFIG_HOME: path.join(RUN, "xdg", "config"),
		XDG_DATA_HOME: path.join(RUN, "xdg", "data"),
		XDG_CACHE_HOME: path.join(RUN, "xdg", "cache"),
		XDG_STATE_HOME: path.join(RUN, "xdg", "state"),
		XDG_RUNTIME_DIR: RT,
		TMPDIR: path.join(RUN, "tmp"),
	};
	for (const d of Object.values(xdg)) fs.mkdirSync(d, { recursive: true });
	const csEnv = { ...process.env, ...xdg, AGENTD_VSCODE_STATS: STATS, AGENTD_VSCODE_E2E_ERRORS: ERRORS };
	delete csEnv.PORT;
	delete csEnv.OLLAMA_HOST;

	const tInstall = Date.now();
	execFileSync(CS_BIN, ["--config", path.join(RUN, "config.yaml"), "--user-data-dir", data, "--extensions-dir", ext, "--install-extension", VSIX], {
		env: csEnv,
		stdio: ["ignore", "pipe", "pipe"],
	});
	say(`extension installed (${Date.now() - tInstall} ms)`);
	const installed = fs.readdirSync(ext).find((d) => d.startsWith(`${EXT_ID}-`));
	if (!installed) throw new Error(`the extension is not in ${ext} after --install-extension`);
	extInstallDir = path.join(ext, installed);
	// The gopls client fixture (test/e2e/diagnostics.mjs): a real language server for the diagnostics scenario.
	execFileSync(CS_BIN, ["--config", path.join(RUN, "config.yaml"), "--user-data-dir", data, "--extensions-dir", ext, "--install-extension", buildFixture(path.resolve(path.dirname(new URL(import.meta.url).pathname), "..", ".."), RUN)], { env: csEnv, stdio: ["ignore", "pipe", "pipe"] });
	const cs = startGroup(
		CS_BIN,
		[
			"--config", path.join(RUN, "config.yaml"), "--auth", "none", "--bind-addr", `127.0.0.1:${PORT}`,
			"--disable-telemetry", "--disable-update-check", "--disable-workspace-trust",
			"--user-data-dir", data, "--extensions-dir", ext, WS,
		],
		{ env: csEnv },
		"code-server.log",
	);
	await waitFor("code-server /healthz", async () => (await fetch(`http://127.0.0.1:${PORT}/healthz`).catch(() => undefined))?.ok, 30000);
	say(`code-server up on ${PORT} (pid ${cs.pid})`);

	const browser = await chromium.launch({
		executablePath: CHROMIUM,
		headless: true,
		args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
	});
	const context = await browser.newContext({ viewport: { width: 1500, height: 950 } });
	const page = await context.newPage();
	watchBrowser(page);
	const tLoad = Date.now();
	// A loaded machine (CI shares it) can take more than the default 30 s to serve the workbench.
	await page.goto(`http://127.0.0.1:${PORT}/?folder=${encodeURIComponent(WS)}`, { waitUntil: "commit", timeout: 120000 * E2E_SLOW });
	await page.locator(".monaco-workbench").waitFor({ timeout: 60000 * E2E_SLOW });
	bench.pageLoadToWorkbenchMs = Date.now() - tLoad;
	// Ready when the extension is active and connected: its status bar item shows the model.
	await page.locator(".statusbar-item", { hasText: MODEL }).first().waitFor({ timeout: 60000 * E2E_SLOW });
	bench.pageLoadToConnectedMs = Date.now() - tLoad;
	const st = await waitFor("stats file", () => readStats(), 10000);
	bench.activationMs = st.activationMs;
	bench.pageLoadToActivatedMs = st.activatedAt - tLoad;
	bench.pageLoadToDaemonConnectedMs = st.connectedAt ? st.connectedAt - tLoad : undefined;
	bench.daemonStartMs = st.daemonStartMs;
	say(`workbench ready and agentd connected (${bench.pageLoadToConnectedMs} ms; activate() ${st.activationMs} ms, daemon start ${st.daemonStartMs} ms)`);

	await palette(page, "agentd: Open Chat");
	const chat = chatFrame(page);
	await chat.locator("#input").waitFor({ timeout: 30000 * E2E_SLOW });
	const ctx = { page, chat, fake, data };
	ctx.ctx = ctx;
	ctx.stopFake = () => {
		const p = children.find((c) => c.spawnfile === FAKEOLLAMA);
		if (p && p.exitCode === null) process.kill(-p.pid, "SIGTERM");
	};

	// Errors during activation and start-up fail the run too.
	collectErrors();
	await scenario("harness", harnessScenario, ctx);
	// What the issue-25 scenarios (walk.mjs) use.
	const walk = { WS, OUT_DIR, CART, GREET, MODEL, scripts, palette, newSession, send, fakeReset, fakeRequests, toolMessages, waitFor, lens, editorTab, readStats, themedShots, say };
	// E2E_REPEAT=N runs these N times in the same VS Code (to shake out flakiness).
	for (let k = 1; k <= REPEAT; k++) {
		const n = (name) => (REPEAT > 1 ? `${name}#${k}` : name);
		const only = (name) => !ONLY.length || ONLY.includes(name);
		for (const [name, fn, opts] of [
			["chat", chatScenario],
			["review", reviewScenario],
			["rejectReason", rejectReasonScenario],
			["hunkReason", (c) => hunkReasonScenario(c, { WS, OUT_DIR, CART, scripts, palette, newSession, send, fakeReset, fakeRequests, waitFor, lens, lensRow, editorTab, focusEditorTop, toolMessages, themedShots })],
			["command", commandScenario],
			["grant", grantScenario],
			["stop", stopScenario],
			["context", contextScenario],
			["mentions", mentionsScenario],
			["queue", queueScenario],
			["replyOrder", (c) => replyOrderScenario(c, { ...walk, models })],
			["multiline", multilineScenario],
			["approvals", approvalsScenario],
			["keyboard", keyboardScenario],
			["diffReview", diffReviewScenario],
			["changes", changesScenario],
			["diffFocus", (c) => diffFocusScenario(c, walk)],
			["contrast", (c) => contrastScenario(c, walk)],
			["modelMissing", (c) => modelMissingScenario(c, walk)],
			["history", (c) => historyScenario(c, walk)],
			["editProposal", (c) => editProposalScenario(c, walk)],
			["resume", resumeScenario],
			// The turn fails on purpose: its error notification is expected.
			["instructions", instructionsScenario],
			["failure", failureScenario, { expect: [/model '[^']+' not found/] }],
			["dirtyBuffer", dirtyBufferScenario],
			["diagnostics", (c) => diagnosticsScenario(c, { WS, models, palette, openFile, newSession, send, fakeReset, fakeRequests, waitFor, lens, say })],
			["mcp", (c) => mcpScenario(c, { WS, RUN, OUT_DIR, models, palette, newSession, send, fakeReset, fakeRequests, waitFor, themedShots, say })],
			["twoWindows", (c) => twoWindowsScenario(c, { WS, CART, CART_ACCEPTED, script: scripts.review, url: `http://127.0.0.1:${PORT}/?folder=${encodeURIComponent(WS)}`, MODEL, OUT_DIR, watchBrowser, palette, chatFrame, newSession, send, fakeReset, fakeRequests, toolMessages, waitFor, lens, lensRow, editorTab, openFile, say }),
				// Closing window B stops its extension host: VS Code's logger refuses the extension's
				// last log lines ("Channel has been closed").
				{ expect: [/Channel has been closed/] }],
			["cardKeys", (c) => cardKeysScenario(c, { script: scripts.command, OUT_DIR, themedShots, newSession, send, fakeReset, fakeRequests, toolMessages, waitFor })],
			["escapes", (c) => escapesScenario(c, { models, OUT_DIR, newSession, send, fakeReset, fakeRequests, toolMessages, waitFor })],
			["rewind", (c) => rewindScenario(c, { WS, models, OUT_DIR, palette, newSession, send, fakeReset, fakeRequests, waitFor })],
			["cmdreview", (c) => cmdReviewScenario(c, { WS, OUT_DIR, models, palette, newSession, send, fakeReset, fakeRequests, toolMessages, waitFor, readStats, themedShots, say })],
			["completion", (c) => completionScenario(c, { WS, models, OUT_DIR, palette, openFile, fakeReset, waitFor, focusEditor, themedShots, say })],
		]) {
			if (only(name)) await scenario(n(name), fn, ctx, opts);
		}
	}
	if (BENCH) await scenario("bench", benchScenario, ctx);
	// A second code-server with the platform .vsix installed as users do (once, not repeated).
	await scenario("vsix", (c) => vsixScenario(c, { VSIX_PLATFORM, CS_BIN, RUN, PORT, MODEL, OUT_DIR, script: scripts.chat, startGroup, watchBrowser, palette, chatFrame, send, fakeReset, fakeRequests, waitFor, say }), ctx);
	// These two break the connection on purpose: last.
	await scenario("ollamaDown", ollamaDownScenario, ctx);
	await scenario("missingBinary", missingBinaryScenario, ctx);

	await browser.close();
	// Errors logged late are attributed to the run they happened in.
	collectErrors();
	for (const r of runs) settle(r);
	if (orphanProblems.length) {
		const msg = orphanProblems.map(describeProblem).join("\n  ");
		results.push({ name: "startup", ok: false, ms: 0, error: `errors from the extension before the first scenario:\n  ${msg}` });
		console.log(`FAIL startup: ${msg}`);
	}
	fs.writeFileSync(path.join(OUT_DIR, "ignored-errors.log"), ignored.map(describeProblem).join("\n") + (ignored.length ? "\n" : ""));
	if (ignored.length) say(`${ignored.length} error message(s) not from the extension ignored (workbench, other extensions): ${path.join(OUT_DIR, "ignored-errors.log")}`);
	const failed = results.filter((r) => !r.ok);
	fs.writeFileSync(path.join(OUT_DIR, "results.json"), JSON.stringify({ results, bench }, null, 2));
	if (failed.length) {
		// Keep the logs of a failed run.
		const keep = path.join(OUT_DIR, "logs");
		fs.rmSync(keep, { recursive: true, force: true });
		fs.cpSync(path.join(RUN, "data", "logs"), path.join(keep, "vscode"), { recursive: true, force: true });
		for (const f of ["code-server.log", "fakeollama.log", "page-errors.log", "extension-errors.jsonl"]) if (fs.existsSync(path.join(RUN, f))) fs.copyFileSync(path.join(RUN, f), path.join(keep, f));
		for (const r of failed) console.log(`\n${r.name}:\n${r.error}`);
		console.log(`logs: ${keep}`);
	}
	console.log(`\nbench: ${JSON.stringify(bench)}`);
	console.log(`screenshots: ${OUT_DIR}`);
	console.log(`${results.length - failed.length} passed, ${failed.length} failed`);
	return failed.length ? 1 : 0;
}

let code = 1;
try {
	code = await main();
} catch (err) {
	console.error(`e2e: ${err?.stack ?? err}`);
	try {
		const keep = path.join(OUT_DIR, "logs");
		fs.cpSync(path.join(RUN, "data", "logs"), path.join(keep, "vscode"), { recursive: true, force: true });
		for (const f of ["code-server.log", "fakeollama.log", "page-errors.log", "extension-errors.jsonl"]) if (fs.existsSync(path.join(RUN, f))) fs.copyFileSync(path.join(RUN, f), path.join(keep, f));
	} catch {
		// nothing to keep
	}
	console.log("0 passed, 1 failed");
} finally {
	killAll();
	// Remove the run dir once our process groups are gone (they write logs into it).
	await waitFor("the e2e processes to exit", () => children.every((p) => p.exitCode !== null || p.signalCode !== null || p.pid === undefined), 10000).catch((err) => say(err.message));
	if (!process.env.E2E_KEEP) fs.rmSync(RUN, { recursive: true, force: true });
}
process.exit(code);
