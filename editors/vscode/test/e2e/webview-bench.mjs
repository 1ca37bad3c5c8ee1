// Benchmarks the chat webview alone in headless Chromium (no VS Code): a 2,000-message session,
// then 10,000 tokens streamed into it the way the extension posts them (batches every 16 ms).
// Prints frame and long-task numbers as JSON. Used by scripts/test-e2e.sh --bench and handy
// while working on src/webview/.
//
//   node test/e2e/webview-bench.mjs [--tokens 10000] [--items 2000] [--batch-ms 16]
import * as fs from "node:fs";
import * as path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const arg = (k, d) => {
	const i = process.argv.indexOf(`--${k}`);
	return i > 0 ? Number(process.argv[i + 1]) : d;
};
const TOKENS = arg("tokens", 10000);
const ITEMS = arg("items", 2000);
const BATCH_MS = arg("batch-ms", 16);

const html = fs
	.readFileSync(path.join(root, "src/chat/view.ts"), "utf8")
	.match(/return `<!DOCTYPE html>([\s\S]*?)<\/html>`;/)[1]
	.replace(/<meta http-equiv[^>]*>/, "")
	.replace(/<link rel="stylesheet"[^>]*>/, `<style>${fs.readFileSync(path.join(root, "media/chat.css"), "utf8")}</style>`)
	.replace(/<script nonce[^>]*><\/script>/, "");
const js = fs.readFileSync(path.join(root, "dist/webview.js"), "utf8");

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", headless: true, args: ["--no-sandbox", "--disable-gpu"] });
const page = await browser.newPage({ viewport: { width: 420, height: 900 } });
await page.setContent(`<!DOCTYPE html><html>${html}</html>`);
await page.evaluate(() => {
	window.__posted = [];
	window.acquireVsCodeApi = () => ({ postMessage: (m) => window.__posted.push(m), getState: () => undefined, setState: () => undefined });
});
await page.addScriptTag({ content: js });
const state = { connection: { kind: "running" }, model: "qwen3:8b", approvalMode: "ask", running: true, activity: "writing", pendingReviews: 0, contexts: [], includeActiveFile: false };
await page.evaluate(async (state) => {
	window.postMessage({ type: "snapshot", items: [], state }, "*");
	// Let the frame apply the snapshot before the synthetic session replaces it.
	await new Promise((r) => setTimeout(r, 50));
	await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
}, state);
const loadMs = await page.evaluate((n) => window.__agentdBench.load(n), ITEMS);
// Trace the stream: task CPU time (tdur) tells our cost apart from time the process was not
// scheduled (other builds on a 2-core machine stretch wall-clock times).
const traceFile = path.join(fs.mkdtempSync(path.join(process.env.TMPDIR ?? "/tmp", "agentd-wv-")), "trace.json");
await browser.startTracing(page, { path: traceFile, categories: ["devtools.timeline", "disabled-by-default-devtools.timeline", "toplevel"] });

// The stream: words, bold every 25, a paragraph every 60, a code block every 400.
const words = [];
for (let i = 0; i < TOKENS; i++) {
	if (i % 400 === 200) words.push("\n\n```go\nfunc f" + i + "() int {\n\treturn " + i + "\n}\n```\n\n");
	else if (i % 60 === 59) words.push("word" + i + ".\n\n");
	else if (i % 25 === 0) words.push("**bold" + i + "**");
	else words.push("word" + i);
}
const result = await page.evaluate(
	async ({ words, batchMs }) => {
		const p = window.__agentdPerf;
		window.__lt = [];
		new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__lt.push([Math.round(e.startTime - window.__t0), Math.round(e.duration)]); }).observe({ type: "longtask" });
		window.__t0 = performance.now();
		Object.assign(p, { longTasks: [], frames: 0, maxFrameMs: 0, totalFrameMs: 0, maxFullFrameMs: 0, fullFramesOver50: 0, changes: 0, messages: 0, since: performance.now() });
		const send = (changes) => window.postMessage({ type: "changes", changes }, "*");
		send([{ op: "add", item: { kind: "user", id: "bu", turnId: "tb", text: "stream ten thousand tokens" } }]);
		send([{ op: "add", item: { kind: "assistant", id: "ba", turnId: "tb", text: "", thinking: "", streaming: true } }]);
		const t0 = performance.now();
		// About 100 tokens per 16 ms batch: a fast local model streams 50–150 tokens/s, so this is
		// 10–30 times faster than reality.
		const perBatch = 100;
		for (let i = 0; i < words.length; i += perBatch) {
			send([{ op: "append", id: "ba", field: "text", text: words.slice(i, i + perBatch).map((w, k) => (i + k ? " " : "") + w).join("") }]);
			await new Promise((r) => setTimeout(r, batchMs));
		}
		send([{ op: "set", item: { kind: "assistant", id: "ba", turnId: "tb", text: words.join(" "), thinking: "", streaming: false } }]);
		await new Promise((r) => setTimeout(r, 200));
		return {
			streamMs: Math.round(performance.now() - t0),
			frames: p.frames,
			maxFrameMs: Math.round(p.maxFrameMs * 10) / 10,
			meanFrameMs: Math.round((p.totalFrameMs / Math.max(1, p.frames)) * 100) / 100,
			maxFullFrameMs: Math.round(p.maxFullFrameMs * 10) / 10,
			fullFramesOver50: p.fullFramesOver50,
			longTasks: p.longTasks.length,
			longestTaskMs: p.longTasks.length ? Math.max(...p.longTasks) : 0,
			domItems: document.getElementById("items").childElementCount,
			longTaskAt: window.__lt,
			textLength: document.querySelector('[data-id="ba"] .md').textContent.length,
		};
	},
	{ words, batchMs: BATCH_MS },
);
await browser.stopTracing();
await browser.close();
const trace = JSON.parse(fs.readFileSync(traceFile, "utf8"));
fs.rmSync(path.dirname(traceFile), { recursive: true, force: true });
const events = trace.traceEvents ?? trace;
// The renderer main thread: where our frames run.
const frameTid = events.find((e) => e.name === "FireAnimationFrame")?.tid;
// Tasks that only deliver the test driver's own messages (CDP, "Receive mojo message") are not the
// view's work: the first one carries the 10,000 words into the page.
const mainEvents = events.filter((e) => e.tid === frameTid && typeof e.dur === "number");
const driver = mainEvents.filter((e) => e.name === "Receive mojo message");
const tasks = mainEvents.filter((e) => e.name === "RunTask" && !driver.some((d) => d.ts >= e.ts && d.ts <= e.ts + e.dur && d.dur > e.dur / 2));
const cpu = tasks.map((e) => (e.tdur ?? e.dur) / 1000);
const wall = tasks.map((e) => e.dur / 1000);
const r1 = (x) => Math.round(x * 10) / 10;
const trace_ = {
	tasks: tasks.length,
	maxTaskCpuMs: r1(Math.max(0, ...cpu)),
	tasksOver50msCpu: cpu.filter((x) => x > 50).length,
	maxTaskWallMs: r1(Math.max(0, ...wall)),
	tasksOver50msWall: wall.filter((x) => x > 50).length,
};
const { longTaskAt: _lt, ...rest } = result;
console.log(JSON.stringify({ items: ITEMS, tokens: TOKENS, load2000ItemsMs: Math.round(loadMs), ...rest, trace: trace_ }));
