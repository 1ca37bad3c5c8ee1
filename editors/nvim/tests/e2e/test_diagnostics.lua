-- End to end with a real language server: gopls attached to a Go buffer in Neovim, the real
-- daemon and the fake Ollama. The model's edit introduces a type error; the daemon asks the
-- editor for the file's diagnostics (document/diagnostics), Neovim answers from vim.diagnostic once
-- gopls has published for the new text, and the model's next request carries the new error with
-- its line, but not the error that was already there.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local MAIN = table.concat({
  "package main",
  "",
  "func add(a, b int) int {",
  "\treturn a + b",
  "}",
  "",
  "func main() {",
  "\tunused := 1",
  "\tprintln(add(1, 2))",
  "}",
  "",
}, "\n")

local call = H.call

local script = {
  models = { { name = "qwen3:8b", capabilities = { "completion", "tools" } } },
  turns = {
    { name = "read", when = { lastUserContains = "add a bonus" }, reply = call("read", { path = "main.go" }) },
    { name = "edit", when = { lastUserContains = "add a bonus", lastRole = "tool", lastContains = "package main" },
      reply = call("edit", { path = "main.go", old_string = "\treturn a + b\n", new_string = "\treturn a + b + bonus\n" }) },
    { name = "done", when = { lastUserContains = "add a bonus", lastRole = "tool" }, reply = { text = "Added." } },
    { name = "fallback", ["repeat"] = true, reply = { text = "fallback answer" } },
  },
}

local function gopls_path()
  local p = os.getenv("AGENTD_GOPLS")
  if p and p ~= "" then
    return p
  end
  p = vim.fn.exepath("gopls")
  if p ~= "" then
    return p
  end
  local gobin = vim.trim(vim.fn.system({ "go", "env", "GOBIN" }))
  local gopath = vim.trim(vim.fn.system({ "go", "env", "GOPATH" }))
  for _, c in ipairs({ gobin .. "/gopls", gopath .. "/bin/gopls" }) do
    if vim.fn.executable(c) == 1 then
      return c
    end
  end
  return nil
end

H.test("a type error the edit introduces reaches the model, with its line", function()
  if not vim.lsp.start then
    H.skip("vim.lsp.start needs Neovim 0.8+; the real-gopls test runs on 0.10")
  end
  H.need_daemon()
  local gopls = gopls_path()
  if not gopls then
    if os.getenv("CI") == "true" then
      error("gopls not found (.ci/run installs it with go install; or set AGENTD_GOPLS)")
    end
    H.skip("gopls not installed (go install golang.org/x/tools/gopls@v0.23.0)")
  end
  H.start_fakeollama(script)
  local d = H.start_daemon({ ["go.mod"] = "module example.com/diag\n\ngo 1.22\n", ["main.go"] = MAIN },
    { setup = { approval_mode = "auto-edit" } })
  local path = d.ws .. "/main.go"
  local buf = H.edit(path)
  local id = vim.lsp.start({ name = "gopls", cmd = { gopls }, root_dir = d.ws }, { bufnr = buf })
  H.ok(id, "gopls started")
  H.on_cleanup(function()
    vim.lsp.stop_client(id, true)
  end)
  -- gopls is ready when it reports the error already in the file
  local diags = require("agentd.diagnostics")
  local ok = pcall(H.wait, function()
    return #vim.diagnostic.get(buf) > 0 and diags.is_fresh(buf)
  end, 60000)
  H.ok(ok, "gopls never published diagnostics for main.go: " .. vim.inspect(vim.diagnostic.get(buf)))
  H.contains(vim.inspect(vim.diagnostic.get(buf)), "declared and not used", "the pre-existing error")

  H.agent("add a bonus to add")
  H.wait_turn_end(60000)
  H.contains(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"), "return a + b + bonus",
    "the edit is in the buffer")
  local last
  for _, r in ipairs(H.fake_requests()) do
    local msgs = (r.body or {}).messages or {}
    for _, m in ipairs(msgs) do
      if m.role == "tool" then
        last = tostring(m.content)
      end
    end
  end
  H.ok(last, "the model received tool results")
  H.contains(last, "main.go:4: undefined: bonus", "the edit's result names the new error and its line")
  H.ok(not last:find("declared and not used", 1, true), "the error that was there before is not repeated:\n" .. last)
end)

H.done()
