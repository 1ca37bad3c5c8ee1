// Per-hunk decisions shared through the daemon (review/hunkState out, review/hunkStates in): the
// wire form of this editor's decisions, and how another editor's decisions are taken.
import { test } from "node:test";
import assert from "node:assert/strict";
import { applyHunkStates, hunkStatesFor, type HunkDecisions, type HunkState } from "../src/review/model";

function decisions(states: Record<string, HunkState>, reasons: Record<string, string> = {}, order: string[] = []): HunkDecisions {
	return { states: new Map(Object.entries(states)), reasons: new Map(Object.entries(reasons)), decidedOrder: order };
}

test("hunkStatesFor: the listed hunks' states, a reason only with a rejected hunk", () => {
	const d = decisions({ h1: "accepted", h2: "rejected", h3: "pending" }, { h2: "keep the label", h1: "stale" }, ["h1", "h2"]);
	assert.deepEqual(hunkStatesFor(d, ["h1", "h2", "h3"]), {
		h1: { state: "accepted" },
		h2: { state: "rejected", reason: "keep the label" },
		h3: { state: "pending" },
	});
	assert.deepEqual(hunkStatesFor(d, ["h2"]), { h2: { state: "rejected", reason: "keep the label" } });
});

test("applyHunkStates: another editor's decisions and reasons are taken, for known hunks only", () => {
	const d = decisions({ h1: "pending", h2: "pending" });
	assert.equal(applyHunkStates(d, { h1: { state: "accepted" }, h2: { state: "rejected", reason: " keep the label " }, hx: { state: "accepted" } }), true);
	assert.deepEqual([...d.states], [["h1", "accepted"], ["h2", "rejected"]]);
	assert.deepEqual([...d.reasons], [["h2", "keep the label"]]);
	assert.deepEqual(d.decidedOrder, ["h1", "h2"]);
	assert.equal(applyHunkStates(d, { h1: { state: "accepted" }, h2: { state: "rejected", reason: "keep the label" } }), false, "nothing changed");
});

test("applyHunkStates: a hunk the relay no longer lists is pending again (undone elsewhere), with no reason", () => {
	const d = decisions({ h1: "accepted", h2: "rejected" }, { h2: "keep the label" }, ["h1", "h2"]);
	assert.equal(applyHunkStates(d, { h1: { state: "accepted" } }), true);
	assert.deepEqual([...d.states], [["h1", "accepted"], ["h2", "pending"]]);
	assert.equal(d.reasons.size, 0);
	assert.deepEqual(d.decidedOrder, ["h1"]);
	// A pending review without hunkStates (nothing decided elsewhere) leaves local decisions pending.
	assert.equal(applyHunkStates(d, undefined), true);
	assert.deepEqual([...d.states.values()], ["pending", "pending"]);
});

test("applyHunkStates: an unknown state is pending, a blank reason none", () => {
	const d = decisions({ h1: "pending", h2: "pending" });
	applyHunkStates(d, { h1: { state: "maybe" as never }, h2: { state: "rejected", reason: "  " } });
	assert.deepEqual([...d.states], [["h1", "pending"], ["h2", "rejected"]]);
	assert.equal(d.reasons.size, 0);
});
