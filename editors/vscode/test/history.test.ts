import { test } from "node:test";
import assert from "node:assert/strict";
import { PromptHistory } from "../src/webview/history";

test("↑/↓ walk the prompt history and come back to what was being typed", () => {
	const h = new PromptHistory();
	h.set(["first", "second"]);
	assert.equal(h.recall(1, "draft"), undefined, "nothing newer than the end");
	assert.equal(h.recall(-1, "draft"), "second");
	assert.equal(h.recall(-1, "second"), "first");
	assert.equal(h.recall(-1, "first"), undefined, "nothing older than the first");
	assert.equal(h.recall(1, "first"), "second");
	assert.equal(h.recall(1, "second"), "draft", "the draft is back at the end");
});

test("a sent prompt becomes the newest, once, and the history keeps the newest 100", () => {
	const h = new PromptHistory();
	h.set(["a", "b", "c"]);
	h.remember("a");
	assert.equal(h.recall(-1, ""), "a");
	assert.equal(h.recall(-1, "a"), "c");
	assert.equal(h.recall(-1, "c"), "b");
	assert.equal(h.recall(-1, "b"), undefined, "a moved up instead of appearing twice");
	h.set(Array.from({ length: 150 }, (_, i) => `p${i}`));
	let oldest = "";
	for (let t = h.recall(-1, ""); t !== undefined; t = h.recall(-1, t)) oldest = t;
	assert.equal(oldest, "p50");
});
