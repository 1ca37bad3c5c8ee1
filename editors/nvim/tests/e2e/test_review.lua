-- End to end: an edit review through the real daemon. The inline diff is shown without touching
-- the buffer or the file; accepting one hunk and rejecting the other leaves exactly the accepted
-- hunk in the buffer and on disk (applied by the daemon with workspace/applyEdit + document/save,
-- one undo step); rejecting everything with a reason leaves everything unchanged and the model
-- reads the reason.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local ORIGINAL = table.concat({
  "package shop",
  "",
  "// Total returns what the customer pays.",
  "func Total(c *Cart) int {",
  "\ttotal := 0",
  "\tfor _, it := range c.Items {",
  "\t\ttotal += it.Price * it.Qty",
  "\t}",
  "\ttotal -= c.Discount",
  "\ttotal -= c.Discount",
  "\t// shipping is free above 50",
  "\tif total < 50 {",
  "\t\ttotal += 5",
  "\t}",
  "\t// taxes are included in the prices",
  "\treturn total",
  "}",
  "",
}, "\n")
local ACCEPTED = ORIGINAL:gsub("\ttotal %-= c%.Discount\n\ttotal %-= c%.Discount\n", "\ttotal -= c.Discount\n", 1)
local EDITS = {
  { old_string = "\ttotal -= c.Discount\n\ttotal -= c.Discount\n", new_string = "\ttotal -= c.Discount\n" },
  { old_string = "\treturn total\n", new_string = "\treturn max(total, 0)\n" },
}

local call = H.call

local script = {
  models = { { name = "qwen3:8b", capabilities = { "completion", "tools", "thinking" } } },
  turns = {
    { name = "fix: read", when = { lastUserContains = "fix the cart" }, reply = call("read", { path = "cart.go" }) },
    { name = "fix: edit", when = { lastUserContains = "fix the cart", lastRole = "tool", lastContains = "package shop" },
      reply = call("edit", { path = "cart.go", edits = EDITS }) },
    { name = "fix: done", when = { lastUserContains = "fix the cart", lastRole = "tool" }, reply = { text = "Fixed the double discount." } },
    { name = "clamp: read", when = { lastUserContains = "clamp the total" }, reply = call("read", { path = "cart.go" }) },
    { name = "clamp: edit", when = { lastUserContains = "clamp the total", lastRole = "tool", lastContains = "package shop" },
      reply = call("edit", { path = "cart.go", edits = {
        { old_string = "\t// shipping is free above 50\n", new_string = "\t// shipping costs 5 below 50\n" },
        { old_string = "\treturn total\n", new_string = "\treturn max(total, 0)\n" },
      } }) },
    { name = "clamp: done", when = { lastUserContains = "clamp the total", lastRole = "tool" }, reply = { text = "Understood, I left it." } },
    { name = "fallback", ["repeat"] = true, reply = { text = "fallback answer" } },
  },
}

local review = require("agentd.review")
local d, path, buf, first_turn

local function buf_text()
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n"
end

local function wait_review()
  local ok = pcall(H.wait, function()
    return #review.marks(buf) > 0
  end, 20000, "the review's marks")
  if not ok then
    error("no review arrived; chat:\n" .. table.concat(require("agentd.chat").lines(), "\n")
      .. "\nmodel transcript:\n" .. H.fake_transcript())
  end
  for _, r in pairs(review.reviews) do
    return r
  end
end

H.test("an edit review is shown inline, buffer and file untouched", function()
  H.need_daemon()
  H.start_fakeollama(script)
  d = H.start_daemon({ ["cart.go"] = ORIGINAL })
  path = d.ws .. "/cart.go"
  buf = H.edit(path)
  local tick = vim.api.nvim_buf_get_changedtick(buf)
  H.agent("fix the cart total")
  local r = wait_review()
  first_turn = r.params.turnId
  H.eq(r.params.kind, "edit", "an edit review")
  H.eq(#r.hunks, 2, "two hunks")
  -- marks: hunk 1 removes one discount line (pure deletion), hunk 2 replaces the return line
  local marks = review.marks(buf)
  local rows, virt = {}, {}
  for _, m in ipairs(marks) do
    table.insert(rows, m[2])
    for _, vl in ipairs(m[4].virt_lines or {}) do
      table.insert(virt, vim.trim(vl[1][1]))
    end
  end
  H.ok(rows[1] == 8 or rows[1] == 9, "hunk 1 on a discount line (row 8 or 9), got " .. vim.inspect(rows))
  H.eq(rows[#rows], 15, "hunk 2 on the return line")
  H.eq(virt, { "return max(total, 0)" }, "the proposed line is a virtual line")
  -- on the screen: the old return line, then the proposed one below it
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  local screen = H.screen()
  local old_row, new_row
  for i, l in ipairs(screen) do
    if l:find("return total", 1, true) then
      old_row = i
    end
    if l:find("return max(total, 0)", 1, true) then
      new_row = i
    end
  end
  H.ok(old_row and new_row and new_row == old_row + 1, "proposed line right below the old one:\n" .. table.concat(screen, "\n"))
  H.eq(buf_text(), ORIGINAL, "buffer unchanged while the review waits")
  H.eq(H.read_file(path), ORIGINAL, "file unchanged while the review waits")
  H.eq(vim.api.nvim_buf_get_changedtick(buf), tick, "no change at all to the buffer")
  local chat_text
  local ok = pcall(H.wait, function()
    require("agentd.chat").flush_now()
    chat_text = table.concat(require("agentd.chat").lines(), "\n")
    return chat_text:find("\n  %? [Ee]dit")
  end, 3000)
  H.ok(ok, "the edit's tool line waits for the review (?):\n" .. chat_text)
end)

H.test("accept one hunk, reject the other: buffer and disk hold exactly the accepted hunk", function()
  H.need_daemon()
  vim.cmd("normal! gg")
  vim.cmd("normal ]h") -- buffer-local mapping -> first hunk
  vim.cmd("normal \\aa") -- <leader>aa accepts it, and the cursor moves to the next pending hunk
  H.eq(H.read_file(path), ORIGINAL, "nothing written before every hunk is decided")
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 16, "on the second hunk")
  vim.cmd("AgentReject")
  H.wait(function()
    return H.read_file(path) == ACCEPTED
  end, 20000, "the accepted hunk on disk")
  H.wait(function()
    return buf_text() == ACCEPTED
  end, 5000, "the accepted hunk in the buffer")
  H.eq(vim.bo[buf].modified, false, "buffer saved (document/save)")
  H.wait(function()
    return #review.marks(buf) == 0
  end, 5000, "marks cleared on review/resolved")
  H.wait_turn_end()
  H.contains(table.concat(require("agentd.chat").lines(), "\n"), "Fixed the double discount.", "turn finished")
  -- the model was told what was applied
  H.contains(H.fake_transcript(), "1 of 2", "the result says one of two hunks was applied")
  -- one undo step restores the original
  vim.cmd("silent undo")
  H.eq(buf_text(), ORIGINAL, "u undoes the whole applied edit")
  vim.cmd("silent redo")
  H.eq(buf_text(), ACCEPTED, "redo")
end)

H.test("reject the whole file with a reason: unchanged, and the model reads the reason", function()
  H.need_daemon()
  local inputs = H.stub_input("keep the clamp out of this change")
  local tick = vim.api.nvim_buf_get_changedtick(buf)
  H.agent("clamp the total")
  wait_review()
  vim.cmd("AgentReject!")
  H.wait_turn_end()
  H.eq(#inputs, 1, "asked for the reason")
  H.eq(buf_text(), ACCEPTED, "buffer unchanged")
  H.eq(H.read_file(path), ACCEPTED, "disk unchanged")
  H.eq(vim.api.nvim_buf_get_changedtick(buf), tick, "no change to the buffer")
  H.eq(#review.marks(buf), 0, "marks cleared")
  H.contains(H.fake_transcript(), "keep the clamp out of this change", "the reason reached the model")
  H.contains(table.concat(require("agentd.chat").lines(), "\n"), "Understood, I left it.", "turn finished")
end)

H.test("unsaved changes are kept: the accepted edit lands in the buffer only", function()
  H.need_daemon()
  H.fake_reset({
    models = script.models,
    turns = {
      { when = { lastUserContains = "clamp again" }, reply = call("read", { path = "cart.go" }) },
      { when = { lastUserContains = "clamp again", lastRole = "tool", lastContains = "package shop" },
        reply = call("edit", { path = "cart.go", old_string = "\treturn total\n", new_string = "\treturn max(total, 0)\n" }) },
      { when = { lastUserContains = "clamp again", lastRole = "tool" }, reply = { text = "Clamped." } },
      { ["repeat"] = true, reply = { text = "fallback answer" } },
    },
  })
  -- an unsaved change of the user at the top of the file
  vim.api.nvim_buf_set_lines(buf, 2, 3, false, { "// Total returns what the customer pays (unsaved note)." })
  local unsaved = buf_text()
  H.agent("clamp again")
  wait_review()
  vim.cmd("AgentAccept!")
  H.wait(function()
    return buf_text():find("return max(total, 0)", 1, true)
  end, 20000, "edit applied to the buffer")
  H.wait_turn_end()
  H.contains(buf_text(), "(unsaved note)", "the user's unsaved change is kept")
  H.contains(H.fake_transcript(), "(unsaved note)", "the model read the unsaved buffer text, not the file")
  H.eq(buf_text(), (unsaved:gsub("\treturn total\n", "\treturn max(total, 0)\n")), "buffer = unsaved text + the edit")
  H.eq(H.read_file(path), ACCEPTED, "disk untouched: the buffer had unsaved changes")
  H.eq(vim.bo[buf].modified, true, "still modified")
end)

H.test(":AgentRevert restores the file a turn changed and reloads the buffer", function()
  H.need_daemon()
  vim.cmd("silent edit!") -- drop the unsaved changes of the previous test: buffer = disk = ACCEPTED
  H.eq(buf_text(), ACCEPTED, "buffer back to the file")
  local asked = H.stub_select(H.pick("yes"))
  vim.cmd("AgentRevert " .. first_turn)
  H.wait(function()
    return H.read_file(path) == ORIGINAL
  end, 10000, "the file restored on disk")
  H.wait(function()
    return buf_text() == ORIGINAL
  end, 5000, "the clean buffer reloaded")
  H.ok(H.notified("restored", vim.log.levels.INFO) or H.notified("restored", vim.log.levels.WARN), "told")
  H.eq(#asked, 1, "asked for confirmation first")
end)

H.done()
