-- Inline review without a daemon: review/requested params are fed to the handler, requests are
-- recorded by a stub. Checks marks, the screen, navigation, decisions, and that the buffer and
-- the file never change.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()
require("agentd").setup({ cmd = { "true" } })
local client = require("agentd.client")
local review = require("agentd.review")

local sent = {}
-- review/hunkState (per-hunk decisions shared with the other editors) is recorded apart: `sent`
-- holds the decisions.
local shared = {}
local function share(method, params, cb)
  if method ~= "review/hunkState" then
    return false
  end
  table.insert(shared, params)
  if cb then
    vim.schedule(function()
      cb(nil, { hunks = {} })
    end)
  end
  return true
end
client.request = function(method, params, cb)
  if share(method, params, cb) then
    return
  end
  table.insert(sent, { method = method, params = params })
  if cb then
    vim.schedule(function()
      cb(nil, { outcome = "accepted", settled = {} })
    end)
  end
end

local dir = H.tmpdir("ws")
client.root = dir
local text = {}
for i = 1, 30 do
  text[i] = "line " .. i
end
text[10] = "\tindented " .. 10
local original = table.concat(text, "\n") .. "\n"
local path = dir .. "/cart.go"
H.write_file(path, original)
vim.cmd("edit " .. path)
local buf = vim.api.nvim_get_current_buf()
local uri = vim.uri_from_fname(path)

local function params(id, hunks)
  return {
    reviewId = id,
    sessionId = "s-1",
    turnId = "t1",
    callId = "call_1",
    tool = "edit",
    label = "Edit cart.go",
    kind = "edit",
    why = "ask mode: edits ask before they are applied",
    file = { uri = uri, path = "cart.go", version = 0, hunks = hunks, unifiedDiff = "", edit = { edits = {} } },
    scopes = { { kind = "tool", tool = "edit", label = "all edits in this session" },
      { kind = "path", pathPrefix = "cart.go", label = "edits of cart.go" } },
  }
end

-- request delivers review/requested and, when its placement began (its file is open: placed is
-- false until the last hunk), waits until its marks are placed: placement is time-sliced, and on a
-- loaded machine the rest of the hunks come on later loop turns.
local function request(p)
  review.on_requested(nil, p)
  local r = review.reviews[p.reviewId]
  if r and r.placed == false then
    H.wait(function()
      return r.placed or review.reviews[p.reviewId] ~= r
    end, 5000, "review " .. p.reviewId .. " placed")
  end
end

local two = {
  { id = "hA", oldStart = 5, oldLines = 2, newStart = 5, newLines = 1, removed = { "line 5", "line 6" }, added = { "LINE FIVE" } },
  { id = "hB", oldStart = 10, oldLines = 1, newStart = 9, newLines = 2, removed = { "\tindented 10" }, added = { "\tten", "\televen" } },
}

local function marks()
  return review.marks(buf)
end

local function unchanged()
  H.eq(table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n") .. "\n", original, "buffer text")
  H.eq(H.read_file(path), original, "file on disk")
  H.eq(vim.bo[buf].modified, false, "buffer not modified")
end

H.test("review/requested places line highlights, signs and virt_lines", function()
  request(params("r-1", two))
  local m = marks()
  -- hunk A: 2 removed lines (rows 4, 5); hunk B: 1 line (row 9)
  local rows = {}
  local detailed = vim.fn.has("nvim-0.8") == 1 -- 0.7 does not report signs and line highlights
  for _, mk in ipairs(m) do
    rows[#rows + 1] = mk[2]
    if detailed then
      H.eq(mk[4].line_hl_group, "AgentdDelete", "removed lines are highlighted")
      H.eq(vim.trim(mk[4].sign_text), "~", "change sign")
    end
  end
  H.eq(rows, { 4, 5, 9 }, "rows with marks")
  -- the sign column shows the change sign on every replaced line (checked on the screen)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  local screen = H.screen()
  for _, l in ipairs({ 5, 6, 10 }) do
    local found = false
    for _, srow in ipairs(screen) do
      if srow:match("^~%s+.*" .. (l == 10 and "indented 10" or ("line " .. l)) .. "%f[^%d]") then
        found = true
      end
    end
    H.ok(found, "sign ~ on line " .. l .. ":\n" .. table.concat(screen, "\n"))
  end
  local a_last = m[2][4]
  H.eq(#a_last.virt_lines, 1, "hunk A proposes one line")
  H.eq(a_last.virt_lines[1][1][2], "AgentdAdd", "added lines use AgentdAdd")
  H.eq(vim.trim(a_last.virt_lines[1][1][1]), "LINE FIVE", "added text")
  local b = m[3][4]
  H.eq(#b.virt_lines, 2, "hunk B proposes two lines")
  H.eq(vim.trim(b.virt_lines[1][1][1]), "ten", "tabs are expanded")
  H.ok(b.virt_lines[1][1][1]:match("^        ten"), "tab expanded to tabstop")
  H.contains(m[1][4].virt_text[1][1], "agentd 1/2", "label on the first line of hunk A")
  H.ok(require("agentd.review.marks").last_place_ms ~= nil, "placement timed")
  unchanged()
end)

H.test("virt_lines are visible on the screen", function()
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  local screen = H.screen()
  local joined = table.concat(screen, "\n")
  H.contains(joined, "line 6", "replaced line still shown")
  H.contains(joined, "LINE FIVE", "proposed line shown")
  local row6, rowfive
  for i, l in ipairs(screen) do
    if l:find("line 6$") then
      row6 = i
    end
    if l:find("LINE FIVE", 1, true) then
      rowfive = i
    end
  end
  H.eq(rowfive, row6 + 1, "the proposed line is right below the replaced ones")
  H.contains(joined, "eleven", "second hunk's lines shown")
end)

H.test("]h and [h move between hunks; keymaps are buffer-local", function()
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  local m = vim.fn.maparg("]h", "n", false, true)
  H.eq(m.buffer, 1, "]h is buffer-local")
  vim.cmd("normal ]h")
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 5, "first hunk")
  vim.cmd("normal ]h")
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 10, "second hunk")
  vim.cmd("normal ]h")
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 5, "wraps around")
  vim.cmd("normal [h")
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 10, "previous wraps to the last")
  vim.cmd("normal [h")
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 5, "previous")
end)

H.test("accept one hunk, reject the other: one review/decide with the accepted hunk", function()
  vim.api.nvim_win_set_cursor(0, { 6, 0 }) -- inside hunk A (second line)
  shared = {}
  vim.cmd("AgentAccept")
  H.eq(#sent, 0, "nothing sent while a hunk is undecided")
  H.eq(shared, { { reviewId = "r-1", hunks = { hA = { state = "accepted" }, hB = { state = "pending" } } } },
    "the hunk decision shared with the other editors (review/hunkState)")
  H.contains(marks()[1][4].virt_text[1][1], "✓ accepted", "accepted hunk is labelled")
  H.contains(H.screen(), "✓ line 5", "accepted hunk shows the ✓ sign")
  vim.api.nvim_win_set_cursor(0, { 10, 0 })
  local inputs = H.stub_input("should not be asked")
  vim.cmd("AgentReject")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(#inputs, 0, "no reason asked when some hunks are accepted")
  H.eq(sent[1], { method = "review/decide", params = { reviewId = "r-1", decision = { type = "accept", hunks = { "hA" } } } })
  unchanged()
end)

H.test("review/resolved clears marks and keymaps", function()
  review.on_resolved(nil, { reviewId = "r-1", sessionId = "s-1", outcome = "accepted", by = "editor", hunks = { "hA" } })
  H.eq(#marks(), 0, "no marks left")
  H.eq(vim.fn.maparg("]h", "n"), "", "]h unmapped")
  H.eq(review.pending_count(), 0, "no pending review")
  unchanged()
end)

H.test("reject the whole file with a reason", function()
  sent = {}
  request(params("r-2", two))
  local inputs = H.stub_input("keep the old names")
  vim.cmd("AgentReject!")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(#inputs, 1, "reason asked once")
  H.eq(sent[1].params, { reviewId = "r-2", decision = { type = "reject", reason = "keep the old names" } })
  review.on_resolved(nil, { reviewId = "r-2", sessionId = "s-1", outcome = "rejected", by = "editor" })
  H.eq(#marks(), 0, "cleared")
  unchanged()
end)

H.test("cancelling the reason prompt does not reject", function()
  sent = {}
  request(params("r-3", two))
  local inputs = H.stub_input(nil)
  vim.cmd("AgentReject!")
  H.wait(function()
    return inputs[1] and inputs[1].answered
  end, 2000, "the cancelled reason prompt to be answered")
  H.eq(#sent, 0, "nothing sent")
  H.ok(#marks() > 0, "review still shown")
  H.stub_input("")
  vim.cmd("AgentReject!")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(sent[1].params.decision, { type = "reject" }, "empty reason is left out")
  review.on_resolved(nil, { reviewId = "r-3", sessionId = "s-1", outcome = "rejected", by = "editor" })
end)

H.test("accept the whole file", function()
  sent = {}
  request(params("r-4", two))
  vim.cmd("AgentAccept!")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(sent[1].params.decision, { type = "accept" })
  review.on_resolved(nil, { reviewId = "r-4", sessionId = "s-1", outcome = "accepted", by = "editor" })
end)

H.test("a range accepts the hunks it touches", function()
  sent = {}
  request(params("r-5", two))
  vim.cmd("4,12AgentAccept")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(sent[1].params.decision, { type = "accept" }, "both hunks accepted = accept all")
  review.on_resolved(nil, { reviewId = "r-5", sessionId = "s-1", outcome = "accepted", by = "editor" })
end)

H.test("rejecting every hunk one by one asks for the reason at the end", function()
  sent = {}
  request(params("r-6", two))
  local inputs = H.stub_input("no")
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd("AgentReject")
  H.eq(#inputs, 0, "not asked yet")
  vim.api.nvim_win_set_cursor(0, { 10, 0 })
  vim.cmd("AgentReject")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(#inputs, 1, "asked once")
  H.eq(sent[1].params.decision, { type = "reject", reason = "no" })
  review.on_resolved(nil, { reviewId = "r-6", sessionId = "s-1", outcome = "rejected", by = "editor" })
end)

H.test("settled elsewhere: marks cleared and the user is told", function()
  request(params("r-7", two))
  review.on_resolved(nil, { reviewId = "r-7", sessionId = "s-1", outcome = "rejected", by = "timeout" })
  H.eq(#marks(), 0, "cleared")
  H.ok(H.notified("after the timeout"), "notified")
end)

H.test("a pure insertion at the top shows above the first line", function()
  sent = {}
  request(params("r-8", {
    { id = "hT", oldStart = 1, oldLines = 0, newStart = 1, newLines = 2, removed = {}, added = { "// header 1", "// header 2" } },
    { id = "hE", oldStart = 31, oldLines = 0, newStart = 33, newLines = 1, removed = {}, added = { "// trailer" } },
  }))
  local m = marks()
  H.eq(#m, 2, "one mark per insertion")
  H.eq(m[1][2], 0, "top insertion anchored on row 0")
  H.eq(m[1][4].virt_lines_above, true, "above the first line")
  H.eq(m[2][2], 29, "end insertion below the last line")
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.cmd("normal! gg")
  vim.fn.winrestview({ topfill = 3 })
  local screen = H.screen()
  H.contains(screen[1], "// header 1", "first screen line is the proposed header")
  H.contains(screen[3], "agentd review:", "then the key hint")
  H.contains(screen[4], "line 1", "then the real first line")
  vim.cmd("AgentAccept!")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  review.on_resolved(nil, { reviewId = "r-8", sessionId = "s-1", outcome = "accepted", by = "editor" })
  unchanged()
end)

H.test("hunks are found again when the buffer moved them", function()
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "new 1", "new 2" })
  request(params("r-9", two))
  local m = marks()
  H.eq(m[1][2], 6, "hunk A found 2 lines lower")
  H.eq(m[3][2], 11, "hunk B found 2 lines lower")
  review.on_resolved(nil, { reviewId = "r-9", sessionId = "s-1", outcome = "rejected", by = "turnEnded" })
  vim.cmd("silent undo")
  vim.bo[buf].modified = false
  unchanged()
end)

H.test("a review for a file not open is shown when the file is opened", function()
  local other = dir .. "/other.txt"
  H.write_file(other, "a\nb\nc\n")
  local p = params("r-10", { { id = "hO", oldStart = 2, oldLines = 1, newStart = 2, newLines = 1, removed = { "b" }, added = { "B" } } })
  p.file.uri = vim.uri_from_fname(other)
  p.file.path = "other.txt"
  request(p)
  H.ok(H.notified("other.txt"), "user told about the review")
  H.eq(vim.fn.bufnr(other), -1, "file not loaded behind the user's back")
  vim.cmd("AgentReview")
  local ob = vim.api.nvim_get_current_buf()
  H.eq(vim.api.nvim_buf_get_name(ob), other, ":AgentReview opened the file")
  H.eq(#review.marks(ob), 1, "marks placed")
  H.eq(vim.api.nvim_win_get_cursor(0)[1], 2, "cursor on the hunk")
  review.on_resolved(nil, { reviewId = "r-10", sessionId = "s-1", outcome = "rejected", by = "editor" })
  H.eq(H.read_file(other), "a\nb\nc\n", "file unchanged")
  vim.cmd("buffer " .. buf)
end)

H.test('review.open = "split" shows the file in a split and keeps the focus', function()
  require("agentd").setup({ cmd = { "true" }, review = { open = "split" } })
  client.request = function(method, p, cb)
    if share(method, p, cb) then
      return
    end
    table.insert(sent, { method = method, params = p })
    if cb then
      vim.schedule(function()
        cb(nil, { outcome = "rejected", settled = {} })
      end)
    end
  end
  local third = dir .. "/third.txt"
  H.write_file(third, "x\ny\n")
  local win = vim.api.nvim_get_current_win()
  local p = params("r-split", { { id = "hS", oldStart = 1, oldLines = 1, newStart = 1, newLines = 1, removed = { "x" }, added = { "X" } } })
  p.file.uri = vim.uri_from_fname(third)
  p.file.path = "third.txt"
  request(p)
  H.eq(vim.api.nvim_get_current_win(), win, "focus kept")
  local tb = vim.fn.bufnr(third)
  H.ok(tb ~= -1 and #vim.fn.win_findbuf(tb) == 1, "file shown in a window")
  H.eq(#review.marks(tb), 1, "marks placed")
  review.on_resolved(nil, { reviewId = "r-split", sessionId = "s-1", outcome = "rejected", by = "editor" })
  vim.api.nvim_win_close(vim.fn.win_findbuf(tb)[1], true)
  require("agentd").setup({ cmd = { "true" } })
end)

H.test("a new file is reviewed in a diff buffer", function()
  sent = {}
  local p = params("r-11", { { id = "hN", oldStart = 1, oldLines = 0, newStart = 1, newLines = 1, removed = {}, added = { "hello" } } })
  p.file.uri = vim.uri_from_fname(dir .. "/new.txt")
  p.file.path = "new.txt"
  p.file.created = true
  p.file.unifiedDiff = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n"
  request(p)
  vim.cmd("AgentReview")
  local db = vim.api.nvim_get_current_buf()
  H.contains(vim.api.nvim_buf_get_name(db), "agentd://review/r-11", "diff buffer")
  H.contains(vim.api.nvim_buf_get_lines(db, 0, -1, false), "+hello", "diff shown")
  vim.cmd("AgentAccept")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(sent[1].params.decision, { type = "accept" })
  review.on_resolved(nil, { reviewId = "r-11", sessionId = "s-1", outcome = "accepted", by = "editor" })
  H.eq(vim.fn.filereadable(dir .. "/new.txt"), 0, "the plugin never writes the file itself")
end)

H.test(":AgentAllow accepts for the session with a scope (label stripped)", function()
  vim.cmd("buffer " .. buf)
  sent = {}
  request(params("r-12", two))
  H.stub_select(H.pick("edits of cart.go"))
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd("AgentAllow")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(sent[1].params.decision, { type = "acceptForSession", scope = { kind = "path", pathPrefix = "cart.go" } })
  review.on_resolved(nil, { reviewId = "r-12", sessionId = "s-1", outcome = "accepted", by = "editor" })
  unchanged()
end)

-- Issue 13: accepted hunks are never dropped; a keyboard flow; undo until the file is settled.
local function label_of(hunk_index)
  local n = 0
  for _, mk in ipairs(marks()) do
    if mk[4].virt_text then
      n = n + 1
      if n == hunk_index then
        return mk[4].virt_text[1][1]
      end
    end
  end
end

local function cur_row()
  return vim.api.nvim_win_get_cursor(0)[1]
end

H.test("<leader>aa moves to the next pending hunk; <leader>aR rejects the rest with a reason and keeps the accepted hunk", function()
  vim.cmd("buffer " .. buf)
  sent = {}
  request(params("r-20", two))
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd("normal \\aa")
  H.eq(cur_row(), 10, "cursor on the next pending hunk")
  H.eq(#sent, 0, "nothing sent while a hunk is pending")
  local inputs = H.stub_input("keep indented 10 as it is")
  vim.cmd("normal \\aR")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(#inputs, 1, "reason asked")
  H.eq(sent[1].params, { reviewId = "r-20", decision = { type = "accept", hunks = { "hA" },
    reason = "keep indented 10 as it is" } }, "a partial accept of the accepted hunk, with the reason")
  review.on_resolved(nil, { reviewId = "r-20", sessionId = "s-1", outcome = "accepted", by = "editor", hunks = { "hA" } })
  unchanged()
end)

H.test("<leader>aA accepts the rest; a hunk rejected before stays rejected", function()
  sent = {}
  request(params("r-21", two))
  vim.api.nvim_win_set_cursor(0, { 10, 0 })
  vim.cmd("normal \\ar")
  H.eq(cur_row(), 5, "wrapped to the pending hunk above")
  vim.cmd("normal \\aA")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(sent[1].params.decision, { type = "accept", hunks = { "hA" } })
  review.on_resolved(nil, { reviewId = "r-21", sessionId = "s-1", outcome = "accepted", by = "editor", hunks = { "hA" } })
end)

H.test("<leader>au undoes a hunk decision until the file is settled", function()
  sent = {}
  request(params("r-22", two))
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd("normal \\aa")
  H.contains(label_of(1), "✓ accepted", "hunk 1 accepted")
  H.eq(cur_row(), 10, "moved on")
  vim.cmd("normal \\au")
  H.eq(cur_row(), 5, "back on the undone hunk")
  H.ok(not label_of(1):find("accepted", 1, true), "hunk 1 pending again: " .. label_of(1))
  H.eq(#sent, 0, "nothing sent")
  vim.cmd("normal \\ar")
  H.eq(cur_row(), 10, "moved on")
  vim.cmd("normal \\aa")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(sent[1].params.decision, { type = "accept", hunks = { "hB" } }, "the undone decision was replaced")
  vim.cmd("normal \\au")
  H.ok(H.notified("already sent"), "a sent decision cannot be undone, and the user is told")
  review.on_resolved(nil, { reviewId = "r-22", sessionId = "s-1", outcome = "accepted", by = "editor", hunks = { "hB" } })
  unchanged()
end)

H.test("after a file's last hunk the cursor goes to the next file's pending hunk", function()
  sent = {}
  local other = dir .. "/next.txt"
  H.write_file(other, "a\nb\nc\nd\n")
  request(params("r-23", { two[1] }))
  local p = params("r-24", { { id = "hN", oldStart = 3, oldLines = 1, newStart = 3, newLines = 1, removed = { "c" }, added = { "C" } } })
  p.file.uri = vim.uri_from_fname(other)
  p.file.path = "next.txt"
  request(p)
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd("normal \\aa")
  H.wait(function()
    return vim.api.nvim_buf_get_name(0) == other and cur_row() == 3
  end, 2000, "the cursor on next.txt's hunk (line 3)")
  H.eq(sent[1].params, { reviewId = "r-23", decision = { type = "accept" } })
  vim.cmd("normal \\ar")
  H.wait(function()
    return #sent == 2
  end, 2000, "next.txt's decision")
  review.on_resolved(nil, { reviewId = "r-23", sessionId = "s-1", outcome = "accepted", by = "editor" })
  review.on_resolved(nil, { reviewId = "r-24", sessionId = "s-1", outcome = "rejected", by = "editor" })
  vim.cmd("buffer " .. buf)
  unchanged()
end)

H.test("the keys are shown in a hint line above the review and in :help agentd", function()
  request(params("r-25", two))
  local hints = vim.api.nvim_buf_get_extmarks(buf, review.hint_ns, 0, -1, { details = true })
  H.eq(#hints, 1, "one hint per review")
  H.eq(hints[1][2], 4, "above the first hunk")
  local text = hints[1][4].virt_lines[1][1][1]
  for _, want in ipairs({ "]h/[h next/prev", "\\aa accept", "\\ar reject", "\\aR reject the rest (reason)",
    "\\aA accept the rest", "\\au undo" }) do
    H.contains(text, want, "hint")
  end
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  H.contains(H.screen(), "agentd review: ]h/[h next/prev", "hint on the screen")
  local help = H.read_file(H.plugin_dir .. "/doc/agentd.txt")
  for _, key in ipairs({ "<leader>aa", "<leader>ar", "<leader>aR", "<leader>aA", "<leader>au", "<leader>ay",
    "<leader>an", "]h", "[h" }) do
    H.ok(help:find(key, 1, true), ":help agentd lists " .. key)
  end
  review.on_resolved(nil, { reviewId = "r-25", sessionId = "s-1", outcome = "rejected", by = "turnEnded" })
  H.eq(#vim.api.nvim_buf_get_extmarks(buf, review.hint_ns, 0, -1, {}), 0, "hint cleared")
end)

H.test("the status says 'waiting for your review' while a review of the running turn is pending", function()
  local session = require("agentd.session")
  local is_running = client.is_running
  client.is_running = function()
    return true
  end
  session.current = { sessionId = "s-1", title = "" }
  session.running["s-1"] = "t1"
  session.progress = { message = "Thinking…" }
  H.contains(session.status(), "Thinking…", "before the review")
  request(params("r-26", two))
  H.contains(session.status(), "waiting for your review", "while it waits")
  H.ok(not session.status():find("Thinking", 1, true), "not 'Thinking…': " .. session.status())
  review.on_resolved(nil, { reviewId = "r-26", sessionId = "s-1", outcome = "rejected", by = "turnEnded" })
  H.contains(session.status(), "Thinking…", "after it")
  client.is_running = is_running
  session.current, session.running["s-1"], session.progress = nil, nil, nil
end)

H.test("an already settled review (-32804) is cleared without an error", function()
  sent = {}
  client.request = function(method, p, cb)
    if share(method, p, cb) then
      return
    end
    table.insert(sent, { method = method, params = p })
    vim.schedule(function()
      cb({ code = -32804, message = "review already resolved" }, nil)
    end)
  end
  request(params("r-13", two))
  vim.cmd("AgentAccept!")
  H.wait(function()
    return #marks() == 0
  end, 2000, "marks cleared")
  H.ok(H.notified("already settled"), "told")
end)

H.done()
