-- setup() validation, compat layer, commands, <Plug> mappings, default keymaps, help tags.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()
local agentd = require("agentd")
local config = require("agentd.config")
local compat = require("agentd.compat")

local function raises(fn, pattern)
  local ok, err = pcall(fn)
  H.ok(not ok, "expected an error")
  if pattern then
    H.contains(tostring(err), pattern, "error text")
  end
end

H.test("defaults are valid", function()
  local merged, unknown = config.validate({})
  H.eq(unknown, {}, "no unknown keys")
  H.eq(merged.cmd, { "agentd", "connect" }, "default cmd")
  H.eq(merged.chat.layout, "right")
end)

H.test("wrong types raise", function()
  raises(function() agentd.setup({ cmd = "agentd connect" }) end, "cmd")
  raises(function() agentd.setup({ cmd = {} }) end, "cmd")
  raises(function() agentd.setup({ approval_mode = "sometimes" }) end, "approval_mode")
  raises(function() agentd.setup({ chat = { layout = "diagonal" } }) end, "chat.layout")
  raises(function() agentd.setup({ chat = { flush_ms = -1 } }) end, "chat.flush_ms")
  raises(function() agentd.setup({ keymaps = { chat = 1 } }) end, "keymaps.chat")
  raises(function() agentd.setup({ review = { open = "always" } }) end, "review.open")
  raises(function() agentd.setup({ context_length = 0 }) end, "context_length")
  raises(function() agentd.setup({ autostart = "yes" }) end, "autostart")
end)

H.test("unknown keys are reported, not fatal", function()
  H.notifications = {}
  agentd.setup({ modle = "x", chat = { layot = "float" } })
  local n = H.notified("unknown options")
  H.ok(n, "warned")
  H.contains(n.msg, "modle", "top-level key")
  H.contains(n.msg, "chat.layot", "nested key")
end)

H.test("lists replace the defaults, tables merge", function()
  agentd.setup({ cmd = { "/opt/agentd" }, chat = { layout = "float" }, model = "qwen3:8b" })
  local o = config.get()
  H.eq(o.cmd, { "/opt/agentd" })
  H.eq(o.chat.layout, "float")
  H.eq(o.chat.flush_ms, 30, "other chat defaults kept")
  H.eq(o.model, "qwen3:8b")
end)

H.test("commands exist", function()
  for _, c in ipairs({ "Agent", "AgentChat", "AgentNew", "AgentSessions", "AgentCancel", "AgentRevert",
    "AgentAccept", "AgentReject", "AgentAllow", "AgentReview", "AgentModel", "AgentMode", "AgentGrants", "AgentStatus",
    "AgentStop" }) do
    H.eq(vim.fn.exists(":" .. c), 2, ":" .. c)
  end
end)

H.test("<Plug> mappings exist", function()
  for _, p in ipairs({ "chat", "prompt", "cancel", "next-hunk", "prev-hunk", "accept-hunk", "reject-hunk",
    "accept-file", "reject-file", "review" }) do
    H.ok(vim.fn.maparg("<Plug>(agentd-" .. p .. ")", "n") ~= "", "<Plug>(agentd-" .. p .. ")")
  end
  H.ok(vim.fn.maparg("<Plug>(agentd-prompt-selection)", "x") ~= "", "visual prompt")
end)

H.test("default keymaps, and keymaps = false", function()
  vim.g.mapleader = ","
  agentd.setup({})
  H.ok(vim.fn.maparg(",ac", "n") ~= "", "chat mapping")
  H.ok(vim.fn.maparg(",ap", "x") ~= "", "visual prompt mapping")
  agentd.setup({ keymaps = false })
  H.eq(vim.fn.maparg(",ac", "n"), "", "removed with keymaps = false")
  agentd.setup({ keymaps = { chat = false } })
  H.eq(vim.fn.maparg(",ac", "n"), "", "one key off")
  H.ok(vim.fn.maparg(",ap", "n") ~= "", "others on")
  vim.keymap.set("n", ",ax", "<Nop>")
  agentd.setup({})
  H.eq(vim.fn.maparg(",ax", "n"), "<Nop>", "a user mapping is never overridden")
end)

H.test("compat layer", function()
  H.ok(compat.uv.hrtime() > 0, "uv")
  H.ok(compat.islist({ 1, 2 }) and not compat.islist({ a = 1 }), "islist")
  compat.validate("x", 1, "number")
  H.ok(not pcall(compat.validate, "x", "s", "number"), "validate raises")
  compat.validate("y", nil, "number", true)
  local hr = compat.health()
  for _, k in ipairs({ "start", "ok", "warn", "error", "info" }) do
    H.eq(type(hr[k]), "function", "health." .. k)
  end
  H.eq(type(compat.get_clients()), "table", "get_clients")
  H.ok(compat.has_virt_lines(), "virt_lines")
end)

H.test("help file has tags and every command is documented", function()
  local doc = H.plugin_dir .. "/doc"
  local tmp = H.tmpdir("doc")
  vim.fn.writefile(vim.fn.readfile(doc .. "/agentd.txt"), tmp .. "/agentd.txt")
  vim.cmd("helptags " .. vim.fn.fnameescape(tmp))
  local tags = table.concat(vim.fn.readfile(tmp .. "/tags"), "\n")
  for _, t in ipairs({ "agentd.txt", "agentd", "agentd-config", "agentd-commands", "agentd-review", "agentd-mappings",
    "agentd-chat", ":Agent", ":AgentChat", ":AgentNew", ":AgentSessions", ":AgentCancel", ":AgentRevert", ":AgentAccept",
    ":AgentReject", ":AgentModel", ":AgentAllow", ":AgentGrants", ":AgentReview", ":AgentMode", ":AgentStatus", ":AgentStop",
    "agentd-health", "agentd-statusline", "agentd.setup()" }) do
    H.ok(tags:find("\n" .. vim.pesc(t) .. "\t") or tags:find("^" .. vim.pesc(t) .. "\t"), "tag " .. t)
  end
end)

H.test(":checkhealth agentd reports a missing binary with a fix", function()
  agentd.setup({ cmd = { "agentd-does-not-exist" } })
  vim.cmd("checkhealth agentd")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  H.contains(text, "agentd-does-not-exist", "names the command")
  H.contains(text, "not found", "says it is missing")
  H.contains(text, "Neovim", "version section")
  vim.cmd("bwipeout!")
end)

H.done()
