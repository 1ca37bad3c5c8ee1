// A small, safe Markdown renderer for the chat view: string in, HTML string out.
//
// Safety: every piece of source text is HTML-escaped before it is wrapped in the few fixed tags
// produced here; raw HTML in the source shows as text. Links never navigate the webview: they
// become <a data-href> that the webview forwards to the extension, which opens only file paths,
// command-free http(s) links (through VS Code), never javascript: or data:. Images are shown as
// their alt text (no remote resources, and the CSP forbids them anyway).
//
// Supported: fenced code blocks (``` and ~~~, with a language label and a copy button), ATX
// headings, paragraphs (single newlines kept as line breaks), bullet and ordered lists (nested by
// indentation), block quotes, thematic breaks, GFM tables, inline code, bold, italic,
// strikethrough, links and autolinks.
//
// No dependency on the DOM: the unit tests run it in node.

import { visible } from "../visible";

export { visible };

const ESC: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Text for HTML: control characters made visible, then HTML-escaped. */
export function escapeHtml(s: string): string {
	return html(visible(s));
}

// html escapes the HTML characters only: the renderer's text is made visible on the way in (its
// \u0000 placeholders are its own).
function html(s: string): string {
	return s.replace(/[&<>"']/g, (c) => ESC[c]);
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)?.*$/;
const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
const HR = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
const LIST = /^( {0,12})([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const TABLE_SEP = /^ {0,3}\|?(?:[ \t]*:?-+:?[ \t]*\|)+(?:[ \t]*:?-+:?[ \t]*)?\|?[ \t]*$/;

export function renderMarkdown(src: string): string {
	return renderBlocks(visible(src).replace(/\r\n?/g, "\n").split("\n"));
}

function renderBlocks(lines: string[]): string {
	const out: string[] = [];
	let i = 0;
	while (i < lines.length) {
		const line = lines[i];
		if (/^\s*$/.test(line)) {
			i++;
			continue;
		}
		const fence = FENCE.exec(line);
		if (fence) {
			const marker = fence[1];
			const lang = fence[2] ?? "";
			const body: string[] = [];
			i++;
			let closed = false;
			while (i < lines.length) {
				const l = lines[i];
				const m = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(l);
				if (m && m[1][0] === marker[0] && m[1].length >= marker.length) {
					closed = true;
					i++;
					break;
				}
				body.push(l);
				i++;
			}
			out.push(codeBlock(body.join("\n"), lang, !closed));
			continue;
		}
		const h = HEADING.exec(line);
		if (h) {
			const level = h[1].length;
			out.push(`<h${level}>${inline(h[2] ?? "")}</h${level}>`);
			i++;
			continue;
		}
		if (HR.test(line)) {
			out.push("<hr>");
			i++;
			continue;
		}
		if (QUOTE.test(line)) {
			const body: string[] = [];
			while (i < lines.length && !/^\s*$/.test(lines[i])) {
				const m = QUOTE.exec(lines[i]);
				body.push(m ? m[1] : lines[i]);
				i++;
			}
			out.push(`<blockquote>${renderBlocks(body)}</blockquote>`);
			continue;
		}
		if (LIST.test(line)) {
			i = list(lines, i, out);
			continue;
		}
		if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1])) {
			i = table(lines, i, out);
			continue;
		}
		// Paragraph: up to a blank line or the start of another block.
		const para: string[] = [];
		while (i < lines.length) {
			const l = lines[i];
			if (/^\s*$/.test(l)) break;
			if (para.length && (FENCE.test(l) || HEADING.test(l) || HR.test(l) || QUOTE.test(l) || LIST.test(l))) break;
			para.push(l.trim());
			i++;
		}
		out.push(`<p>${para.map(inline).join("<br>")}</p>`);
	}
	return out.join("");
}

function codeBlock(code: string, lang: string, open: boolean): string {
	const label = lang ? `<span class="lang">${html(lang)}</span>` : "<span class=\"lang\"></span>";
	return (
		`<div class="code${open ? " open" : ""}"><div class="code-head">${label}` +
		`<button class="copy" data-action="copy" title="Copy">Copy</button></div>` +
		`<pre><code${lang ? ` data-lang="${html(lang)}"` : ""}>${html(code)}</code></pre></div>`
	);
}

function indentOf(s: string): number {
	let n = 0;
	for (const c of s) {
		if (c === " ") n++;
		else if (c === "\t") n += 4;
		else break;
	}
	return n;
}

function list(lines: string[], start: number, out: string[]): number {
	const first = LIST.exec(lines[start])!;
	const baseIndent = indentOf(first[1]);
	const ordered = /\d/.test(first[2]);
	const items: string[][] = [];
	let i = start;
	while (i < lines.length) {
		const l = lines[i];
		const m = LIST.exec(l);
		if (m && indentOf(m[1]) === baseIndent && /\d/.test(m[2]) === ordered) {
			items.push([m[3]]);
			i++;
			continue;
		}
		if (/^\s*$/.test(l)) {
			// A blank line continues the list only when the next line is indented or another item.
			const next = lines[i + 1];
			if (next !== undefined && (indentOf(next) > baseIndent || (LIST.test(next) && indentOf(LIST.exec(next)![1]) === baseIndent))) {
				items[items.length - 1].push("");
				i++;
				continue;
			}
			break;
		}
		if (indentOf(l) > baseIndent || (!LIST.test(l) && !FENCE.test(l) && !HEADING.test(l) && !QUOTE.test(l))) {
			// Continuation or nested content: strip the item's indentation.
			const strip = Math.min(indentOf(l), baseIndent + 2 + (ordered ? 1 : 0));
			items[items.length - 1].push(l.slice(Math.min(strip, l.length - l.trimStart().length)));
			i++;
			continue;
		}
		break;
	}
	const startNum = ordered ? parseInt(first[2], 10) : 1;
	const tag = ordered ? "ol" : "ul";
	const attr = ordered && startNum !== 1 ? ` start="${startNum}"` : "";
	out.push(
		`<${tag}${attr}>` +
			items
				.map((body) => {
					const tight = body.length === 1 || !body.some((b) => b === "");
					if (tight && !body.slice(1).some((b) => LIST.test(b) || FENCE.test(b))) {
						return `<li>${body.map((b) => inline(b.trim())).join("<br>")}</li>`;
					}
					const html = renderBlocks(body);
					return `<li>${tight ? html.replace(/^<p>(.*?)<\/p>/, "$1") : html}</li>`;
				})
				.join("") +
			`</${tag}>`,
	);
	return i;
}

function splitRow(l: string): string[] {
	let s = l.trim();
	if (s.startsWith("|")) s = s.slice(1);
	if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
	const cells: string[] = [];
	let cur = "";
	let code = false;
	for (let k = 0; k < s.length; k++) {
		const c = s[k];
		if (c === "\\" && s[k + 1] === "|") {
			cur += "|";
			k++;
		} else if (c === "`") {
			code = !code;
			cur += c;
		} else if (c === "|" && !code) {
			cells.push(cur.trim());
			cur = "";
		} else cur += c;
	}
	cells.push(cur.trim());
	return cells;
}

function table(lines: string[], start: number, out: string[]): number {
	const head = splitRow(lines[start]);
	const aligns = splitRow(lines[start + 1]).map((c) => (c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : ""));
	// Classes, not style attributes: the webview's CSP forbids inline styles.
	const al = (k: number) => (aligns[k] ? ` class="al-${aligns[k]}"` : "");
	let i = start + 2;
	const rows: string[] = [];
	while (i < lines.length && lines[i].includes("|") && !/^\s*$/.test(lines[i])) {
		const cells = splitRow(lines[i]);
		rows.push(`<tr>${head.map((_, k) => `<td${al(k)}>${inline(cells[k] ?? "")}</td>`).join("")}</tr>`);
		i++;
	}
	out.push(
		`<table><thead><tr>${head.map((c, k) => `<th${al(k)}>${inline(c)}</th>`).join("")}</tr></thead>` +
			`<tbody>${rows.join("")}</tbody></table>`,
	);
	return i;
}

/** Allowed link targets: http(s), file:, and workspace paths (no scheme). */
export function safeHref(url: string): string | undefined {
	const u = url.trim();
	if (/^https?:\/\//i.test(u) || /^file:\/\//i.test(u)) return u;
	if (/^[a-z][a-z0-9+.-]*:/i.test(u)) return undefined; // javascript:, data:, command:, vscode:, …
	if (u === "" || u.startsWith("//")) return undefined;
	return u;
}

/** Inline Markdown of one line (or a joined paragraph line). */
export function inline(src: string): string {
	src = visible(src);
	// Code spans first: their content is literal.
	const parts: string[] = [];
	let i = 0;
	let text = "";
	while (i < src.length) {
		const c = src[i];
		if (c === "\\" && i + 1 < src.length && /[\\`*_{}[\]()#+\-.!~|<>]/.test(src[i + 1])) {
			text += "\u0000E" + src.charCodeAt(i + 1) + "\u0000";
			i += 2;
			continue;
		}
		if (c === "`") {
			let n = 1;
			while (src[i + n] === "`") n++;
			const ticks = "`".repeat(n);
			const end = src.indexOf(ticks, i + n);
			if (end > 0 && src[end + n] !== "`") {
				let code = src.slice(i + n, end);
				if (/^ .* $/.test(code) && code.trim()) code = code.slice(1, -1);
				parts.push(`<code>${html(code)}</code>`);
				text += `\u0000C${parts.length - 1}\u0000`;
				i = end + n;
				continue;
			}
			text += ticks;
			i += n;
			continue;
		}
		text += c;
		i++;
	}
	let h = html(text);
	// Images: alt text only.
	h = h.replace(/!\[([^\]]*)\]\(([^()\s]*)\)/g, (_m, alt: string) => `<span class="img-alt">[image${alt ? ": " + alt : ""}]</span>`);
	// Links [text](url "title").
	h = h.replace(/\[([^\]]+)\]\(([^()\s]+)(?:\s+&quot;[^"]*?&quot;)?\)/g, (m, label: string, url: string) => {
		const href = safeHref(unescapeHtml(restore(url, parts)));
		if (!href) return label;
		return `<a href="#" data-href="${html(href)}" title="${html(href)}">${label}</a>`;
	});
	// Autolinks <https://…> and bare URLs.
	h = h.replace(/&lt;(https?:\/\/[^\s&]+)&gt;/g, (_m, url: string) => link(url));
	h = h.replace(/(^|[\s(])(https?:\/\/[^\s<]*[^\s<.,;:!?)'"&])/g, (_m, pre: string, url: string) => pre + link(url));
	h = h.replace(/\*\*(?=\S)([\s\S]*?\S)\*\*/g, "<strong>$1</strong>");
	h = h.replace(/(^|[^\w])__(?=\S)([\s\S]*?\S)__(?!\w)/g, "$1<strong>$2</strong>");
	h = h.replace(/(^|[^*\w])\*(?=[^\s*])([^*]*?[^\s*])\*(?!\*)/g, "$1<em>$2</em>");
	h = h.replace(/(^|[^\w])_(?=[^\s_])([^_]*?[^\s_])_(?!\w)/g, "$1<em>$2</em>");
	h = h.replace(/~~(?=\S)([\s\S]*?\S)~~/g, "<del>$1</del>");
	return restore(h, parts);
}

function link(url: string): string {
	const raw = unescapeHtml(url);
	return `<a href="#" data-href="${html(raw)}" title="${html(raw)}">${url}</a>`;
}

function restore(h: string, parts: string[]): string {
	return h.replace(/\u0000([CE])(\d+)\u0000/g, (_m, k: string, n: string) => (k === "C" ? parts[Number(n)] : html(String.fromCharCode(Number(n)))));
}

function unescapeHtml(s: string): string {
	return s.replace(/&(amp|lt|gt|quot|#39);/g, (_m, e: string) => ({ amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'" })[e]!);
}

/**
 * Where a streaming text can be cut so that the part before never changes its rendering again:
 * the end of the last blank line that lies outside a code fence, at or after `from` (which must
 * itself be such a point). Returns `from` when there is none yet. O(text.length - from).
 */
export function stablePrefix(text: string, from: number): number {
	let best = from;
	let inFence = false;
	let fenceChar = "";
	let fenceLen = 0;
	let pos = from;
	let prevBlank = false;
	while (pos < text.length) {
		const nl = text.indexOf("\n", pos);
		if (nl < 0) {
			// The last line is still being written: a boundary already if it starts with a letter
			// (it cannot become a list item, a fence or an indented continuation).
			if (prevBlank && /^\p{L}/u.test(text.slice(pos, pos + 1))) best = pos;
			break;
		}
		const line = text.slice(pos, nl);
		const wasInFence = inFence;
		// A block boundary: a non-indented line after a blank line, outside a fence. A list item
		// is not a boundary (it may continue a loose list), nor is an indented line.
		if (!wasInFence && prevBlank && !/^\s/.test(line) && !LIST.test(line)) best = pos;
		const m = /^ {0,3}(`{3,}|~{3,})/.exec(line);
		if (inFence) {
			if (m && m[1][0] === fenceChar && m[1].length >= fenceLen && /^ {0,3}(`{3,}|~{3,})\s*$/.test(line)) inFence = false;
		} else if (m) {
			inFence = true;
			fenceChar = m[1][0];
			fenceLen = m[1].length;
		}
		prevBlank = !wasInFence && !inFence && /^\s*$/.test(line);
		pos = nl + 1;
	}
	return best;
}
