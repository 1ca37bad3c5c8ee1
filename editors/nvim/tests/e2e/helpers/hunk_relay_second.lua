-- The second Neovim of test_hunk_relay.lua: connects to the same shared daemon and attaches to the
-- session while its file review is pending. It must find hunk 1 rejected with the first editor's
-- reason (session/attach pendingReviews' hunkStates), undo that rejection (relayed to the first
-- editor), wait until the first editor accepts hunk 1 (review/hunkStates), then reject hunk 2 with
-- a reason, which settles the file from here. Exits 0 on success.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h") .. "/helpers.lua")
H.setup({ name = "hunk_relay_second" })
local root = os.getenv("AGENTD_SECOND_ROOT")
require("agentd").setup({
  cmd = vim.json.decode(os.getenv("AGENTD_SECOND_CMD")),
  cmd_env = vim.json.decode(os.getenv("AGENTD_SECOND_ENV")),
  root_dir = root,
})
local FIRST, SECOND = os.getenv("AGENTD_SECOND_FIRST"), os.getenv("AGENTD_SECOND_SECOND")
H.test("the first editor's hunk decisions are here, and this one's reach it", function()
  local review = require("agentd.review")
  require("agentd.session").attach(os.getenv("AGENTD_SECOND_SESSION"))
  H.wait(function()
    return next(review.reviews) ~= nil
  end, 15000, "the pending review (session/attach pendingReviews)")
  local _, r = next(review.reviews)
  H._turns_before = require("agentd.session").turns_ended
  H.eq(#r.hunks, 2, "two hunks")
  H.eq({ r.hunks[1].status, r.hunks[1].reason, r.hunks[2].status }, { "rejected", FIRST, "pending" },
    "hunk 1 rejected with the first editor's reason, hunk 2 pending (attached mid-review)")

  vim.cmd("edit " .. vim.fn.fnameescape(root .. "/cart.go"))
  local buf = vim.api.nvim_get_current_buf()
  H.wait(function()
    return #review.marks(buf) > 0 and r.placed
  end, 10000, "the review's marks in cart.go")
  local function labels()
    local out = {}
    for _, m in ipairs(review.marks(buf)) do
      for _, chunk in ipairs(m[4].virt_text or {}) do
        table.insert(out, chunk[1])
      end
    end
    return table.concat(out, "\n")
  end
  H.contains(labels(), "✗ rejected: “" .. FIRST .. "”", "the first editor's rejection and reason shown on hunk 1 here")
  -- Undo the first editor's rejection: hunk 1 is pending again here and there.
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  review.undo()
  H.eq({ r.hunks[1].status, r.hunks[1].reason }, { "pending", nil }, "hunk 1 pending after the undo")
  -- The first editor accepts hunk 1 once it sees the undo.
  H.wait(function()
    return r.hunks[1].status == "accepted"
  end, 20000, "hunk 1 accepted in the first editor (review/hunkStates)")
  H.eq(r.sent, false, "a hunk decided elsewhere does not settle the file here")
  -- Reject hunk 2 with a reason: every hunk is decided, the file is settled from here.
  vim.api.nvim_win_set_cursor(0, { 14, 0 })
  review.reject_hunk_reason(SECOND)
  H.wait(function()
    return review.reviews[r.id] == nil
  end, 10000, "the review settled (review/resolved)")
  -- cart.go is open here too: the daemon may write it through this editor (workspace/applyEdit,
  -- document/save), so stay until the turn has ended and the buffer is saved.
  H.wait_turn_end(20000)
  H.wait(function()
    return not vim.api.nvim_buf_get_option(buf, "modified")
  end, 10000, "cart.go saved here")
end)
H.done()
