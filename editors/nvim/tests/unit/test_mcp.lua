-- MCP in the plugin without a daemon: an MCP call's approval, chat line and details show the
-- server, the tool and the exact arguments (whole), results show image placeholders; a trusted
-- workspace's proposals are announced once when a session starts and approved with
-- :AgentMcpApprove; an untrusted workspace gets nothing offered.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()
require("agentd").setup({ cmd = { "true" }, chat = { flush_ms = 5 } })
local client = require("agentd.client")
local review = require("agentd.review")
local chat = require("agentd.chat")
local session = require("agentd.session")
local mcp = require("agentd.mcp")

-- The daemon, stubbed: answers by method.
local sent = {}
local answers = {}
client.request = function(method, params, cb)
  table.insert(sent, { method = method, params = params })
  if cb then
    vim.schedule(function()
      local a = answers[method]
      if type(a) == "function" then
        a = a(params)
      end
      cb(a and a.err or nil, a and a.result or { outcome = "accepted", settled = {} })
    end)
  end
end
client.root_uri = function()
  return "file:///home/ada/shop"
end

local function sent_of(method)
  local out = {}
  for _, s in ipairs(sent) do
    if s.method == method then
      table.insert(out, s)
    end
  end
  return out
end

local long = string.rep("0123456789", 30)

local function mcp_review(id)
  return {
    reviewId = id, sessionId = "s-1", turnId = "t1", callId = "c-" .. id, tool = "everything__echo",
    label = "MCP server everything, tool echo, arguments {…}", kind = "tool", why = "asks: MCP tools ask in ask mode",
    mcp = { server = "everything", tool = "echo", arguments = { message = long, times = 2 } },
    scopes = { { kind = "tool", tool = "everything__echo", label = "all everything__echo calls in this session" } },
  }
end

H.test("the approval of an MCP call names the server and the tool and shows the exact arguments whole", function()
  local calls = H.stub_select(H.pick("Allow once"))
  review.on_requested(nil, mcp_review("r-1"))
  H.wait(function()
    return #sent_of("review/decide") == 1
  end, 2000, "review/decide")
  local prompt = calls[1].opts.prompt
  H.contains(prompt, "agentd wants to call everything › echo (MCP server everything, tool echo)", "server and tool")
  H.contains(prompt, '{"message":"' .. long .. '","times":2}', "the whole arguments, keys sorted")
  H.contains(prompt, "MCP tools ask", "why")
  review.on_resolved(nil, { reviewId = "r-1", sessionId = "s-1", outcome = "accepted", by = "editor" })
end)

H.test("the chat's tool line: server › tool and the arguments; the result's images as placeholders", function()
  session.current = { sessionId = "s-1", title = "mcp", model = "qwen3:8b", approvalMode = "ask" }
  chat.reset(session.current, {})
  chat.open()
  local tc = { callId = "m1", tool = "everything__get-tiny-image", label = "MCP server everything, tool get-tiny-image, arguments {}",
    status = "pending", arguments = vim.empty_dict(), mcp = { server = "everything", tool = "get-tiny-image" } }
  session.on_update(nil, { sessionId = "s-1", turnId = "t1", seq = 1, update = { type = "turnStarted" } })
  session.on_update(nil, { sessionId = "s-1", turnId = "t1", seq = 2, update = { type = "toolCallStarted", toolCall = tc } })
  local done = vim.deepcopy(tc)
  done.status = "completed"
  done.result = { type = "ok", isError = false, text = "A tiny image:", elapsedMs = 12,
    images = { { mimeType = "image/png", bytes = 1247 } } }
  session.on_update(nil, { sessionId = "s-1", turnId = "t1", seq = 3, update = { type = "toolCallCompleted", toolCall = done } })
  chat.flush_now()
  local text = table.concat(chat.lines(), "\n")
  H.contains(text, "everything › get-tiny-image (MCP) {}", "the tool line")
  local log = chat.buffers()
  local virt = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(log, chat.ns, 0, -1, { details = true })) do
    for _, chunk in ipairs(m[4].virt_text or {}) do
      table.insert(virt, chunk[1])
    end
  end
  H.contains(table.concat(virt, " "), "[image image/png, 1.2 KB]", "the image placeholder")
  local details = table.concat(chat.details_lines(done), "\n")
  H.contains(details, "MCP server: everything  ·  its tool: get-tiny-image", "details: server and tool")
  H.contains(details, "## images\n[image image/png, 1.2 KB]", "details: images")
  local d2 = table.concat(chat.details_lines({ callId = "m2", tool = "everything__echo", status = "completed",
    arguments = { message = "hi", nested = { b = 1, a = { 1, 2 } }, p = "/a\\/b" }, mcp = { server = "everything", tool = "echo" } }), "\n")
  H.contains(d2, '## arguments\n{\n  "message": "hi",\n  "nested": {\n    "a": [\n      1,\n      2\n    ],\n    "b": 1\n  },\n  "p": "/a\\\\/b"\n}',
    "details: the arguments pretty-printed")
end)

local proposal = {
  name = "everything", file = ".agentd/mcp.json", transport = "stdio", command = "node",
  args = { "/opt/mcp/index.js" }, env = { GREETING = "hi" }, network = false,
  hash = "sha256:abc", state = "needsApproval",
}

H.test("a session start in a trusted workspace announces proposals not approved yet, once", function()
  answers["mcp/proposals"] = { result = { workspaceFolder = "file:///home/ada/shop", trusted = true, proposals = { proposal,
    { name = "ok", file = ".mcp.json", transport = "http", url = "http://127.0.0.1:9/", network = false, hash = "sha256:def", state = "approved" } } } }
  mcp.session_started("file:///home/ada/shop")
  H.wait(function()
    return H.notified("not approved yet: everything") ~= nil
  end, 2000, "the announcement")
  H.ok(H.notified("not approved yet: everything, ok") == nil, "an approved proposal is not announced")
  H.contains(H.notified("not approved yet").msg, ":AgentMcpApprove", "says how to approve")
  H.eq(sent_of("mcp/proposals")[1].params, { workspaceFolder = "file:///home/ada/shop" })
  local before = #H.notifications
  mcp.session_started("file:///home/ada/shop")
  H.wait(function()
    return #sent_of("mcp/proposals") == 2
  end, 2000, "the second mcp/proposals")
  H.drain("the answer")
  H.eq(#H.notifications, before, "announced once")
end)

H.test(":AgentMcpApprove shows the exact definition and approves that hash", function()
  answers["mcp/approve"] = { result = { name = "everything", approved = true,
    note = "approved: MCP server everything starts in new sessions of this workspace" } }
  local calls = H.stub_select(function(items, o)
    if o.kind == "agentd.mcp_proposals" then
      return items[1]
    end
    return "Approve everything"
  end)
  vim.cmd("AgentMcpApprove")
  H.wait(function()
    return #sent_of("mcp/approve") == 1
  end, 2000, "mcp/approve")
  H.eq(#calls, 2, "a pick, then the definition to confirm")
  H.eq(calls[1].opts.format_item(calls[1].items[1]), "everything — node /opt/mcp/index.js (.agentd/mcp.json)")
  H.eq(#calls[1].items, 1, "only the proposal that needs approval")
  for _, want in ipairs({ "proposed in .agentd/mcp.json", "command: node", 'args: ["/opt/mcp/index.js"]', "env: GREETING=hi",
    "network: off", "next session" }) do
    H.contains(calls[2].opts.prompt, want, "the definition shown")
  end
  H.eq(sent_of("mcp/approve")[1].params, { workspaceFolder = "file:///home/ada/shop", name = "everything", hash = "sha256:abc" })
  H.wait(function()
    return H.notified("starts in new sessions") ~= nil
  end, 2000, "the note")
end)

H.test("an untrusted workspace: nothing is announced, nothing offered", function()
  answers["mcp/proposals"] = { result = { workspaceFolder = "file:///home/ada/shop", trusted = false, proposals = {} } }
  sent = {}
  local before = #H.notifications
  mcp.session_started("file:///home/ada/shop")
  H.wait(function()
    return #sent_of("mcp/proposals") == 1
  end, 2000, "mcp/proposals")
  H.drain("the answer")
  H.eq(#H.notifications, before, "nothing announced")
  local calls = H.stub_select(function(items)
    return items[1]
  end)
  vim.cmd("AgentMcpApprove")
  H.wait(function()
    return H.notified("is not trusted") ~= nil
  end, 2000, "the not-trusted note")
  H.eq(#calls, 0, "no picker")
  H.eq(#sent_of("mcp/approve"), 0, "nothing approved")
end)

H.done()
