-- End to end: a turn's changes after the fact. A yolo turn edits cart.go (two hunks) and creates
-- notes.txt; :AgentChanges lists both with one line per hunk; `u` on the first hunk reverts only
-- that hunk on disk; `U` on notes.txt deletes it; a file changed since is shown as skipped with
-- the reason; :AgentTurns picks the turn; the model's next request mentions the undo.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local ORIGINAL = table.concat({
  "package shop",
  "",
  "func Total(c *Cart) int {",
  "\ttotal := c.Sum()",
  "\ttotal -= c.Discount",
  "\ttotal -= c.Discount",
  "\treturn total",
  "}",
  "",
  "func Label(c *Cart) string {",
  "\treturn \"cart\"",
  "}",
  "",
}, "\n")
local AFTER = ORIGINAL:gsub("\ttotal %-= c%.Discount\n\ttotal %-= c%.Discount\n", "\ttotal -= c.Discount\n", 1)
  :gsub('return "cart"', 'return "basket"', 1)
local HUNK2_ONLY = ORIGINAL:gsub('return "cart"', 'return "basket"', 1)

local call = H.call

local script = {
  models = { { name = "qwen3:8b", capabilities = { "completion", "tools" } } },
  turns = {
    { when = { lastUserContains = "edit two files" }, reply = call("read", { path = "cart.go" }) },
    { when = { lastUserContains = "edit two files", lastRole = "tool", lastContains = "package shop" },
      reply = call("edit", { path = "cart.go", edits = {
        { old_string = "\ttotal -= c.Discount\n\ttotal -= c.Discount\n", new_string = "\ttotal -= c.Discount\n" },
        { old_string = 'return "cart"', new_string = 'return "basket"' },
      } }) },
    { when = { lastUserContains = "edit two files", lastRole = "tool" }, reply = call("write", { path = "notes.txt", content = "one\ntwo\n" }) },
    { when = { lastUserContains = "edit two files", lastRole = "tool" }, reply = { text = "Edited both." } },
    { when = { lastUserContains = "what now" }, reply = { text = "I see the undo." } },
    { ["repeat"] = true, reply = { text = "fallback answer" } },
  },
}

local changes = require("agentd.changes")
local d

local function list_lines()
  return vim.api.nvim_buf_get_lines(changes.buf, 0, -1, false)
end

--- Puts the cursor of the list on the first line containing text.
local function cursor_on(text)
  local win = vim.fn.bufwinid(changes.buf)
  H.ok(win ~= -1, "the list is shown")
  vim.api.nvim_set_current_win(win)
  for i, l in ipairs(list_lines()) do
    if l:find(text, 1, true) then
      vim.api.nvim_win_set_cursor(win, { i, 0 })
      return
    end
  end
  error("no line with " .. text .. " in the list:\n" .. table.concat(list_lines(), "\n"))
end

local function press(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), "mx", false)
end

local function wait_list(cond, what)
  H.wait(function()
    return changes.buf and cond(table.concat(list_lines(), "\n"))
  end, 10000, what)
end

H.test(":AgentChanges lists a yolo turn's files, one line per hunk", function()
  H.need_daemon()
  H.start_fakeollama(script)
  d = H.start_daemon({ ["cart.go"] = ORIGINAL }, { setup = { approval_mode = "yolo" } })
  H.agent("edit two files")
  H.wait_turn_end(30000)
  H.eq(H.read_file(d.ws .. "/cart.go"), AFTER, "the turn edited cart.go")
  vim.cmd("AgentChanges")
  wait_list(function(t)
    return t:find("notes.txt", 1, true) ~= nil
  end, "the list of the turn's changes")
  local text = table.concat(list_lines(), "\n")
  H.contains(text, "turn t1", "the turn")
  H.contains(text, "cart.go  modified  +1 −2", "cart.go with its counts")
  H.contains(text, "notes.txt  created  +2 −0", "notes.txt")
  H.contains(text, "removed 1 line", "the deletion hunk")
  H.contains(text, '+return "basket"', "the replacement hunk")
  local qf = vim.fn.getqflist()
  H.eq(#qf, 3, "one quickfix entry per hunk")
end)

H.test("<CR> jumps to the hunk; D shows the file's diff", function()
  H.need_daemon()
  cursor_on('+return "basket"')
  press("<CR>")
  H.wait(function()
    return vim.api.nvim_buf_get_name(0):find("cart.go", 1, true) ~= nil
  end, 5000, "cart.go to open")
  H.contains(vim.api.nvim_get_current_line(), 'return "basket"', "the cursor is on the hunk")
  cursor_on("cart.go  modified")
  press("D")
  H.wait(function()
    return vim.bo.filetype == "diff"
  end, 5000, "the diff split")
  local diff = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  H.contains(diff, "+++ b/cart.go", "the diff header")
  H.contains(diff, '+\treturn "basket"', "an added line")
  vim.cmd("close")
end)

H.test("u undoes the hunk under the cursor only; the model is told", function()
  H.need_daemon()
  cursor_on("removed 1 line")
  press("u")
  H.wait(function()
    return H.read_file(d.ws .. "/cart.go") == HUNK2_ONLY
  end, 10000, "cart.go with only the first hunk reverted")
  H.eq(H.read_file(d.ws .. "/notes.txt"), "one\ntwo\n", "notes.txt untouched")
  wait_list(function(t)
    return not t:find("removed 1 line", 1, true)
  end, "the list to drop the undone hunk")
  H.contains(table.concat(list_lines(), "\n"), "cart.go  modified  +1 −1", "what is left of cart.go")
  H.agent("what now")
  H.wait_turn_end(30000)
  local reqs = H.fake_requests()
  local msgs = reqs[#reqs].body.messages
  local note = msgs[#msgs - 1].content
  H.contains(note, "undid", "the model's next request mentions the undo before the prompt")
  H.contains(note, "cart.go: reverted hunk 1 of 2", "and names the hunk")
  H.eq(msgs[#msgs].content, "what now", "the prompt is the user's words alone")
end)

H.test("a file changed since is shown with its reason and skipped; U undoes a file", function()
  H.need_daemon()
  -- The user changes cart.go in its buffer (open since <CR>) and saves it.
  local b = vim.fn.bufnr(d.ws .. "/cart.go")
  H.ok(b ~= -1, "cart.go is loaded")
  H.eq(table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n") .. "\n", HUNK2_ONLY, "the buffer shows the undo")
  vim.api.nvim_buf_set_lines(b, -1, -1, false, { "// mine" })
  vim.api.nvim_buf_call(b, function()
    vim.cmd("silent write")
  end)
  changes.open("t1")
  wait_list(function(t)
    return t:find("skipped by undo", 1, true) ~= nil
  end, "cart.go shown as changed since")
  H.contains(table.concat(list_lines(), "\n"), "changed since the turn", "the reason")
  cursor_on("cart.go  modified")
  press("U")
  H.wait(function()
    return changes.last_undo and #changes.last_undo.skipped == 1
  end, 10000, "the undo answer naming the skipped file")
  H.eq(changes.last_undo.skipped[1].path, "cart.go", "skipped file")
  H.ok(H.notified("skipped cart.go"), "the skipped file is named in a notification")
  H.eq(H.read_file(d.ws .. "/cart.go"), HUNK2_ONLY .. "// mine\n", "the user's change is kept")
  cursor_on("notes.txt  created")
  press("U")
  H.wait(function()
    return vim.fn.filereadable(d.ws .. "/notes.txt") == 0
  end, 10000, "notes.txt to be deleted")
end)

H.test(":AgentTurns picks a turn with vim.ui.select", function()
  H.need_daemon()
  local selects = H.stub_select(function(items)
    return items[1]
  end)
  vim.cmd("AgentTurns")
  H.wait(function()
    return #selects == 1
  end, 10000, "the turn picker")
  local label = selects[1].opts.format_item(selects[1].items[1])
  H.contains(label, "t1  edit two files  (2 files)", "the turn's label")
  wait_list(function(t)
    return t:find("turn t1", 1, true) ~= nil
  end, "the picked turn's changes")
end)

H.done()
