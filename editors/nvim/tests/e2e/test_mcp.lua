-- End to end with the real daemon and the real @modelcontextprotocol/server-everything (.ci/run
-- installs it into $AGENTD_MCP_SERVERS, default /opt/agentd-e2e/mcp), proposed by the workspace's
-- .agentd/mcp.json: untrusted, nothing is offered; trusted, the session start announces it,
-- :AgentMcpApprove shows its definition and approves it (mcp-approvals.json); the next session
-- has its tools, and an MCP call's approval and chat line name "everything › echo" with the exact
-- arguments.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local MARKER = "agentd-mcp-marker"

local script = {
  models = { { name = "qwen3:8b", capabilities = { "completion", "tools" } } },
  turns = {
    { when = { lastUserContains = "echo through mcp", lastRole = "user" },
      reply = { toolCalls = { { name = "everything__echo", arguments = { message = MARKER } } } } },
    { when = { lastUserContains = "echo through mcp", lastRole = "tool" }, reply = { text = "The echo came back." } },
    { ["repeat"] = true, reply = { text = "fallback answer" } },
  },
}

local function everything()
  local dir = os.getenv("AGENTD_MCP_SERVERS") or "/opt/agentd-e2e/mcp"
  local entry = dir .. "/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
  if vim.fn.filereadable(entry) == 1 and vim.fn.executable("node") == 1 then
    return entry
  end
  local why = entry .. " or node is missing (.ci/run installs them; set AGENTD_MCP_SERVERS)"
  if os.getenv("CI") == "true" then
    error("the everything MCP server is not installed: " .. why)
  end
  H.skip(why)
end

-- Counts the answers to mcp/proposals the plugin received (the session start's check).
local answered = 0
local function watch_proposals(client)
  local orig = client.request
  client.request = function(method, params, cb)
    if method ~= "mcp/proposals" then
      return orig(method, params, cb)
    end
    return orig(method, params, function(err, result)
      if cb then
        cb(err, result)
      end
      answered = answered + 1
    end)
  end
end

local function new_session()
  local session = require("agentd.session")
  local before = session.current and session.current.sessionId
  local n = answered
  vim.cmd("AgentNew")
  H.wait(function()
    return session.current and session.current.sessionId ~= before and answered > n
  end, 15000, "a new session and its mcp/proposals answer")
  H.drain("the announcement")
end

local env

H.test("untrusted: nothing is announced and :AgentMcpApprove offers nothing", function()
  H.need_daemon()
  local entry = everything()
  H.start_fakeollama(script)
  env = H.start_daemon({ [".agentd/mcp.json"] = vim.json.encode({ mcpServers = { everything = { command = "node", args = { entry } } } }) })
  watch_proposals(env.client)
  new_session()
  H.ok(H.notified("not approved yet") == nil, "an untrusted workspace's proposal was announced")
  local calls = H.stub_select(function(items)
    return items[1]
  end)
  vim.cmd("AgentMcpApprove")
  H.wait(function()
    return H.notified("is not trusted") ~= nil
  end, 10000, "the not-trusted note")
  H.eq(#calls, 0, "nothing to pick")
  H.eq(vim.fn.filereadable(env.base .. "/state/agentd/mcp-approvals.json"), 0, "nothing approved")
end)

H.test("trusted: announced at the session start, approved with :AgentMcpApprove for the next session", function()
  H.need_daemon()
  H.write_file(env.base .. "/state/agentd/trusted-workspaces", vim.loop.fs_realpath(env.ws) .. "\n")
  new_session()
  H.ok(H.notified("not approved yet: everything") ~= nil, "the proposal is announced")
  local calls = H.stub_select(function(items, o)
    if o.kind == "agentd.mcp_proposals" then
      return items[1]
    end
    return "Approve everything"
  end)
  vim.cmd("AgentMcpApprove")
  H.wait(function()
    return H.notified("starts in new sessions") ~= nil
  end, 10000, "the approval's note")
  H.contains(calls[2].opts.prompt, "command: node", "the definition: command")
  H.contains(calls[2].opts.prompt, "server-everything/dist/index.js", "the definition: args")
  H.contains(calls[2].opts.prompt, "network: off", "the definition: network")
  local approvals = vim.json.decode(H.read_file(env.base .. "/state/agentd/mcp-approvals.json"))
  local got = approvals[vim.loop.fs_realpath(env.ws)] or {}
  H.ok(type(got.everything) == "string" and got.everything:find("^sha256:") ~= nil, "recorded: " .. vim.inspect(approvals))
end)

H.test("the next session: an MCP call is approved showing server › tool and the exact arguments", function()
  H.need_daemon()
  new_session()
  H.ok(H.notified("not approved yet: everything, ") == nil, "not announced again")
  local selects = H.stub_select(H.pick("Allow once"))
  H.agent("please echo through mcp")
  H.wait_turn_end(60000)
  H.eq(#selects, 1, "one approval")
  H.contains(selects[1].opts.prompt, "agentd wants to call everything › echo (MCP server everything, tool echo)", "server and tool")
  H.contains(selects[1].opts.prompt, '{"message":"' .. MARKER .. '"}', "the exact arguments")
  local text = table.concat(require("agentd.chat").lines(), "\n")
  H.contains(text, "everything › echo (MCP) {\"message\":\"" .. MARKER .. "\"}", "the chat's tool line")
  H.contains(H.fake_transcript(), "Echo: " .. MARKER, "the result reached the model")
end)

H.done()
