// A reason per rejected hunk (issue #13): the decision carries hunkReasons for exactly the
// rejected hunks that have one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { decisionFor, rejectRestDecision, type HunkState } from "../src/review/model";

test("a rejected hunk's reason goes with the file's decision, an accepted or undone hunk's never", () => {
	const ids = ["a", "b", "c"];
	const st = new Map<string, HunkState>([
		["a", "accepted"],
		["b", "rejected"],
		["c", "rejected"],
	]);
	const reasons = new Map([
		["b", " keep the old name "],
		["a", "stale reason of a hunk accepted since"],
	]);
	assert.deepEqual(decisionFor(ids, st, undefined, reasons), { type: "accept", hunks: ["a"], hunkReasons: { b: "keep the old name" } });
	st.set("a", "rejected");
	assert.deepEqual(decisionFor(ids, st, undefined, reasons), { type: "reject", hunkReasons: { a: "stale reason of a hunk accepted since", b: "keep the old name" } });
	assert.deepEqual(decisionFor(ids, st, "no", new Map([["c", "  "]])), { type: "reject", reason: "no" });
	for (const id of ids) st.set(id, "accepted");
	assert.deepEqual(decisionFor(ids, st, undefined, reasons), { type: "accept" });
});

test("reject the rest with reason keeps the reasons of hunks rejected one by one", () => {
	const ids = ["a", "b", "c"];
	const st = new Map<string, HunkState>([
		["a", "accepted"],
		["b", "rejected"],
	]);
	const reasons = new Map([["b", "the clamp belongs in the caller"]]);
	assert.deepEqual(rejectRestDecision(ids, st, "too broad", reasons), {
		type: "accept",
		hunks: ["a"],
		reason: "too broad",
		hunkReasons: { b: "the clamp belongs in the caller" },
	});
	assert.deepEqual(rejectRestDecision(ids, new Map([["b", "rejected"]]), "", reasons), { type: "reject", hunkReasons: { b: "the clamp belongs in the caller" } });
});
