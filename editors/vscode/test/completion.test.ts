// When inline completion is on: off by default, on once a completion model is configured, and the
// per-language switch over the global setting (src/completionSwitch.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { completionOn } from "../src/completionSwitch";

test("off by default, on when a completion model is configured", () => {
	assert.equal(completionOn("auto", {}, "go", false), false);
	assert.equal(completionOn("auto", {}, "go", true), true);
});

test("the setting overrides auto, the per-language switch overrides the setting", () => {
	assert.equal(completionOn("on", {}, "go", false), true);
	assert.equal(completionOn("off", {}, "go", true), false);
	assert.equal(completionOn("on", { markdown: false }, "markdown", true), false);
	assert.equal(completionOn("off", { go: true }, "go", false), true);
	assert.equal(completionOn("off", { go: true }, "python", false), false);
});
