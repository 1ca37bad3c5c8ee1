// Drives `agentd acp` with the official ACP TypeScript library, as an editor would. Run by
// acp/e2e_test.go, which builds agentd and the fake Ollama server, and afterwards validates every
// line of the transcript (TRANSCRIPT_DIR/{client,agent}.jsonl) against the schema the library ships.
//
// env: AGENTD (binary), FAKEOLLAMA (binary), SCRIPT (fake Ollama script), WORKSPACE, TRANSCRIPT_DIR,
// the XDG_* directories agentd keeps its state in, and optionally MCP_EVERYTHING and NODE_BIN (the
// everything MCP server's entry point and node, passed as a session/new mcpServers entry).
import { spawn } from "node:child_process";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { join } from "node:path";
import assert from "node:assert/strict";
import { client, methods, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";
// session/fork is unstable in the schema agentd targets (1.21): its name comes from the unstable
// entry point.
import { methods as unstableMethods } from "@agentclientprotocol/sdk/unstable";

const env = process.env;
const answer = join(env.WORKSPACE, "answer.go");
const log = (...a) => console.error("[acp-e2e]", ...a);

// The fake Ollama server: its first stdout line is its URL.
const fake = spawn(env.FAKEOLLAMA, ["-script", env.SCRIPT, "-exit-with-stdin"], { stdio: ["pipe", "pipe", "inherit"] });
const [ollamaURL] = await once(createInterface({ input: fake.stdout }), "line");

// startAgent spawns `agentd acp` and returns the library's stream over its stdio, recording each
// direction's bytes (one JSON-RPC message per line) for the schema check.
// Without record, nothing is written to the transcript (a run whose requests fail on purpose).
// Whatever agentd writes on stderr is kept in stderrText: an ACP client shows each line as an
// error, so normal operation writes none.
let stderrText = "";
function startAgent({ record = true, ollama = ollamaURL } = {}) {
  const child = spawn(env.AGENTD, ["acp", "--approval", "ask"], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...env, OLLAMA_HOST: ollama },
  });
  child.stderr.on("data", (chunk) => { stderrText += chunk; });
  const append = (file, chunk) => { if (record) appendFileSync(join(env.TRANSCRIPT_DIR, file), chunk); };
  const output = new WritableStream({
    write(chunk) {
      append("client.jsonl", chunk);
      return new Promise((res, rej) => child.stdin.write(chunk, (e) => (e ? rej(e) : res())));
    },
    close() { child.stdin.end(); },
    abort() { child.stdin.end(); },
  });
  let open = true; // the library may cancel the stream before agentd's stdout ends
  const input = new ReadableStream({
    start(controller) {
      child.stdout.on("data", (chunk) => {
        append("agent.jsonl", chunk);
        if (open) controller.enqueue(new Uint8Array(chunk));
      });
      child.stdout.on("end", () => { if (open) { open = false; controller.close(); } });
    },
    cancel() {
      open = false;
      child.stdout.removeAllListeners("data");
      child.stdout.resume();
    },
  });
  const exited = once(child, "exit");
  return { child, stream: ndJsonStream(output, input), exited };
}

// What the client saw, per session.
const updates = [];
const writes = [];
let permissionAnswer = null; // (params, ctx) => outcome

const app = client({ name: "agentd-acp-e2e" })
  .onNotification(methods.client.session.update, ({ params }) => { updates.push(params.update); })
  .onRequest(methods.client.session.requestPermission, async ({ params, agent }) => {
    assert.ok(permissionAnswer, "an unexpected permission request: " + JSON.stringify(params));
    return { outcome: await permissionAnswer(params, agent) };
  })
  .onRequest(methods.client.fs.readTextFile, ({ params }) => ({ content: readFileSync(params.path, "utf8") }))
  .onRequest(methods.client.fs.writeTextFile, ({ params }) => {
    writes.push(params);
    writeFileSync(params.path, params.content);
    return {};
  });

const init = {
  protocolVersion: PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
  clientInfo: { name: "agentd-acp-e2e", version: "1" },
};

// 1. A session that reads and edits, with allow, reject and cancel.
let sessionId;
{
  const { child, stream, exited } = startAgent();
  await app.connectWith(stream, async (ctx) => {
    const ir = await ctx.request(methods.agent.initialize, init);
    assert.equal(ir.protocolVersion, PROTOCOL_VERSION);
    assert.equal(ir.agentCapabilities.loadSession, true);
    assert.equal(ir.agentCapabilities.promptCapabilities.embeddedContext, true);

    assert.deepEqual(ir.agentCapabilities.mcpCapabilities, { http: true, sse: false });

    // The client's MCP servers: one that cannot start (reported as a message chunk, the session
    // still starts) and, when MCP_EVERYTHING names its entry point, one that does.
    const mcpServers = [{ name: "broken", command: "/nonexistent/mcp-server", args: [], env: [{ name: "A", value: "b" }] }];
    if (env.MCP_EVERYTHING) {
      mcpServers.push({ name: "everything", command: env.NODE_BIN, args: [env.MCP_EVERYTHING], env: [] });
    }
    const ns = await ctx.request(methods.agent.session.new, { cwd: env.WORKSPACE, mcpServers });
    sessionId = ns.sessionId;
    assert.equal(ns.modes.currentModeId, "ask");
    assert.deepEqual(ns.modes.availableModes.map((m) => m.id), ["ask", "auto-edit", "plan", "yolo"]);
    // The approval mode and the model as config options (codecompanion and Zed pick them so).
    const option = (opts, id) => opts.find((o) => o.id === id);
    assert.equal(option(ns.configOptions, "mode").category, "mode");
    assert.equal(option(ns.configOptions, "mode").currentValue, "ask");
    assert.equal(option(ns.configOptions, "model").category, "model");
    assert.equal(option(ns.configOptions, "model").currentValue, "qwen3:8b");
    assert.deepEqual(option(ns.configOptions, "model").options.map((o) => o.value).sort(), ["qwen3:14b", "qwen3:8b"]);

    // allow once: the edit is written through the client's fs/write_text_file.
    let asked;
    permissionAnswer = (p) => {
      asked = p;
      return { outcome: "selected", optionId: p.options.find((o) => o.kind === "allow_once").optionId };
    };
    let r = await ctx.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: "fix the answer in" }, { type: "resource_link", name: "answer.go", uri: "file://" + answer }],
    });
    assert.equal(r.stopReason, "end_turn");
    const notes = updates.filter((u) => u.sessionUpdate === "agent_message_chunk" && /MCP server/.test(u.content.text)).map((u) => u.content.text);
    assert.equal(notes.length, 1, "one note, about the broken MCP server: " + JSON.stringify(notes));
    assert.match(notes[0], /broken did not start/);
    // One option per kind (clients key them by kind); "always" is the narrowest scope.
    assert.deepEqual(asked.options.map((o) => o.kind).sort(), ["allow_always", "allow_once", "reject_always", "reject_once"]);
    const always = asked.options.find((o) => o.kind === "allow_always");
    assert.match(always.name, /path \//, "allow_always names the narrowest scope: " + JSON.stringify(asked.options));
    assert.doesNotMatch(always.name, /tool edit/);
    const diff = asked.toolCall.content.find((c) => c.type === "diff");
    assert.equal(diff.path, answer);
    assert.match(diff.oldText, /return 1/);
    assert.match(diff.newText, /return 42/);
    assert.equal(writes.length, 1, "one fs/write_text_file");
    assert.equal(writes[0].path, answer);
    assert.match(readFileSync(answer, "utf8"), /return 42/);
    const kinds = updates.filter((u) => u.sessionUpdate === "tool_call").map((u) => u.kind);
    assert.deepEqual(kinds, ["read", "edit"]);
    assert.ok(updates.some((u) => u.sessionUpdate === "agent_thought_chunk"), "thought chunks");
    assert.ok(updates.some((u) => u.sessionUpdate === "agent_message_chunk" && /42/.test(u.content.text)), "message chunks");
    assert.ok(updates.some((u) => u.sessionUpdate === "tool_call_update" && u.status === "completed"), "a completed call");

    // reject once: nothing is written, the call fails.
    updates.length = 0;
    permissionAnswer = (p) => ({ outcome: "selected", optionId: p.options.find((o) => o.kind === "reject_once").optionId });
    r = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "rename it" }] });
    assert.equal(r.stopReason, "end_turn");
    assert.match(readFileSync(answer, "utf8"), /return 42/);
    assert.equal(writes.length, 1);
    assert.ok(updates.some((u) => u.sessionUpdate === "tool_call_update" && u.status === "failed"), "the rejected call failed");

    // cancel: the client cancels the turn while the permission request waits.
    permissionAnswer = async (p, agent) => {
      await agent.notify(methods.agent.session.cancel, { sessionId });
      return { outcome: "cancelled" };
    };
    r = await ctx.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text: "zero it" }] });
    assert.equal(r.stopReason, "cancelled");
    assert.match(readFileSync(answer, "utf8"), /return 42/);
    assert.equal(writes.length, 1);

    // a mode change, by session/set_mode and by the config option
    await ctx.request(methods.agent.session.setMode, { sessionId, modeId: "auto-edit" });
    let co = await ctx.request(methods.agent.session.setConfigOption, { sessionId, configId: "mode", value: "plan" });
    assert.equal(option(co.configOptions, "mode").currentValue, "plan");
    // a model change between turns
    co = await ctx.request(methods.agent.session.setConfigOption, { sessionId, configId: "model", value: "qwen3:14b" });
    assert.equal(option(co.configOptions, "model").currentValue, "qwen3:14b");
    co = await ctx.request(methods.agent.session.setConfigOption, { sessionId, configId: "model", value: "qwen3:8b" });
    assert.equal(option(co.configOptions, "model").currentValue, "qwen3:8b");
  });
  child.stdin.end(); // the editor quits: agentd exits
  const [code] = await exited;
  assert.equal(code, 0, "agentd acp exits 0 when stdin closes");
}

// 2. Another agentd process loads the session: the history is replayed as session/update.
{
  updates.length = 0;
  permissionAnswer = null;
  const { child, stream, exited } = startAgent();
  await app.connectWith(stream, async (ctx) => {
    await ctx.request(methods.agent.initialize, init);
    const lr = await ctx.request(methods.agent.session.load, { sessionId, cwd: env.WORKSPACE, mcpServers: [] });
    assert.equal(lr.modes.currentModeId, "plan", "the mode set before is kept");
  });
  child.stdin.end();
  await exited;
  const users = updates.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text);
  assert.equal(users.length, 3, "three prompts replayed: " + JSON.stringify(users));
  assert.match(users[0], /fix the answer in/);
  assert.match(users[0], /answer\.go/);
  const calls = updates.filter((u) => u.sessionUpdate === "tool_call").map((u) => u.kind);
  assert.deepEqual(calls.slice(0, 2), ["read", "edit"]);
  assert.ok(updates.some((u) => u.sessionUpdate === "agent_message_chunk" && /returns 42/.test(u.content.text)), "the answer is replayed");
}

// 3. Another process: the session list, resume (no replay), fork and close.
{
  updates.length = 0;
  const { child, stream, exited } = startAgent();
  await app.connectWith(stream, async (ctx) => {
    const ir = await ctx.request(methods.agent.initialize, init);
    assert.deepEqual(ir.agentCapabilities.sessionCapabilities.list, {});
    assert.deepEqual(ir.agentCapabilities.sessionCapabilities.resume, {});
    let list = await ctx.request(methods.agent.session.list, {});
    const mine = list.sessions.find((s) => s.sessionId === sessionId);
    assert.ok(mine, "the session is listed: " + JSON.stringify(list));
    assert.equal(mine.cwd, env.WORKSPACE);
    assert.match(mine.title, /zero it/, "the title: the last prompt (no title was set)");
    assert.ok(!Number.isNaN(Date.parse(mine.updatedAt)), "updatedAt is a time: " + mine.updatedAt);
    list = await ctx.request(methods.agent.session.list, { cwd: "/nonexistent-dir" });
    assert.equal(list.sessions.length, 0);

    const rr = await ctx.request(methods.agent.session.resume, { sessionId, cwd: env.WORKSPACE, mcpServers: [] });
    assert.equal(rr.modes.currentModeId, "plan");
    assert.equal(updates.length, 0, "session/resume replays nothing: " + JSON.stringify(updates));

    assert.equal(unstableMethods.agent.session.fork, "session/fork");
    const fr = await ctx.request(unstableMethods.agent.session.fork, { sessionId, cwd: env.WORKSPACE, mcpServers: [] });
    assert.ok(fr.sessionId && fr.sessionId !== sessionId, "a new session: " + JSON.stringify(fr));
    list = await ctx.request(methods.agent.session.list, { cwd: env.WORKSPACE });
    assert.ok(list.sessions.some((s) => s.sessionId === fr.sessionId), "the fork is listed");
    await ctx.request(methods.agent.session.load, { sessionId: fr.sessionId, cwd: env.WORKSPACE, mcpServers: [] });
    const users = updates.filter((u) => u.sessionUpdate === "user_message_chunk");
    assert.equal(users.length, 3, "the fork has the three prompts");
    await ctx.request(methods.agent.session.close, { sessionId: fr.sessionId });
  });
  child.stdin.end();
  await exited;
}

// 4. Ollama is down: session/new fails with a code and a message a client shows, naming the fix.
{
  const { child, stream, exited } = startAgent({ record: false, ollama: "http://127.0.0.1:9" });
  await app.connectWith(stream, async (ctx) => {
    await ctx.request(methods.agent.initialize, init);
    await assert.rejects(ctx.request(methods.agent.session.new, { cwd: env.WORKSPACE, mcpServers: [] }), (e) => {
      assert.equal(e.code, -32001, "the model-unavailable code: " + JSON.stringify(e));
      assert.match(e.message, /ollama/i);
      assert.match(e.message, /fix: /);
      return true;
    });
  });
  child.stdin.end();
  await exited;
}
assert.equal(stderrText, "", "agentd acp wrote on stderr in normal operation");

fake.stdin.end();
log("ok");
