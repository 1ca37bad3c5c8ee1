-- The reviews this editor holds, by ID and in order of arrival, and what is asked of them: how
-- many wait for a decision, which are in a buffer, the file of one. agentd.review adds them,
-- review/show.lua's clear removes them; the other parts of the review read them here.
local M = {}

M.reviews = {} -- reviewId -> review state
M.order = {} -- reviewIds in arrival order

function M.path_of(r)
  return r.params.file and vim.uri_to_fname(r.params.file.uri) or nil
end

function M.display_path(r)
  return (r.params.file and r.params.file.path) or r.params.label or r.id
end

--- Reviews waiting for a decision (of one session when session_id is given).
function M.pending_count(session_id)
  local n = 0
  for _, r in pairs(M.reviews) do
    if not r.sent and (session_id == nil or r.params.sessionId == session_id) then
      n = n + 1
    end
  end
  return n
end

--- The pending reviews of a buffer (for "whole file" decisions).
function M.reviews_in(bufnr)
  local out = {}
  for _, id in ipairs(M.order) do
    local r = M.reviews[id]
    if r and r.bufnr == bufnr and not r.sent then
      table.insert(out, r)
    end
  end
  return out
end

function M.buf_has_reviews(bufnr)
  for _, r in pairs(M.reviews) do
    if r.bufnr == bufnr then
      return true
    end
  end
  return false
end

return M
