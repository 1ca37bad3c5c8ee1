-- A turn's changes, after the fact: :AgentChanges [turn] lists the files a turn changed, one line
-- per hunk, in a list buffer (and the quickfix list); :AgentTurns picks a turn. Keys in the list:
-- <CR> jump to the hunk, u undo the hunk under the cursor, U undo the file, D the file's diff in a
-- split, r refresh, q close. Undo goes through the daemon (turn/undo): files changed since the
-- turn are skipped and named; open documents change through workspace/applyEdit.
local client = require("agentd.client")
local protocol = require("agentd.protocol")
local util = require("agentd.util")

local M = {}

M.buf = nil -- the list buffer
M.turn = nil -- the turn shown
M.result = nil -- its turn/changes result
M.items = {} -- line number -> { file = TurnChange, hunk = TurnHunk|nil }
M.last_undo = nil -- the last turn/undo result (for tests and the statusline)

local function session()
  return require("agentd.session").current
end

local function abs(rel)
  return (client.root or vim.fn.getcwd()) .. "/" .. rel
end

--- The first changed line of a hunk, as the turn left it (or "removed N lines").
local function hunk_summary(file, h)
  if h.newLines == 0 then
    return string.format("removed %d line%s", h.oldLines, h.oldLines == 1 and "" or "s")
  end
  local ok, lines = pcall(vim.fn.readfile, abs(file.path), "", h.newStart)
  local text = ok and lines[h.newStart] or ""
  text = vim.trim(text or "")
  if #text > 60 then
    text = text:sub(1, 59) .. "…"
  end
  local more = h.newLines > 1 and string.format(" (+%d lines)", h.newLines - 1) or ""
  return "+" .. text .. more
end

local function stats(file)
  local add, del = 0, 0
  for _, h in ipairs(file.hunks or {}) do
    add, del = add + h.newLines, del + h.oldLines
  end
  return add, del
end

--- Reloads clean buffers of files the undo changed on disk.
local function reload(paths)
  util.reload_files(paths, client.root)
end

local function render()
  local buf = M.buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return
  end
  local r = M.result or { files = {} }
  local lines = {
    string.format("agentd: changes of turn %s", (r.turnId ~= nil and r.turnId ~= "") and r.turnId or "(none)"),
    "<CR> jump  u undo hunk  U undo file  D diff  r refresh  q close",
  }
  local items, qf = {}, {}
  if #r.files == 0 then
    table.insert(lines, "no changes left to show")
  end
  for _, f in ipairs(r.files) do
    local add, del = stats(f)
    local head = string.format("%s  %s  +%d −%d", f.path, f.status, add, del)
    if f.changedSince then
      head = head .. "  (skipped by undo: " .. (f.reason ~= nil and f.reason or "changed since the turn") .. ")"
    end
    table.insert(lines, head)
    items[#lines] = { file = f }
    for _, h in ipairs(f.hunks or {}) do
      local line = math.max(h.newStart, 1)
      local summary = hunk_summary(f, h)
      table.insert(lines, string.format("  %s line %d: %s", h.header, line, summary))
      items[#lines] = { file = f, hunk = h }
      table.insert(qf, { filename = abs(f.path), lnum = line, text = h.header .. " " .. summary
        .. (f.changedSince and " (changed since)" or "") })
    end
  end
  M.items = items
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  pcall(vim.fn.setqflist, {}, " ", { title = "agentd: turn " .. tostring(r.turnId), items = qf })
end

local function item_at_cursor()
  local line = vim.api.nvim_win_get_cursor(0)[1]
  return M.items[line]
end

local function refresh(cb)
  local s = session()
  if not s then
    return
  end
  client.request(protocol.request.turn_changes, { sessionId = s.sessionId, turnId = M.turn }, function(err, r)
    if err then
      util.error("turn/changes: " .. ((type(err) == "table" and err.message) or util.err_text(err)))
      return
    end
    M.result = r
    M.turn = (r.turnId ~= "" and r.turnId) or M.turn
    render()
    if cb then
      cb()
    end
  end)
end

local function undo(params, what)
  local s = session()
  if not s or not M.turn then
    return
  end
  params.sessionId, params.turnId = s.sessionId, M.turn
  client.request(protocol.request.turn_undo, params, function(err, r)
    if err then
      util.error("undo: " .. ((type(err) == "table" and err.message) or util.err_text(err)))
      return
    end
    M.last_undo = r
    local msg = string.format("undid %s", what)
    local level = vim.log.levels.INFO
    if #(r.undone or {}) == 0 then
      msg = "nothing undone"
    end
    for _, sk in ipairs(r.skipped or {}) do
      msg = msg .. "\n  skipped " .. sk.path .. ": " .. sk.reason
      level = vim.log.levels.WARN
    end
    util.notify(msg, level)
    reload(r.undone)
    refresh()
  end)
end

function M.jump()
  local it = item_at_cursor()
  if not it then
    return
  end
  local line = it.hunk and math.max(it.hunk.newStart, 1) or 1
  vim.cmd("wincmd p")
  if vim.api.nvim_get_current_buf() == M.buf then
    vim.cmd("aboveleft split")
  end
  vim.cmd("edit " .. vim.fn.fnameescape(abs(it.file.path)))
  pcall(vim.api.nvim_win_set_cursor, 0, { line, 0 })
end

function M.undo_hunk()
  local it = item_at_cursor()
  if not (it and it.hunk) then
    util.notify("no hunk under the cursor (U undoes the file)")
    return
  end
  undo({ hunks = { [it.file.uri] = { it.hunk.id } } }, it.file.path .. " " .. it.hunk.header)
end

function M.undo_file()
  local it = item_at_cursor()
  if not it then
    return
  end
  undo({ files = { it.file.uri } }, it.file.path)
end

function M.diff()
  local it = item_at_cursor()
  if not it then
    return
  end
  vim.cmd("belowright split")
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_win_set_buf(0, b)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, util.split_lines(it.file.diff or ""))
  vim.bo[b].filetype = "diff"
  vim.bo[b].modifiable = false
  vim.bo[b].bufhidden = "wipe"
  pcall(vim.api.nvim_buf_set_name, b, "agentd://diff/" .. M.turn .. "/" .. it.file.path)
end

local function ensure_buf()
  if M.buf and vim.api.nvim_buf_is_valid(M.buf) then
    return M.buf
  end
  local b = vim.api.nvim_create_buf(false, true)
  vim.bo[b].bufhidden = "hide"
  vim.bo[b].filetype = "agentd-changes"
  pcall(vim.api.nvim_buf_set_name, b, "agentd://changes")
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, fn, { buffer = b, nowait = true, silent = true, desc = "agentd: " .. desc })
  end
  map("<CR>", M.jump, "jump to the hunk")
  map("u", M.undo_hunk, "undo the hunk")
  map("U", M.undo_file, "undo the file")
  map("D", M.diff, "the file's diff")
  map("r", function()
    refresh()
  end, "refresh")
  map("q", function()
    vim.cmd("close")
  end, "close")
  M.buf = b
  return b
end

--- :AgentChanges [turn]: the turn's changes (the newest turn not reverted without an argument).
function M.open(turn_id, cb)
  local s = session()
  if not s then
    util.notify("no session")
    return
  end
  M.turn = (turn_id and turn_id ~= "") and turn_id or nil
  local b = ensure_buf()
  if vim.fn.bufwinid(b) == -1 then
    vim.cmd("botright split")
    vim.api.nvim_win_set_buf(0, b)
    vim.api.nvim_win_set_height(0, 12)
  else
    vim.api.nvim_set_current_win(vim.fn.bufwinid(b))
  end
  refresh(cb)
end

--- :AgentTurns: pick one of the session's turns that changed files.
function M.pick()
  local s = session()
  if not s then
    util.notify("no session")
    return
  end
  client.request(protocol.request.turn_list, { sessionId = s.sessionId }, function(err, r)
    if err then
      util.error("turn/list: " .. ((type(err) == "table" and err.message) or util.err_text(err)))
      return
    end
    if #(r.turns or {}) == 0 then
      util.notify("no turn of this session changed files")
      return
    end
    vim.ui.select(r.turns, {
      prompt = "agentd: a turn's changes",
      kind = "agentd.turn",
      format_item = function(t)
        return string.format("%s  %s  (%d file%s)%s", t.turnId, t.prompt, t.files, t.files == 1 and "" or "s",
          t.reverted and "  [reverted]" or "")
      end,
    }, function(t)
      if t then
        M.open(t.turnId)
      end
    end)
  end)
end

return M
