-- End to end: a reason per rejected hunk (issue #13). <leader>aw rejects the hunk under the cursor
-- with a reason, shown on the hunk until the file is settled; undo forgets it; :AgentReject
-- {reason} does the same; the file's decision carries the reason (hunkReasons) and the model
-- reads it next to that hunk's ID, while the other hunk is applied.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local cart = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h") .. "/helpers/cart.lua")
local ORIGINAL, ONLY_SECOND = cart.ORIGINAL, cart.ONLY_SECOND
local FIRST = "the second subtraction is the loyalty discount"
local SECOND = "two discounts are intended: loyalty and coupon"

local turns = cart.turns(H.call, "again: ", "cart again", "Left it.")
vim.list_extend(turns, cart.turns(H.call, "", "fix the cart", "Kept both discounts."))
table.insert(turns, { name = "fallback", ["repeat"] = true, reply = { text = "fallback answer" } })

local script = {
  models = { { name = "qwen3:8b", capabilities = { "completion", "tools", "thinking" } } },
  turns = turns,
}

local review = require("agentd.review")

-- The label (end-of-line virtual text) of each hunk mark.
local function labels(buf)
  local out = {}
  for _, m in ipairs(review.marks(buf)) do
    for _, chunk in ipairs(m[4].virt_text or {}) do
      table.insert(out, chunk[1])
    end
  end
  return table.concat(out, "\n")
end

H.test("a rejected hunk's reason is shown on it, undone with it, and read by the model with that hunk", function()
  H.need_daemon()
  H.start_fakeollama(script)
  local d = H.start_daemon({ ["cart.go"] = ORIGINAL })
  local path = d.ws .. "/cart.go"
  local buf = H.edit(path)
  H.agent("fix the cart total")
  H.wait(function()
    return #review.marks(buf) > 0
  end, 20000, "the review's marks")
  local r = select(2, next(review.reviews))
  H.eq(#r.hunks, 2, "two hunks")
  H.contains(labels(buf), "\\aw reason", "the pending hunk's label shows the key")

  -- <leader>aw on hunk 1 asks for the reason and shows it on the hunk.
  local inputs = H.stub_input(FIRST)
  vim.cmd("normal! gg")
  vim.cmd("normal ]h")
  vim.cmd("normal \\aw")
  H.wait(function()
    return labels(buf):find("✗ rejected: “" .. FIRST .. "”", 1, true) ~= nil
  end, 5000, "the reason on the rejected hunk")
  H.eq(#inputs, 1, "asked for the reason once")
  H.eq(H.read_file(path), ORIGINAL, "nothing written while hunk 2 is pending")

  -- Undo forgets the decision and its reason.
  vim.cmd("normal \\au")
  H.ok(not labels(buf):find("rejected", 1, true), "no rejected hunk after undo:\n" .. labels(buf))
  H.eq(r.hunks[1].reason, nil, "the reason is forgotten")

  -- :AgentReject {reason} on hunk 1 (the undo moved the cursor there), then accept hunk 2.
  vim.cmd("AgentReject " .. SECOND)
  H.contains(labels(buf), "✗ rejected: “" .. SECOND .. "”", "the reason given to :AgentReject on the hunk")
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 14, "the cursor moved to the pending hunk 2")
  vim.cmd("normal \\aa")
  H.wait(function()
    return H.read_file(path) == ONLY_SECOND
  end, 20000, "only hunk 2 on disk")
  H.wait(function()
    return #review.marks(buf) == 0
  end, 5000, "marks cleared on review/resolved")
  H.wait_turn_end()
  local t = H.fake_transcript()
  H.contains(t, "applied 1 of 2 hunks", "the model reads which hunks were applied")
  H.contains(t, "Why the user rejected hunk " .. r.hunks[1].id .. ": " .. SECOND, "the model reads the hunk's reason")
  H.ok(not t:find(FIRST, 1, true), "the undone reason never reached the model")
end)

H.test("rejecting every hunk, each with a reason, sends them without asking for another", function()
  H.need_daemon()
  local buf = vim.api.nvim_get_current_buf()
  H.write_file(vim.api.nvim_buf_get_name(buf), ORIGINAL)
  vim.cmd("silent edit!")
  H.agent("fix the cart again")
  H.wait(function()
    return #review.marks(buf) > 0
  end, 20000, "the review's marks")
  local r = select(2, next(review.reviews))
  local inputs = H.stub_input(function(o)
    return o.prompt:find("1/2") and "one" or "two"
  end)
  vim.cmd("normal! gg")
  vim.cmd("normal ]h")
  vim.cmd("normal \\aw")
  H.wait(function()
    return r.hunks[1].status == "rejected"
  end, 5000, "hunk 1 rejected")
  vim.cmd("normal \\aw")
  H.wait_turn_end()
  H.eq(#inputs, 2, "asked once per hunk, not again for the file")
  H.eq(H.read_file(vim.api.nvim_buf_get_name(buf)), ORIGINAL, "nothing written")
  local t = H.fake_transcript()
  H.contains(t, "Why the user rejected hunk " .. r.hunks[1].id .. ": one", "hunk 1's reason")
  H.contains(t, "Why the user rejected hunk " .. r.hunks[2].id .. ": two", "hunk 2's reason")
end)

H.done()
