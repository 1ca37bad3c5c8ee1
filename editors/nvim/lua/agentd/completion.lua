-- Inline completion: ghost text from the daemon's completion model (textDocument/inlineCompletion).
--
-- On Neovim 0.12+ the built-in vim.lsp.inline_completion shows and accepts it; on 0.7–0.11 this
-- module does, with an extmark at the cursor (inline virtual text where Neovim has it, then
-- virtual lines). Either way <Tab> (or <C-y>) accepts in insert mode, and falls through to the key's
-- own meaning when nothing is shown (:h agentd-completion).
--
-- Off by default, unless a completion model is configured (completion.model in setup(), or the
-- daemon's completion-model): completion.enabled = true/false overrides, and :AgentCompletion
-- turns it on or off, for every language or one filetype.
local compat = require("agentd.compat")
local config = require("agentd.config")
local util = require("agentd.util")

local M = {}

local ns = vim.api.nvim_create_namespace("agentd_completion")
local augroup

-- Switches set by :AgentCompletion (nil: follow the config and the daemon).
local switch = { all = nil, filetypes = {} }

-- The plugin's own ghost text (0.7–0.11): what is shown, and the request in flight.
local shown -- { buf, row, col, tick, lines }
local pending -- { client, id }
local timer

--- Whether Neovim's built-in inline completion is used (0.12+).
function M.builtin()
  return vim.lsp.inline_completion ~= nil and vim.lsp.inline_completion.enable ~= nil
end

local function opts()
  return config.get().completion or {}
end

--- Whether completion is on for a filetype ("" or nil: any).
function M.enabled(filetype)
  local o = opts()
  local ft = filetype and filetype ~= "" and filetype or nil
  if ft and switch.filetypes[ft] ~= nil then
    return switch.filetypes[ft]
  end
  if ft and o.filetypes and o.filetypes[ft] ~= nil then
    return o.filetypes[ft]
  end
  if switch.all ~= nil then
    return switch.all
  end
  if o.enabled ~= "auto" then
    return o.enabled == true
  end
  local info = require("agentd.client").server_info or {}
  return type(o.model) == "string" or info.completionConfigured == true
end

--- The completion model the daemon uses for this connection (nil before it is connected).
function M.model()
  local info = require("agentd.client").server_info or {}
  return info.completionModel
end

local function buf_on(buf)
  local client = require("agentd.client")
  return client.client_id ~= nil and compat.buf_is_attached(buf, client.client_id)
    and M.enabled(compat.get_buf_option(buf, "filetype"))
end

-- UTF-16 code units of a UTF-8 string (LSP positions count them).
local function utf16_len(s)
  local n = 0
  for i = 1, #s do
    local b = s:byte(i)
    if b < 0x80 or b >= 0xC0 then
      n = n + (b >= 0xF0 and 2 or 1)
    end
  end
  return n
end

local function clear()
  if shown and vim.api.nvim_buf_is_valid(shown.buf) then
    vim.api.nvim_buf_clear_namespace(shown.buf, ns, 0, -1)
  end
  shown = nil
end

local function cancel()
  if pending then
    pcall(compat.cancel_request, pending.client, pending.id)
    pending = nil
  end
  if timer then
    timer:stop()
  end
end

--- The ghost text shown now (tests, statuslines): its lines, or nil.
function M.current()
  if M.builtin() then
    return nil
  end
  return shown and shown.lines or nil
end

local function show(buf, row, col, text)
  clear()
  local lines = vim.split(text, "\n", { plain = true })
  local first = { { lines[1], "AgentdGhost" } }
  local mark = { virt_text = first, hl_mode = "combine" }
  if vim.fn.has("nvim-0.10") == 1 then
    mark.virt_text_pos = "inline"
  else
    mark.virt_text_pos = "eol" -- no inline virtual text before 0.10: shown after the line
  end
  if #lines > 1 then
    local rest = {}
    for i = 2, #lines do
      table.insert(rest, { { lines[i], "AgentdGhost" } })
    end
    mark.virt_lines = rest
  end
  vim.api.nvim_buf_set_extmark(buf, ns, row, col, mark)
  shown = { buf = buf, row = row, col = col, tick = vim.api.nvim_buf_get_changedtick(buf), lines = lines }
end

-- Asks the daemon for a completion at the cursor of the current window.
local function request()
  local buf = vim.api.nvim_get_current_buf()
  if not buf_on(buf) or not vim.startswith(vim.api.nvim_get_mode().mode, "i") then
    return
  end
  local c = require("agentd.client").get()
  if not c then
    return
  end
  cancel()
  local cur = vim.api.nvim_win_get_cursor(0)
  local row, col = cur[1] - 1, cur[2]
  local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ""
  local tick = vim.api.nvim_buf_get_changedtick(buf)
  local params = {
    textDocument = { uri = vim.uri_from_bufnr(buf) },
    position = { line = row, character = utf16_len(line:sub(1, col)) },
    context = { triggerKind = 2 },
  }
  local mine
  local ok, id = compat.request(c, "textDocument/inlineCompletion", params, function(err, result)
    if pending and pending.id == mine then
      pending = nil
    end
    if err or not result then
      return
    end
    local items = result.items or result
    local item = items[1]
    -- Only for the text and cursor it was asked for.
    if not item or item.insertText == "" or not vim.api.nvim_buf_is_valid(buf)
        or vim.api.nvim_get_current_buf() ~= buf or vim.api.nvim_buf_get_changedtick(buf) ~= tick
        or not vim.startswith(vim.api.nvim_get_mode().mode, "i") then
      return
    end
    local now = vim.api.nvim_win_get_cursor(0)
    if now[1] - 1 ~= row or now[2] ~= col then
      return
    end
    show(buf, row, col, item.insertText)
  end, buf)
  if ok then
    mine = id
    pending = { client = c, id = id }
  end
end

local function schedule_request()
  clear()
  if not buf_on(vim.api.nvim_get_current_buf()) then
    cancel()
    return
  end
  if not timer then
    timer = compat.uv.new_timer()
  end
  timer:stop()
  timer:start(opts().debounce_ms or 150, 0, vim.schedule_wrap(request))
end

--- Accepts the ghost text shown at the cursor: inserts it and moves the cursor to its end.
--- Returns false when nothing was shown (there or any more).
function M.accept()
  if M.builtin() then
    return vim.lsp.inline_completion.get() == true
  end
  local s = shown
  local buf = vim.api.nvim_get_current_buf()
  if not s or s.buf ~= buf or vim.api.nvim_buf_get_changedtick(buf) ~= s.tick then
    clear()
    return false
  end
  local cur = vim.api.nvim_win_get_cursor(0)
  if cur[1] - 1 ~= s.row or cur[2] ~= s.col then
    clear()
    return false
  end
  clear()
  cancel()
  vim.api.nvim_buf_set_text(buf, s.row, s.col, s.row, s.col, s.lines)
  local last = #s.lines
  local end_col = (last == 1 and s.col or 0) + #s.lines[last]
  vim.api.nvim_win_set_cursor(0, { s.row + last, end_col })
  return true
end

--- Dismisses the ghost text and the request in flight.
function M.dismiss()
  cancel()
  clear()
end

local function feed(key)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(key, true, false, true), "n", false)
end

-- The accept keys, buffer-local in the buffers where completion is on (elsewhere <Tab> keeps
-- whatever meaning the user gave it).
local function accept_keys()
  local keys = opts().keymaps
  if keys == false then
    return {}
  end
  local out = {}
  for _, lhs in pairs({ keys.accept, keys.accept_alt }) do
    if type(lhs) == "string" then
      table.insert(out, lhs)
    end
  end
  return out
end

local mapped = {} -- buffers whose accept keys are mapped

local function map_keys(buf, on)
  if on == (mapped[buf] == true) then
    return
  end
  for _, lhs in ipairs(accept_keys()) do
    if on then
      vim.keymap.set("i", lhs, function()
        if M.accept() then
          return
        end
        -- Neovim 0.11+ maps <Tab> to jump to a snippet's next field: keep that.
        if lhs == "<Tab>" and vim.snippet and vim.snippet.active and vim.snippet.active({ direction = 1 }) then
          vim.snippet.jump(1)
          return
        end
        feed(lhs)
      end, { buffer = buf, silent = true, desc = "agentd: accept the inline completion" })
    else
      pcall(vim.keymap.del, "i", lhs, { buffer = buf })
    end
  end
  mapped[buf] = on or nil
end

-- Turns completion on or off in a buffer, as the switches say: the accept keys, and on 0.12 the
-- built-in completion.
local function apply(buf)
  if not vim.api.nvim_buf_is_valid(buf) or not vim.api.nvim_buf_is_loaded(buf) then
    return
  end
  local on = buf_on(buf)
  map_keys(buf, on)
  local client = require("agentd.client")
  if M.builtin() and client.client_id and compat.buf_is_attached(buf, client.client_id) then
    vim.lsp.inline_completion.enable(on, { bufnr = buf, client_id = client.client_id })
  end
end

local function apply_all()
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    apply(b)
  end
  if not M.builtin() then
    M.dismiss()
  end
end

--- Called once the daemon connection is initialized (client.lua): sets up the autocmds and keys.
function M.on_connect()
  vim.api.nvim_set_hl(0, "AgentdGhost", { link = "Comment", default = true })
  if not augroup then
    augroup = vim.api.nvim_create_augroup("agentd_completion", { clear = true })
    local events = { "BufEnter", "FileType" }
    if vim.fn.exists("##LspAttach") == 1 then
      table.insert(events, "LspAttach") -- 0.8+: a buffer attached after it was entered
    end
    vim.api.nvim_create_autocmd(events, {
      group = augroup,
      callback = function(a)
        apply(a.buf)
      end,
      desc = "agentd: inline completion in this buffer or not",
    })
    vim.api.nvim_create_autocmd("BufWipeout", {
      group = augroup,
      callback = function(a)
        mapped[a.buf] = nil
      end,
    })
    if not M.builtin() then
      vim.api.nvim_create_autocmd({ "TextChangedI", "InsertEnter" }, {
        group = augroup,
        callback = schedule_request,
        desc = "agentd: ask for an inline completion",
      })
      vim.api.nvim_create_autocmd({ "InsertLeave", "BufLeave" }, {
        group = augroup,
        callback = M.dismiss,
        desc = "agentd: drop the inline completion",
      })
      vim.api.nvim_create_autocmd("CursorMovedI", {
        group = augroup,
        callback = function()
          local cur = vim.api.nvim_win_get_cursor(0)
          if shown and (cur[1] - 1 ~= shown.row or cur[2] ~= shown.col) then
            M.dismiss()
          end
        end,
      })
    end
  end
  apply_all()
end

--- :AgentCompletion [on|off|toggle] [filetype]
function M.command(args)
  local what, ft = args[1] or "toggle", args[2]
  if what ~= "on" and what ~= "off" and what ~= "toggle" then
    util.error(":AgentCompletion on|off|toggle [filetype]")
    return
  end
  local on = what == "on" or (what == "toggle" and not M.enabled(ft))
  if ft then
    switch.filetypes[ft] = on
  else
    switch.all = on
    switch.filetypes = {}
  end
  apply_all()
  util.notify(string.format("inline completion %s%s (model %s)", on and "on" or "off", ft and (" for " .. ft) or "",
    M.model() or "not connected yet"))
end

--- One line for :AgentStatus and :checkhealth.
function M.describe()
  local ft = compat.get_buf_option(vim.api.nvim_get_current_buf(), "filetype")
  return string.format("inline completion %s (model %s, %s)", M.enabled(ft) and "on" or "off",
    M.model() or "?", M.builtin() and "Neovim's vim.lsp.inline_completion" or "the plugin's ghost text")
end

return M
