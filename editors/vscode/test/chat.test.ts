import { test } from "node:test";
import assert from "node:assert/strict";
import {
	addLocalUser,
	applyChanges,
	applyUpdate,
	coalesceChanges,
	fromHistory,
	newChatState,
	snapshot,
	type ChatChange,
	type ChatItem,
	type ChatState,
	type ToolItem,
	WAITING_ACTIVITY,
} from "../src/chat/model";
import type { SessionInfo, Update } from "../src/protocol";

const SID = "s-1";

function feed(s: ChatState, updates: [number, string, Update][]): ChatChange[] {
	const out: ChatChange[] = [];
	for (const [seq, turnId, update] of updates) out.push(...applyUpdate(s, { sessionId: SID, turnId, seq, update }));
	return out;
}

/** What the user sees, without local ids. */
function view(items: ChatItem[]) {
	return items.map((it) => {
		const { id: _id, ...rest } = it as ChatItem & { id: string };
		return rest;
	});
}

test("a whole turn streams into user, assistant, tool and end items", () => {
	const s = newChatState(SID);
	const changes = feed(s, [
		[1, "t1", { type: "turnStarted" }],
		[2, "t1", { type: "userMessage", text: "Fix the total" }],
		[3, "t1", { type: "thinkingDelta", text: "The user " }],
		[4, "t1", { type: "thinkingDelta", text: "wants" }],
		[5, "t1", { type: "textDelta", text: "Let me look " }],
		[6, "t1", { type: "textDelta", text: "at cart.go." }],
		[7, "t1", { type: "messageCompleted", text: "Let me look at cart.go.", thinking: "The user wants" }],
		[8, "t1", { type: "toolCallStarted", toolCall: { callId: "c1", tool: "bash", status: "pending", arguments: { command: "go test" } } }],
		[9, "t1", { type: "toolCallUpdated", toolCall: { callId: "c1", tool: "bash", label: "go test", status: "running", activity: "running go test", progress: "ok  shop\n" } }],
		[10, "t1", { type: "toolCallUpdated", toolCall: { callId: "c1", tool: "bash", label: "go test", status: "running", activity: "running go test", progress: "PASS\n" } }],
		[11, "t1", { type: "toolCallCompleted", toolCall: { callId: "c1", tool: "bash", label: "go test", status: "completed", result: { type: "ok", isError: false, text: "exit 0", elapsedMs: 12 } } }],
		[12, "t1", { type: "textDelta", text: "Tests pass." }],
		[13, "t1", { type: "messageCompleted", text: "Tests pass." }],
		[14, "t1", { type: "usage", usage: { promptTokens: 10, outputTokens: 5, promptMs: 1, outputMs: 2, contextLength: 100, contextPercent: 10 } }],
		[15, "t1", { type: "turnCompleted", reason: "done" }],
	]);
	assert.deepEqual(view(snapshot(s)), [
		{ kind: "user", turnId: "t1", text: "Fix the total" },
		{ kind: "assistant", turnId: "t1", text: "Let me look at cart.go.", thinking: "The user wants", streaming: false },
		{
			kind: "tool",
			turnId: "t1",
			callId: "c1",
			tool: "bash",
			label: "go test",
			status: "completed",
			arguments: { command: "go test" },
			output: "ok  shop\nPASS\n",
			result: { type: "ok", isError: false, text: "exit 0", elapsedMs: 12 },
		},
		{ kind: "assistant", turnId: "t1", text: "Tests pass.", thinking: "", streaming: false },
		{ kind: "turnEnd", turnId: "t1", reason: "done", changedFiles: false },
	]);
	assert.equal(s.running, false);
	assert.equal(s.activity, undefined);
	assert.equal(s.usage?.contextPercent, 10);
	// The view, fed only the changes, ends up with the same items.
	assert.deepEqual(applyChanges([], changes), snapshot(s));
	// Deltas are appends, not re-sends of the whole message.
	assert.deepEqual(
		changes.filter((c) => c.op === "append").map((c) => c.op === "append" && [c.field, c.text]),
		[
			["thinking", "The user "],
			["thinking", "wants"],
			["text", "Let me look "],
			["text", "at cart.go."],
			["output", "ok  shop\n"],
			["output", "PASS\n"],
			["text", "Tests pass."],
		],
	);
});

test("the activity follows the turn", () => {
	const s = newChatState(SID);
	feed(s, [[1, "t1", { type: "turnStarted" }]]);
	assert.equal(s.activity, "thinking");
	assert.equal(s.running, true);
	feed(s, [[2, "t1", { type: "toolCallUpdated", toolCall: { callId: "c", tool: "bash", status: "running", activity: "running go test ./..." } }]]);
	assert.equal(s.activity, "running go test ./...");
	feed(s, [[3, "t1", { type: "toolCallUpdated", toolCall: { callId: "d", tool: "edit", label: "Edit cart.go", status: "awaitingApproval" } }]]);
	assert.equal(s.activity, WAITING_ACTIVITY);
	// Another call of the batch finishing does not make it "thinking" while the review waits.
	feed(s, [[4, "t1", { type: "toolCallCompleted", toolCall: { callId: "c", tool: "bash", status: "completed" } }]]);
	assert.equal(s.activity, WAITING_ACTIVITY);
	feed(s, [[5, "t1", { type: "toolCallUpdated", toolCall: { callId: "d", tool: "edit", status: "running" } }]]);
	assert.notEqual(s.activity, WAITING_ACTIVITY);
	feed(s, [[6, "t1", { type: "toolCallUpdated", toolCall: { callId: "e", tool: "bash", status: "awaitingApproval" } }]]);
	assert.equal(s.activity, WAITING_ACTIVITY);
	feed(s, [[7, "t1", { type: "turnCompleted" }]]);
	assert.equal(s.activity, undefined);
});

test("coalesced deltas (gaps in seq) are applied", () => {
	const s = newChatState(SID);
	feed(s, [
		[1, "t1", { type: "turnStarted" }],
		[2, "t1", { type: "textDelta", text: "Hello" }],
		// seq 3 and 4 were coalesced into 5 by the daemon
		[5, "t1", { type: "textDelta", text: " big world" }],
	]);
	const a = snapshot(s).find((i) => i.kind === "assistant");
	assert.equal(a?.kind === "assistant" && a.text, "Hello big world");
	assert.equal(a?.kind === "assistant" && a.streaming, true);
});

test("duplicates are dropped and late deltas are repaired by messageCompleted", () => {
	const s = newChatState(SID);
	feed(s, [
		[1, "t1", { type: "turnStarted" }],
		[2, "t1", { type: "textDelta", text: "a" }],
		[4, "t1", { type: "textDelta", text: "c" }],
		[2, "t1", { type: "textDelta", text: "a" }], // duplicate
		[3, "t1", { type: "textDelta", text: "b" }], // late: dropped
	]);
	let a = snapshot(s).find((i) => i.kind === "assistant");
	assert.equal(a?.kind === "assistant" && a.text, "ac");
	feed(s, [[5, "t1", { type: "messageCompleted", text: "abc" }]]);
	a = snapshot(s).find((i) => i.kind === "assistant");
	assert.equal(a?.kind === "assistant" && a.text, "abc");
	assert.equal(a?.kind === "assistant" && a.streaming, false);
});

test("a late tool update never moves a finished call backwards", () => {
	const s = newChatState(SID);
	feed(s, [
		[1, "t1", { type: "toolCallStarted", toolCall: { callId: "c", tool: "bash", status: "pending" } }],
		[3, "t1", { type: "toolCallCompleted", toolCall: { callId: "c", tool: "bash", status: "completed", result: { type: "ok", isError: false, text: "done", elapsedMs: 1 } } }],
		[2, "t1", { type: "toolCallUpdated", toolCall: { callId: "c", tool: "bash", status: "running", activity: "running" } }],
	]);
	const t = snapshot(s).find((i) => i.kind === "tool");
	assert.equal(t?.kind === "tool" && t.status, "completed");
});

test("updates of other sessions are ignored", () => {
	const s = newChatState(SID);
	const out = applyUpdate(s, { sessionId: "other", seq: 1, update: { type: "textDelta", text: "x" } });
	assert.deepEqual(out, []);
	assert.equal(s.items.length, 0);
});

test("the optimistic user message is confirmed by userMessage", () => {
	const s = newChatState(SID);
	addLocalUser(s, "hi", ["cart.go:1-2"], false);
	const first = snapshot(s)[0];
	assert.equal(first.kind === "user" && first.pending, true);
	feed(s, [
		[1, "t1", { type: "turnStarted" }],
		[2, "t1", { type: "userMessage", text: "hi", context: ["cart.go:1-2"] }],
	]);
	assert.deepEqual(view(snapshot(s)), [{ kind: "user", turnId: "t1", text: "hi", context: ["cart.go:1-2"], pending: false }]);
});

test("a prompt's context chips are the daemon's labels, live and in a replayed history alike", () => {
	const context = ["@greet.go", "cart.go:3-5", "cart.go"];
	// This editor sent it: the local chips (no mention) give way to the daemon's labels.
	const sent = newChatState(SID);
	addLocalUser(sent, "why is @greet.go unused?", ["cart.go:3-5", "cart.go"], false);
	feed(sent, [
		[1, "t1", { type: "turnStarted" }],
		[2, "t1", { type: "userMessage", text: "why is @greet.go unused?", context }],
	]);
	// Another editor watching live, and one attaching later.
	const watching = newChatState(SID);
	feed(watching, [
		[1, "t1", { type: "turnStarted" }],
		[2, "t1", { type: "userMessage", text: "why is @greet.go unused?", context }],
	]);
	const session = { sessionId: SID, title: "", workspaceFolder: "file:///ws", model: "m", approvalMode: "ask", createdAt: "", updatedAt: "", turns: 1, running: true, attached: 1 } as SessionInfo;
	const replayed = fromHistory(session, [{ type: "user", turnId: "t1", text: "why is @greet.go unused?", context }]);
	const want = { kind: "user", turnId: "t1", text: "why is @greet.go unused?", context };
	assert.deepEqual(view(snapshot(sent)), [{ ...want, pending: false }]);
	assert.deepEqual(view(snapshot(watching)), [want]);
	assert.deepEqual(view(snapshot(replayed)), [want]);
});

test("a steer's local chips go when the echo has no context (a steer sends none)", () => {
	const s = newChatState(SID);
	addLocalUser(s, "not the tests", ["cart.go"], true);
	feed(s, [[1, "t1", { type: "userMessage", text: "not the tests" }]]);
	assert.deepEqual(view(snapshot(s)), [{ kind: "user", turnId: "t1", text: "not the tests", pending: false, steer: true }]);
});

test("a message that only called tools leaves no empty bubble", () => {
	const s = newChatState(SID);
	feed(s, [
		[1, "t1", { type: "thinkingDelta", text: "" }],
		[2, "t1", { type: "textDelta", text: "<tool_call>" }],
		[3, "t1", { type: "messageCompleted" }],
	]);
	assert.deepEqual(snapshot(s), []);
});

test("turnFailed shows the error with its fix and ends the turn", () => {
	const s = newChatState(SID);
	feed(s, [
		[1, "t3", { type: "turnStarted" }],
		[2, "t3", { type: "turnFailed", reason: "error", error: { kind: "model_not_found", message: "model 'qwen3:8b' not found", fix: "run `ollama pull qwen3:8b`" } }],
	]);
	assert.deepEqual(view(snapshot(s)), [
		{ kind: "error", turnId: "t3", error: { kind: "model_not_found", message: "model 'qwen3:8b' not found", fix: "run `ollama pull qwen3:8b`" } },
		{ kind: "turnEnd", turnId: "t3", reason: "error", changedFiles: false },
	]);
	assert.equal(s.running, false);
});

test("a completed edit with a diff marks the turn as revertible", () => {
	const s = newChatState(SID);
	feed(s, [
		[1, "t2", { type: "toolCallUpdated", toolCall: { callId: "e", tool: "edit", status: "awaitingApproval", preview: { summary: "cart.go", unifiedDiff: "--- a\n+++ b\n" } } }],
		[2, "t2", { type: "toolCallCompleted", toolCall: { callId: "e", tool: "edit", status: "completed", result: { type: "ok", isError: false, text: "Applied", elapsedMs: 3 } } }],
		[3, "t2", { type: "turnCompleted", reason: "done" }],
	]);
	const end = snapshot(s).at(-1);
	assert.equal(end?.kind === "turnEnd" && end.changedFiles, true);
});

test("compaction becomes a notice", () => {
	const s = newChatState(SID);
	feed(s, [[1, "t5", { type: "compaction", compaction: { tokensBefore: 27800, tokensAfter: 9100, summary: "Fixed it." } }]]);
	assert.deepEqual(view(snapshot(s)), [{ kind: "notice", turnId: "t5", text: "Context compacted: 27,800 → 9,100 tokens", level: "info", detail: "Fixed it." }]);
});

test("history becomes the same items as the live stream", () => {
	const session: SessionInfo = {
		sessionId: SID,
		title: "t",
		workspaceFolder: "file:///w",
		model: "m",
		approvalMode: "ask",
		createdAt: "",
		updatedAt: "",
		turns: 1,
		running: false,
		attached: 1,
	};
	const s = fromHistory(session, [
		{ type: "user", turnId: "t1", text: "Why?" },
		{ type: "tool", turnId: "t1", toolCall: { callId: "a1", tool: "read", label: "Read cart.go", status: "completed", result: { type: "ok", isError: false, text: "1\tpackage shop", elapsedMs: 2 } } },
		{ type: "assistant", turnId: "t1", text: "Twice." },
		{ type: "user", turnId: "t2", text: "Fix it" },
	]);
	assert.deepEqual(
		view(snapshot(s)).map((i) => i.kind),
		["user", "tool", "assistant", "turnEnd", "user", "turnEnd"],
	);
});

test("history shows a compaction as the notice the live stream gives, never as the user's words", () => {
	const session: SessionInfo = {
		sessionId: SID,
		title: "t",
		workspaceFolder: "file:///w",
		model: "m",
		approvalMode: "ask",
		createdAt: "",
		updatedAt: "",
		turns: 2,
		running: false,
		attached: 1,
	};
	const s = fromHistory(session, [
		{ type: "compaction", turnId: "t2", compaction: { tokensBefore: 0, tokensAfter: 0, summary: "Fixed cart.go." } },
		{ type: "user", turnId: "t2", text: "Now the tests" },
		{ type: "assistant", turnId: "t2", text: "Done." },
	]);
	const items = view(snapshot(s));
	assert.deepEqual(
		items.map((i) => i.kind),
		["notice", "user", "assistant", "turnEnd"],
	);
	assert.deepEqual(items[0], {
		kind: "notice",
		turnId: "t2",
		text: "Context compacted: the earlier conversation was replaced by a summary",
		level: "info",
		detail: "Fixed cart.go.",
	});
	assert.ok(!items.some((i) => i.kind === "user" && i.text.includes("Fixed cart.go.")));
});

test("history of a running turn keeps a call waiting for its review waiting, until it completes", () => {
	const session: SessionInfo = {
		sessionId: SID,
		title: "t",
		workspaceFolder: "file:///w",
		model: "m",
		approvalMode: "ask",
		createdAt: "",
		updatedAt: "",
		turns: 1,
		running: true,
		attached: 2,
	};
	const s = fromHistory(session, [
		{ type: "user", turnId: "t1", text: "Fix it" },
		{ type: "tool", turnId: "t1", toolCall: { callId: "e1", tool: "edit", label: "Edit cart.go", status: "awaitingApproval" } },
		{ type: "tool", turnId: "t1", toolCall: { callId: "g1", tool: "glob", label: "glob", status: "pending" } },
	]);
	const tools = () => snapshot(s).filter((i) => i.kind === "tool") as ToolItem[];
	assert.deepEqual(
		tools().map((t) => [t.callId, t.label, t.status]),
		[
			["e1", "Edit cart.go", "awaitingApproval"],
			["g1", "glob", "pending"],
		],
	);
	assert.equal(s.running, true);
	assert.equal(s.activity, WAITING_ACTIVITY);
	feed(s, [[7, "t1", { type: "toolCallCompleted", toolCall: { callId: "e1", tool: "edit", label: "Edit cart.go", status: "completed", result: { type: "ok", isError: false, text: "Edited", elapsedMs: 3 } } }]]);
	assert.deepEqual(tools()[0].status, "completed");
	assert.equal(s.awaiting.size, 0);
});

test("history of a running command shows its output so far, and the output that follows appends to it", () => {
	const session: SessionInfo = {
		sessionId: SID,
		title: "t",
		workspaceFolder: "file:///w",
		model: "m",
		approvalMode: "ask",
		createdAt: "",
		updatedAt: "",
		turns: 1,
		running: true,
		attached: 2,
	};
	const s = fromHistory(session, [
		{ type: "user", turnId: "t1", text: "Run the tests" },
		{ type: "tool", turnId: "t1", toolCall: { callId: "b1", tool: "bash", label: "go test ./...", status: "running", progress: "=== RUN TestA\n--- PASS: TestA\n" } },
	]);
	const bash = () => snapshot(s).find((i) => i.kind === "tool") as ToolItem;
	assert.equal(bash().status, "running");
	assert.equal(bash().output, "=== RUN TestA\n--- PASS: TestA\n");
	const out = feed(s, [[5, "t1", { type: "toolCallUpdated", toolCall: { callId: "b1", tool: "bash", label: "go test ./...", status: "running", progress: "=== RUN TestB\n" } }]]);
	assert.equal(bash().output, "=== RUN TestA\n--- PASS: TestA\n=== RUN TestB\n");
	assert.deepEqual(out, [{ op: "append", id: bash().id, field: "output", text: "=== RUN TestB\n" }]);
});

test("coalesceChanges merges consecutive appends to one field", () => {
	const merged = coalesceChanges([
		{ op: "append", id: "a", field: "text", text: "x" },
		{ op: "append", id: "a", field: "text", text: "y" },
		{ op: "append", id: "a", field: "thinking", text: "t" },
		{ op: "append", id: "a", field: "text", text: "z" },
		{ op: "reset", items: [] },
		{ op: "append", id: "b", field: "text", text: "1" },
		{ op: "append", id: "b", field: "text", text: "2" },
	]);
	assert.deepEqual(merged, [
		{ op: "reset", items: [] },
		{ op: "append", id: "b", field: "text", text: "12" },
	]);
	assert.deepEqual(
		coalesceChanges([
			{ op: "append", id: "a", field: "text", text: "x" },
			{ op: "append", id: "a", field: "text", text: "y" },
			{ op: "append", id: "a", field: "thinking", text: "t" },
		]),
		[
			{ op: "append", id: "a", field: "text", text: "xy" },
			{ op: "append", id: "a", field: "thinking", text: "t" },
		],
	);
});

test("10,000 deltas into one message cost linear time", () => {
	const s = newChatState(SID);
	// 2,000 earlier items: a delta must not scan them.
	for (let i = 0; i < 2000; i++) feed(s, [[i + 1, `t${i}`, { type: "userMessage", text: `m${i}` }]]);
	const t0 = performance.now();
	for (let i = 0; i < 10000; i++) applyUpdate(s, { sessionId: SID, turnId: "tx", seq: 3000 + i, update: { type: "textDelta", text: "tok " } });
	const ms = performance.now() - t0;
	const last = s.items.at(-1);
	assert.equal(last?.kind === "assistant" && last.text.length, 40000);
	assert.ok(ms < 1000, `10,000 deltas took ${ms.toFixed(0)} ms`);
});

test("a change that waits for an earlier one of its file says so until its own review comes", () => {
	const s = newChatState(SID);
	const started = (callId: string, path: string) =>
		({ type: "toolCallStarted", toolCall: { callId, tool: "edit", status: "pending", arguments: { path } } }) as Update;
	feed(s, [
		[1, "t1", started("a", "cart.go")],
		[2, "t1", started("b", "cart.go")],
		[3, "t1", { type: "toolCallUpdated", toolCall: { callId: "b", tool: "edit", status: "pending", waitsFor: "a" } }],
	]);
	const tool = (id: string) => snapshot(s).find((i) => i.kind === "tool" && i.callId === id) as ToolItem;
	assert.deepEqual(snapshot(s).filter((i) => i.kind === "tool").map((i) => (i as ToolItem).callId), ["a", "b"]);
	assert.equal(tool("b").waitsFor, "a");
	feed(s, [[4, "t1", { type: "toolCallUpdated", toolCall: { callId: "b", tool: "edit", label: "Edit cart.go", status: "awaitingApproval" } }]]);
	assert.equal(tool("b").waitsFor, undefined);
});
