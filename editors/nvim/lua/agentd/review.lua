-- Reviews: the editor is the gate. An edit review is shown inline in the file's buffer, without
-- changing the buffer or the file:
--   * the lines a hunk removes or replaces stay as they are, highlighted with AgentdDelete
--     (DiffDelete) as a line highlight, with a sign on each;
--   * the lines the hunk proposes are virtual lines (virt_lines) right below them, highlighted
--     with AgentdAdd (DiffAdd); a pure insertion shows them between the lines where they would go;
--   * the first line of each hunk carries an end-of-line label (hunk n/m, +a -r, keys).
-- The user decides hunk by hunk (or for the whole file); once every hunk has a decision the
-- plugin sends one review/decide. The daemon then applies the accepted hunks through
-- workspace/applyEdit (one undoable change) and asks for document/save. review/resolved clears
-- the marks, whoever settled the review.
-- Command and tool reviews go to agentd.approval (vim.ui.select).
--
-- This module takes the notifications (review/requested, review/resolved, review/hunkStates)
-- and is the API of the rest of the plugin; the parts live in agentd/review/:
--   list.lua      the reviews held, in order of arrival, and lookups in them
--   keys.lua      the buffer-local decision keys and the hints that show them
--   marks.lua     the drawing: extmarks of hunks, labels, hint line; time-sliced placement
--   show.lua      where a new review is shown (its buffer, a split, a diff buffer), and clear
--   relay.lua     per-hunk decisions shared with the session's other editors
--   navigate.lua  the hunk under the cursor, next/previous hunk, the next pending review
--   decisions.lua accept/reject a hunk or the rest of a file, undo, allow for the session
--   proposal.lua  :AgentEditProposal, the proposal in a buffer of its own to change
local util = require("agentd.util")
local list = require("agentd.review.list")
local keys = require("agentd.review.keys")
local marks = require("agentd.review.marks")
local show = require("agentd.review.show")
local relay = require("agentd.review.relay")
local navigate = require("agentd.review.navigate")
local decisions = require("agentd.review.decisions")
local proposal = require("agentd.review.proposal")

local M = {}

M.ns = marks.ns
M.hint_ns = marks.hint_ns
M.reviews = list.reviews -- reviewId -> review state

M.pending_count = list.pending_count
M.reviews_in = list.reviews_in
M.hint_text = keys.hint_text
M.clip = marks.clip
M.place = marks.place
M.marks = marks.marks
M.on_hunk_states = relay.on_hunk_states
M.hunk_at = navigate.hunk_at
M.advance = navigate.advance
M.next_hunk = navigate.next_hunk
M.prev_hunk = navigate.prev_hunk
M.goto_pending = navigate.goto_pending
M.decide = decisions.decide
M.hunk_reasons = decisions.hunk_reasons
M.accept_hunk = decisions.accept_hunk
M.reject_hunk = decisions.reject_hunk
M.reject_hunk_reason = decisions.reject_hunk_reason
M.accept_file = decisions.accept_file
M.reject_file = decisions.reject_file
M.undo = decisions.undo
M.allow_for_session = decisions.allow_for_session
M.edit_proposal = proposal.edit_proposal

-- Notifications ------------------------------------------------------------------------------

function M.on_requested(_, params)
  if type(params) ~= "table" or not params.reviewId then
    return
  end
  if M.reviews[params.reviewId] then
    return -- already shown (e.g. again in session/attach's pendingReviews)
  end
  local r = { id = params.reviewId, params = params, hunks = {}, sent = false }
  M.reviews[r.id] = r
  table.insert(list.order, r.id)
  if params.kind == "edit" and params.file then
    for i, hk in ipairs(params.file.hunks or {}) do
      r.hunks[i] = { index = i, id = hk.id, hunk = hk, status = "pending", marks = {} }
    end
    -- Hunks decided already in another editor of the session (attached mid-review).
    relay.apply_states(r, params.hunkStates)
    show.show_edit(r)
  else
    require("agentd.approval").enqueue(r)
  end
  require("agentd.chat").on_review(r)
  util.status_changed()
end

local by_text = {
  editor = "by an editor",
  grant = "by a session grant",
  timeout = "after the timeout",
  disconnect = "no editor could review it",
  turnEnded = "the turn ended",
}

function M.on_resolved(_, params)
  if type(params) ~= "table" then
    return
  end
  local r = M.reviews[params.reviewId]
  if not r then
    return
  end
  local mine = r.sent
  show.clear(r)
  require("agentd.approval").drop(r.id)
  if not mine or params.by ~= "editor" then
    util.notify(string.format("review of %s %s (%s)", list.display_path(r), params.outcome or "settled",
      by_text[params.by] or params.by or "?"))
  end
  require("agentd.chat").on_review_resolved(r, params)
  util.status_changed()
end

function M.clear_all(reason)
  local n = 0
  for _, r in pairs(vim.tbl_values(M.reviews)) do
    show.clear(r)
    n = n + 1
  end
  require("agentd.approval").drop_all()
  if n > 0 and reason then
    util.warn(string.format("%d review%s dropped: %s (the daemon rejects them)", n, n == 1 and "" or "s", reason))
  end
end

return M
