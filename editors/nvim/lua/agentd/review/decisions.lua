-- Decisions: a hunk (or the hunks of a range) accepted or rejected, with a reason or without;
-- the rest of a file accepted or rejected; a hunk decision undone while the review is not sent;
-- a grant for the session. Once every hunk of a review has a decision, one review/decide is sent;
-- until then each decision is shared with the session's other editors.
local client = require("agentd.client")
local config = require("agentd.config")
local protocol = require("agentd.protocol")
local util = require("agentd.util")
local keys = require("agentd.review.keys")
local list = require("agentd.review.list")
local marks = require("agentd.review.marks")
local navigate = require("agentd.review.navigate")
local relay = require("agentd.review.relay")
local show = require("agentd.review.show")

local M = {}

local function cfg()
  return config.get().review
end

--- Sends a decision for a review. cb(err, result) optional.
function M.decide(r, decision, cb)
  if r.sent then
    util.notify("a decision for this review is already on its way")
    return
  end
  r.sent = true
  marks.refresh(r)
  client.request(protocol.request.review_decide, { reviewId = r.id, decision = decision }, function(err, result)
    if err then
      if err.code == protocol.error.review_resolved or err.code == protocol.error.unknown_review then
        util.notify("review " .. r.id .. " was already settled")
        show.clear(r)
      else
        r.sent = false
        marks.refresh(r)
        util.error("review/decide failed: " .. util.err_text(err))
      end
    end
    if cb then
      cb(err, result)
    end
  end)
end

local function ask_reason(cb)
  if not cfg().ask_reason then
    cb(nil)
    return
  end
  vim.ui.input({ prompt = "Reason for the agent (optional): " }, function(text)
    if text == nil then
      cb(false) -- cancelled: do not reject
      return
    end
    cb(vim.trim(text) ~= "" and vim.trim(text) or nil)
  end)
end

--- The hunkReasons of a decision: the reasons of the rejected hunks that have one (hunk ID →
--- reason), nil when there is none.
function M.hunk_reasons(r)
  local out, n = {}, 0
  for _, h in ipairs(r.hunks) do
    if h.status == "rejected" and h.reason then
      out[h.id], n = h.reason, n + 1
    end
  end
  return n > 0 and out or nil
end

-- Sends the decision once every hunk is decided.
local function maybe_submit(r)
  local accepted, pending = {}, 0
  for _, h in ipairs(r.hunks) do
    if h.status == "pending" then
      pending = pending + 1
    elseif h.status == "accepted" then
      table.insert(accepted, h.id)
    end
  end
  if pending > 0 then
    marks.refresh(r)
    relay.share(r)
    return
  end
  local why = M.hunk_reasons(r)
  if #accepted == #r.hunks then
    M.decide(r, { type = protocol.decision.accept })
  elseif #accepted > 0 then
    M.decide(r, { type = protocol.decision.accept, hunks = accepted, hunkReasons = why })
  elseif why then
    -- Every hunk rejected, some with their own reason: that is what the user had to say.
    M.decide(r, { type = protocol.decision.reject, hunkReasons = why })
  else
    ask_reason(function(reason)
      if reason == false then
        for _, h in ipairs(r.hunks) do
          h.status, h.seq, h.reason = "pending", nil, nil
        end
        marks.refresh(r)
        relay.share(r)
        return
      end
      M.decide(r, { type = protocol.decision.reject, reason = reason })
    end)
  end
end

local decided_seq = 0 -- order of hunk decisions, for undo

local function set_status(h, status)
  h.status = status
  if status ~= "rejected" then
    h.reason = nil
  end
  if status == "pending" then
    h.seq = nil
  else
    decided_seq = decided_seq + 1
    h.seq = decided_seq
  end
end

local function set_hunks(status, line1, line2)
  local bufnr, row = navigate.cursor()
  local targets = {}
  local ranged = line1 and line2 and line1 ~= line2
  if ranged then
    for _, r in ipairs(list.reviews_in(bufnr)) do
      for _, h in ipairs(r.hunks) do
        local s, e = marks.hunk_span(bufnr, h)
        if e >= line1 - 1 and s <= line2 - 1 then
          table.insert(targets, { r, h })
        end
      end
    end
  else
    local r, h = navigate.hunk_at(bufnr, row)
    if r and r.diff_buf then
      for _, hh in ipairs(r.hunks) do
        table.insert(targets, { r, hh })
      end
    elseif r then
      table.insert(targets, { r, h })
    end
  end
  if #targets == 0 then
    if #list.reviews_in(bufnr) == 0 then
      util.notify("no pending review in this buffer" .. (list.pending_count() > 0 and " (:AgentReview jumps to one)" or ""))
    else
      util.notify("no hunk under the cursor (]h / [h move between hunks)")
    end
    return
  end
  local touched = {}
  for _, t in ipairs(targets) do
    set_status(t[2], status)
    touched[t[1].id] = t[1]
  end
  for _, r in pairs(touched) do
    maybe_submit(r)
  end
  if not ranged then
    navigate.advance()
  end
end

function M.accept_hunk(line1, line2)
  set_hunks("accepted", line1, line2)
end

function M.reject_hunk(line1, line2)
  set_hunks("rejected", line1, line2)
end

--- Rejects the hunk under the cursor with a reason (asked with vim.ui.input; given: reason): the
--- reason is shown on the hunk until the file is settled and goes with the file's decision
--- (hunkReasons), for the model to read with that hunk. An empty answer rejects without a reason;
--- cancelling decides nothing. A new or deleted file (one diff buffer) is rejected as a whole.
function M.reject_hunk_reason(given)
  local bufnr, row = navigate.cursor()
  local r, h = navigate.hunk_at(bufnr, row)
  if not r then
    if #list.reviews_in(bufnr) == 0 then
      util.notify("no pending review in this buffer")
    else
      util.notify("no hunk under the cursor (]h / [h move between hunks)")
    end
    return
  end
  if h.status ~= "pending" then
    util.notify(string.format("hunk %d/%d is already %s (%s undoes it)", h.index, #r.hunks, h.status, keys.keyhint("undo") or ":AgentUndo"))
    return
  end
  local function apply(text)
    if text == nil or list.reviews[r.id] ~= r or r.sent or h.status ~= "pending" then
      return
    end
    text = vim.trim(text)
    if r.diff_buf then
      for _, hh in ipairs(r.hunks) do
        set_status(hh, "rejected")
      end
      return M.decide(r, { type = protocol.decision.reject, reason = text ~= "" and text or nil })
    end
    set_status(h, "rejected")
    h.reason = text ~= "" and text or nil
    maybe_submit(r)
    navigate.advance()
  end
  if given and vim.trim(given) ~= "" then
    return apply(given)
  end
  vim.ui.input({ prompt = string.format("Why not hunk %d/%d? (the agent reads it): ", h.index, #r.hunks) }, apply)
end

-- The decision for a review whose pending hunks all get status; reason goes with it. Hunks the
-- user decided before keep their decision: a partial accept lists the accepted ones.
local function settle_rest(r, status, reason)
  local accepted = {}
  for _, h in ipairs(r.hunks) do
    if h.status == "pending" then
      set_status(h, status)
    end
    if h.status == "accepted" then
      table.insert(accepted, h.id)
    end
  end
  local why = M.hunk_reasons(r)
  if #accepted == #r.hunks then
    return { type = protocol.decision.accept }
  elseif #accepted > 0 then
    return { type = protocol.decision.accept, hunks = accepted, reason = reason, hunkReasons = why }
  end
  return { type = protocol.decision.reject, reason = reason, hunkReasons = why }
end

-- The pending reviews of the current buffer, for a decision on the whole file. When it has none,
-- the waiting command approval gets answer instead (the same keys decide it) and nil is returned.
local function file_reviews(answer)
  local rs = list.reviews_in(vim.api.nvim_get_current_buf())
  if #rs == 0 then
    require("agentd.approval").answer_current(answer)
    return nil
  end
  return rs
end

-- Sends each review of rs still waiting the decision settle_rest makes of it, then moves on.
local function settle_all(rs, status, reason)
  for _, r in ipairs(rs) do
    if not r.sent and list.reviews[r.id] == r then
      M.decide(r, settle_rest(r, status, reason))
    end
  end
  navigate.advance()
end

--- Accepts the hunks of the buffer's reviews still pending (hunks rejected before stay rejected).
function M.accept_file()
  local rs = file_reviews("accept")
  if rs then
    settle_all(rs, "accepted")
  end
end

--- Rejects the hunks of the buffer's reviews still pending, asking for a reason (hunks accepted
--- before are applied: the decision is a partial accept carrying the reason).
function M.reject_file()
  local rs = file_reviews("reject")
  if not rs then
    return
  end
  ask_reason(function(reason)
    if reason == false then
      return
    end
    settle_all(rs, "rejected", reason)
  end)
end

--- Undoes a hunk decision not sent yet: the hunk under the cursor, else the last one decided in
--- this buffer. A review whose every hunk is decided is sent at once: it is settled.
function M.undo()
  local bufnr, row = navigate.cursor()
  local target, target_r
  for _, r in ipairs(list.reviews_in(bufnr)) do
    for _, h in ipairs(r.hunks) do
      if h.status ~= "pending" then
        local s, e = marks.hunk_span(bufnr, h)
        if not r.diff_buf and row >= s and row <= e then
          target, target_r = h, r
          break
        end
        if not target or (h.seq or 0) > (target.seq or 0) then
          target, target_r = h, r
        end
      end
    end
  end
  if not target then
    local settled = false
    for _, r in pairs(list.reviews) do
      settled = settled or (r.bufnr == bufnr and r.sent)
    end
    util.notify(settled and "the decision for this file is already sent: it is settled (:AgentRevert undoes a turn)"
      or "no hunk decision to undo in this buffer")
    return
  end
  set_status(target, "pending")
  marks.refresh(target_r)
  relay.share(target_r)
  if not target_r.diff_buf then
    local r0 = marks.hunk_row(bufnr, target)
    navigate.jump({ row = math.max(r0, 0), top = r0 < 0, added = #(target.hunk.added or {}) })
  end
  util.notify(string.format("hunk %d/%d is pending again", target.index, #target_r.hunks))
end

--- Accept for the session with one of the review's scopes (picked with vim.ui.select).
function M.allow_for_session()
  local bufnr, row = navigate.cursor()
  local r = navigate.hunk_at(bufnr, row)
  if not r then
    r = list.reviews_in(bufnr)[1]
  end
  if not r then
    return require("agentd.approval").answer_current("session")
  end
  local scopes = require("agentd.approval").scopes(r)
  if #scopes == 0 then
    util.notify("this review offers no session scope")
    return
  end
  vim.ui.select(scopes, {
    prompt = "Allow for this session",
    format_item = function(c)
      return c.label
    end,
  }, function(c)
    if not c then
      return
    end
    if not c.confirm then
      return M.decide(r, c.decision)
    end
    vim.ui.select({ "no", "yes" }, { prompt = c.confirm, kind = "agentd.confirm" }, function(yes)
      if yes == "yes" and list.reviews[r.id] == r then
        M.decide(r, c.decision)
      end
    end)
  end)
end

return M
