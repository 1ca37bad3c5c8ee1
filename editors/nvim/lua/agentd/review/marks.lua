-- The drawing of an edit review in its file's buffer, with extmarks (the buffer's text is never
-- changed): for each hunk, the lines it removes or replaces highlighted with a sign, the lines
-- it proposes as virtual lines below them, a label at the end of its first line (hunk n/m,
-- +a -r, its decision, the keys); a hint line with every key above the review's first hunk.
-- Placement finds where each hunk's lines are now and is time-sliced; the marks then follow the
-- buffer's edits, so they also say where a hunk is.
local config = require("agentd.config")
local util = require("agentd.util")
local compat = require("agentd.compat")
local keys = require("agentd.review.keys")
local list = require("agentd.review.list")

local M = {}

M.ns = vim.api.nvim_create_namespace("agentd_review")
-- The key hint above each review's first hunk (its own namespace: M.marks lists only hunk marks).
M.hint_ns = vim.api.nvim_create_namespace("agentd_review_hint")

-- Timing of the last placement (benchmarks read it): ms from notification to marks placed.
M.last_place_ms = nil

local function cfg()
  return config.get().review
end

local function pad(s, width)
  local w = vim.api.nvim_strwidth(s)
  if w < width then
    return s .. string.rep(" ", width - w)
  end
  return s
end

--- Deletes the marks of hunk h.
function M.del_marks(bufnr, h)
  for _, id in ipairs(h.marks or {}) do
    pcall(vim.api.nvim_buf_del_extmark, bufnr, M.ns, id)
  end
  h.marks = {}
end

--- s on one line, cut to n characters (not bytes) with an ellipsis.
function M.clip(s, n)
  s = vim.trim((s:gsub("%s+", " ")))
  local len = vim.str_utfindex(s)
  if len <= n then
    return s
  end
  return s:sub(1, vim.str_byteindex(s, n - 1)) .. "…"
end

local function label_for(r, h)
  local n = #r.hunks
  local s = string.format(" ◆ agentd %d/%d  +%d −%d", h.index, n, #(h.hunk.added or {}), #(h.hunk.removed or {}))
  local u = keys.keyhint("undo")
  if h.status == "accepted" then
    s = s .. "  ✓ accepted" .. (r.sent and "" or ((u and ("  " .. u .. " undo") or "") .. " (decide the other hunks to apply)"))
  elseif h.status == "rejected" then
    s = s .. "  ✗ rejected" .. (h.reason and (": “" .. M.clip(h.reason, 60) .. "”") or "")
      .. ((not r.sent and u) and ("  " .. u .. " undo") or "")
  else
    local a, j, w = keys.keyhint("accept_hunk"), keys.keyhint("reject_hunk"), keys.keyhint("reject_hunk_reason")
    if a and j then
      s = s .. string.format("  %s accept · %s reject", a, j) .. (w and string.format(" · %s reason", w) or "")
    else
      s = s .. "  :AgentAccept · :AgentReject"
    end
  end
  if r.stale then
    s = s .. "  (buffer changed: positions may be off)"
  end
  return s
end

-- Places the marks of one hunk. Rows are the hunk's current position (0-based).
local function place_hunk(bufnr, r, h, width, tabstop)
  M.del_marks(bufnr, h)
  local hk = h.hunk
  local signs = cfg().signs
  local set = vim.api.nvim_buf_set_extmark
  local nlines = vim.api.nvim_buf_line_count(bufnr)
  local marks = h.marks
  local status = h.status
  local label_hl = status == "accepted" and "AgentdAccepted" or status == "rejected" and "AgentdRejected" or "AgentdHunkLabel"

  local added = {}
  if status ~= "rejected" then
    local hl = status == "accepted" and "AgentdAddAccepted" or "AgentdAdd"
    for i, line in ipairs(hk.added or {}) do
      added[i] = { { pad(util.expand_tabs(line, tabstop), width), hl } }
    end
  end

  if (hk.oldLines or 0) > 0 then
    local first = h.row
    local last = math.min(first + hk.oldLines - 1, nlines - 1)
    local sign = #(hk.added or {}) > 0 and signs.change or signs.delete
    if status == "accepted" then
      sign = signs.accepted
    elseif status == "rejected" then
      sign = signs.rejected
    end
    for row = first, last do
      local opts = {
        sign_text = sign,
        sign_hl_group = status == "rejected" and "AgentdRejected" or "AgentdSignDelete",
        priority = 200,
      }
      if status ~= "rejected" then
        opts.line_hl_group = "AgentdDelete"
      end
      if row == first then
        opts.virt_text = { { label_for(r, h), label_hl } }
        opts.virt_text_pos = "eol"
      end
      if row == last and #added > 0 then
        opts.virt_lines = added
      end
      table.insert(marks, set(bufnr, M.ns, row, 0, opts))
    end
  else
    -- Pure insertion before old line oldStart: below the line before it, or above the first line.
    local above = h.row < 0
    local row = above and 0 or math.min(h.row, nlines - 1)
    local opts = {
      sign_text = status == "accepted" and signs.accepted or status == "rejected" and signs.rejected or signs.add,
      sign_hl_group = status == "rejected" and "AgentdRejected" or "AgentdSignAdd",
      virt_text = { { label_for(r, h), label_hl } },
      virt_text_pos = "eol",
      priority = 200,
    }
    if #added > 0 then
      opts.virt_lines = added
      opts.virt_lines_above = above
    end
    table.insert(marks, set(bufnr, M.ns, row, 0, opts))
  end
  h.anchor = marks[1]
end

-- The hint line above the review's first hunk (virtual, above its first row).
local function place_hint(bufnr, r)
  if r.hint_mark then
    pcall(vim.api.nvim_buf_del_extmark, bufnr, M.hint_ns, r.hint_mark)
    r.hint_mark = nil
  end
  local h = r.hunks[1]
  if r.sent or r.diff_buf or not h or not h.anchor then
    return
  end
  local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, M.ns, h.anchor, {})
  if not pos or not pos[1] then
    return
  end
  r.hint_mark = vim.api.nvim_buf_set_extmark(bufnr, M.hint_ns, pos[1], 0, {
    virt_lines = { { { keys.hint_text(), "AgentdHint" } } },
    virt_lines_above = true,
  })
end

-- Current row (0-based) of a hunk's first mark; for an insertion at the top, -1.
function M.hunk_row(bufnr, h)
  if not h.anchor then
    return h.row
  end
  local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, M.ns, h.anchor, {})
  if not pos or not pos[1] then
    return h.row
  end
  if (h.hunk.oldLines or 0) == 0 and h.row < 0 then
    return -1
  end
  return pos[1]
end

-- Rows (0-based, inclusive) a hunk covers now, for "hunk under the cursor".
function M.hunk_span(bufnr, h)
  local row = M.hunk_row(bufnr, h)
  if (h.hunk.oldLines or 0) > 0 then
    local last = h.marks[#h.marks]
    local pos = last and vim.api.nvim_buf_get_extmark_by_id(bufnr, M.ns, last, {})
    return row, (pos and pos[1]) or (row + h.hunk.oldLines - 1)
  end
  if row < 0 then
    return 0, 0
  end
  return row, row
end

local function lines_match(text, row, removed)
  for i = 1, #removed do
    if text[row + i] ~= removed[i] then
      return false
    end
  end
  return true
end

-- Where the hunk's removed lines are now (text: the buffer's lines): at the expected row, else
-- the nearest exact match.
local function locate(text, expected, removed, total)
  if #removed == 0 or lines_match(text, expected, removed) then
    return expected, true
  end
  for d = 1, total do
    local up, down = expected - d, expected + d
    if up >= 0 and lines_match(text, up, removed) then
      return up, true
    end
    if down + #removed <= total and lines_match(text, down, removed) then
      return down, true
    end
    if up < 0 and down + #removed > total then
      break
    end
  end
  return expected, false
end

local function width_for(bufnr)
  local w = vim.o.columns
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    w = math.max(w, vim.api.nvim_win_get_width(win))
  end
  return w
end

-- Placement is time-sliced: a big review (hundreds of hunks) is placed in slices of at most
-- SLICE_MS of work, one per loop iteration, so no callback holds the editor for long.
local SLICE_MS = 6

--- Places every mark of an edit review in bufnr. done() runs when every hunk is placed.
function M.place(r, bufnr, done)
  r.bufnr = bufnr
  r.placed = false
  local t_start, cpu_start = util.hrtime_ms(), os.clock()
  local total = vim.api.nvim_buf_line_count(bufnr)
  local text = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  r.stale = false
  for _, h in ipairs(r.hunks) do
    local hk = h.hunk
    if (hk.oldLines or 0) > 0 then
      local row, found = locate(text, hk.oldStart - 1, hk.removed or {}, total)
      if not found then
        r.stale = true
      end
      h.row = math.max(0, math.min(row, total - 1))
    else
      h.row = hk.oldStart - 2 -- below this row; -1: above the first line
    end
  end
  local width, tabstop = width_for(bufnr), compat.get_buf_option(bufnr, "tabstop")
  keys.set_keymaps(bufnr)
  local i = 1
  r.slices, r.max_slice_ms, r.place_cpu_ms = 0, 0, (os.clock() - cpu_start) * 1000
  local function slice()
    if list.reviews[r.id] ~= r or r.bufnr ~= bufnr or not vim.api.nvim_buf_is_valid(bufnr) then
      return -- resolved or moved meanwhile
    end
    local t0, c0 = util.hrtime_ms(), os.clock()
    r.slices = r.slices + 1
    while i <= #r.hunks do
      place_hunk(bufnr, r, r.hunks[i], width, tabstop)
      i = i + 1
      if i <= #r.hunks and util.hrtime_ms() - t0 > SLICE_MS then
        r.max_slice_ms = math.max(r.max_slice_ms, util.hrtime_ms() - t0)
        r.place_cpu_ms = r.place_cpu_ms + (os.clock() - c0) * 1000
        vim.schedule(slice)
        return
      end
    end
    r.max_slice_ms = math.max(r.max_slice_ms, util.hrtime_ms() - t0)
    r.place_cpu_ms = r.place_cpu_ms + (os.clock() - c0) * 1000
    place_hint(bufnr, r)
    r.placed = true
    r.place_ms = util.hrtime_ms() - t_start
    M.last_place_ms = r.place_ms
    -- Virtual lines above the first line only show with topfill.
    local fill = 0
    for _, h in ipairs(r.hunks) do
      if h.row < 0 and #(h.hunk.added or {}) > 0 then
        fill = fill + #h.hunk.added
      end
    end
    local first_row = r.hunks[1] and M.hunk_row(bufnr, r.hunks[1])
    if first_row and first_row <= 0 then
      fill = fill + 1 -- the hint line
    end
    if fill > 0 then
      for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
        vim.api.nvim_win_call(win, function()
          if vim.fn.line("w0") == 1 then
            vim.fn.winrestview({ topfill = fill })
          end
        end)
      end
    end
    if done then
      done()
    end
  end
  slice()
end

--- Draws a review's marks again where its hunks are now (after a decision, or the buffer changed).
function M.refresh(r)
  if r.bufnr and vim.api.nvim_buf_is_valid(r.bufnr) then
    local width, tabstop = width_for(r.bufnr), compat.get_buf_option(r.bufnr, "tabstop")
    for _, h in ipairs(r.hunks) do
      local row = M.hunk_row(r.bufnr, h)
      if (h.hunk.oldLines or 0) > 0 or row >= 0 then
        h.row = row
      end
      place_hunk(r.bufnr, r, h, width, tabstop)
    end
    place_hint(r.bufnr, r)
  end
end

--- Marks of a buffer, for tests: list of {row, opts} in the review namespace.
function M.marks(bufnr)
  return vim.api.nvim_buf_get_extmarks(bufnr, M.ns, 0, -1, { details = true })
end

return M
