// The Pending Reviews view lists the running reply's changes that wait for an earlier change of
// their file (toolCall.waitsFor) beside the reviews, and why a change no grant covers needs a
// review is said on its lens (reviewReason).
import { test } from "node:test";
import assert from "node:assert/strict";
import { applyUpdate, newChatState } from "../src/chat/model";
import { reviewReason } from "../src/review/format";
import { sameWaiting, waitingChanges, waitsForText } from "../src/review/waiting";
import type { Update } from "../src/protocol";

const SID = "s-1";

test("a change that waits for an earlier change of its file is listed as waiting until its review comes", () => {
	const s = newChatState(SID);
	let seq = 0;
	const up = (update: Update) => applyUpdate(s, { sessionId: SID, turnId: "t1", seq: ++seq, update });
	up({ type: "turnStarted" });
	up({ type: "toolCallStarted", toolCall: { callId: "c1", tool: "edit", status: "pending", arguments: { path: "cart.go", old_string: "a", new_string: "b" } } });
	up({ type: "toolCallStarted", toolCall: { callId: "c2", tool: "edit", status: "pending", arguments: { path: "cart.go", old_string: "c", new_string: "d" } } });
	up({ type: "toolCallStarted", toolCall: { callId: "c3", tool: "write", status: "pending", arguments: { path: "note.txt", content: "x" } } });
	assert.deepEqual(waitingChanges(s), []);
	up({ type: "toolCallUpdated", toolCall: { callId: "c2", tool: "edit", status: "pending", waitsFor: "c1" } });
	up({ type: "toolCallUpdated", toolCall: { callId: "c1", tool: "edit", label: "Edit cart.go", status: "awaitingApproval" } });
	const w = waitingChanges(s);
	assert.deepEqual(w, [{ callId: "c2", label: "cart.go", waitsFor: "c1", waitsForLabel: "cart.go" }]);
	assert.equal(waitsForText(w[0]), "waiting for its earlier change");
	assert.equal(waitsForText({ ...w[0], waitsForLabel: "new.go" }), "waiting for the change of new.go");
	assert.ok(sameWaiting(w, waitingChanges(s)));
	// The first is decided: the second comes up for review (its update no longer says waitsFor).
	up({ type: "toolCallCompleted", toolCall: { callId: "c1", tool: "edit", status: "completed" } });
	up({ type: "toolCallUpdated", toolCall: { callId: "c2", tool: "edit", status: "awaitingApproval" } });
	assert.deepEqual(waitingChanges(s), []);
	assert.ok(!sameWaiting(w, []));
});

test("a change still waiting when the turn ends needs no decision any more", () => {
	const s = newChatState(SID);
	let seq = 0;
	const up = (update: Update) => applyUpdate(s, { sessionId: SID, turnId: "t1", seq: ++seq, update });
	up({ type: "turnStarted" });
	up({ type: "toolCallStarted", toolCall: { callId: "c1", tool: "edit", status: "awaitingApproval", arguments: { path: "a.go" } } });
	up({ type: "toolCallStarted", toolCall: { callId: "c2", tool: "edit", status: "pending", waitsFor: "c1", arguments: { path: "a.go" } } });
	assert.equal(waitingChanges(s).length, 1);
	up({ type: "turnCompleted", reason: "cancelled" });
	assert.deepEqual(waitingChanges(s), []);
});

test("a waiting call without a path is named by its label; an unknown earlier call is said so", () => {
	const items = [{ kind: "tool" as const, id: "call:c9", turnId: "t1", callId: "c9", tool: "mcp__x", label: "x › write", status: "pending", waitsFor: "gone", output: "" }];
	const w = waitingChanges({ running: true, turnId: "t1", items });
	assert.deepEqual(w, [{ callId: "c9", label: "x › write", waitsFor: "gone" }]);
	assert.equal(waitsForText(w[0]), "waiting for an earlier change");
});

test("the lens says why a command's change needs review: the reason after the daemon's origin and path", () => {
	assert.equal(
		reviewReason("the command `npm install` changed .husky/pre-commit, and it needs your review: writes under .husky/ install git hooks, which run code on commit"),
		"writes under .husky/ install git hooks, which run code on commit",
	);
	assert.equal(reviewReason("protected path .vscode/settings.json"), "protected path .vscode/settings.json");
});
