-- Where an edit review is shown when it arrives: placed in its file's buffer when that is
-- loaded, else opened (review.open: a split or the current window) or placed once the file is
-- opened; a created or deleted file (or one without hunks) in a scratch buffer with the unified
-- diff. clear takes a review away again: its marks, its keys, its diff buffer, its place in the
-- list.
local config = require("agentd.config")
local util = require("agentd.util")
local compat = require("agentd.compat")
local keys = require("agentd.review.keys")
local list = require("agentd.review.list")
local marks = require("agentd.review.marks")

local M = {}

local augroup = vim.api.nvim_create_augroup("agentd_review", { clear = true })

local function cfg()
  return config.get().review
end

--- Takes review r away: its marks and hint line, its place in the list, the buffer's keys when
--- it was the buffer's last review, its diff buffer.
function M.clear(r)
  if r.bufnr and vim.api.nvim_buf_is_valid(r.bufnr) then
    for _, h in ipairs(r.hunks) do
      marks.del_marks(r.bufnr, h)
    end
    if r.hint_mark then
      pcall(vim.api.nvim_buf_del_extmark, r.bufnr, marks.hint_ns, r.hint_mark)
      r.hint_mark = nil
    end
  end
  list.reviews[r.id] = nil
  for i, id in ipairs(list.order) do
    if id == r.id then
      table.remove(list.order, i)
      break
    end
  end
  if r.bufnr and not list.buf_has_reviews(r.bufnr) then
    keys.unset_keymaps(r.bufnr)
  end
  if r.diff_buf and vim.api.nvim_buf_is_valid(r.diff_buf) then
    pcall(vim.api.nvim_buf_delete, r.diff_buf, { force = true })
  end
end

-- A scratch buffer with the unified diff, for created/deleted files: accept/reject there act on
-- the whole review.
local function show_diff_buffer(r, open)
  local b = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, b, "agentd://review/" .. r.id .. "/" .. list.display_path(r))
  local f = r.params.file
  local header = {
    string.format("# agentd review %s: %s (%s)", r.id, r.params.label or list.display_path(r), r.params.why or ""),
    f.created and "# creates " .. f.path or f.deleted and "# deletes " .. f.path or "# edits " .. f.path,
    "# :AgentAccept! applies it, :AgentReject! rejects it (ask for a reason)",
    "",
  }
  local lines = vim.list_extend(header, util.split_lines(f.unifiedDiff or ""))
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  compat.set_buf_option(b, "modifiable", false)
  compat.set_buf_option(b, "filetype", "diff")
  compat.set_buf_option(b, "bufhidden", "wipe")
  r.diff_buf = b
  r.bufnr = b
  for _, h in ipairs(r.hunks) do
    h.row = 0
  end
  keys.set_keymaps(b)
  if open then
    vim.cmd("belowright split")
    vim.api.nvim_win_set_buf(0, b)
    vim.cmd("wincmd p")
  end
end

local function try_place_when_loaded(r)
  local path = list.path_of(r)
  if not path then
    return
  end
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufWinEnter" }, {
    group = augroup,
    callback = function(a)
      if not list.reviews[r.id] then
        return true -- resolved meanwhile: drop this autocmd
      end
      if r.bufnr then
        return true
      end
      if util.normalize(vim.api.nvim_buf_get_name(a.buf)) == util.normalize(path) then
        marks.place(r, a.buf)
        return true
      end
    end,
    desc = "agentd: show review " .. r.id .. " when its file is opened",
  })
end

--- Shows a new edit review (see the top of this file).
function M.show_edit(r)
  local f = r.params.file
  if f.created or f.deleted or #r.hunks == 0 then
    show_diff_buffer(r, cfg().open ~= "notify")
    util.notify(string.format("review: %s — :AgentReview to see it", r.params.label or list.display_path(r)))
    return
  end
  local bufnr = util.buf_for_uri(f.uri)
  if bufnr and vim.api.nvim_buf_is_loaded(bufnr) then
    marks.place(r, bufnr)
    if #vim.fn.win_findbuf(bufnr) == 0 then
      util.notify(string.format("review: %s (%d hunk%s) — :AgentReview to see it", list.display_path(r), #r.hunks,
        #r.hunks == 1 and "" or "s"))
    end
    return
  end
  local open = cfg().open
  if open == "split" or open == "edit" then
    local cur = vim.api.nvim_get_current_win()
    if open == "split" then
      vim.cmd("belowright split " .. vim.fn.fnameescape(list.path_of(r)))
    else
      vim.cmd("edit " .. vim.fn.fnameescape(list.path_of(r)))
    end
    local b = vim.api.nvim_get_current_buf()
    if not list.reviews[r.id].bufnr then
      marks.place(r, b)
    end
    if open == "split" and vim.api.nvim_win_is_valid(cur) then
      vim.api.nvim_set_current_win(cur)
    end
    return
  end
  try_place_when_loaded(r)
  util.notify(string.format("review: %s (%d hunk%s) — :AgentReview to open it", list.display_path(r), #r.hunks,
    #r.hunks == 1 and "" or "s"))
end

return M
