-- A second Neovim for test_connect.lua: connects to the same shared daemon, attaches to the
-- session and accepts its pending review. Exits 0 on success.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h:h") .. "/helpers.lua")
H.setup({ name = "second_editor" })
require("agentd").setup({
  cmd = vim.json.decode(os.getenv("AGENTD_SECOND_CMD")),
  cmd_env = vim.json.decode(os.getenv("AGENTD_SECOND_ENV")),
  root_dir = os.getenv("AGENTD_SECOND_ROOT"),
})
local sid = os.getenv("AGENTD_SECOND_SESSION")
H.test("attach and accept the pending review", function()
  local review = require("agentd.review")
  require("agentd.session").attach(sid)
  H.wait(function()
    return next(review.reviews) ~= nil
  end, 15000, "the pending review (session/attach pendingReviews)")
  local _, r = next(review.reviews)
  local done
  review.decide(r, { type = "accept" }, function(err)
    done = err and ("error: " .. vim.inspect(err)) or "ok"
  end)
  H.wait(function()
    return done ~= nil
  end, 10000, "review/decide answered")
  H.eq(done, "ok", "accepted")
end)
H.done()
