-- End to end: :AgentRewind goes back to before the second turn. The file that turn wrote is
-- gone, the one the user changed since is kept and named, the chat shows the new session (the
-- first turn only) and the prompt box holds the second prompt, which is sent again from there.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local call = H.call

local script = {
  models = { { name = "qwen3:8b", capabilities = { "completion", "tools" } } },
  turns = {
    { when = { lastUserContains = "write one" }, reply = call("write", { path = "one.txt", content = "1\n" }) },
    { when = { lastUserContains = "write one", lastRole = "tool" }, reply = { text = "Wrote one." } },
    { when = { lastUserContains = "write two" }, reply = call("write", { path = "two.txt", content = "2\n" }) },
    { when = { lastUserContains = "write two", lastRole = "tool" }, reply = call("write", { path = "three.txt", content = "3\n" }) },
    { when = { lastUserContains = "write two", lastRole = "tool" }, reply = { text = "Wrote two and three." } },
    { ["repeat"] = true, reply = { text = "again" } },
  },
}

local d

H.test(":AgentRewind restores the turn's files but the user's, and reopens its prompt", function()
  H.need_daemon()
  H.start_fakeollama(script)
  d = H.start_daemon({}, { setup = { approval_mode = "yolo" } })
  H.agent("write one")
  H.wait_turn_end(30000)
  H.agent("write two and three")
  H.wait_turn_end(30000)
  H.eq(H.read_file(d.ws .. "/two.txt"), "2\n", "the second turn wrote two.txt")
  H.write_file(d.ws .. "/three.txt", "mine\n")
  local session = require("agentd.session")
  local before = session.current.sessionId
  H.eq(require("agentd.rewind").last_turn(session.current), 2, "the last turn is the second")
  vim.cmd("AgentRewind")
  H.wait(function()
    return session.current and session.current.sessionId ~= before
  end, 15000, "the chat to switch to the new session")
  local r = require("agentd.rewind").last
  H.eq(r.turnId, "t2", "the last turn")
  H.eq(vim.fn.filereadable(d.ws .. "/two.txt"), 0, "two.txt is gone")
  H.eq(H.read_file(d.ws .. "/three.txt"), "mine\n", "the user's change is kept")
  H.eq(H.read_file(d.ws .. "/one.txt"), "1\n", "the first turn's file stays")
  H.ok(H.notified("three.txt"), "the file left as it is is named")
  local _, input = require("agentd.chat").buffers()
  H.wait(function()
    return table.concat(vim.api.nvim_buf_get_lines(input, 0, -1, false), "\n") == "write two and three"
  end, 10000, "the prompt box to hold the turn's prompt")
  local log = table.concat(require("agentd.chat").lines(), "\n")
  H.contains(log, "write one", "the chat shows the first turn")
  H.ok(not log:find("write two and three", 1, true), "and not the rewound one")
  require("agentd.chat").submit()
  H._turns_before = session.turns_ended
  H.wait_turn_end(30000)
  H.eq(require("agentd.rewind").last_turn(session.current), 2, "the new session's second turn")
end)

H.done()
