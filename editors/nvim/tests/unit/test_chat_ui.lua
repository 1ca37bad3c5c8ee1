-- The chat view fed with session/update notifications (no daemon).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()
require("agentd").setup({ cmd = { "true" }, chat = { flush_ms = 5 } })
local chat = require("agentd.chat")
local session = require("agentd.session")

local sid = "s-1"
session.current = { sessionId = sid, title = "fix the cart", model = "qwen3:8b", approvalMode = "ask" }
local seq = 0
local function upd(u, turn)
  seq = seq + 1
  session.on_update(nil, { sessionId = sid, turnId = turn or "t1", seq = seq, update = u })
end

local function log_text()
  chat.flush_now()
  return table.concat(chat.lines(), "\n")
end

H.test("open shows the log and the prompt box", function()
  chat.reset(session.current, {})
  chat.open()
  local log, input = chat.buffers()
  H.eq(vim.api.nvim_get_current_buf(), input, "cursor in the prompt box")
  H.ok(#vim.fn.win_findbuf(log) == 1, "log visible")
  H.contains(log_text(), "# fix the cart", "title")
end)

H.test("a streamed turn: user message, folded thinking, text, tool line, end", function()
  upd({ type = "turnStarted" })
  H.ok(session.is_running(), "running after turnStarted")
  upd({ type = "userMessage", text = "Why is the total wrong?" })
  for _, w in ipairs({ "The ", "user ", "wants\nthe ", "total." }) do
    upd({ type = "thinkingDelta", text = w })
  end
  for _, w in ipairs({ "Let ", "me ", "look ", "at ", "cart.go." }) do
    upd({ type = "textDelta", text = w })
  end
  upd({ type = "messageCompleted", text = "Let me look at cart.go.", thinking = "The user wants\nthe total." })
  upd({ type = "toolCallStarted", toolCall = { callId = "c1", tool = "read", label = "read", status = "pending" } })
  upd({ type = "toolCallUpdated", toolCall = { callId = "c1", tool = "read", label = "Read cart.go", status = "running" } })
  local text = log_text()
  H.contains(text, "## You\nWhy is the total wrong?", "user message")
  H.contains(text, "Thinking…\nThe user wants\nthe total.", "thinking")
  H.contains(text, "Let me look at cart.go.", "answer text")
  H.contains(text, "⏵ Read cart.go", "tool line running")
  upd({ type = "toolCallCompleted", toolCall = { callId = "c1", tool = "read", label = "Read cart.go", status = "completed",
    result = { type = "ok", isError = false, text = "1\tpackage shop", elapsedMs = 2 } } })
  upd({ type = "textDelta", text = "The discount is applied twice." })
  upd({ type = "messageCompleted", text = "The discount is applied twice." })
  upd({ type = "usage", usage = { promptTokens = 6120, outputTokens = 212, promptMs = 1, outputMs = 1, contextLength = 32768, contextPercent = 19 } })
  upd({ type = "turnCompleted", reason = "done" })
  text = log_text()
  H.contains(text, "✓ Read cart.go", "tool line completed, in place")
  H.ok(not text:find("⏵ Read cart.go", 1, true), "no second tool line")
  H.contains(text, "The discount is applied twice.", "second message")
  H.contains(text, "── done · 6120→212 tokens · 19% context ──", "turn end")
  H.ok(not session.is_running(), "not running after turnCompleted")
  local count = 0
  for _ in text:gmatch("## agentd") do
    count = count + 1
  end
  H.eq(count, 1, "one assistant header per turn")
end)

H.test("thinking is a closed fold", function()
  local log = chat.buffers()
  local win = vim.fn.win_findbuf(log)[1]
  local lnum
  for i, l in ipairs(chat.lines()) do
    if l == "Thinking…" then
      lnum = i
    end
  end
  H.ok(lnum, "thinking header")
  vim.api.nvim_win_call(win, function()
    H.eq(vim.fn.foldclosed(lnum), lnum, "fold starts at the header and is closed")
    H.eq(vim.fn.foldclosedend(lnum), lnum + 2, "fold covers the thinking lines")
    H.eq(vim.fn.foldclosed(lnum + 3), -1, "answer not folded")
  end)
  H.contains(H.screen(), "▸ Thinking (2 lines, za to open)", "fold text on screen")
end)

H.test("turnFailed shows the error with its fix", function()
  upd({ type = "turnStarted" }, "t2")
  upd({ type = "userMessage", text = "again" }, "t2")
  upd({ type = "turnFailed", reason = "error", error = { kind = "model_not_found", message = "model 'qwen3:8b' not found", fix = "run `ollama pull qwen3:8b`" } }, "t2")
  H.contains(log_text(), "✗ model 'qwen3:8b' not found\n  fix: run `ollama pull qwen3:8b`", "in the log")
  local n = H.notified("model 'qwen3:8b' not found")
  H.ok(n, "vim.notify called")
  H.eq(n.level, vim.log.levels.ERROR, "as an error")
  H.contains(n.msg, "fix: run `ollama pull qwen3:8b`", "with the fix")
end)

H.test("a message that did not stream is written from messageCompleted", function()
  upd({ type = "turnStarted" }, "t3")
  upd({ type = "messageCompleted", text = "Written at once." }, "t3")
  upd({ type = "turnCompleted", reason = "done" }, "t3")
  H.contains(log_text(), "Written at once.", "text")
end)

H.test("messages completed in the same flush as their deltas are written once", function()
  upd({ type = "turnStarted" }, "t4")
  upd({ type = "textDelta", text = "First." }, "t4")
  upd({ type = "messageCompleted", text = "First." }, "t4")
  upd({ type = "textDelta", text = "Second." }, "t4")
  upd({ type = "messageCompleted", text = "Second." }, "t4")
  upd({ type = "turnCompleted", reason = "done" }, "t4")
  local text = log_text()
  local _, n1 = text:gsub("First%.", "")
  local _, n2 = text:gsub("Second%.", "")
  H.eq({ n1, n2 }, { 1, 1 }, "each message once")
end)

H.test("updates of another session do not reach the chat", function()
  local before = log_text()
  session.on_update(nil, { sessionId = "s-other", seq = 1, update = { type = "textDelta", text = "NOT HERE" } })
  H.eq(log_text(), before, "unchanged")
end)

H.test("history is rendered on reset", function()
  chat.reset({ sessionId = "s-2", title = "old", model = "m", approvalMode = "ask" }, {
    { type = "user", turnId = "t1", text = "Why?" },
    { type = "tool", turnId = "t1", toolCall = { callId = "a", tool = "read", label = "Read cart.go", status = "completed",
      result = { type = "ok", isError = false, text = "x", elapsedMs = 2 } } },
    { type = "assistant", turnId = "t1", text = "Because.", thinking = "hmm" },
  })
  local text = log_text()
  H.contains(text, "# old", "title")
  H.contains(text, "## You\nWhy?", "user")
  H.contains(text, "✓ Read cart.go", "tool")
  H.contains(text, "Because.", "assistant")
end)

H.test("a prompt's context labels show under the user's words, live and from the history alike", function()
  local context = { "@greet.go", "cart.go:3-5", "cart.go" }
  local function user_block(text)
    local from = text:find("## You", 1, true)
    return from and (text:sub(from, (text:find("\n\n", from, true) or #text + 1) - 1):gsub("\n+$", ""))
  end
  chat.reset({ sessionId = sid, title = "live", model = "m", approvalMode = "ask" }, {})
  upd({ type = "turnStarted" }, "t9")
  upd({ type = "userMessage", text = "why is @greet.go unused?", context = context }, "t9")
  local live = user_block(log_text())
  upd({ type = "turnCompleted", reason = "done" }, "t9")
  chat.reset({ sessionId = "s-5", title = "replayed", model = "m", approvalMode = "ask" }, {
    { type = "user", turnId = "t9", text = "why is @greet.go unused?", context = context },
  })
  local replayed = user_block(log_text())
  H.eq(live, "## You\nwhy is @greet.go unused?\n  ↳ @greet.go\n  ↳ cart.go:3-5\n  ↳ cart.go", "live")
  H.eq(replayed, live, "replayed as live")
end)

H.test("a compaction in the history is a note, never the user's words", function()
  chat.reset({ sessionId = "s-4", title = "long", model = "m", approvalMode = "ask" }, {
    { type = "compaction", turnId = "t2", compaction = { tokensBefore = 0, tokensAfter = 0, summary = "Fixed cart.go." } },
    { type = "user", turnId = "t2", text = "Now the tests" },
    { type = "assistant", turnId = "t2", text = "Done." },
  })
  local text = log_text()
  H.contains(text, "⟲ context compacted: the earlier conversation was replaced by a summary", "compaction note")
  H.contains(text, "## You\nNow the tests", "the user's prompt")
  H.ok(not text:find("Fixed cart.go.", 1, true), "the summary is not shown as a message")
end)

H.test("a running command's output from the history is kept, and later output appends to it", function()
  chat.reset({ sessionId = "s-3", title = "run", model = "m", approvalMode = "ask" }, {
    { type = "user", turnId = "t1", text = "Run the tests" },
    { type = "tool", turnId = "t1", toolCall = { callId = "b1", tool = "bash", label = "go test ./...", status = "running",
      progress = "=== RUN TestA\n--- PASS: TestA\n" } },
  })
  log_text()
  local _, row = next(vim.tbl_filter(function(r) return chat.tool_at(r) ~= nil end, vim.fn.range(0, #chat.lines() - 1)))
  H.ok(row ~= nil, "the command's line is in the log")
  H.contains(table.concat(chat.details_lines(chat.tool_at(row)), "\n"), "--- PASS: TestA", "output from the history")
  session.current = { sessionId = "s-3", title = "run", model = "m", approvalMode = "ask" }
  session.on_update(nil, { sessionId = "s-3", turnId = "t1", seq = 1, update = { type = "toolCallUpdated",
    toolCall = { callId = "b1", tool = "bash", label = "go test ./...", status = "running", progress = "=== RUN TestB\n" } } })
  log_text()
  local details = table.concat(chat.details_lines(chat.tool_at(row)), "\n")
  H.contains(details, "=== RUN TestA\n--- PASS: TestA\n=== RUN TestB", "the output so far, in order")
end)

H.test("the details float shows a tool's arguments and details as sent: '/' is never '\\/'", function()
  local lines = chat.details_lines({ callId = "r1", tool = "read", status = "completed",
    arguments = { path = "./cmd/agentd/main.go", pattern = "a\\/b" },
    result = { type = "ok", text = "package main", details = { file = "cmd/agentd/main.go" } } })
  local text = table.concat(lines, "\n")
  H.contains(text, '"path": "./cmd/agentd/main.go"', "the path as the model sent it")
  H.contains(text, '"pattern": "a\\\\/b"', "a real backslash before a slash stays encoded")
  H.contains(text, '"file": "cmd/agentd/main.go"', "the result's details")
  H.ok(not text:find(".\\/cmd", 1, true), "no .\\/ in the float")
end)

H.test("submitting the prompt box sends session/prompt", function()
  local client = require("agentd.client")
  local sent = {}
  client.request = function(method, params, cb)
    table.insert(sent, { method = method, params = params })
    vim.schedule(function()
      cb(nil, { turnId = "t9" })
    end)
  end
  session.current = { sessionId = "s-2", title = "old", model = "m", approvalMode = "ask" }
  local _, input = chat.buffers()
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { "fix it", "please" })
  chat.submit()
  H.wait(function()
    return #sent == 1
  end, 2000, "session/prompt")
  H.eq(sent[1].method, "session/prompt")
  H.eq(sent[1].params.text, "fix it\nplease")
  H.eq(vim.api.nvim_buf_get_lines(input, 0, -1, false), { "" }, "prompt box cleared")
  H.wait(function()
    return session.is_running("s-2")
  end, 1000, "running")
  -- while a turn runs, a new prompt steers it
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { "not the tests" })
  chat.submit()
  H.wait(function()
    return #sent == 2
  end, 2000, "session/steer")
  H.eq(sent[2], { method = "session/steer", params = { sessionId = "s-2", text = "not the tests" } })
end)

H.test("a prompt whose reply arrives after the turn ended does not look running", function()
  local client = require("agentd.client")
  session.current = { sessionId = "s-3", title = "race", model = "m", approvalMode = "ask" }
  local replied = false
  client.request = function(method, params, cb)
    -- the daemon streams the whole turn before its reply to session/prompt is read
    session.on_update(nil, { sessionId = "s-3", turnId = "t1", seq = 1, update = { type = "turnStarted" } })
    session.on_update(nil, { sessionId = "s-3", turnId = "t1", seq = 2, update = { type = "turnCompleted", reason = "done" } })
    vim.schedule(function()
      cb(nil, { turnId = "t1" })
      replied = true
    end)
  end
  session.prompt("quick one")
  H.wait(function()
    return replied
  end, 2000, "the session/prompt reply to be handled")
  H.ok(not session.is_running("s-3"), "not running")
end)

H.test(":'<,'>Agent sends the selected lines as context; :Agent sends the file", function()
  local client = require("agentd.client")
  local dir = H.tmpdir("ctx")
  client.root = dir
  H.write_file(dir .. "/x.go", "a\nb\nc\nd\n")
  vim.cmd("wincmd p")
  vim.cmd("edit " .. dir .. "/x.go")
  session.current = { sessionId = "s-4", title = "ctx", model = "m", approvalMode = "ask" }
  local sent = {}
  client.request = function(method, params, cb)
    table.insert(sent, { method = method, params = params })
    vim.schedule(function()
      cb(nil, { turnId = "t" .. #sent })
    end)
  end
  vim.cmd("2,3Agent explain these")
  H.wait(function()
    return #sent == 1
  end, 2000, "session/prompt")
  local uri = vim.uri_from_fname(dir .. "/x.go")
  H.eq(sent[1].params, { sessionId = "s-4", text = "explain these", context = { {
    uri = uri, range = { start = { line = 1, character = 0 }, ["end"] = { line = 3, character = 0 } }, text = "b\nc\n",
  } } })
  session.on_update(nil, { sessionId = "s-4", turnId = "t1", seq = 1, update = { type = "turnCompleted", reason = "done" } })
  vim.cmd("Agent and the file")
  H.wait(function()
    return #sent == 2
  end, 2000, "session/prompt")
  H.eq(sent[2].params.context, { { uri = uri } })
  -- a buffer outside the workspace sends no context
  vim.cmd("enew")
  session.on_update(nil, { sessionId = "s-4", turnId = "t2", seq = 2, update = { type = "turnCompleted", reason = "done" } })
  vim.cmd("Agent no file")
  H.wait(function()
    return #sent == 3
  end, 2000, "session/prompt")
  H.eq(sent[3].params.context, nil)
end)

-- The windows of the chat: exactly one log window and one prompt box, the cursor in the latter.
local function one_of_each(what)
  local log, input = chat.buffers()
  H.eq(#vim.fn.win_findbuf(log), 1, what .. ": one log window")
  H.eq(#vim.fn.win_findbuf(input), 1, what .. ": one prompt box")
  H.eq(vim.api.nvim_get_current_buf(), input, what .. ": cursor in the prompt box")
  local lp = vim.api.nvim_win_get_position(vim.fn.win_findbuf(log)[1])
  local ip = vim.api.nvim_win_get_position(0)
  H.eq(ip[2], lp[2], what .. ": prompt box in the log's column")
  H.ok(ip[1] > lp[1], what .. ": prompt box under the log")
end

H.test(":q in the prompt box, then i in the log: the prompt box opens again (issue 11)", function()
  chat.close()
  chat.open()
  local log, input = chat.buffers()
  H.eq(vim.api.nvim_get_current_buf(), input, "in the prompt box")
  vim.cmd("quit")
  H.eq(#vim.fn.win_findbuf(input), 0, "prompt box closed")
  H.ok(chat.is_open(), "log still open")
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(log)[1])
  vim.cmd("normal i")
  one_of_each("after i")
  -- a in the log, with the prompt box open: just moves there
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(log)[1])
  vim.cmd("normal a")
  one_of_each("after a")
end)

H.test(":q in the prompt box, then :AgentNew: the new session's chat has its prompt box (issue 11)", function()
  local client = require("agentd.client")
  local methods = {}
  client.request = function(method, params, cb)
    table.insert(methods, method)
    vim.schedule(function()
      if method == "session/new" then
        cb(nil, { session = { sessionId = "s-new", title = params.title or "", model = "m", approvalMode = "ask" } })
      elseif cb then
        cb(nil, {})
      end
    end)
  end
  chat.close()
  chat.open()
  vim.cmd("quit")
  local _, input = chat.buffers()
  H.eq(#vim.fn.win_findbuf(input), 0, "prompt box closed")
  vim.cmd("AgentNew fresh")
  H.wait(function()
    return session.current and session.current.sessionId == "s-new"
  end, 2000, "the new session")
  one_of_each(":AgentNew")
  H.contains(log_text(), "# fresh", "the new session's title in the log")
end)

H.test(":q in the log leaves the prompt box alone; :AgentChat shows one of each again", function()
  chat.close()
  chat.open()
  local log = chat.buffers()
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(log)[1])
  vim.cmd("quit")
  H.ok(not chat.is_open(), "log closed")
  local client = require("agentd.client")
  local with_client = client.with_client
  client.with_client = function() end -- no daemon in this file
  vim.cmd("AgentChat")
  client.with_client = with_client
  one_of_each(":AgentChat")
end)

H.test("updates that arrive before the attach result are shown after the history, once", function()
  local client = require("agentd.client")
  local reply
  client.request = function(method, params, cb)
    if method == "session/attach" then
      reply = cb
    end
  end
  session.current = { sessionId = "s-1", title = "fix the cart", model = "qwen3:8b", approvalMode = "ask" }
  session.attach("s-7")
  -- The daemon attached this editor and a turn goes on: its first updates overtake the result.
  session.on_update(nil, { sessionId = "s-7", turnId = "t4", seq = 1, update = { type = "textDelta", text = "early " } })
  session.on_update(nil, { sessionId = "s-7", turnId = "t4", seq = 2, update = { type = "textDelta", text = "words" } })
  H.ok(reply ~= nil, "session/attach sent")
  reply(nil, {
    session = { sessionId = "s-7", title = "attached mid-turn", model = "m", approvalMode = "ask", running = true },
    history = { { type = "user", turnId = "t4", text = "explain the cart" } },
  })
  session.on_update(nil, { sessionId = "s-7", turnId = "t4", seq = 3, update = { type = "textDelta", text = " and later" } })
  local text = log_text()
  H.contains(text, "explain the cart", "the history")
  H.contains(text, "early words and later", "the early updates, after the history, then the later one")
  local _, n = text:gsub("early words", "")
  H.eq(n, 1, "shown once")
  H.eq(session.last_seq["s-7"], 3, "seq followed in order")
end)

H.test("on reconnect too, updates that overtake the attach result are kept for after the history", function()
  local compat = require("agentd.compat")
  local orig = compat.request
  local reply
  compat.request = function(_, method, _, cb)
    if method == "session/attach" then
      reply = cb
    end
  end
  session.current = { sessionId = "s-8", title = "before the reconnect", model = "m", approvalMode = "ask" }
  local done = false
  session.on_connect({}, function()
    done = true
  end)
  session.on_update(nil, { sessionId = "s-8", turnId = "t1", seq = 5, update = { type = "textDelta", text = "kept " } })
  reply(nil, {
    session = { sessionId = "s-8", title = "reconnected", model = "m", approvalMode = "ask", running = true },
    history = { { type = "user", turnId = "t1", text = "go on" } },
  })
  compat.request = orig
  session.on_update(nil, { sessionId = "s-8", turnId = "t1", seq = 6, update = { type = "textDelta", text = "too" } })
  H.ok(done, "connected")
  local text = log_text()
  H.contains(text, "go on", "the history")
  H.contains(text, "kept too", "the overtaking update, after the history")
end)

H.test("the log is read-only and q closes the chat", function()
  local log = chat.buffers()
  H.eq(vim.bo[log].modifiable, false, "not modifiable")
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(log)[1])
  vim.cmd("normal q")
  H.ok(not chat.is_open(), "closed")
end)

H.test("float layout", function()
  require("agentd").setup({ cmd = { "true" }, chat = { layout = "float", flush_ms = 5 } })
  chat.open()
  local log = chat.buffers()
  local win = vim.fn.win_findbuf(log)[1]
  H.ok(vim.api.nvim_win_get_config(win).relative ~= "", "log in a float")
  -- :q in the prompt float, then i in the log float: the prompt float opens again
  local _, input = chat.buffers()
  H.eq(vim.api.nvim_get_current_buf(), input, "in the prompt float")
  vim.cmd("quit")
  H.eq(#vim.fn.win_findbuf(input), 0, "prompt float closed")
  vim.api.nvim_set_current_win(win)
  vim.cmd("normal i")
  H.eq(vim.api.nvim_get_current_buf(), input, "cursor in the prompt box")
  H.eq(#vim.fn.win_findbuf(input), 1, "one prompt box")
  H.ok(vim.api.nvim_win_get_config(0).relative ~= "", "the prompt box is a float again")
  chat.close()
  H.ok(not chat.is_open(), "closed")
end)

H.done()
