// How MCP calls and workspace proposals are shown (src/mcpFormat.ts), and that the chat model
// keeps an MCP call's server, tool and the review's exact arguments.
import { test } from "node:test";
import assert from "node:assert/strict";
import { describeProposal, imagePlaceholder, mcpTitle, prettyArgs, proposalTarget, toastArgs } from "../src/mcpFormat";
import { applyUpdate, newChatState, setToolReview, snapshot, type ToolItem } from "../src/chat/model";
import type { MCPProposal } from "../src/protocol";

test("an MCP tool is shown as server › tool", () => {
	assert.equal(mcpTitle({ server: "everything", tool: "echo" }), "everything › echo");
});

test("arguments are pretty-printed whole, however long", () => {
	const long = "x".repeat(10000);
	const out = prettyArgs({ message: long, n: 2 });
	assert.ok(out.includes(long));
	assert.equal(out, `{\n  "message": "${long}",\n  "n": 2\n}`);
	assert.equal(prettyArgs('{"a":1}'), '{\n  "a": 1\n}');
	assert.equal(prettyArgs("not json {"), "not json {");
});

test("a notification shows the arguments verbatim or says where they are whole", () => {
	assert.equal(toastArgs({ message: "hello" }), 'arguments {"message":"hello"}');
	const big = toastArgs({ message: "y".repeat(400) });
	assert.ok(!big.includes("yyyy"), big);
	assert.match(big, /arguments of 41\d B, shown whole in the chat/);
	// Brackets would read as links in a notification: never shown altered.
	assert.match(toastArgs({ list: [1, 2] }), /^arguments of 14 B, shown whole/);
});

test("an image result is a placeholder with its type and size", () => {
	assert.equal(imagePlaceholder({ mimeType: "image/png", bytes: 1247 }), "[image image/png, 1.2 KB]");
	assert.equal(imagePlaceholder({ mimeType: "image/gif", bytes: 12 }), "[image image/gif, 12 B]");
});

test("a proposal's exact definition: command, args, env, network", () => {
	const p: MCPProposal = {
		name: "everything", file: ".agentd/mcp.json", transport: "stdio", command: "node",
		args: ["/srv/my server/index.js", "stdio"], env: { B: "2", A: "1" }, network: false, hash: "sha256:ab", state: "needsApproval",
	};
	assert.equal(proposalTarget(p), "node '/srv/my server/index.js' stdio");
	const d = describeProposal(p);
	for (const want of ["Proposed in: .agentd/mcp.json", "Command: node", 'Arguments: ["/srv/my server/index.js","stdio"]', "Environment: A=1, B=2", "Network: off", "next session"]) {
		assert.ok(d.includes(want), `${want} not in:\n${d}`);
	}
	const h = describeProposal({ name: "web", file: ".mcp.json", transport: "http", url: "http://127.0.0.1:9/mcp", headers: { Authorization: "x" }, network: false, state: "needsApproval" });
	assert.ok(h.includes("URL: http://127.0.0.1:9/mcp") && h.includes("Headers: Authorization: x"), h);
});

test("the chat keeps an MCP call's server and tool, and the review's exact arguments while it waits", () => {
	const s = newChatState();
	s.sessionId = "s-1";
	const tc = { callId: "c1", tool: "everything__echo", label: "everything__echo", status: "pending", arguments: { message: "hi" }, mcp: { server: "everything", tool: "echo" } };
	applyUpdate(s, { sessionId: "s-1", turnId: "t1", seq: 1, update: { type: "turnStarted" } });
	applyUpdate(s, { sessionId: "s-1", turnId: "t1", seq: 2, update: { type: "toolCallStarted", toolCall: tc } });
	setToolReview(s, "c1", "r-1", "tool", "asks", { message: "hi", times: 2 });
	let it = snapshot(s).find((i) => i.kind === "tool") as ToolItem;
	assert.deepEqual(it.mcp, { server: "everything", tool: "echo" });
	assert.deepEqual(it.reviewArgs, { message: "hi", times: 2 });
	applyUpdate(s, {
		sessionId: "s-1", turnId: "t1", seq: 3,
		update: { type: "toolCallCompleted", toolCall: { ...tc, status: "completed", result: { type: "ok", isError: false, text: "Echo: hi", elapsedMs: 3, images: [{ mimeType: "image/png", bytes: 10 }] } } },
	});
	it = snapshot(s).find((i) => i.kind === "tool") as ToolItem;
	assert.equal(it.reviewArgs, undefined);
	assert.deepEqual(it.result?.images, [{ mimeType: "image/png", bytes: 10 }]);
	assert.deepEqual(it.mcp, { server: "everything", tool: "echo" });
});
