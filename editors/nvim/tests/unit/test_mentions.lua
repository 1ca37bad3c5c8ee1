-- Mentions in the prompt box: completion items for @, @src/, @open and @#symbols, and the context
-- items a submitted prompt carries (no daemon: session.prompt is replaced by a recorder).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()
require("agentd").setup({ cmd = { "true" }, chat = { flush_ms = 5 } })
local mentions = require("agentd.mentions")
local client = require("agentd.client")
local compat = require("agentd.compat")

local root = H.tmpdir("ws")
H.write_file(root .. "/main.go", "package main\n\nfunc main() {}\n")
H.write_file(root .. "/src/a.go", "package src\n\n// Total sums.\nfunc Total() int {\n\treturn 1\n}\n\nvar x = 1\n")
H.write_file(root .. "/src/deep/b.go", "package deep\n")
H.write_file(root .. "/docs/notes.md", "notes\n")
client.root = root

local function words(items)
  local out = {}
  for _, it in ipairs(items) do
    table.insert(out, it.word)
  end
  return out
end

local function has(list, w)
  return vim.tbl_contains(list, w)
end

H.test("@ offers @open, folders and files of the workspace", function()
  local w = words(mentions.items("@"))
  H.eq(w[1], "@open", "@open first")
  for _, want in ipairs({ "@src/", "@src/deep/", "@docs/", "@main.go", "@src/a.go", "@src/deep/b.go", "@docs/notes.md" }) do
    H.ok(has(w, want), want .. " offered in " .. table.concat(w, " "))
  end
end)

H.test("@src/ offers only what is under src/", function()
  local w = words(mentions.items("@src/"))
  H.ok(#w >= 4, "items under src/: " .. table.concat(w, " "))
  for _, x in ipairs(w) do
    H.eq(x:sub(1, 5), "@src/", "under src/: " .. x)
  end
  H.ok(not has(w, "@open"), "no @open for @src/")
end)

H.test("@op offers @open; @notes finds docs/notes.md by substring", function()
  H.ok(has(words(mentions.items("@op")), "@open"), "@open")
  H.eq(words(mentions.items("@notes")), { "@docs/notes.md" }, "substring match")
end)

H.test("the completefunc starts at the @ of the token under the cursor", function()
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_set_current_buf(b)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, { "look at @sr" })
  vim.api.nvim_win_set_cursor(0, { 1, 11 })
  H.eq(mentions.completefunc(1, ""), 8, "start column (0-based) of @")
  vim.api.nvim_buf_set_lines(b, 0, -1, false, { "mail a@b" })
  vim.api.nvim_win_set_cursor(0, { 1, 8 })
  H.eq(mentions.completefunc(1, ""), -3, "an @ inside a word is no mention")
  H.ok(has(words(mentions.completefunc(0, "@src/d")), "@src/deep/"), "items for the base")
  vim.cmd("bwipeout! " .. b)
end)

H.test("the prompt box completes mentions", function()
  local chat = require("agentd.chat")
  chat.open()
  local _, input = chat.buffers()
  H.eq(compat.get_buf_option(input, "completefunc"), "v:lua.agentd_mention_complete", "completefunc set")
  H.ok(#vim.api.nvim_get_autocmds({ buffer = input, event = "InsertCharPre" }) > 0, "an InsertCharPre trigger on @")
  chat.close()
end)

H.test("submit sends @open, @folder/ and @file as context items; unknown tokens stay text", function()
  vim.cmd("edit " .. vim.fn.fnameescape(root .. "/main.go"))
  vim.cmd("edit " .. vim.fn.fnameescape(root .. "/src/a.go"))
  local session = require("agentd.session")
  local orig = session.prompt
  local sent = {}
  session.prompt = function(text, ctx)
    table.insert(sent, { text = text, ctx = ctx })
  end
  H.on_cleanup(function()
    session.prompt = orig
  end)
  local chat = require("agentd.chat")
  chat.open()
  local _, input = chat.buffers()
  local text = "fix @open, see @src/deep/ and @main.go, not @missing.txt or a@b"
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { text })
  chat.submit()
  H.eq(#sent, 1, "one prompt")
  H.eq(sent[1].text, text, "the text keeps the tokens as typed")
  local uri = vim.uri_from_fname
  H.eq(sent[1].ctx, {
    { kind = "file", uri = uri(root .. "/main.go") },
    { kind = "file", uri = uri(root .. "/src/a.go") },
    { kind = "folder", uri = uri(root .. "/src/deep") },
  }, "context items (main.go once)")
  H.eq(mentions.context("no mentions here"), nil, "no items without mentions")
  chat.close()
end)

H.test("@#query offers the language servers' symbols and submit sends the symbol's text", function()
  local fake = { id = 999, name = "fakels" }
  local gc, sc, rs = compat.get_clients, compat.server_capabilities, compat.request_sync
  compat.get_clients = function()
    return { fake }
  end
  compat.server_capabilities = function(c)
    return c == fake and { workspaceSymbolProvider = true } or {}
  end
  local queries = {}
  compat.request_sync = function(c, method, params)
    table.insert(queries, { method = method, query = params.query })
    return { result = {
      { name = "Total", kind = 12, location = { uri = vim.uri_from_fname(root .. "/src/a.go"),
        range = { start = { line = 3, character = 5 }, ["end"] = { line = 3, character = 10 } } } },
      { name = "Outside", kind = 12, location = { uri = "file:///elsewhere/x.go",
        range = { start = { line = 0, character = 0 }, ["end"] = { line = 0, character = 1 } } } },
    } }
  end
  H.on_cleanup(function()
    compat.get_clients, compat.server_capabilities, compat.request_sync = gc, sc, rs
  end)
  local items = mentions.items("@#Tot")
  H.eq(queries, { { method = "workspace/symbol", query = "Tot" } }, "workspace/symbol asked with the query")
  H.eq(words(items), { "@#Total" }, "the workspace's symbol only")
  H.contains(items[1].menu, "function src/a.go:4", "kind and place")
  local ctx = mentions.context("why @#Total?")
  H.eq(ctx, { {
    kind = "symbol", uri = vim.uri_from_fname(root .. "/src/a.go"), name = "Total", symbolKind = "function",
    range = { start = { line = 3, character = 0 }, ["end"] = { line = 5, character = 1 } },
    text = "func Total() int {\n\treturn 1\n}",
  } }, "the symbol with its declaration's text")
end)

H.test("@#query without a language server offers nothing", function()
  local gc = compat.get_clients
  compat.get_clients = function()
    return {}
  end
  H.on_cleanup(function()
    compat.get_clients = gc
  end)
  H.eq(mentions.items("@#x"), {}, "no symbols")
end)

H.done()
