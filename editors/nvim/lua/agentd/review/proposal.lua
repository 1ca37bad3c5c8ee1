-- :AgentEditProposal: the file as a review proposes it, in a buffer of its own to change before
-- accepting it (see edit_proposal).
local util = require("agentd.util")
local compat = require("agentd.compat")
local decisions = require("agentd.review.decisions")
local list = require("agentd.review.list")

local M = {}

--- The review's proposed text of its file, as lines: the file (its buffer when loaded) with the
--- whole proposal applied; a new file's added lines.
local function proposed_lines(r)
  local f = r.params.file
  if f.created then
    local out = {}
    for _, h in ipairs(f.hunks or {}) do
      vim.list_extend(out, h.added or {})
    end
    return out
  end
  local path = list.path_of(r)
  local src = vim.fn.bufnr(path)
  local lines
  if src > 0 and vim.api.nvim_buf_is_loaded(src) then
    lines = vim.api.nvim_buf_get_lines(src, 0, -1, false)
  else
    lines = vim.fn.readfile(path)
  end
  local tmp = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(tmp, 0, -1, false, lines)
  vim.lsp.util.apply_text_edits((f.edit and f.edit.edits) or {}, tmp, "utf-16")
  local out = vim.api.nvim_buf_get_lines(tmp, 0, -1, false)
  vim.api.nvim_buf_delete(tmp, { force = true })
  return out
end

--- :AgentEditProposal: the proposal of the buffer's first pending file review (or the review
--- given) in a buffer of its own (agentd://proposal/…), to change before accepting it. :w accepts
--- your version: it is what is written, and the model is told you changed its proposal, and how.
function M.edit_proposal(r)
  if not r then
    r = list.reviews_in(vim.api.nvim_get_current_buf())[1]
  end
  if not r or not r.params.file or r.sent then
    util.notify("no pending file review here (:AgentEditProposal works in a file under review)")
    return nil
  end
  local src = list.path_of(r) and vim.fn.bufnr(list.path_of(r)) or -1
  local ft = src > 0 and compat.get_buf_option(src, "filetype") or nil
  if (ft == nil or ft == "") and vim.filetype and vim.filetype.match then
    local ok, m = pcall(vim.filetype.match, { filename = r.params.file.path })
    ft = ok and m or nil
  end
  local b = vim.api.nvim_create_buf(false, false)
  pcall(vim.api.nvim_buf_set_name, b, "agentd://proposal/" .. r.id .. "/" .. r.params.file.path)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, proposed_lines(r))
  compat.set_buf_option(b, "buftype", "acwrite")
  compat.set_buf_option(b, "bufhidden", "wipe")
  compat.set_buf_option(b, "swapfile", false)
  if ft and ft ~= "" then
    compat.set_buf_option(b, "filetype", ft)
  end
  compat.set_buf_option(b, "modified", false)
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    buffer = b,
    callback = function()
      if not list.reviews[r.id] or r.sent then
        util.warn("review " .. r.id .. " is already settled: your version was not used")
        return
      end
      local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n") .. "\n"
      decisions.decide(r, { type = "accept", content = text }, function(err)
        if not err and vim.api.nvim_buf_is_valid(b) then
          compat.set_buf_option(b, "modified", false)
          for _, w in ipairs(vim.fn.win_findbuf(b)) do
            if #vim.api.nvim_list_wins() > 1 then
              pcall(vim.api.nvim_win_close, w, true)
            end
          end
          pcall(vim.api.nvim_buf_delete, b, { force = true })
        end
      end)
    end,
    desc = "agentd: accept your version of the proposal",
  })
  vim.cmd("belowright split")
  vim.api.nvim_win_set_buf(0, b)
  compat.set_win_option(0, "statusline", " agentd proposal for " .. r.params.file.path:gsub("%%", "%%%%")
    .. "  ·  edit it, :w accepts your version  ·  :q! leaves it")
  return b
end

return M
