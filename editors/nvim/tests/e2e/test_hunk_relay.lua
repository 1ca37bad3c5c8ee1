-- End to end with two Neovims on one shared daemon (issue #13): per-hunk decisions go to the
-- daemon (review/hunkState) and reach the other editor (review/hunkStates); an editor attaching
-- mid-review gets them with the review (shown with their reason); an undo in one editor reaches
-- the other; the editor that decides the last hunk settles the file with every hunk's decision,
-- including the one made in the other editor. tests/e2e/helpers/hunk_relay_second.lua is the
-- second editor.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local cart = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers/cart.lua")
local ORIGINAL, ONLY_FIRST = cart.ORIGINAL, cart.ONLY_FIRST
local FIRST = "the second subtraction is the loyalty discount"
local SECOND = "negative totals are refunds"

local turns = cart.turns(H.call, "", "fix the cart", "Done.")
table.insert(turns, { name = "fallback", ["repeat"] = true, reply = { text = "fallback answer" } })

local script = {
  models = { { name = "qwen3:8b", capabilities = { "completion", "tools" } } },
  turns = turns,
}

local review = require("agentd.review")
local protocol = require("agentd.protocol")

H.test("hunk decisions are shared with a second Neovim on the session, both ways", function()
  H.need_daemon()
  local nvim = os.getenv("AGENTD_TEST_NVIM")
  if not nvim or nvim == "" then
    H.skip("AGENTD_TEST_NVIM not set (scripts/test.sh sets it)")
  end
  H.start_fakeollama(script)
  local d = H.start_daemon({ ["cart.go"] = ORIGINAL }, {
    setup = { cmd = { H.agentd_bin(), "connect", "--idle-timeout", "2s", "--ollama-host", H.fake.url } },
  })
  local cfg = require("agentd.config").get()
  local path = d.ws .. "/cart.go"
  local buf = H.edit(path)
  H.agent("fix the cart total")
  H.wait(function()
    return #review.marks(buf) > 0
  end, 20000, "the review's marks")
  local r = select(2, next(review.reviews))
  H.eq(#r.hunks, 2, "two hunks")
  local sid = require("agentd.session").current.sessionId

  -- Reject hunk 1 with a reason here; the daemon keeps it with the pending review.
  vim.cmd("normal! gg")
  vim.cmd("normal ]h")
  review.reject_hunk_reason(FIRST)
  H.eq(r.hunks[1].status, "rejected", "hunk 1 rejected here")
  H.wait(function()
    local res = d.client.request_sync(protocol.request.review_list, { sessionId = sid }, 5000)
    local rv = res and res.reviews and res.reviews[1]
    local st = rv and rv.hunkStates and rv.hunkStates[r.hunks[1].id]
    return st and st.state == "rejected" and st.reason == FIRST
  end, 10000, "the daemon's review/list showing hunk 1 rejected with its reason")

  local out, code = {}, nil
  local job = vim.fn.jobstart({ nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n",
    "-c", "luafile " .. H.tests_dir .. "/e2e/helpers/hunk_relay_second.lua", "-c", "cquit 1" }, {
    env = {
      AGENTD_SECOND_CMD = vim.json.encode(cfg.cmd),
      AGENTD_SECOND_ENV = vim.json.encode(cfg.cmd_env),
      AGENTD_SECOND_ROOT = d.ws,
      AGENTD_SECOND_SESSION = sid,
      AGENTD_SECOND_FIRST = FIRST,
      AGENTD_SECOND_SECOND = SECOND,
      AGENTD_TEST_OUT = H.out,
    },
    stdout_buffered = true,
    stderr_buffered = true,
    on_stdout = function(_, data)
      vim.list_extend(out, data)
    end,
    on_stderr = function(_, data)
      vim.list_extend(out, data)
    end,
    on_exit = function(_, c)
      code = c
    end,
  })
  H.ok(job > 0, "second editor started")
  local function second_failed()
    if code ~= nil and code ~= 0 then
      error("the second editor failed:\n" .. table.concat(out, "\n"))
    end
  end

  -- The second editor undoes hunk 1's rejection: pending here again, without its reason.
  H.wait(function()
    second_failed()
    return r.hunks[1].status == "pending"
  end, 30000, "hunk 1 pending again after the second editor's undo (review/hunkStates)")
  H.eq(r.hunks[1].reason, nil, "the undone rejection's reason is gone here too")
  H.eq(r.sent, false, "nothing sent")

  -- Accept hunk 1 here; the second editor then rejects hunk 2 with a reason and settles the file.
  vim.cmd("normal! gg")
  vim.cmd("normal ]h")
  review.accept_hunk()
  H.eq(r.hunks[1].status, "accepted", "hunk 1 accepted here")
  H.wait(function()
    return code ~= nil
  end, 30000, "second editor done")
  H.eq(code, 0, "second editor succeeded:\n" .. table.concat(out, "\n"))
  H.eq(H.error_lines(out), {}, "the second editor printed no error")
  H.wait(function()
    return #review.marks(buf) == 0
  end, 10000, "the marks cleared here too (review/resolved)")
  local ok = pcall(H.wait, function()
    return H.read_file(path) == ONLY_FIRST
  end, 20000)
  if not ok then
    error("timed out waiting for only hunk 1 (accepted here) on disk; cart.go:\n" .. tostring(H.read_file(path))
      .. "\nsecond editor:\n" .. table.concat(out, "\n"))
  end
  H.wait_turn_end(20000)
  local t = H.fake_transcript()
  H.contains(t, "applied 1 of 2 hunks", "the model reads which hunks were applied")
  H.contains(t, "Why the user rejected hunk " .. r.hunks[2].id .. ": " .. SECOND, "the second editor's reason for hunk 2")
  H.ok(not t:find(FIRST, 1, true), "the reason undone in the second editor never reached the model")
end)

H.done()
