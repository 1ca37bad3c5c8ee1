-- End to end: the defects a new user hit in a walk through the plugin (issue #25), each as
-- described: statuslines that were not redrawn, a details float that kept saying "running", `_`
-- in a file name drawn as an error, an @file mention pasted whole into the chat, :AgentChat in
-- Normal mode, a failed send that lost the prompt, no prompt history, and a model that is not
-- pulled reported only after the first send.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local call = H.call
local MODEL = { name = "qwen3:8b", capabilities = { "completion", "tools" }, contextLength = 40960 }

local function chat_text()
  require("agentd.chat").flush_now()
  return table.concat(require("agentd.chat").lines(), "\n")
end

-- The statusline row as drawn now, without asking for a redraw: what the user sees.
local function statusline()
  local r = vim.o.lines - vim.o.cmdheight
  local s = {}
  for c = 1, vim.o.columns do
    table.insert(s, vim.fn.screenstring(r, c))
  end
  return (table.concat(s):gsub("%s+$", ""))
end

-- A new connection: forget the previous session.
local function fresh()
  local s = require("agentd.session")
  s.current, s.running = nil, {}
end

local function wait_status(text, what)
  local ok = pcall(H.wait, function()
    return statusline():find(text, 1, true)
  end, 20000)
  if not ok then
    error("the statusline never showed " .. what .. " (" .. text .. "); it shows: " .. statusline()
      .. "\nstatus() is: " .. require("agentd").status(), 2)
  end
end

H.test("the statusline, the details float and the chat follow a command's approval and run", function()
  H.need_daemon()
  vim.cmd("syntax on")
  vim.o.columns = 240 -- the whole status fits on the row
  H.start_fakeollama({
    models = { MODEL },
    turns = {
      { when = { lastUserContains = "WALK-NOTES-CONTENT" }, reply = { text = "I read your notes." } },
      { when = { lastUserContains = "run the slow one" },
        -- It waits for the test to write "go" into go.flag. A command runs over a copy-on-write
        -- view of the workspace, which does not show names created after the command looked
        -- them up, but does show new content of a file it has not written.
        reply = call("bash", { command = "until grep -q go go.flag; do sleep 0.05; done; echo slow_one_done" }) },
      { when = { lastUserContains = "run the slow one", lastRole = "tool" }, reply = { text = "It ran; see my_file.go." } },
      { ["repeat"] = true, reply = { text = "fallback answer" } },
    },
  })
  local d = H.start_daemon({ ["my_file.go"] = "package main\n", ["main.go"] = "package main\n",
    ["docs/notes.md"] = "WALK-NOTES-CONTENT\nsecond line\n", ["go.flag"] = "" })
  H.edit("my_file.go")
  vim.o.laststatus = 2
  vim.wo.statusline = "%!v:lua.require'agentd'.status()"
  -- The approval is answered when the test says so.
  local asked
  vim.ui.select = function(items, o, cb)
    asked = { items = items, opts = o, cb = cb }
  end
  H.agent("run the slow one")
  H.wait(function()
    return asked ~= nil
  end, 20000, "the command's approval")
  wait_status("waiting for your review", "the review waiting")
  local run
  for _, it in ipairs(asked.items) do
    if asked.opts.format_item(it) == "Run once" then
      run = it
    end
  end
  H.ok(run, "a Run once choice")
  asked.cb(run)
  wait_status("⏵", "the running command")
  H.ok(not statusline():find("waiting for your review", 1, true), "not 'waiting' while the command runs: " .. statusline())
  -- The call's details while it runs, then after it ended.
  local chat = require("agentd.chat")
  local info
  H.wait(function()
    chat.flush_now()
    for _, t in pairs(chat._state.tools) do
      info = t.info
    end
    return info and info.status == "running"
  end, 10000, "the command's call running in the chat")
  H.ok(chat.show_details(info), "the details float opened")
  H.contains(table.concat(vim.api.nvim_buf_get_lines(chat.details_buf, 0, -1, false), "\n"), "status: running", "details while it runs")
  H.write_file(d.ws .. "/go.flag", "go\n") -- in place: the same file, new content
  H.wait_turn_end(30000)
  wait_status("idle", "idle after the turn")
  H.wait(function()
    return table.concat(vim.api.nvim_buf_get_lines(chat.details_buf, 0, -1, false), "\n"):find("status: completed", 1, true)
  end, 10000, "the details float saying completed after the turn")
  H.contains(table.concat(vim.api.nvim_buf_get_lines(chat.details_buf, 0, -1, false), "\n"), "slow_one_done", "the output in the details")
  pcall(vim.api.nvim_win_close, chat.details_win, true)
  -- `_` in a file name is not drawn as an error in the chat.
  local log = chat.buffers()
  H.contains(chat_text(), "see my_file.go", "the reply in the chat")
  local groups = {}
  for i, l in ipairs(chat.lines()) do
    local col = l:find("my_file", 1, true)
    if col then
      vim.api.nvim_buf_call(log, function()
        local id = vim.fn.synID(i, col + 2, 1)
        table.insert(groups, vim.fn.synIDattr(vim.fn.synIDtrans(id), "name") .. "/" .. vim.fn.synIDattr(id, "name"))
      end)
    end
  end
  H.ok(#groups > 0, "my_file found in the chat")
  for _, g in ipairs(groups) do
    H.ok(not g:find("Error", 1, true), "the `_` of my_file.go is highlighted as " .. g)
  end
end)

H.test("an @file mention shows a line in the chat; its content goes to the model only", function()
  H.need_daemon()
  H.edit("main.go")
  local chat = require("agentd.chat")
  chat.open()
  local _, input = chat.buffers()
  H._turns_before = require("agentd.session").turns_ended
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { "summarise @docs/notes.md please" })
  chat.submit()
  H.wait_turn_end()
  H.contains(H.fake_transcript(), "WALK-NOTES-CONTENT", "the file's content reached the model")
  local text = chat_text()
  H.contains(text, "## You\nsummarise @docs/notes.md please\n  ↳ @docs/notes.md", "the prompt and one line for the mention")
  H.ok(not text:find("WALK-NOTES-CONTENT", 1, true), "the file's content is not in the chat:\n" .. text)
  H.contains(text, "I read your notes.", "the answer")
end)

H.test(":AgentChat types into the prompt at once; a failed send keeps it; <C-p>/<C-n> recall prompts", function()
  H.need_daemon()
  -- Ollama without the configured model: said when the chat opens (connecting), before any prompt.
  H.fake_reset({
    models = { { name = "llama3.2:3b", capabilities = { "completion", "tools" }, contextLength = 8192 } },
    turns = { { ["repeat"] = true, reply = { text = "fallback answer" } } },
  })
  local client = require("agentd.client")
  client.stop()
  H.wait(function()
    return not client.is_running()
  end, 10000, "the connection closed")
  fresh()
  local chat = require("agentd.chat")
  chat.close()
  vim.api.nvim_buf_set_lines(select(2, chat.buffers()), 0, -1, false, {})
  vim.api.nvim_feedkeys(":AgentChat\rfirst words\27", "tx", false)
  local _, input = chat.buffers()
  H.eq(vim.api.nvim_buf_get_lines(input, 0, -1, false), { "first words" }, "what was typed right after :AgentChat")
  H.wait(function()
    return chat_text():find("is not pulled", 1, true)
  end, 15000, "the chat saying the model is not pulled")
  local text = chat_text()
  H.contains(text, "model qwen3:8b is not pulled", "the model")
  H.contains(text, "ollama pull qwen3:8b", "the fix")
  H.contains(text, "Ollama has: llama3.2:3b", "the models there are")
  H.ok(H.notified("is not pulled", vim.log.levels.WARN), "a warning notification")
  H.contains(require("agentd").status(), "model not pulled", "the status says it")
  -- :checkhealth says it too, with the models there are.
  vim.cmd("checkhealth agentd")
  local health = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  H.contains(health, "model qwen3:8b is not pulled", ":checkhealth names the model")
  H.contains(health, "llama3.2:3b", ":checkhealth lists the models there are")
  vim.cmd("bwipeout!")
  -- Sending fails (the model is not there): the prompt stays in the box.
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { "a prompt that cannot be sent" })
  chat.submit()
  H.wait(function()
    return H.notified("session/prompt failed", vim.log.levels.ERROR)
  end, 15000, "the send failing")
  H.wait(function()
    return vim.api.nvim_buf_get_lines(input, 0, -1, false)[1] == "a prompt that cannot be sent"
  end, 5000, "the prompt back in the box after the failed send")
  -- History: sent prompts come back with <C-p> (older) and <C-n> (newer, then the draft).
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { "second prompt" })
  chat.submit()
  H.wait(function()
    return vim.api.nvim_buf_get_lines(input, 0, -1, false)[1] == "second prompt"
  end, 15000, "the second failed prompt back in the box")
  for _, n in ipairs(H.notifications) do
    if tostring(n.msg):find("session/prompt failed", 1, true) then
      n.seen = true -- expected: the model is not there
    end
  end
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { "a draft" })
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(input)[1])
  local function keys(k)
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(k, true, false, true), "tx", false)
    return table.concat(vim.api.nvim_buf_get_lines(input, 0, -1, false), "\n")
  end
  H.eq(keys("<C-p>"), "second prompt", "<C-p> once")
  H.eq(keys("<C-p>"), "a prompt that cannot be sent", "<C-p> twice")
  H.eq(keys("<C-p>"), "summarise @docs/notes.md please", "<C-p> thrice: the previous test's prompt")
  H.eq(keys("<C-p>"), "summarise @docs/notes.md please", "<C-p> at the oldest")
  H.eq(keys("<C-n>"), "a prompt that cannot be sent", "<C-n>")
  H.eq(keys("<C-n>"), "second prompt", "<C-n> twice")
  H.eq(keys("<C-n>"), "a draft", "<C-n> back to the draft")
  -- and in Insert mode
  H.eq(keys("A<C-p><Esc>"), "second prompt", "<C-p> in Insert mode")
end)

H.test(":AgentEditProposal: the user's version of the proposal is written, and the model is told", function()
  H.need_daemon()
  H.fake_reset({
    models = { MODEL },
    turns = {
      { when = { lastUserContains = "shout the second line" }, reply = call("read", { path = "notes.txt" }) },
      { when = { lastUserContains = "shout the second line", lastRole = "tool", lastContains = "\tc" },
        reply = call("edit", { path = "notes.txt", old_string = "b\n", new_string = "B\n" }) },
      { when = { lastUserContains = "shout the second line", lastRole = "tool" }, ["repeat"] = true, reply = { text = "Kept your version." } },
      { ["repeat"] = true, reply = { text = "fallback answer" } },
    },
  })
  local ws = require("agentd.mentions").root()
  H.write_file(ws .. "/notes.txt", "a\nb\nc\n")
  local buf = H.edit("notes.txt")
  H.agent("shout the second line")
  H.wait_review(buf)
  vim.api.nvim_set_current_buf(buf)
  local review = require("agentd.review")
  local b = review.edit_proposal()
  H.ok(b, "the proposal's buffer")
  H.eq(vim.api.nvim_buf_get_lines(b, 0, -1, false), { "a", "B", "c" }, "the proposal as a whole file")
  H.eq(H.read_file(ws .. "/notes.txt"), "a\nb\nc\n", "nothing written yet")
  vim.api.nvim_buf_set_lines(b, 1, 2, false, { "B, the user's way", "d" })
  vim.cmd("write")
  H.wait_turn_end()
  H.eq(H.read_file(ws .. "/notes.txt"), "a\nB, the user's way\nd\nc\n", "the user's version on disk")
  local t = H.fake_transcript()
  H.contains(t, "with the user's version: the user edited your proposed change", "the model is told")
  H.contains(t, "+B, the user's way", "the model sees the user's change")
  H.ok(not vim.api.nvim_buf_is_valid(b), "the proposal's buffer is gone once accepted")
  H.eq(#review.marks(buf), 0, "the review's marks are gone")
end)

H.done()
