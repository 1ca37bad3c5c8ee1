-- The per-hunk decisions of a review shared with the session's other editors, through the
-- daemon: this editor's are sent with review/hunkState until the review is settled; the others'
-- arrive as review/hunkStates (or with a pending review at attach) and are shown as if decided
-- here.
local client = require("agentd.client")
local protocol = require("agentd.protocol")
local util = require("agentd.util")
local list = require("agentd.review.list")
local marks = require("agentd.review.marks")

local M = {}

--- Takes the per-hunk decisions of the session's other editors (review/hunkStates, or a pending
--- review's hunkStates at attach): every decided hunk, so a hunk not listed is pending again.
--- Unknown hunks and states are ignored. Returns whether anything changed.
function M.apply_states(r, hunks)
  if type(hunks) ~= "table" then
    hunks = {}
  end
  local changed = false
  for _, h in ipairs(r.hunks) do
    local got = hunks[h.id]
    local status = "pending"
    if type(got) == "table" and (got.state == "accepted" or got.state == "rejected") then
      status = got.state
    end
    local reason = nil
    if status == "rejected" and type(got.reason) == "string" and vim.trim(got.reason) ~= "" then
      reason = vim.trim(got.reason)
    end
    if h.status ~= status then
      h.status = status
      h.seq = nil -- decided elsewhere: this editor's undo takes its own decisions first
      changed = true
    end
    if h.reason ~= reason then
      h.reason = reason
      changed = true
    end
  end
  return changed
end

--- Sends this editor's per-hunk decisions of a review that is not settled yet (review/hunkState):
--- the daemon relays them to the session's other editors. Every hunk is sent, the pending ones
--- as "pending", so an undo reaches the others too. Failing to share decides nothing.
function M.share(r)
  if r.sent or #r.hunks == 0 or r.diff_buf then
    return
  end
  local hunks = {}
  for _, h in ipairs(r.hunks) do
    hunks[h.id] = { state = h.status, reason = h.status == "rejected" and h.reason or nil }
  end
  client.request(protocol.request.review_hunk_state, { reviewId = r.id, hunks = hunks }, function(err)
    if err and err.code ~= protocol.error.review_resolved and err.code ~= protocol.error.unknown_review then
      util.warn("hunk decisions not shared with the other editors: " .. util.err_text(err))
    end
  end)
end

--- review/hunkStates: the decisions of the session's other editors on a review shown here.
function M.on_hunk_states(_, params)
  if type(params) ~= "table" then
    return
  end
  local r = list.reviews[params.reviewId]
  if not r or r.sent or (params.sessionId and r.params.sessionId ~= params.sessionId) then
    return
  end
  if M.apply_states(r, params.hunks) then
    marks.refresh(r)
    util.status_changed()
  end
end

return M
