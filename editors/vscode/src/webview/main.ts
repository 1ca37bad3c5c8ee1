// The chat view's script (runs in the webview; bundled as dist/webview.js).
//
// Performance rules, for 2,000-message sessions and 10,000-token answers:
//   - messages from the extension are queued and applied once per animation frame;
//   - a text delta appends to the item's data and marks it dirty; the frame re-renders only the
//     unstable tail of that one message (markdown.stablePrefix), never the whole list;
//   - only the newest WINDOW items are in the DOM at first; older ones are added a page at a time
//     when the user scrolls up; every item has `content-visibility: auto`, so the browser skips
//     layout and paint of the ones off screen.

import type { AssistantItem, ChatChange, ChatItem, ToolItem } from "../chat/model";
import type { SessionViewState } from "../session";
import { commandLine, sandboxLabel } from "../review/format";
import { imagePlaceholder, mcpTitle, prettyArgs } from "../mcpFormat";
import { escapeHtml, inline, renderMarkdown, stablePrefix, visible } from "./markdown";
import type { FromWebview, ToWebview } from "./messages";
import { PromptHistory } from "./history";
import { activeMention, insertMention, type MentionItem } from "../mentions";

declare function acquireVsCodeApi(): { postMessage(m: unknown): void; getState(): unknown; setState(s: unknown): void };
const vscode = acquireVsCodeApi();
const post = (m: FromWebview) => vscode.postMessage(m);
// Errors of this script end up in the agentd output channel (and fail the end-to-end tests).
window.addEventListener("error", (e) => post({ type: "error", message: String((e.error as Error | undefined)?.stack ?? e.message) }));
window.addEventListener("unhandledrejection", (e) => post({ type: "error", message: `unhandled rejection: ${String((e.reason as Error | undefined)?.stack ?? e.reason)}` }));

const WINDOW = 120;
const PAGE = 100;
const MAX_OUTPUT_CHARS = 64 * 1024;

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const log = $("log");
const list = $("items");
const older = $("older");
const empty = $("empty");
const input = $<HTMLTextAreaElement>("input");
const sendBtn = $<HTMLButtonElement>("send");
const stopBtn = $<HTMLButtonElement>("stop");

// ---- performance counters (read by the benchmarks) ----

interface Perf {
	longTasks: number[];
	frames: number;
	/** Our script's time per frame (applying changes, markdown, forced layout). */
	maxFrameMs: number;
	totalFrameMs: number;
	/** The whole frame: our script, then style, layout and paint, until the next task runs. */
	maxFullFrameMs: number;
	fullFramesOver50: number;
	/** What the slowest frame did. */
	maxFrameWhat: string;
	changes: number;
	messages: number;
	since: number;
}
const perf: Perf = { longTasks: [], frames: 0, maxFrameMs: 0, totalFrameMs: 0, maxFullFrameMs: 0, fullFramesOver50: 0, maxFrameWhat: "", changes: 0, messages: 0, since: performance.now() };
let frameWhat: Record<string, number> = {};
const afterPaint = new MessageChannel();
let frameStart = 0;
afterPaint.port1.onmessage = () => {
	const ms = performance.now() - frameStart;
	if (ms > perf.maxFullFrameMs) perf.maxFullFrameMs = ms;
	if (ms > 50) perf.fullFramesOver50++;
};
try {
	new PerformanceObserver((l) => {
		for (const e of l.getEntries()) perf.longTasks.push(Math.round(e.duration));
	}).observe({ type: "longtask", buffered: true });
} catch {
	// longtask is not supported everywhere; the frame timings still work.
}
(window as unknown as { __agentdPerf: Perf }).__agentdPerf = perf;

// ---- item records ----

interface MdView {
	stable: HTMLElement;
	tail: HTMLElement;
	stableLen: number;
	text: string;
	tailText: string;
}

interface Rec {
	item: ChatItem;
	el?: HTMLElement;
	md?: MdView;
	thinkingEl?: HTMLElement;
	outputEl?: HTMLElement;
	dirtyText?: boolean;
	pendingThinking?: string;
	pendingOutput?: string;
}

let recs: Rec[] = [];
const byId = new Map<string, Rec>();
let windowStart = 0;
let state: SessionViewState | undefined;
let pinned = true;
const dirty = new Set<Rec>();
const queue: ToWebview[] = [];
let frameRequested = false;
const prompts = new PromptHistory();

/** Shows the previous (-1) or next (+1) prompt of the history; false at either end. */
function recall(dir: -1 | 1): boolean {
	const text = prompts.recall(dir, input.value);
	if (text === undefined) return false;
	input.value = text;
	input.setSelectionRange(input.value.length, input.value.length);
	autosize();
	return true;
}

window.addEventListener("message", (ev: MessageEvent<ToWebview>) => {
	const m = ev.data;
	if (m.type === "perf") {
		post({ type: "perf", data: { ...perf, items: recs.length, domItems: list.childElementCount } });
		return;
	}
	if (m.type === "mentionItems") {
		showMentions(m.seq, m.items);
		return;
	}
	if (m.type === "perfReset") {
		Object.assign(perf, { longTasks: [], frames: 0, maxFrameMs: 0, totalFrameMs: 0, maxFullFrameMs: 0, fullFramesOver50: 0, maxFrameWhat: "", changes: 0, messages: 0, since: performance.now() });
		return;
	}
	queue.push(m);
	perf.messages++;
	if (!frameRequested) {
		frameRequested = true;
		requestAnimationFrame(frame);
	}
});

log.addEventListener(
	"scroll",
	() => {
		pinned = log.scrollTop + log.clientHeight >= log.scrollHeight - 40;
		if (log.scrollTop < 200 && windowStart > 0) loadOlder();
	},
	{ passive: true },
);

function frame(): void {
	frameRequested = false;
	const t0 = performance.now();
	frameStart = t0;
	// Delivered as the first task after this frame's style, layout and paint.
	afterPaint.port2.postMessage(0);
	try {
		const msgs = queue.splice(0);
		for (const m of msgs) handle(m);
		for (const r of dirty) flushRec(r);
		dirty.clear();
		if (pinned) log.scrollTop = log.scrollHeight;
	} catch (err) {
		post({ type: "error", message: String((err as Error)?.stack ?? err) });
	}
	const ms = performance.now() - t0;
	perf.frames++;
	perf.totalFrameMs += ms;
	if (ms > perf.maxFrameMs) {
		perf.maxFrameMs = ms;
		perf.maxFrameWhat = Object.entries(frameWhat)
			.map(([k, v]) => `${k}:${v}`)
			.join(" ");
	}
	frameWhat = {};
}

function handle(m: ToWebview): void {
	switch (m.type) {
		case "snapshot":
			renderState(m.state);
			reset(m.items);
			prompts.set(m.history);
			break;
		case "changes":
			for (const c of m.changes) change(c);
			break;
		case "state":
			renderState(m.state);
			break;
		case "focusInput":
			input.focus();
			break;
		case "prefill":
			input.value = m.text;
			autosize();
			input.focus();
			break;
	}
}

function change(c: ChatChange): void {
	perf.changes++;
	const k = c.op === "append" ? `append.${c.field}` : c.op === "set" || c.op === "add" ? `${c.op}.${c.item.kind}` : c.op;
	frameWhat[k] = (frameWhat[k] ?? 0) + 1;
	switch (c.op) {
		case "reset":
			reset(c.items);
			break;
		case "add": {
			const r: Rec = { item: c.item };
			recs.push(r);
			byId.set(c.item.id, r);
			mount(r, null);
			updateEmpty();
			break;
		}
		case "set": {
			const r = byId.get(c.item.id);
			if (!r) return;
			r.item = c.item;
			if (r.el) rerender(r);
			break;
		}
		case "append": {
			const r = byId.get(c.id);
			if (!r) return;
			const it = r.item as unknown as Record<string, string>;
			it[c.field] = (it[c.field] ?? "") + c.text;
			if (!r.el) return;
			if (c.field === "text") r.dirtyText = true;
			else if (c.field === "thinking") r.pendingThinking = (r.pendingThinking ?? "") + c.text;
			else r.pendingOutput = (r.pendingOutput ?? "") + c.text;
			dirty.add(r);
			break;
		}
		case "remove": {
			const r = byId.get(c.id);
			if (!r) return;
			r.el?.remove();
			byId.delete(c.id);
			const i = recs.indexOf(r);
			if (i >= 0) {
				recs.splice(i, 1);
				if (i < windowStart) windowStart--;
			}
			updateEmpty();
			break;
		}
	}
}

function reset(items: ChatItem[]): void {
	recs = items.map((item) => ({ item }));
	byId.clear();
	for (const r of recs) byId.set(r.item.id, r);
	dirty.clear();
	list.textContent = "";
	windowStart = Math.max(0, recs.length - WINDOW);
	const frag = document.createDocumentFragment();
	for (let i = windowStart; i < recs.length; i++) mount(recs[i], frag);
	list.appendChild(frag);
	older.hidden = windowStart === 0;
	updateEmpty();
	pinned = true;
}

/** Adds the older page above the rendered window, keeping the scroll position. */
function loadOlder(): void {
	if (windowStart === 0) return;
	const from = Math.max(0, windowStart - PAGE);
	const frag = document.createDocumentFragment();
	for (let i = from; i < windowStart; i++) mount(recs[i], frag);
	const before = log.scrollHeight;
	list.insertBefore(frag, list.firstChild);
	windowStart = from;
	older.hidden = windowStart === 0;
	log.scrollTop += log.scrollHeight - before;
}
$("load-older").addEventListener("click", loadOlder);

function updateEmpty(): void {
	empty.hidden = recs.length > 0;
}

// ---- rendering one item ----

function mount(r: Rec, into: DocumentFragment | null): void {
	const el = document.createElement("div");
	el.className = "item";
	el.dataset.id = r.item.id;
	r.el = el;
	fill(r);
	(into ?? list).appendChild(el);
}

function rerender(r: Rec): void {
	if (r.item.kind === "assistant" && r.md && r.thinkingEl !== undefined) {
		// Keep the rendered prefix when the final text extends it (the usual messageCompleted).
		const a = r.item;
		const md = r.md;
		r.el!.classList.toggle("streaming", a.streaming);
		if (a.text.startsWith(md.text.slice(0, md.stableLen))) {
			md.text = a.text;
			updateMd(md, !a.streaming);
		} else {
			md.text = a.text;
			fullMd(md);
		}
		setThinking(r, a);
		return;
	}
	fill(r);
}

function fill(r: Rec): void {
	const el = r.el!;
	const it = r.item;
	r.md = undefined;
	r.thinkingEl = undefined;
	r.outputEl = undefined;
	r.pendingOutput = undefined;
	r.pendingThinking = undefined;
	el.className = `item ${it.kind}`;
	switch (it.kind) {
		case "user": {
			el.classList.toggle("pending", !!it.pending);
			el.innerHTML =
				`<div class="who">You${it.steer ? ' <span class="tag">steer</span>' : ""}</div>` +
				`<div class="text">${escapeHtml(it.text)}</div>` +
				(it.context?.length ? `<div class="ctx">${it.context.map((c) => `<span class="chip small">${escapeHtml(c)}</span>`).join("")}</div>` : "");
			break;
		}
		case "assistant": {
			el.classList.toggle("streaming", it.streaming);
			el.innerHTML =
				`<details class="thinking"${it.thinking ? "" : " hidden"}><summary>Thinking</summary><div class="thinking-body"></div></details>` +
				`<div class="md"><div class="stable"></div><div class="tail"></div></div>`;
			r.thinkingEl = el.querySelector(".thinking-body") as HTMLElement;
			r.thinkingEl.textContent = visible(it.thinking);
			const md: MdView = {
				stable: el.querySelector(".stable") as HTMLElement,
				tail: el.querySelector(".tail") as HTMLElement,
				stableLen: 0,
				text: it.text,
				tailText: "",
			};
			r.md = md;
			if (it.streaming) updateMd(md, false);
			else fullMd(md);
			break;
		}
		case "tool":
			renderTool(r, it);
			break;
		case "notice":
			el.classList.add(it.level);
			el.innerHTML = `<div class="notice-text">${inline(it.text)}</div>` + (it.detail ? `<details><summary>Details</summary><div class="md">${renderMarkdown(it.detail)}</div></details>` : "");
			break;
		case "error":
			el.innerHTML =
				`<div class="err-msg">${escapeHtml(it.error.message)}</div>` + (it.error.fix ? `<div class="err-fix"><b>Fix:</b> ${inline(it.error.fix)}</div>` : "");
			break;
		case "turnEnd": {
			const reason = it.reason && it.reason !== "done" ? `<span class="reason">${escapeHtml(reasonText(it.reason))}</span>` : "";
			const revert = it.reverted
				? `<span class="reverted">${escapeHtml(it.reverted)}</span>`
				: it.changedFiles
					? `<button class="link" data-action="revert" data-turn="${escapeHtml(it.turnId)}" title="Restore the files this turn changed">↶ Revert this turn</button>`
					: "";
			el.innerHTML = reason || revert ? `${reason}${revert}` : "";
			el.classList.toggle("quiet", !reason && !revert);
			break;
		}
	}
}

function reasonText(r: string): string {
	switch (r) {
		case "cancelled":
			return "Stopped.";
		case "error":
			return "The turn failed.";
		case "steps_exhausted":
			return "Stopped: the step limit was reached.";
		case "time_exhausted":
			return "Stopped: the time limit was reached.";
		case "terminated":
			return "Stopped by a tool.";
		default:
			return `Ended: ${r}.`;
	}
}

function setThinking(r: Rec, a: AssistantItem): void {
	if (!r.thinkingEl) return;
	const det = r.thinkingEl.parentElement as HTMLElement;
	det.hidden = !a.thinking;
	if (r.thinkingEl.textContent !== visible(a.thinking)) r.thinkingEl.textContent = visible(a.thinking);
	r.pendingThinking = undefined;
}

function updateMd(md: MdView, final: boolean): void {
	const cut = final ? md.text.length : stablePrefix(md.text, md.stableLen);
	if (cut > md.stableLen) {
		md.stable.insertAdjacentHTML("beforeend", renderMarkdown(md.text.slice(md.stableLen, cut)));
		md.stableLen = cut;
	}
	const tail = md.text.slice(md.stableLen);
	if (tail !== md.tailText) {
		md.tail.innerHTML = tail ? renderMarkdown(tail) : "";
		md.tailText = tail;
	}
}

function fullMd(md: MdView): void {
	md.stable.innerHTML = renderMarkdown(md.text);
	md.stableLen = md.text.length;
	md.tail.innerHTML = "";
	md.tailText = "";
}

function flushRec(r: Rec): void {
	if (!r.el) return;
	const it = r.item;
	if (it.kind === "assistant" && r.md) {
		if (r.dirtyText) {
			r.md.text = it.text;
			updateMd(r.md, false);
			r.dirtyText = false;
		}
		if (r.pendingThinking && r.thinkingEl) {
			(r.thinkingEl.parentElement as HTMLElement).hidden = false;
			r.thinkingEl.appendChild(document.createTextNode(visible(r.pendingThinking)));
			r.pendingThinking = undefined;
		}
	} else if (it.kind === "tool" && r.pendingOutput) {
		appendOutput(r, r.pendingOutput);
		r.pendingOutput = undefined;
	}
}

// The keys of package.json's keybindings for the card's actions (the review lenses show theirs):
// agentd.review.approveCommand and agentd.review.next. The browser's platform is the one whose
// keybinding ("mac" or "key") VS Code uses.
const MAC_KEYS = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);
const CARD_KEYS = { approve: MAC_KEYS ? "⌘⌥Enter" : "Ctrl+Alt+Enter", review: MAC_KEYS ? "⌘⌥." : "Ctrl+Alt+." };
const kbd = (k: string) => ` <kbd>${escapeHtml(k)}</kbd>`;

const STATUS_ICON: Record<string, string> = { pending: "…", awaitingApproval: "●", running: "", completed: "✓", failed: "✗" };

/** What a tool card is titled: the daemon's label, or one made from the arguments. */
function toolTitle(t: ToolItem): string {
	if (t.mcp) return mcpTitle(t.mcp);
	if (t.label && t.label !== t.tool) return t.label;
	const a = (t.arguments && typeof t.arguments === "object" ? t.arguments : {}) as Record<string, unknown>;
	const str = (k: string) => (typeof a[k] === "string" ? (a[k] as string) : "");
	if (str("command")) return `$ ${str("command").split("\n")[0]}`;
	if (str("path")) return `${t.tool} ${str("path")}`;
	if (str("pattern")) return `${t.tool} ${str("pattern")}`;
	return t.label || t.tool;
}

/** What a change that waits for an earlier one of its file says on its card. */
function waitsText(t: ToolItem): string {
	const a = (t.arguments ?? {}) as Record<string, unknown>;
	const file = typeof a.path === "string" && a.path ? a.path : "this file";
	return `Waits for the earlier change of ${file}: shown for review once that one is decided`;
}

function renderTool(r: Rec, t: ToolItem): void {
	const el = r.el!;
	const failed = t.status === "failed" || !!t.result?.isError;
	el.classList.add(`st-${t.status}`);
	el.classList.toggle("failed", failed);
	const elapsed = t.result ? `<span class="elapsed">${fmtMs(t.result.elapsedMs)}</span>` : "";
	let h =
		`<div class="tool-head"><span class="ticon${t.status === "running" ? " spin" : ""}" aria-label="${escapeHtml(t.status)}">${STATUS_ICON[t.status] ?? "•"}</span>` +
		`<span class="tlabel" title="${escapeHtml(t.label || t.tool)}">${escapeHtml(toolTitle(t))}</span>` +
		(t.mcp ? `<span class="badge mcp" title="a tool of the MCP server ${escapeHtml(t.mcp.server)} (${escapeHtml(t.tool)})">MCP</span>` : "") +
		`${elapsed}</div>`;
	if (t.activity && (t.status === "running" || t.status === "pending")) h += `<div class="activity">${escapeHtml(t.activity)}</div>`;
	if (t.waitsFor && t.status === "pending") h += `<div class="activity waits">${escapeHtml(waitsText(t))}</div>`;
	if (t.status === "awaitingApproval") {
		h += `<div class="activity">Waiting for your approval${t.reviewKind === "edit" ? " in the editor" : ""}…${t.reviewWhy ? ` <span class="why">(${escapeHtml(t.reviewWhy)})</span>` : ""}</div>`;
	}
	const p = t.preview;
	if (p?.command) {
		h +=
			`<div class="cmd"><code>$ ${escapeHtml(commandLine(p.command.argv))}</code>` +
			`<div class="cmd-meta" title="${escapeHtml(p.command.sandbox)}">in ${escapeHtml(p.command.cwd)} · ${escapeHtml(sandboxLabel(p.command.sandbox, p.command.network))}</div></div>`;
	}
	// An MCP call waiting for approval shows the exact arguments it sends, in full.
	const mcpArgsShown = !!t.mcp && t.status === "awaitingApproval";
	if (mcpArgsShown) {
		h +=
			`<div class="mcp-args"><div class="cmd-meta">Arguments sent to ${escapeHtml(mcpTitle(t.mcp!))}:</div>` +
			`<pre>${escapeHtml(prettyArgs(t.reviewArgs !== undefined ? t.reviewArgs : t.arguments))}</pre></div>`;
	}
	if (p?.unifiedDiff) h += `<details class="diff"${t.status === "awaitingApproval" ? " open" : ""}><summary>${escapeHtml(p.summary || "Diff")}</summary>${diffHtml(p.unifiedDiff)}</details>`;
	else if (p?.summary && !p.command && !t.mcp) h += `<div class="summary">${escapeHtml(p.summary)}</div>`;
	if (t.reviewId) {
		const id = escapeHtml(t.reviewId);
		h +=
			t.reviewKind === "edit"
				? `<div class="actions"><button class="primary" data-action="review" data-review="${id}" data-do="show" title="Review in editor (${CARD_KEYS.review})">Review in editor${kbd(CARD_KEYS.review)}</button>` +
					`<button data-action="review" data-review="${id}" data-do="accept">Accept all</button>` +
					`<button data-action="review" data-review="${id}" data-do="reject">Reject…</button></div>`
				: `<div class="actions"><button class="primary" data-action="review" data-review="${id}" data-do="accept" title="${t.reviewKind === "command" ? "Run once" : "Allow once"} (${CARD_KEYS.approve})">${t.reviewKind === "command" ? "Run" : "Allow"}${kbd(CARD_KEYS.approve)}</button>` +
					`<button data-action="review" data-review="${id}" data-do="session">Allow for session…</button>` +
					`<button data-action="review" data-review="${id}" data-do="reject">Reject…</button></div>`;
	}
	const showOutput = t.output || t.status === "running";
	// Output stays open while it runs, and after when it is short or the call failed.
	const outputOpen = !t.result || failed || t.output.split("\n").length <= 30;
	if (showOutput) h += `<details class="output-box"${outputOpen ? " open" : ""}><summary>Output</summary><pre class="output"></pre></details>`;
	if (t.result) {
		const lines = t.result.text.split("\n").length;
		// With the output shown above, the result (which repeats it) starts closed.
		const open = t.result.isError || (!showOutput && lines <= 12);
		h +=
			`<details class="result"${open ? " open" : ""}><summary>${t.result.isError ? "Error" : "Result"}: ${escapeHtml(t.result.type)}${t.result.truncated ? " (truncated)" : ""}</summary>` +
			`<pre>${escapeHtml(t.result.text)}</pre></details>`;
		if (t.result.images?.length) {
			h += `<div class="result-images">${t.result.images.map((im) => `<span class="image-ph">${escapeHtml(imagePlaceholder(im))}</span>`).join(" ")}</div>`;
		}
	}
	if (t.arguments !== undefined && t.arguments !== null && !mcpArgsShown) {
		h += `<details class="args"><summary>Arguments</summary><pre>${escapeHtml(JSON.stringify(t.arguments, null, 2))}</pre></details>`;
	}
	el.innerHTML = h;
	if (showOutput) {
		r.outputEl = el.querySelector(".output") as HTMLElement;
		r.outputEl.textContent = visible(t.output);
	}
}

function appendOutput(r: Rec, text: string): void {
	if (!r.outputEl) {
		// The first output of a call rendered without an output box.
		fill(r);
		return;
	}
	r.outputEl.appendChild(document.createTextNode(visible(text)));
	if ((r.outputEl.textContent?.length ?? 0) > MAX_OUTPUT_CHARS) {
		const s = r.outputEl.textContent!;
		r.outputEl.textContent = "…" + s.slice(s.length - MAX_OUTPUT_CHARS);
	}
}

function diffHtml(diff: string): string {
	const lines = diff.split("\n");
	if (lines.length && lines[lines.length - 1] === "") lines.pop();
	return (
		`<pre class="udiff">` +
		lines
			.map((l) => {
				const cls = l.startsWith("+++") || l.startsWith("---") ? "dh" : l.startsWith("@@") ? "dhunk" : l.startsWith("+") ? "dadd" : l.startsWith("-") ? "ddel" : "dctx";
				return `<span class="${cls}">${escapeHtml(l)}</span>`;
			})
			.join("\n") +
		`</pre>`
	);
}

function fmtMs(ms: number): string {
	return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

// ---- header, banners, composer ----

function renderState(s: SessionViewState): void {
	state = s;
	$("session-title").textContent = visible(s.session?.title ?? "New session");
	$("session").title = s.session ? `Session ${s.session.id} — click to switch` : "Sessions: resume or start one";
	$("model").textContent = `${visible(s.model || "model")} ▾`;
	$("mode").textContent = `${s.approvalMode} ▾`;
	const conn = $("conn");
	let banner = "";
	switch (s.connection.kind) {
		case "starting":
			banner = `<span>Starting agentd…</span>`;
			break;
		case "stopped":
			banner = `<span>agentd is stopped.</span> <button data-action="restart">Start</button>`;
			break;
		case "waiting":
			banner = `<span>${escapeHtml(s.connection.message ?? "agentd stopped; reconnecting…")}</span> <button data-action="restart">Reconnect now</button> <button data-action="showLog">Log</button>`;
			break;
		case "failed":
			banner =
				`<div class="err-msg">${inline(s.connection.message ?? "agentd failed")}</div>` +
				(s.connection.fix ? `<div class="err-fix"><b>Fix:</b> ${inline(s.connection.fix)}</div>` : "") +
				`<div class="actions"><button data-action="openSettings">Settings</button><button data-action="restart">Retry</button><button data-action="showLog">Log</button></div>`;
			break;
		case "running":
			if (s.connection.ollama && s.connection.ollama !== "ok") banner = `<div class="err-msg">Ollama: ${inline(s.connection.ollama)}</div><div class="actions"><button data-action="restart">Retry</button></div>`;
			else if (s.connection.modelProblem) banner = `<div class="err-msg">${inline(s.connection.modelProblem)}</div><div class="actions"><button data-action="pickModel">Pick a model</button><button data-action="restart">Check again</button></div>`;
			break;
	}
	conn.innerHTML = banner;
	conn.hidden = !banner;
	conn.className = s.connection.kind === "failed" || (s.connection.kind === "running" && banner) ? "bad" : "";
	// Running turn: Send steers, Stop is shown.
	stopBtn.hidden = !s.running;
	sendBtn.textContent = s.running ? "Steer" : "Send";
	sendBtn.title = s.running ? "Send into the running turn (Enter)" : "Send (Enter)";
	input.placeholder = s.running ? "Steer the running turn…" : "Ask agentd… (@ to mention a file, folder or symbol)";
	$("activity").innerHTML = s.running ? `<span class="dot"></span>${escapeHtml(s.activity ?? "working")}…` : "";
	$("usage").textContent = s.usage ? `context ${s.usage.contextPercent}% of ${Math.round(s.usage.contextLength / 1024)}k` : "";
	const rv = $("reviews");
	rv.hidden = !s.pendingReviews;
	$("reviews-btn").textContent = `${s.pendingReviews} review${s.pendingReviews === 1 ? "" : "s"} waiting for you — go to next`;
	renderChips(s);
}

function renderChips(s: SessionViewState): void {
	const chips: string[] = [];
	for (const c of s.contexts) chips.push(`<span class="chip" title="Sent with the next prompt">${escapeHtml(c.label)}<button class="x" data-action="removeContext" data-id="${escapeHtml(c.id)}" title="Remove">×</button></span>`);
	if (s.activeFile)
		chips.push(
			`<button class="chip toggle${s.includeActiveFile ? "" : " off"}" data-action="toggleActiveFile" title="${s.includeActiveFile ? "The active file is sent as context — click to leave it out" : "Click to send the active file as context"}">${s.includeActiveFile ? "☑" : "☐"} ${escapeHtml(s.activeFile)}</button>`,
		);
	$("chips").innerHTML = chips.join("");
}

function send(): void {
	const text = input.value.trim();
	if (!text) return;
	prompts.remember(text);
	post({ type: "send", text, includeActiveFile: state?.includeActiveFile ?? true });
	input.value = "";
	autosize();
	pinned = true;
}

function autosize(): void {
	input.style.height = "auto";
	input.style.height = `${Math.min(input.scrollHeight, 240)}px`;
}

input.addEventListener("input", () => {
	autosize();
	queryMentions();
});
input.addEventListener("keydown", (e) => {
	if (mentionKey(e)) return;
	// Enter sends; with Alt it is a workbench key (Ctrl+Alt+Enter approves the pending command).
	if (e.key === "Enter" && !e.shiftKey && !e.altKey && !e.isComposing) {
		e.preventDefault();
		send();
	} else if (e.key === "Escape" && state?.running) {
		e.preventDefault();
		post({ type: "stop" });
	} else if ((e.key === "ArrowUp" || e.key === "ArrowDown") && !e.shiftKey && !e.altKey && !e.ctrlKey && !e.metaKey && input.selectionStart === input.selectionEnd) {
		// Only from the first line (↑) or the last line (↓): elsewhere the arrows move the caret.
		const caret = input.selectionStart ?? 0;
		const up = e.key === "ArrowUp";
		const edge = up ? !input.value.slice(0, caret).includes("\n") : !input.value.slice(caret).includes("\n");
		if (edge && recall(up ? -1 : 1)) e.preventDefault();
	}
});
sendBtn.addEventListener("click", send);

// ---- @ mentions: a completion list above the input ----

const mentionsEl = $("mentions");
let mentionSeq = 0;
let mentionAt: { start: number; query: string } | undefined;
let mentionItems: MentionItem[] = [];
let mentionSel = 0;

function queryMentions(): void {
	const caret = input.selectionStart ?? input.value.length;
	const am = input.selectionStart === input.selectionEnd ? activeMention(input.value, caret) : undefined;
	mentionAt = am;
	if (!am) return closeMentions();
	post({ type: "mentionQuery", seq: ++mentionSeq, query: am.query });
}

function showMentions(seq: number, items: MentionItem[]): void {
	if (seq !== mentionSeq || !mentionAt) return; // an older answer, or closed meanwhile
	mentionItems = items;
	mentionSel = 0;
	if (!items.length) {
		mentionsEl.innerHTML = `<div class="mention-none">${mentionAt.query.startsWith("#") ? (mentionAt.query.length > 1 ? "No symbol found" : "Type a symbol name") : "No file or folder found"}</div>`;
		mentionsEl.hidden = false;
		return;
	}
	const icon: Record<MentionItem["kind"], string> = { open: "▤", file: "▢", folder: "▸", symbol: "ƒ" };
	mentionsEl.innerHTML = items
		.map(
			(it, i) =>
				`<div class="mention${i === 0 ? " sel" : ""}" role="option" id="mention-${i}" data-i="${i}" aria-selected="${i === 0}" title="${escapeHtml(it.token)}"><span class="mk mk-${it.kind}">${icon[it.kind]}</span><span class="ml">${escapeHtml(it.label)}</span>${it.detail ? `<span class="md-detail">${escapeHtml(it.detail)}</span>` : ""}</div>`,
		)
		.join("");
	mentionsEl.hidden = false;
	input.setAttribute("aria-activedescendant", "mention-0");
}

function closeMentions(): void {
	mentionAt = undefined;
	mentionItems = [];
	mentionSeq++;
	mentionsEl.hidden = true;
	mentionsEl.innerHTML = "";
	input.removeAttribute("aria-activedescendant");
}

function selectMention(i: number): void {
	if (!mentionItems.length) return;
	mentionSel = (i + mentionItems.length) % mentionItems.length;
	mentionsEl.querySelectorAll(".mention").forEach((el, k) => {
		el.classList.toggle("sel", k === mentionSel);
		el.setAttribute("aria-selected", String(k === mentionSel));
	});
	mentionsEl.querySelector(".mention.sel")?.scrollIntoView({ block: "nearest" });
	input.setAttribute("aria-activedescendant", `mention-${mentionSel}`);
}

function pickMention(i: number): void {
	const it = mentionItems[i];
	const at = mentionAt;
	if (!it || !at) return closeMentions();
	const r = insertMention(input.value, at.start, input.selectionStart ?? input.value.length, it.token);
	input.value = r.text;
	input.setSelectionRange(r.caret, r.caret);
	if (it.kind === "symbol") post({ type: "mentionPick", token: it.token, id: it.id });
	closeMentions();
	autosize();
	input.focus();
	// A folder stays open for its files.
	if (it.kind === "folder") queryMentions();
}

/** Keys while the list is open; true when the key was the list's. */
function mentionKey(e: KeyboardEvent): boolean {
	if (mentionsEl.hidden || e.isComposing) return false;
	const take = () => {
		e.preventDefault();
		e.stopPropagation();
		return true;
	};
	switch (e.key) {
		case "ArrowDown":
			selectMention(mentionSel + 1);
			return take();
		case "ArrowUp":
			selectMention(mentionSel - 1);
			return take();
		case "Enter":
		case "Tab":
			if (e.shiftKey || !mentionItems.length) return false;
			pickMention(mentionSel);
			return take();
		case "Escape":
			closeMentions();
			return take();
	}
	return false;
}

// Mouse: mousedown (not click) so the input keeps the focus and the caret.
mentionsEl.addEventListener("mousedown", (e) => {
	const row = (e.target as HTMLElement).closest(".mention") as HTMLElement | null;
	e.preventDefault();
	if (row) pickMention(Number(row.dataset.i));
});
input.addEventListener("blur", () => closeMentions());
input.addEventListener("click", () => queryMentions());
stopBtn.addEventListener("click", () => post({ type: "stop" }));
$("session").addEventListener("click", () => post({ type: "pickSession" }));
$("model").addEventListener("click", () => post({ type: "pickModel" }));
$("mode").addEventListener("click", () => post({ type: "pickMode" }));
$("new").addEventListener("click", () => post({ type: "newSession" }));
$("reviews-btn").addEventListener("click", () => post({ type: "nextReview" }));

// Delegated clicks: buttons inside items and banners, links, copy buttons.
document.addEventListener("click", (e) => {
	const target = e.target as HTMLElement;
	const a = target.closest("a[data-href]") as HTMLAnchorElement | null;
	if (a) {
		e.preventDefault();
		post({ type: "openLink", href: a.dataset.href! });
		return;
	}
	const b = target.closest("[data-action]") as HTMLElement | null;
	if (!b) return;
	switch (b.dataset.action) {
		case "copy": {
			const code = b.closest(".code")?.querySelector("code")?.textContent ?? "";
			post({ type: "copy", text: code });
			break;
		}
		case "revert":
			post({ type: "revert", turnId: b.dataset.turn });
			break;
		case "review":
			post({ type: "review", reviewId: b.dataset.review!, action: b.dataset.do as "accept" | "session" | "reject" | "show" });
			break;
		case "removeContext":
			post({ type: "removeContext", id: b.dataset.id! });
			break;
		case "toggleActiveFile":
			post({ type: "toggleActiveFile", on: !(state?.includeActiveFile ?? true) });
			break;
		case "restart":
			post({ type: "restart" });
			break;
		case "pickModel":
			post({ type: "pickModel" });
			break;
		case "showLog":
			post({ type: "showLog" });
			break;
		case "openSettings":
			post({ type: "openSettings" });
			break;
	}
});

// Benchmark hook (used by scripts/test-e2e.sh --bench through the page, never by the extension):
// fills the view with a synthetic long session, to measure streaming on top of it.
(window as unknown as { __agentdBench: unknown }).__agentdBench = {
	load(n: number): number {
		const t0 = performance.now();
		const items: ChatItem[] = [];
		for (let i = 0; i < n; i++) {
			const turnId = `bench-t${Math.floor(i / 4)}`;
			switch (i % 4) {
				case 0:
					items.push({ kind: "user", id: `bench-u${i}`, turnId, text: `Question ${i}: why does the cart total go negative?` });
					break;
				case 1:
					items.push({ kind: "assistant", id: `bench-a${i}`, turnId, thinking: "Let me look.", streaming: false, text: `Answer ${i}: the **discount** is applied twice.\n\n\`\`\`go\nfunc Total(c *Cart) int {\n\treturn max(total, 0)\n}\n\`\`\`\n\n- one\n- two` });
					break;
				case 2:
					items.push({ kind: "tool", id: `bench-c${i}`, turnId, callId: `c${i}`, tool: "bash", label: "go test ./...", status: "completed", output: "ok  \tshop\t0.01s\n", result: { type: "ok", isError: false, text: "exit 0", elapsedMs: 120 } });
					break;
				default:
					items.push({ kind: "turnEnd", id: `bench-e${i}`, turnId, reason: "done", changedFiles: false });
			}
		}
		reset(items);
		return performance.now() - t0;
	},
};

post({ type: "ready" });
