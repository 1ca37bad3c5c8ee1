-- Issue 13 (Neovim): tool results are readable in full, sessions get a title, resumed history has
-- no fake "0ms", :AgentRevert asks first and prints its result once with the daemon's message
-- only, :checkhealth formats a model without capabilities. No daemon: requests are stubbed.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()
require("agentd").setup({ cmd = { "true" }, chat = { flush_ms = 5 } })
local chat = require("agentd.chat")
local session = require("agentd.session")
local client = require("agentd.client")

local sent, replies = {}, {}
client.request = function(method, params, cb)
  if method == "mcp/proposals" then -- asked after session/new: an untrusted workspace (test_mcp.lua covers it)
    if cb then
      vim.schedule(function()
        cb(nil, { workspaceFolder = "", trusted = false, proposals = {} })
      end)
    end
    return
  end
  table.insert(sent, { method = method, params = params })
  if cb then
    vim.schedule(function()
      local r = replies[method]
      if type(r) == "function" then
        r = r(params)
      end
      cb(r and r.err, r and r.result)
    end)
  end
end

client.root = H.tmpdir("ws")
local sid = "s-1"
session.current = { sessionId = sid, title = "results", model = "qwen3:8b", approvalMode = "ask" }
local seq = 0
local function upd(u)
  seq = seq + 1
  session.on_update(nil, { sessionId = sid, turnId = "t1", seq = seq, update = u })
end

local function log_text()
  chat.flush_now()
  return table.concat(chat.lines(), "\n")
end

local function row_of(text)
  for i, l in ipairs(chat.lines()) do
    if l:find(text, 1, true) then
      return i
    end
  end
end

local function virt_texts()
  local log = chat.buffers()
  local out = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(log, chat.ns, 0, -1, { details = true })) do
    for _, chunk in ipairs(m[4].virt_text or {}) do
      table.insert(out, chunk[1])
    end
  end
  return table.concat(out, "\n")
end

local LONG_ERR = "permission denied: the sandbox does not allow writes outside the workspace in this call; "
  .. "nothing was written. Ask the user to run it, or write under the workspace instead.\nsecond line of the error"

H.test("a failed tool's error is written in full (real, wrapping lines) under its line", function()
  chat.reset(session.current, {})
  chat.open({ focus = false })
  upd({ type = "turnStarted" })
  upd({ type = "toolCallStarted", toolCall = { callId = "c1", tool = "write", label = "Write /etc/x", status = "running" } })
  upd({ type = "toolCallCompleted", toolCall = { callId = "c1", tool = "write", label = "Write /etc/x", status = "failed",
    result = { type = "permission_denied", isError = true, text = LONG_ERR, elapsedMs = 3 } } })
  local text = log_text()
  H.contains(text, "✗ Write /etc/x", "tool line")
  H.contains(text, "    permission denied: the sandbox does not allow writes outside the workspace in this call; "
    .. "nothing was written. Ask the user to run it, or write under the workspace instead.", "whole first line")
  H.contains(text, "    second line of the error", "every line")
  H.eq(row_of("second line of the error"), row_of("✗ Write /etc/x") + 2, "right under the tool line")
  H.eq(vim.api.nvim_win_get_option(vim.fn.win_findbuf((chat.buffers()))[1], "wrap"), true, "the log wraps")
  -- a later update of the same call replaces the error lines instead of adding more
  upd({ type = "toolCallUpdated", toolCall = { callId = "c1", tool = "write", label = "Write /etc/x", status = "failed" } })
  local n = 0
  for _ in log_text():gmatch("second line of the error") do
    n = n + 1
  end
  H.eq(n, 1, "written once")
end)

H.test("<CR> on a tool line opens its full result in a float; K too; q closes it", function()
  upd({ type = "toolCallStarted", toolCall = { callId = "c2", tool = "bash", label = "vet and test", status = "running",
    arguments = { command = "go vet ./... && go test ./..." } } })
  local out = {}
  for i = 1, 40 do
    out[i] = "ok  \tshop/pkg" .. i .. "\t0.0" .. (i % 10) .. "s"
  end
  upd({ type = "toolCallCompleted", toolCall = { callId = "c2", tool = "bash", label = "vet and test", status = "completed",
    preview = { summary = "go vet ./... && go test ./...", command = { argv = { "bash", "-c", "go vet ./... && go test ./..." },
      cwd = "/ws", sandbox = "bubblewrap" } },
    result = { type = "ok", isError = false, text = table.concat(out, "\n"), elapsedMs = 47700 } } })
  local text = log_text()
  H.contains(text, "✓ vet and test", "tool line")
  H.contains(virt_texts(), "47.7s", "elapsed time")
  H.contains(virt_texts(), "⏎ details", "the line says how to see more")
  local log = chat.buffers()
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(log)[1])
  vim.api.nvim_win_set_cursor(0, { row_of("✓ vet and test"), 0 })
  vim.cmd("execute \"normal \\<CR>\"")
  local w = chat.details_win
  H.ok(w and vim.api.nvim_win_is_valid(w) and vim.api.nvim_get_current_win() == w, "a float with the details, focused")
  H.ok(vim.api.nvim_win_get_config(w).relative ~= "", "it is a float")
  local lines = table.concat(vim.api.nvim_buf_get_lines(chat.details_buf, 0, -1, false), "\n")
  H.contains(lines, "ok  \tshop/pkg1\t", "first output line")
  H.contains(lines, "ok  \tshop/pkg40\t", "last output line: the whole output")
  H.contains(lines, "bash -c go vet ./... && go test ./...", "the exact command")
  H.contains(lines, "47.7s", "elapsed")
  vim.cmd("normal q")
  H.ok(not vim.api.nvim_win_is_valid(w), "q closes it")
  -- K on the error lines of the failed call shows its full text
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(log)[1])
  vim.api.nvim_win_set_cursor(0, { row_of("second line of the error"), 0 })
  vim.cmd("normal K")
  lines = table.concat(vim.api.nvim_buf_get_lines(chat.details_buf, 0, -1, false), "\n")
  H.contains(lines, LONG_ERR, "the full error")
  H.contains(lines, "permission_denied (error)", "its type")
  vim.cmd("normal q")
  upd({ type = "turnCompleted", reason = "done" })
  log_text()
end)

H.test("resumed history shows no elapsed time when it is unknown (0)", function()
  chat.reset({ sessionId = "s-2", title = "old", model = "m", approvalMode = "ask" }, {
    { type = "user", turnId = "t1", text = "Why?" },
    { type = "tool", turnId = "t1", toolCall = { callId = "a", tool = "read", label = "Read cart.go", status = "completed",
      result = { type = "ok", isError = false, text = "x", elapsedMs = 0 } } },
  })
  H.contains(log_text(), "✓ Read cart.go", "tool")
  H.ok(not virt_texts():find("0ms", 1, true), "no 0ms: " .. virt_texts())
end)

H.test("a session the daemon did not title is titled after the first prompt's first line", function()
  sent = {}
  session.current = nil
  replies["session/new"] = function(p)
    return { result = { session = { sessionId = "s-new", title = p.title or "", model = "m", approvalMode = "ask" } } }
  end
  replies["session/prompt"] = { result = { turnId = "t1" } }
  session.prompt("fix the cart total\nit applies the discount twice")
  H.wait(function()
    return #sent == 2
  end, 2000, "session/new and session/prompt")
  H.eq(sent[1].method, "session/new")
  H.eq(sent[1].params.title, "fix the cart total", "session/new gets the first line as its title")
  -- a daemon that keeps no title: the editor still shows the first prompt
  local untitled = { sessionId = "s-old", title = "", model = "m", turns = 1 }
  session.first_prompts["s-old"] = "refactor the parser\nplease"
  H.contains(session.format_session(untitled), "refactor the parser", ":AgentSessions")
  H.ok(not session.format_session(untitled):find("(untitled)", 1, true), "not (untitled)")
  session.current = { sessionId = "s-x", title = "", model = "m", approvalMode = "ask" }
  replies["session/prompt"] = { result = { turnId = "t2" } }
  session.prompt("add a test for Total")
  H.wait(function()
    return #sent == 3
  end, 2000, "session/prompt")
  H.contains(chat.statusline(), "add a test for Total", "the chat status line shows the title")
  session.running = {}
end)

H.test(":AgentRevert asks first; no sends nothing", function()
  sent = {}
  local calls = H.stub_select(H.pick("no"))
  vim.cmd("AgentRevert t1")
  H.wait(function()
    return calls[1] and calls[1].answered
  end, 2000, "the yes/no question")
  H.contains(calls[1].opts.prompt, "turn t1", "the question names the turn")
  H.eq(#sent, 0, "nothing sent")
end)

H.test(":AgentRevert yes: one message 'reverted turn t1'", function()
  sent = {}
  H.notifications = {}
  H.stub_select(H.pick("yes"))
  replies["session/revert"] = { result = { turnId = "t1", restored = { "cart.go" }, skipped = {} } }
  vim.cmd("AgentRevert t1")
  H.wait(function()
    return #sent == 1
  end, 2000, "session/revert")
  H.eq(sent[1].params, { sessionId = "s-x", turnId = "t1" })
  H.wait(function()
    return H.notified("reverted turn t1")
  end, 2000, "the result")
  local n = 0
  for _, x in ipairs(H.notifications) do
    if tostring(x.msg):lower():find("reverted turn t1", 1, true) then
      n = n + 1
    end
  end
  H.eq(n, 1, "printed once")
end)

H.test(":AgentRevert error: the daemon's message, without the JSON-RPC code", function()
  sent = {}
  H.notifications = {}
  H.stub_select(H.pick("yes"))
  replies["session/revert"] = { err = { code = -32806, message = "turn t9 changed no files" } }
  vim.cmd("AgentRevert t9")
  H.wait(function()
    return H.notified("turn t9 changed no files")
  end, 2000, "the error")
  local n = H.expect_error("turn t9 changed no files")
  H.ok(not tostring(n.msg):find("32806", 1, true), "no raw code: " .. tostring(n.msg))
end)

H.test(":checkhealth: a model without capabilities is 'pulled', not 'pulled ()'", function()
  local compat = require("agentd.compat")
  local reported = {}
  local rec = function(kind)
    return function(msg)
      table.insert(reported, kind .. ": " .. msg)
    end
  end
  local health = compat.health
  compat.health = function()
    return { start = rec("start"), ok = rec("ok"), warn = rec("warn"), error = rec("error"), info = rec("info") }
  end
  local get, rs = client.get, client.request_sync
  client.get = function()
    return {}
  end
  client.server_info = { protocolVersion = require("agentd.protocol").version }
  client.request_sync = function(method)
    if method == "daemon/status" then
      return { version = "0.1.0", sessions = 0, ollama = "ok", sandbox = "bubblewrap+landlock+seccomp" }
    end
    return { default = "qwen3:8b", models = { { name = "qwen3:8b", capabilities = {} } } }
  end
  require("agentd.config").get().model = "qwen3:8b"
  local ok, err = pcall(require("agentd.health").check)
  compat.health, client.get, client.request_sync = health, get, rs
  H.ok(ok, tostring(err))
  local text = table.concat(reported, "\n")
  H.contains(text, "ok: model qwen3:8b is pulled", "model line")
  H.ok(not text:find("()", 1, true), "no empty parentheses:\n" .. text)
end)

H.done()
