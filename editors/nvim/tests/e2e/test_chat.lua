-- End to end: the real agentd (serve --stdio) with the fake Ollama. Prompt -> streamed answer
-- in the chat; sessions; health; errors with their fix.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local MODEL = { name = "qwen3:8b", capabilities = { "completion", "tools", "thinking" }, contextLength = 40960 }

local function chat_text()
  require("agentd.chat").flush_now()
  return table.concat(require("agentd.chat").lines(), "\n")
end

H.test("a prompt streams the answer into the chat", function()
  H.need_daemon()
  H.start_fakeollama({
    models = { MODEL },
    turns = {
      { name = "answer", when = { lastUserContains = "hello agent" },
        reply = { thinking = "The user greets me. I answer briefly.", text = "Hello! The answer is 42.", chunkDelay = 2 } },
      { name = "second", when = { lastUserContains = "and again" }, reply = { text = "Still 42." } },
      { name = "fallback", ["repeat"] = true, reply = { text = "fallback answer" } },
    },
  })
  H.start_daemon({ ["main.go"] = "package main\n\nfunc main() {}\n" })
  H.edit("main.go")
  H.agent("hello agent")
  H.wait(function()
    return chat_text():find("The answer is 42.", 1, true)
  end, 20000, "the answer in the chat")
  H.wait_turn_end()
  local text = chat_text()
  H.contains(text, "## You\nhello agent\n  ↳ main.go\n", "the prompt with its context label")
  H.ok(not text:find("The user is looking at", 1, true), "no appended context in the chat")
  H.contains(text, "Thinking…", "thinking header")
  H.contains(text, "The user greets me.", "thinking text")
  H.contains(text, "Hello! The answer is 42.", "answer")
  H.contains(text, "── done", "turn end line")
  local s = require("agentd.session").current
  H.ok(s and s.sessionId, "a session was created")
  H.eq(s.model, "qwen3:8b", "with the configured model")
  -- the prompt carried the current file as context; the model saw the prompt
  H.contains(H.fake_transcript(), "hello agent", "prompt reached the model")
  -- the thinking is folded in the chat window
  local log = require("agentd.chat").buffers()
  local win = vim.fn.win_findbuf(log)[1]
  H.ok(win, "chat window open")
  local lnum
  for i, l in ipairs(require("agentd.chat").lines()) do
    if l == "Thinking…" then
      lnum = i
    end
  end
  vim.api.nvim_win_call(win, function()
    H.eq(vim.fn.foldclosed(lnum), lnum, "thinking folded")
  end)
end)

H.test("a second prompt in the same session", function()
  H.need_daemon()
  local sid = require("agentd.session").current.sessionId
  H.agent("and again")
  H.wait(function()
    return chat_text():find("Still 42.", 1, true)
  end, 20000, "second answer")
  H.wait_turn_end()
  H.eq(require("agentd.session").current.sessionId, sid, "same session")
end)

H.test(":AgentNew and :AgentSessions resume a session with its history", function()
  H.need_daemon()
  local first = require("agentd.session").current
  vim.cmd("AgentNew second session")
  H.wait(function()
    local c = require("agentd.session").current
    return c and c.sessionId ~= first.sessionId
  end, 10000, "new session")
  H.ok(not chat_text():find("hello agent", 1, true), "new session starts empty")
  local calls = H.stub_select(function(items, o)
    for _, it in ipairs(items) do
      if it.sessionId == first.sessionId then
        return it
      end
    end
  end)
  vim.cmd("AgentSessions")
  H.wait(function()
    local c = require("agentd.session").current
    return c and c.sessionId == first.sessionId
  end, 10000, "attached to the first session")
  H.ok(#calls[1].items >= 2, "both sessions listed")
  H.wait(function()
    return chat_text():find("hello agent", 1, true)
  end, 5000, "history in the chat")
  H.contains(chat_text(), "The answer is 42.", "assistant history")
  -- :Agent sent the current file as context: the history shows the words and the file's label,
  -- as the chat showed them live, never the context the model read
  H.contains(chat_text(), "## You\nhello agent\n  ↳ main.go\n", "the prompt with its context label")
  H.ok(not chat_text():find("The user is looking at", 1, true), "no appended context in the history")
end)

H.test("sessions survive a reconnect", function()
  H.need_daemon()
  local client = require("agentd.client")
  local sid = require("agentd.session").current.sessionId
  client.stop()
  H.wait(function()
    return not client.any_alive()
  end, 10000, "the daemon process gone")
  require("agentd.chat").reset({ sessionId = "blank", title = "blank" }, {})
  H.stub_select(function(items)
    for _, it in ipairs(items) do
      if it.sessionId == sid then
        return it
      end
    end
  end)
  -- The old daemon process may still hold the session's journal for a moment after its
  -- connection closed ("open for writing elsewhere"): try again like a user would.
  local resumed = false
  for _ = 1, 5 do
    vim.cmd("AgentSessions")
    resumed = pcall(H.wait, function()
      return client.get() ~= nil and require("agentd.session").current.sessionId == sid
        and chat_text():find("The answer is 42.", 1, true)
    end, 3000)
    if resumed then
      break
    end
  end
  H.ok(resumed, "resumed after reconnecting")
end)

H.test(":checkhealth agentd against the daemon", function()
  H.need_daemon()
  vim.cmd("checkhealth agentd")
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), "\n")
  H.contains(text, "protocol version 1", "protocol")
  H.contains(text, "reachable: ollama http://127.0.0.1:", "engine")
  H.contains(text, "model qwen3:8b is pulled", "model")
  H.ok(not text:find("ERROR", 1, true), "no errors:\n" .. text)
  vim.cmd("bwipeout!")
  vim.cmd("AgentStatus")
  H.wait(function()
    return H.notified("· engine ollama http://127.0.0.1:") and H.notified(": ok")
  end, 5000, ":AgentStatus message")
end)

H.test(":AgentMode changes the approval mode of the session", function()
  H.need_daemon()
  vim.cmd("AgentMode auto-edit")
  H.wait(function()
    return require("agentd.session").current.approvalMode == "auto-edit"
  end, 5000, "mode set")
  H.stub_select(H.pick("plan"))
  vim.cmd("AgentMode")
  H.wait(function()
    return require("agentd.session").current.approvalMode == "plan"
  end, 5000, "mode picked")
  vim.cmd("AgentMode ask")
end)

H.test(":AgentModel lists the models; a missing model fails with its fix", function()
  H.need_daemon()
  local calls = H.stub_select(H.pick("qwen3:8b"))
  vim.cmd("AgentModel")
  H.wait(function()
    return #calls == 1
  end, 5000, "model picker")
  H.eq(#calls[1].items, 1, "one model pulled")
  vim.cmd("AgentModel llama-missing:1b")
  vim.cmd("AgentNew")
  H.wait(function()
    return require("agentd.session").current.model == "llama-missing:1b"
  end, 10000, "session with the missing model")
  H.agent("anything")
  local E = vim.log.levels.ERROR
  H.wait(function()
    return H.notified("llama-missing", E)
  end, 20000, "an error about the model")
  H.contains(H.notified("llama-missing", E).msg, "ollama pull", "with the fix")
  H.contains(chat_text(), "ollama pull llama-missing:1b", "the chat shows the fix too")
  require("agentd.config").get().model = "qwen3:8b"
end)

H.test(":q in the prompt box, then i in the log, then :AgentNew: the prompt box comes back (issue 11)", function()
  H.need_daemon()
  local chat = require("agentd.chat")
  local session = require("agentd.session")
  chat.close()
  chat.open()
  local log, input = chat.buffers()
  local function one_of_each(what)
    H.eq(#vim.fn.win_findbuf(log), 1, what .. ": one log window")
    H.eq(#vim.fn.win_findbuf(input), 1, what .. ": one prompt box")
    H.eq(vim.api.nvim_get_current_buf(), input, what .. ": cursor in the prompt box")
  end
  vim.cmd("quit")
  H.eq(#vim.fn.win_findbuf(input), 0, "prompt box closed")
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(log)[1])
  vim.cmd("normal i")
  one_of_each("i in the log")
  vim.cmd("quit")
  local before = session.current.sessionId
  vim.cmd("AgentNew after quit")
  H.wait(function()
    return session.current.sessionId ~= before
  end, 10000, "the new session")
  one_of_each(":AgentNew")
  H.contains(chat_text(), "# after quit", "the new session in the log")
end)

H.done()
