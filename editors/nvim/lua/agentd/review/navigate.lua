-- Moving between reviews: the hunk under the cursor, the next and previous hunk of a buffer,
-- the next pending hunk after a decision (in this buffer, else in the next file with a pending
-- review), and :AgentReview's first pending review.
local util = require("agentd.util")
local list = require("agentd.review.list")
local marks = require("agentd.review.marks")

local M = {}

--- The review and hunk at (bufnr, row), or the only pending hunk of the buffer.
function M.hunk_at(bufnr, row)
  local best_r, best_h
  local candidates = 0
  for _, id in ipairs(list.order) do
    local r = list.reviews[id]
    if r and r.bufnr == bufnr and not r.sent then
      for _, h in ipairs(r.hunks) do
        candidates = candidates + 1
        best_r, best_h = best_r or r, best_h or h
        if r.diff_buf then
          return r, h
        end
        local s, e = marks.hunk_span(bufnr, h)
        if row >= s and row <= e then
          return r, h
        end
      end
    end
  end
  if candidates == 1 then
    return best_r, best_h
  end
  return nil
end

--- The current buffer and the cursor's row (0-based).
function M.cursor()
  return vim.api.nvim_get_current_buf(), vim.api.nvim_win_get_cursor(0)[1] - 1
end

-- The hunks of the buffer's pending reviews that keep(r, h) selects, as {row, top, added, r, h},
-- sorted by row (top: a pure insertion above the first line; a diff buffer's hunks are at row 0).
local function rows_of(bufnr, keep)
  local rows = {}
  for _, r in ipairs(list.reviews_in(bufnr)) do
    for _, h in ipairs(r.hunks) do
      if keep(r, h) then
        local row = r.diff_buf and 0 or marks.hunk_row(bufnr, h)
        table.insert(rows, { row = math.max(row, 0), top = row < 0, added = #(h.hunk.added or {}), r = r, h = h })
      end
    end
  end
  table.sort(rows, function(a, b)
    return a.row < b.row
  end)
  return rows
end

-- Hunks still pending in the reviews of a buffer.
local function pending_rows(bufnr)
  return rows_of(bufnr, function(_, h)
    return h.status == "pending"
  end)
end

-- Every hunk of the buffer's reviews shown in the buffer itself (not in a diff buffer).
local function hunk_rows(bufnr)
  return rows_of(bufnr, function(r)
    return not r.diff_buf
  end)
end

--- Moves the cursor to a row of pending_rows/hunk_rows ({row, top, added}), with a jumplist entry.
function M.jump(target)
  vim.cmd("normal! m'")
  vim.api.nvim_win_set_cursor(0, { target.row + 1, 0 })
  if target.top then
    vim.fn.winrestview({ topfill = target.added + 1 })
  end
end

--- Shows bufnr: focuses a window that has it, else puts it in the current window.
local function show_buf(bufnr)
  local wins = vim.fn.win_findbuf(bufnr)
  if #wins > 0 then
    vim.api.nvim_set_current_win(wins[1])
  else
    vim.api.nvim_win_set_buf(0, bufnr)
  end
end

-- Shows review r's buffer in the current window (or its window), placing it when needed; then
-- done(bufnr) once its marks are placed.
local function open_review(r, done)
  if r.diff_buf and vim.api.nvim_buf_is_valid(r.diff_buf) then
    local wins = vim.fn.win_findbuf(r.diff_buf)
    if #wins > 0 then
      vim.api.nvim_set_current_win(wins[1])
    else
      vim.cmd("belowright split")
      vim.api.nvim_win_set_buf(0, r.diff_buf)
    end
    return done(r.diff_buf)
  end
  if not r.bufnr then
    vim.cmd("edit " .. vim.fn.fnameescape(list.path_of(r)))
    if not r.bufnr then
      marks.place(r, vim.api.nvim_get_current_buf(), function()
        done(r.bufnr)
      end)
      return
    end
  else
    show_buf(r.bufnr)
  end
  if r.placed or r.diff_buf then
    done(r.bufnr)
  else
    -- placement under way (time-sliced): wait for it
    local function poll()
      if list.reviews[r.id] ~= r then
        return
      end
      if r.placed then
        return done(r.bufnr)
      end
      vim.schedule(poll)
    end
    poll()
  end
end

--- After a decision: moves the cursor to the next pending hunk, in this buffer (after the
--- cursor, wrapping), else in the next file with a pending review. Returns true when it moved.
function M.advance()
  local bufnr, row = M.cursor()
  local rows = pending_rows(bufnr)
  if #rows > 0 then
    for _, t in ipairs(rows) do
      if t.row > row then
        M.jump(t)
        return true
      end
    end
    M.jump(rows[1])
    return true
  end
  for _, id in ipairs(list.order) do
    local r = list.reviews[id]
    if r and not r.sent and r.params.kind == "edit" and r.bufnr ~= bufnr then
      local pending = false
      for _, h in ipairs(r.hunks) do
        pending = pending or h.status == "pending"
      end
      if pending then
        open_review(r, function(b)
          local prs = pending_rows(b)
          if prs[1] and vim.api.nvim_get_current_buf() == b then
            M.jump(prs[1])
          end
        end)
        util.notify("next review: " .. list.display_path(r))
        return true
      end
    end
  end
  return false
end

-- The hunks of the current buffer (hunk_rows) and the cursor's row; nil, said, when it has none.
local function rows_here()
  local bufnr, row = M.cursor()
  local rows = hunk_rows(bufnr)
  if #rows == 0 then
    util.notify("no hunks in this buffer")
    return nil
  end
  return rows, row
end

function M.next_hunk()
  local rows, row = rows_here()
  if not rows then
    return
  end
  for _, t in ipairs(rows) do
    if t.row > row then
      return M.jump(t)
    end
  end
  util.notify("wrapped to the first hunk")
  M.jump(rows[1])
end

function M.prev_hunk()
  local rows, row = rows_here()
  if not rows then
    return
  end
  for i = #rows, 1, -1 do
    if rows[i].row < row then
      return M.jump(rows[i])
    end
  end
  util.notify("wrapped to the last hunk")
  M.jump(rows[#rows])
end

--- :AgentReview — answer the waiting command approval, or open the first pending edit review.
function M.goto_pending()
  if require("agentd.approval").show_next(true) then
    return
  end
  for _, id in ipairs(list.order) do
    local r = list.reviews[id]
    if r and not r.sent and r.params.kind == "edit" then
      if r.diff_buf and vim.api.nvim_buf_is_valid(r.diff_buf) then
        if #vim.fn.win_findbuf(r.diff_buf) == 0 then
          vim.cmd("belowright split")
          vim.api.nvim_win_set_buf(0, r.diff_buf)
        end
        return
      end
      if not r.bufnr then
        vim.cmd("edit " .. vim.fn.fnameescape(list.path_of(r)))
        if not r.bufnr then
          marks.place(r, vim.api.nvim_get_current_buf())
        end
      else
        show_buf(r.bufnr)
      end
      local rows = hunk_rows(r.bufnr)
      if rows[1] then
        M.jump(rows[1])
      end
      return
    end
  end
  util.notify("no pending reviews")
end

return M
