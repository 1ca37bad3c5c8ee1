-- End to end: command approvals through vim.ui.select, allow-for-session grants, and cancel.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local call = H.call

local script = {
  models = { { name = "qwen3:8b", capabilities = { "completion", "tools" } } },
  turns = {
    { when = { lastUserContains = "run the greeting" }, reply = call("bash", { command = "python3 -c 'print(\"hello-from-\" + \"agent\")'" }) },
    { when = { lastUserContains = "run the greeting", lastRole = "tool" }, reply = { text = "It printed the greeting." } },
    { when = { lastUserContains = "greet again" }, reply = call("bash", { command = "python3 -c 'print(\"again-from-\" + \"agent\")'" }) },
    { when = { lastUserContains = "greet again", lastRole = "tool" }, reply = { text = "Greeted again." } },
    { when = { lastUserContains = "list files" }, reply = call("bash", { command = "ls -la /" }) },
    { when = { lastUserContains = "list files", lastRole = "tool" }, reply = { text = "Not listed." } },
    { when = { lastUserContains = "take your time" }, reply = { text = "Thinking about it", hang = true } },
    { when = { lastUserContains = "wait for me" }, reply = call("bash", { command = "sleep 30" }) },
    { ["repeat"] = true, reply = { text = "fallback answer" } },
  },
}

local function chat_text()
  require("agentd.chat").flush_now()
  return table.concat(require("agentd.chat").lines(), "\n")
end

local selects

H.test("a command asks with vim.ui.select; allow for the session", function()
  H.need_daemon()
  H.start_fakeollama(script)
  H.start_daemon({ ["README.md"] = "hello\n" })
  selects = H.stub_select(function(items)
    -- Narrowest first: this exact command, then the program (commands starting with `python3`);
    -- the program's scope is the one that also covers the next, different python3 command.
    local exact, program
    for _, it in ipairs(items) do
      local sc = it.decision and it.decision.scope
      if sc and sc.kind == "command" then
        if #sc.commandPrefix == 1 then
          program = program or it
        else
          exact = exact or it
        end
      end
    end
    if not (exact and program) then
      error("want an exact-command scope and a program scope: " .. vim.inspect(items))
    end
    -- The label is the daemon's, as in VS Code: it says what the scope grants.
    if not exact.label:find("Allow for this session: this exact command: `", 1, true) then
      error("the exact-command scope's label: " .. exact.label)
    end
    return program
  end)
  -- statusline integrations: Neovim's own progress event fires, and agentd.status() changes
  local progress_events, statuses = 0, {}
  local ev = require("agentd.compat").progress_event
  vim.api.nvim_create_autocmd(ev[1], {
    pattern = ev[2] or "*",
    callback = function()
      progress_events = progress_events + 1
    end,
  })
  vim.api.nvim_create_autocmd("User", {
    pattern = "AgentdStatus",
    callback = function()
      table.insert(statuses, require("agentd").status())
    end,
  })
  H.agent("run the greeting")
  H.wait_turn_end(30000)
  H.ok(progress_events > 0, "$/progress reached Neovim's progress handling (" .. table.concat(ev, " ") .. ")")
  H.contains(statuses, "⏵ running", "agentd.status() showed the running command")
  H.contains(statuses, "1 review", "agentd.status() showed the pending review")
  H.eq(#selects, 1, "asked once")
  H.contains(selects[1].opts.prompt, "print(\"hello-from-\"", "the exact command is shown")
  local labels = vim.tbl_map(selects[1].opts.format_item, selects[1].items)
  H.eq(labels[1], "Run once", "first choice")
  H.contains(labels[#labels - 1], "Reject", "reject choice")
  H.contains(H.fake_transcript(), "hello-from-agent", "the output reached the model")
  H.contains(chat_text(), "It printed the greeting.", "answer")
end)

H.test("the grant covers the next command: no question", function()
  H.need_daemon()
  H.agent("greet again")
  H.wait_turn_end(30000)
  H.eq(#selects, 1, "not asked again")
  H.contains(H.fake_transcript(), "again-from-agent", "ran")
end)

H.test(":AgentGrants lists the grant and revokes it", function()
  H.need_daemon()
  local calls = H.stub_select(H.pick("python3"))
  vim.cmd("AgentGrants")
  H.wait(function()
    return H.notified("revoked")
  end, 5000, "revoked")
  H.eq(#calls, 1, "one picker")
  H.eq(#calls[1].items, 1, "one grant")
  vim.cmd("AgentGrants")
  H.wait(function()
    return H.notified("no grants in this session")
  end, 5000, "no grants left")
end)

H.test("reject a command with a reason", function()
  H.need_daemon()
  selects = H.stub_select(H.pick("Reject"))
  local inputs = H.stub_input("do not list the root")
  H.agent("list files")
  H.wait_turn_end(30000)
  H.eq(#selects, 1, "asked")
  H.eq(#inputs, 1, "reason asked")
  H.contains(H.fake_transcript(), "do not list the root", "the reason reached the model")
  H.contains(chat_text(), "Not listed.", "turn finished")
end)

H.test(":AgentCancel stops a streaming turn", function()
  H.need_daemon()
  H.agent("take your time")
  H.wait(function()
    return chat_text():find("Thinking about it", 1, true)
  end, 20000, "the turn streams")
  H.ok(require("agentd.session").is_running(), "running")
  vim.cmd("AgentCancel")
  H.wait_turn_end(10000)
  H.contains(chat_text(), "cancelled", "the chat says the turn was cancelled")
end)

H.test(":AgentCancel while a command waits for approval clears the question", function()
  H.need_daemon()
  selects = H.stub_select(function()
    return nil -- the user dismisses the picker
  end)
  H.agent("wait for me")
  H.wait(function()
    return require("agentd.review").pending_count() == 1
  end, 20000, "a pending command review")
  vim.cmd("AgentCancel")
  H.wait_turn_end(10000)
  H.wait(function()
    return require("agentd.review").pending_count() == 0
  end, 5000, "review resolved")
  H.ok(H.notified("the turn ended") or H.notified("cancelled"), "told why")
end)

H.done()
