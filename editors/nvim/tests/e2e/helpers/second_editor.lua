-- A second Neovim for test_connect.lua: connects to the same shared daemon, attaches to the
-- session, checks that its chat shows the edit waiting for the review, accepts the review, and
-- checks the edit is then shown done. Exits 0 on success.
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
  -- the chat shows the edit as what it is: waiting for the review (attached mid-turn: the
  -- daemon's history carries the running turn's calls as they are), not done
  local chat = require("agentd.chat")
  local function edit_line()
    for _, l in ipairs(chat.lines()) do
      if l:find("main.go", 1, true) and l:find("[Ee]dit") then
        return l
      end
    end
  end
  H.wait(function()
    return edit_line() ~= nil
  end, 10000, "the edit's line in the chat (session/attach history)")
  H.eq(edit_line(), "  ? Edit main.go", "the edit waiting for its review, as the first editor shows it")
  local _, r = next(review.reviews)
  local done
  review.decide(r, { type = "accept" }, function(err)
    done = err and ("error: " .. vim.inspect(err)) or "ok"
  end)
  H.wait(function()
    return done ~= nil
  end, 10000, "review/decide answered")
  H.eq(done, "ok", "accepted")
  local shown = pcall(H.wait, function()
    return edit_line() == "  ✓ Edit main.go"
  end, 10000)
  if not shown then
    error("timed out waiting for the edit shown done once it is (its toolCallCompleted); chat:\n"
      .. table.concat(chat.lines(), "\n"))
  end
end)
H.done()
