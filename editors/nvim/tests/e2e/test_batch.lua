-- End to end: one model reply edits cart.go, edits greet.go and creates cart_test.go. The three
-- files are up for review at once (not one after another); they are decided in the other order
-- (3, 2, 1) with the plugin's keys and commands; disk holds what was accepted, and the model reads
-- the results in its own call order.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local CART = "package shop\n\nfunc Total(c *Cart) int {\n\ttotal := c.Sum()\n\ttotal -= c.Discount\n\ttotal -= c.Discount\n\treturn total\n}\n"
local GREET = "package shop\n\nfunc Greet() string { return \"hi\" }\n"
local TEST = "package shop\n\n// tests come here\n"

local script = {
  models = { { name = "qwen3:8b", capabilities = { "completion", "tools" } } },
  turns = {
    { name = "read both", when = { lastUserContains = "three files", lastRole = "user" },
      reply = { toolCalls = { { name = "read", arguments = { path = "cart.go" } }, { name = "read", arguments = { path = "greet.go" } } } } },
    { name = "three changes", when = { lastUserContains = "three files", lastRole = "tool", lastContains = "Greet" },
      reply = { toolCalls = {
        { name = "edit", arguments = { path = "cart.go", old_string = "\ttotal -= c.Discount\n\ttotal -= c.Discount\n", new_string = "\ttotal -= c.Discount\n" } },
        { name = "edit", arguments = { path = "greet.go", old_string = "\"hi\"", new_string = "\"hello\"" } },
        { name = "write", arguments = { path = "cart_test.go", content = TEST } },
      } } },
    { name = "done", when = { lastUserContains = "three files", lastRole = "tool" }, reply = { text = "Three files handled." } },
    { name = "read cart", when = { lastUserContains = "cart.go twice", lastRole = "user" },
      reply = { toolCalls = { { name = "read", arguments = { path = "cart.go" } } } } },
    { name = "twice", when = { lastUserContains = "cart.go twice", lastRole = "tool", lastContains = "func Total" },
      reply = { toolCalls = {
        { name = "edit", arguments = { path = "cart.go", old_string = "return total", new_string = "return max(total, 0)" } },
        { name = "edit", arguments = { path = "cart.go", old_string = "total := c.Sum()", new_string = "total := c.Sum() // every item" } },
      } } },
    { name = "twice done", when = { lastUserContains = "cart.go twice", lastRole = "tool" }, reply = { text = "Changed cart.go twice." } },
    { name = "fallback", ["repeat"] = true, reply = { text = "fallback answer" } },
  },
}

local review = require("agentd.review")
local chat = require("agentd.chat")

-- The chat's lines, and the text shown at their ends (a call's state).
local function chat_text()
  local log = chat.buffers()
  local out = {}
  for _, l in ipairs(vim.api.nvim_buf_get_lines(log, 0, -1, false)) do
    table.insert(out, l)
  end
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(log, chat.ns, 0, -1, { details = true })) do
    for _, chunk in ipairs(m[4].virt_text or {}) do
      table.insert(out, chunk[1])
    end
  end
  return table.concat(out, "\n")
end

-- The row of the first chat line matching pattern (nil: none).
local function chat_row(pattern)
  for i, l in ipairs(vim.api.nvim_buf_get_lines(chat.buffers(), 0, -1, false)) do
    if l:find(pattern) then
      return i
    end
  end
end

local function pending_paths()
  local out = {}
  for _, r in pairs(review.reviews) do
    if not r.sent and r.params.file then
      table.insert(out, r.params.file.path)
    end
  end
  table.sort(out)
  return out
end

local function review_of(path)
  for _, r in pairs(review.reviews) do
    if r.params.file and r.params.file.path == path and not r.sent then
      return r
    end
  end
end

local d -- the daemon of the file's tests

H.test("every file of one reply is up for review at once, decided 3, 2, 1", function()
  H.need_daemon()
  H.start_fakeollama(script)
  d = H.start_daemon({ ["cart.go"] = CART, ["greet.go"] = GREET })
  local cart = H.edit(d.ws .. "/cart.go")
  local greet = H.edit(d.ws .. "/greet.go")
  H.agent("change three files")
  local ok = pcall(H.wait, function()
    return #pending_paths() == 3
  end, 20000)
  H.ok(ok, "three reviews at once, got " .. vim.inspect(pending_paths()) .. "\nmodel transcript:\n" .. H.fake_transcript())
  H.eq(pending_paths(), { "cart.go", "cart_test.go", "greet.go" }, "the three files")
  H.ok(#review.marks(cart) > 0 and #review.marks(greet) > 0, "both open buffers show their proposals")
  -- The reply's calls are listed in the model's call order.
  local r1, r2, r3
  pcall(H.wait, function()
    chat.flush_now()
    r1, r2, r3 = chat_row("[Ee]dit cart%.go"), chat_row("[Ee]dit greet%.go"), chat_row("[Ww]rite cart_test%.go")
    return r1 and r2 and r3
  end, 10000)
  H.ok(r1 and r2 and r3 and r1 < r2 and r2 < r3, "the chat lists the changes in call order: " .. vim.inspect({ r1, r2, r3 }) .. "\n" .. chat_text())
  -- 3: the new file, accepted.
  local done3 = false
  review.decide(review_of("cart_test.go"), { type = "accept" }, function()
    done3 = true
  end)
  H.wait(function()
    return done3
  end, 10000, "cart_test.go decided")
  -- 2: greet.go, rejected with a reason, from its buffer.
  vim.api.nvim_set_current_buf(greet)
  vim.cmd("AgentReject not now")
  -- 1: cart.go, accepted from its buffer.
  vim.api.nvim_set_current_buf(cart)
  vim.cmd("AgentAccept")
  H.wait_turn_end(20000)
  H.eq(H.read_file(d.ws .. "/cart_test.go"), TEST, "the new file is on disk")
  H.eq(H.read_file(d.ws .. "/greet.go"), GREET, "the rejected file is unchanged")
  H.eq(H.read_file(d.ws .. "/cart.go"), CART:gsub("\ttotal %-= c%.Discount\n", "", 1), "the accepted edit is on disk")
  -- The model's last request: the three results in its call order.
  local reqs = H.fake_requests()
  local msgs = reqs[#reqs].body.messages
  local results = {}
  for _, m in ipairs(msgs) do
    if m.role == "tool" then
      table.insert(results, m.content)
    end
  end
  H.eq(#results, 5, "two reads and three changes")
  H.ok(results[3]:find("cart.go", 1, true) and not results[3]:find("rejected", 1, true), "1: cart.go applied: " .. results[3])
  H.ok(results[4]:find("rejected", 1, true) and results[4]:find("not now", 1, true), "2: greet.go rejected with the reason: " .. results[4])
  H.ok(results[5]:find("cart_test.go", 1, true), "3: cart_test.go created: " .. results[5])
end)

H.test("a second change of a file waits for the first, and the chat says so", function()
  -- The same session, after the test above: cart.go holds its accepted edit.
  H.ok(d ~= nil, "the daemon of the test above")
  local before = H.read_file(d.ws .. "/cart.go")
  local cart = H.edit(d.ws .. "/cart.go")
  H.agent("change cart.go twice")
  local up = pcall(H.wait, function()
    return #pending_paths() == 1
  end, 20000)
  chat.flush_now()
  H.ok(up, "the first change of cart.go up for review, got " .. vim.inspect(pending_paths()) .. "\n" .. chat_text() .. "\nmodel transcript:\n" .. H.fake_transcript())
  local waits = pcall(H.wait, function()
    chat.flush_now()
    return chat_text():find("waits for the earlier change of cart.go", 1, true) ~= nil
  end, 10000)
  H.ok(waits, "the chat says the second change waits:\n" .. chat_text())
  H.eq(#pending_paths(), 1, "only the first change is up")
  vim.api.nvim_set_current_buf(cart)
  vim.cmd("AgentAccept")
  H.wait(function()
    chat.flush_now()
    local r = review_of("cart.go")
    return r and r.params.callId ~= nil and #pending_paths() == 1 and not chat_text():find("waits for the earlier change", 1, true)
  end, 20000, "the second change up for review, no longer waiting:\n" .. chat_text())
  vim.cmd("AgentAccept")
  H.wait_turn_end(20000)
  local want = before:gsub("return total", "return max(total, 0)"):gsub("total := c%.Sum%(%)", "total := c.Sum() // every item")
  pcall(H.wait, function()
    return H.read_file(d.ws .. "/cart.go") == want
  end, 10000)
  H.eq(H.read_file(d.ws .. "/cart.go"), want, "both changes on disk")
end)

H.done()
