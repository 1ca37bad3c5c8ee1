-- document/diagnostics answered from vim.diagnostic (no daemon, no language server: diagnostics
-- are set with vim.diagnostic.set, which fires DiagnosticChanged as a language server's would),
-- and the AGENTS.md line at the top of the chat.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()
require("agentd").setup({ cmd = { "true" }, chat = { flush_ms = 5 } })
local diagnostics = require("agentd.diagnostics")
local protocol = require("agentd.protocol")

local ns = vim.api.nvim_create_namespace("agentd_test_ls")
local dir = H.tmpdir("diag")
local path = dir .. "/main.go"
H.write_file(path, "package main\n\nfunc main() {\n\tx := 1\n}\n")
vim.cmd("edit " .. vim.fn.fnameescape(path))
local buf = vim.api.nvim_get_current_buf()
local uri = vim.uri_from_bufnr(buf)

local function set(list)
  vim.diagnostic.set(ns, buf, list)
end

H.test("the method name matches the protocol and the handler exists", function()
  H.eq(protocol.server_request.document_diagnostics, "document/diagnostics", "method name")
  H.eq(diagnostics.on_request ~= nil, true, "handler exported")
end)

H.test("errors and warnings of the buffer, zero-based, with their source; no info or hints", function()
  set({
    { lnum = 3, col = 1, severity = vim.diagnostic.severity.ERROR, message = "declared and not used: x", source = "compiler" },
    { lnum = 0, col = 0, severity = vim.diagnostic.severity.WARN, message = "package comment", source = "stylecheck" },
    { lnum = 2, col = 0, severity = vim.diagnostic.severity.HINT, message = "a hint" },
    { lnum = 2, col = 0, severity = vim.diagnostic.severity.INFO, message = "an info" },
  })
  H.ok(diagnostics.is_fresh(buf), "DiagnosticChanged recorded the buffer's tick")
  local res = diagnostics.on_request(nil, { uri = uri, settleMs = 0 })
  table.sort(res.diagnostics, function(a, b)
    return a.line < b.line
  end)
  H.eq(res.diagnostics, {
    { line = 0, character = 0, severity = "warning", message = "package comment", source = "stylecheck" },
    { line = 3, character = 1, severity = "error", message = "declared and not used: x", source = "compiler" },
  }, "diagnostics")
end)

H.test("after a change, the answer waits for diagnostics of the new text", function()
  set({})
  vim.api.nvim_buf_set_lines(buf, 3, 4, false, { "\tx := missing" })
  H.ok(not diagnostics.is_fresh(buf), "stale after the change")
  -- the "language server" publishes a little later
  vim.defer_fn(function()
    set({ { lnum = 3, col = 6, severity = vim.diagnostic.severity.ERROR, message = "undefined: missing", source = "compiler" } })
  end, 100)
  local res = diagnostics.on_request(nil, { uri = uri, version = 2, settleMs = 10000 })
  H.eq(#res.diagnostics, 1, "one diagnostic: " .. vim.inspect(res))
  H.eq(res.diagnostics[1].message, "undefined: missing", "the new error, published after the request")
end)

H.test("settleMs 0 answers at once with what is there; unknown documents get an empty list", function()
  vim.api.nvim_buf_set_lines(buf, 3, 4, false, { "\tx := 2" })
  local res = diagnostics.on_request(nil, { uri = uri, settleMs = 0 })
  H.eq(#res.diagnostics, 1, "the stale diagnostics as they are")
  H.eq(diagnostics.on_request(nil, { uri = vim.uri_from_fname(dir .. "/nope.go"), settleMs = 5000 }),
    { diagnostics = {} }, "not loaded")
  H.eq(vim.json.encode(diagnostics.on_request(nil, { uri = "file:///nowhere.go", settleMs = 0 })),
    '{"diagnostics":[]}', "an empty list is a JSON array")
end)

H.test("the chat's first lines name the AGENTS.md the model reads", function()
  local chat = require("agentd.chat")
  chat.reset({ sessionId = "s-1", title = "t", model = "m", approvalMode = "ask",
    instructions = { path = "AGENTS.md", bytes = 1229, truncated = false } }, {})
  chat.flush_now()
  local lines = chat.lines()
  H.eq(lines[2], "using AGENTS.md (1.2 KB)", "second line of the chat:\n" .. table.concat(lines, "\n"))
  chat.reset({ sessionId = "s-2", title = "t", model = "m", approvalMode = "ask",
    instructions = { path = "AGENTS.md", bytes = 20000, truncated = true } }, {})
  chat.flush_now()
  H.eq(chat.lines()[2], "using AGENTS.md (19.5 KB, truncated to 8 KB)", "truncated")
  chat.reset({ sessionId = "s-3", title = "t", model = "m", approvalMode = "ask" }, {})
  chat.flush_now()
  H.ok(not table.concat(chat.lines(), "\n"):find("AGENTS.md", 1, true), "no line without instructions")
end)

H.test("the chat's first lines show the session's warnings", function()
  local chat = require("agentd.chat")
  chat.reset({ sessionId = "s-4", title = "t", model = "m", approvalMode = "ask",
    warnings = { "the definitions of the 25 tools take about 4000 tokens" } }, {})
  chat.flush_now()
  H.eq(chat.lines()[2], "warning: the definitions of the 25 tools take about 4000 tokens",
    "second line of the chat:\n" .. table.concat(chat.lines(), "\n"))
end)

H.done()
