-- End to end (issue 23): terminal escapes the model sends — in its reply and thinking, in a file
-- name it reads, in the lines an edit proposes — are shown as text (^[, ^G, <202e>) in the chat
-- and in the review's virtual lines, never sent to the terminal. Neovim draws every buffer line,
-- virtual text and status line through its grid, which shows control characters as ^X (measured
-- with the real TUI in a pty, docs/security.md); the test checks the grid itself: no cell holds a
-- control character, and the escapes are visible.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local call = H.call
local ESC, BEL, RLO = "\27", "\7", "\226\128\174" -- U+202E RIGHT-TO-LEFT OVERRIDE
local OSC52 = ESC .. "]52;c;ZXZpbA==" .. BEL -- a clipboard write
local SPOOF = "\r" .. ESC .. "[2K" .. ESC .. "[1A  $ ls -la"
local EVIL = "notes" .. ESC .. "]0;pwned" .. BEL .. ".txt"
local MAIN = "package main\n\nfunc main() {}\n"

local script = {
  models = { { name = "qwen3:8b", capabilities = { "completion", "tools", "thinking" } } },
  turns = {
    { when = { lastUserContains = "show me", lastRole = "user" }, reply = call("read", { path = EVIL }) },
    { when = { lastUserContains = "show me", lastRole = "tool", lastContains = "cleared" },
      reply = call("read", { path = "main.go" }) },
    { when = { lastUserContains = "show me", lastRole = "tool", lastContains = "package main" },
      reply = call("edit", { path = "main.go", old_string = "func main() {}", new_string = "func main() {}" .. SPOOF .. " " .. OSC52 }) },
    { when = { lastUserContains = "show me", lastRole = "tool" },
      reply = { thinking = "plan" .. ESC .. "]0;title" .. BEL, text = "Here" .. ESC .. "[2J " .. OSC52 .. " " .. RLO .. "evil" .. SPOOF } },
    { ["repeat"] = true, reply = { text = "fallback answer" } },
  },
}

local review = require("agentd.review")

--- The control characters found in the grid's cells, with their rows.
local function raw_cells(screen)
  local bad = {}
  for i, l in ipairs(screen) do
    if l:find("[%z\1-\8\11-\31\127]") or l:find("\194[\128-\159]") or l:find(RLO, 1, true) then
      table.insert(bad, string.format("row %d: %q", i, l))
    end
  end
  return bad
end

H.test("escapes in the chat and in a review are shown, never sent to the terminal", function()
  H.need_daemon()
  H.start_fakeollama(script)
  local d = H.start_daemon({ ["main.go"] = MAIN, [EVIL] = ESC .. "[2J" .. ESC .. "[Hcleared " .. OSC52 .. "\n" })
  local buf = H.edit(d.ws .. "/main.go")
  H.agent("show me the notes")
  H.wait_review(buf)
  -- The review: the proposed line is a virtual line, its control characters made printable.
  local virt = {}
  for _, m in ipairs(review.marks(buf)) do
    for _, vl in ipairs(m[4].virt_lines or {}) do
      for _, chunk in ipairs(vl) do
        table.insert(virt, chunk[1])
      end
    end
  end
  H.eq(raw_cells(virt), {}, "no control character in the virtual lines")
  H.contains(table.concat(virt, "\n"), "^[]52;c;ZXZpbA==^G", "the proposed line shows the escapes")
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(buf)[1])
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  local screen = H.screen()
  H.eq(raw_cells(screen), {}, "no control character in the grid (review)")
  H.contains(table.concat(screen, "\n"), "^M^[[2K^[[1A  $ ls -la ^[]52;c;ZXZpbA==^G", "the escapes shown in the review")
  H.stub_input("")
  vim.cmd("AgentReject")
  H.wait_turn_end()
  H.eq(H.read_file(d.ws .. "/main.go"), MAIN, "nothing written")
  -- The chat: the reply, the thinking and the read file's name, as text.
  local chat = require("agentd.chat")
  chat.open()
  chat.flush_now()
  local lines = table.concat(chat.lines(), "\n")
  H.contains(lines, "Here" .. ESC .. "[2J " .. OSC52, "the reply's text is kept as it came")
  local log = chat.buffers()
  local win = vim.fn.win_findbuf(log)[1]
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_call(win, function()
    vim.cmd("normal! zR") -- open the thinking fold
  end)
  -- Show the end of the log, where the turn is.
  vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(log), 0 })
  screen = H.screen()
  local text = table.concat(screen, "\n")
  H.eq(raw_cells(screen), {}, "no control character in the grid (chat)")
  H.contains(text, "Here^[[2J ^[]52;c;ZXZpbA==^G", "the reply, escapes shown")
  H.contains(text, "<202e>evil^M^[[2K^[[1A  $ ls -la", "the reply's bidi override and spoof, shown")
  H.contains(text, "Read notes^[]0;pwned^G.txt", "the file name, escapes shown")
  H.contains(text, "plan^[]0;title^G", "the thinking, escapes shown")
end)

H.done()
