import { test } from "node:test";
import assert from "node:assert/strict";
import { anchorsOf, decisionFor, hunkAt, planDecorations, proposedLine, rejectRestDecision, shiftAnchors, LINE_JOIN, type HunkState } from "../src/review/model";
import type { FileReview, Hunk } from "../src/protocol";

// The example review of docs/protocol.md §5.
const file: FileReview = {
	uri: "file:///home/ada/src/shop/cart.go",
	path: "cart.go",
	version: 12,
	hunks: [
		{ id: "h3fa01b2c", oldStart: 45, oldLines: 1, newStart: 45, newLines: 0, removed: ["\ttotal -= discount"], added: [] },
		{ id: "h91c4d0e7", oldStart: 60, oldLines: 1, newStart: 59, newLines: 1, removed: ["\treturn total"], added: ["\treturn max(total, 0)"] },
	],
	unifiedDiff: "",
	edit: {
		edits: [
			{ range: { start: { line: 44, character: 0 }, end: { line: 45, character: 0 } }, newText: "" },
			{ range: { start: { line: 59, character: 0 }, end: { line: 60, character: 0 } }, newText: "\treturn max(total, 0)\n" },
		],
	},
};

const none = new Map<string, HunkState>();

test("anchors come from the hunks (0-based)", () => {
	assert.deepEqual(anchorsOf(file), [
		{ id: "h3fa01b2c", start: 44, removed: 1 },
		{ id: "h91c4d0e7", start: 59, removed: 1 },
	]);
});

test("pending hunks: removed lines red, a one-line proposal as ghost text after the line it replaces", () => {
	const plan = planDecorations(file.hunks, anchorsOf(file), none, { lineCount: 100, tabSize: 2 });
	assert.deepEqual(plan, {
		removed: [
			{ line: 44, hunkId: "h3fa01b2c" },
			{ line: 59, hunkId: "h91c4d0e7" },
		],
		ghosts: [{ line: 59, before: false, text: "  return max(total, 0)", hunkId: "h91c4d0e7" }],
		blocks: [],
		acceptedRemoved: [],
		lenses: [
			{ line: 44, hunkId: "h3fa01b2c", state: "pending", conflict: false },
			{ line: 59, hunkId: "h91c4d0e7", state: "pending", conflict: false },
		],
	});
});

test("a multi-line proposal is a block of real lines below the last removed line, never joined or cut", () => {
	const added = Array.from({ length: 13 }, (_, i) => `\tline ${i + 1} ` + "x".repeat(40));
	const h: Hunk = { id: "h", oldStart: 2, oldLines: 2, newStart: 2, newLines: 13, removed: ["b", "c"], added };
	const plan = planDecorations([h], [{ id: "h", start: 1, removed: 2 }], none, { lineCount: 10 });
	assert.deepEqual(plan.ghosts, []);
	assert.deepEqual(plan.blocks, [{ hunkId: "h", afterLine: 2, lines: added, state: "pending" }]);
	assert.deepEqual(plan.removed.map((r) => r.line), [1, 2]);
	assert.ok(!plan.blocks[0].lines.some((l) => l.includes(LINE_JOIN)));
});

test("a multi-line insertion is a block below the line above it; a one-line one is ghost text", () => {
	const h: Hunk = { id: "i", oldStart: 3, oldLines: 0, newStart: 3, newLines: 2, removed: [], added: ["x", "y"] };
	const plan = planDecorations([h], [{ id: "i", start: 2, removed: 0 }], none, { lineCount: 10 });
	assert.deepEqual(plan.ghosts, []);
	assert.deepEqual(plan.blocks, [{ hunkId: "i", afterLine: 1, lines: ["x", "y"], state: "pending" }]);
	assert.deepEqual(plan.removed, []);
	assert.deepEqual(plan.lenses, [{ line: 2, hunkId: "i", state: "pending", conflict: false }]);
	const one: Hunk = { ...h, newLines: 1, added: ["x"] };
	assert.deepEqual(planDecorations([one], [{ id: "i", start: 2, removed: 0 }], none, { lineCount: 10 }).ghosts, [{ line: 1, before: false, text: LINE_JOIN + "x", hunkId: "i" }]);
});

test("an insertion at the top of the file shows before line 0", () => {
	const h: Hunk = { id: "i", oldStart: 1, oldLines: 0, newStart: 1, newLines: 1, removed: [], added: ["// header"] };
	const plan = planDecorations([h], anchorsOf({ ...file, hunks: [h], edit: { edits: [] } }), none, { lineCount: 3 });
	assert.deepEqual(plan.ghosts, [{ line: 0, before: true, text: "// header" + LINE_JOIN, hunkId: "i" }]);
});

test("an append at the end of the file (oldStart = lines + 1) is clamped to the last line", () => {
	const h: Hunk = { id: "a", oldStart: 4, oldLines: 0, newStart: 4, newLines: 1, removed: [], added: ["end"] };
	// "a\nb\nc\n" has 4 editor lines (the last one empty).
	const plan = planDecorations([h], anchorsOf({ ...file, hunks: [h], edit: { edits: [] } }), none, { lineCount: 4 });
	assert.deepEqual(plan.ghosts, [{ line: 2, before: false, text: LINE_JOIN + "end", hunkId: "a" }]);
});

test("a long one-line proposal is a block, not clipped ghost text", () => {
	const h: Hunk = { id: "l", oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, removed: ["a"], added: ["x".repeat(500)] };
	const plan = planDecorations([h], [{ id: "l", start: 0, removed: 1 }], none, { lineCount: 2, maxGhost: 10 });
	assert.deepEqual(plan.ghosts, []);
	assert.deepEqual(plan.blocks, [{ hunkId: "l", afterLine: 0, lines: ["x".repeat(500)], state: "pending" }]);
});

test("decided hunks are shown truthfully: accepted keeps its new text and strikes the old; rejected shows nothing", () => {
	const states = new Map<string, HunkState>([
		["h3fa01b2c", "accepted"],
		["h91c4d0e7", "rejected"],
	]);
	const plan = planDecorations(file.hunks, anchorsOf(file), states, { lineCount: 100 });
	// The accepted deletion: its line is struck through (going away), never shown as added.
	assert.deepEqual(plan.acceptedRemoved, [{ line: 44, hunkId: "h3fa01b2c" }]);
	assert.deepEqual(plan.removed, []);
	assert.deepEqual(plan.ghosts, []);
	assert.deepEqual(plan.blocks, []);
	// An accepted replacement or insertion keeps showing its new text, marked accepted.
	const accepted = new Map<string, HunkState>([["h91c4d0e7", "accepted"]]);
	const p2 = planDecorations([file.hunks[1]], [anchorsOf(file)[1]], accepted, { lineCount: 100 });
	assert.deepEqual(p2.ghosts, [{ line: 59, before: false, text: "    return max(total, 0)", hunkId: "h91c4d0e7", accepted: true }]);
	assert.deepEqual(p2.acceptedRemoved, [{ line: 59, hunkId: "h91c4d0e7" }]);
	const ins: Hunk = { id: "i", oldStart: 3, oldLines: 0, newStart: 3, newLines: 2, removed: [], added: ["x", "y"] };
	const p3 = planDecorations([ins], [{ id: "i", start: 2, removed: 0 }], new Map([["i", "accepted"]]), { lineCount: 10 });
	assert.deepEqual(p3.blocks, [{ hunkId: "i", afterLine: 1, lines: ["x", "y"], state: "accepted" }]);
});

test("reject with reason rejects only the pending hunks: the accepted ones are applied, with the reason", () => {
	const ids = ["a", "b", "c"];
	const st = new Map<string, HunkState>([["a", "accepted"]]);
	assert.deepEqual(rejectRestDecision(ids, st, " too broad "), { type: "accept", hunks: ["a"], reason: "too broad" });
	assert.deepEqual(rejectRestDecision(ids, st, ""), { type: "accept", hunks: ["a"] });
	assert.deepEqual(rejectRestDecision(ids, new Map(), "no"), { type: "reject", reason: "no" });
	assert.deepEqual(rejectRestDecision(ids, new Map([["b", "rejected"]])), { type: "reject" });
});

test("the decision waits for every hunk, then says exactly which were accepted", () => {
	const ids = ["a", "b", "c"];
	const st = new Map<string, HunkState>([["a", "accepted"]]);
	assert.equal(decisionFor(ids, st), undefined);
	st.set("b", "rejected");
	st.set("c", "accepted");
	assert.deepEqual(decisionFor(ids, st), { type: "accept", hunks: ["a", "c"] });
	st.set("b", "accepted");
	assert.deepEqual(decisionFor(ids, st), { type: "accept" });
	for (const id of ids) st.set(id, "rejected");
	assert.deepEqual(decisionFor(ids, st), { type: "reject" });
	assert.deepEqual(decisionFor(ids, st, "not now"), { type: "reject", reason: "not now" });
});

test("buffer edits above a hunk move it; edits inside mark a conflict", () => {
	const anchors = anchorsOf(file); // 44 and 59
	// Two lines inserted at line 10.
	let a = shiftAnchors(anchors, { startLine: 10, startChar: 0, endLine: 10, endChar: 0, insertedLines: 2 });
	assert.deepEqual(a.map((x) => x.start), [46, 61]);
	// Enter at column 0 of the first hunk's line pushes it down too.
	a = shiftAnchors(a, { startLine: 46, startChar: 0, endLine: 46, endChar: 0, insertedLines: 1 });
	assert.deepEqual(a.map((x) => [x.start, !!x.conflict]), [
		[47, false],
		[62, false],
	]);
	// Typing inside the second hunk.
	a = shiftAnchors(a, { startLine: 62, startChar: 3, endLine: 62, endChar: 3, insertedLines: 0 });
	assert.deepEqual(a.map((x) => [x.start, !!x.conflict]), [
		[47, false],
		[62, true],
	]);
	// Deleting lines 0-4 (5 lines) shifts both up.
	a = shiftAnchors(a, { startLine: 0, startChar: 0, endLine: 5, endChar: 0, insertedLines: 0 });
	assert.deepEqual(a.map((x) => x.start), [42, 57]);
});

test("hunkAt picks the hunk under the cursor, else the next pending one", () => {
	const anchors = anchorsOf(file);
	assert.equal(hunkAt(anchors, none, 44), "h3fa01b2c");
	assert.equal(hunkAt(anchors, none, 50), "h91c4d0e7");
	assert.equal(hunkAt(anchors, none, 90), "h3fa01b2c");
	assert.equal(hunkAt(anchors, new Map([["h3fa01b2c", "accepted"]]), 10), "h91c4d0e7");
});

test("proposedLine puts a pure insertion where the Diff view draws it: the first of the least-indented equal places", () => {
	// An insertion after a closing brace that starts with a blank line: agentd's hunk (as git
	// aligns it) starts at "// Farewell" with the blank line last; VS Code's diff editor draws the
	// blank line first.
	const lines = ["func A() {", "\treturn 1", "}", "", "// Farewell", "func F() {", "\treturn 2", "}", "", "// clamp"];
	const hunk = { newStart: 5, newLines: 5, oldLines: 0 }; // "// Farewell" … "" (1-based 5..9)
	assert.equal(proposedLine(hunk, lines), 3);
	// A change (lines removed and added) does not slide; without the text, the hunk's own start.
	assert.equal(proposedLine({ newStart: 5, newLines: 5, oldLines: 1 }, lines), 4);
	assert.equal(proposedLine(hunk), 4);
	// A deletion: the line after it.
	assert.equal(proposedLine({ newStart: 4, newLines: 0, oldLines: 2 }, lines), 4);
	// Indentation decides between equal places: the edges at the lowest indentation.
	const nested = ["func A() {", "\tx := 1", "\tx := 1", "\treturn", "}"];
	assert.equal(proposedLine({ newStart: 3, newLines: 1, oldLines: 0 }, nested), 1);
});
