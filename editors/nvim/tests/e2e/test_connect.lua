-- End to end through `agentd connect` (the default cmd): the shared daemon is started on demand,
-- outlives the connection, and serves a second Neovim attached to the same session. A review
-- answered in the second editor disappears from the first.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()
local uv = vim.uv or vim.loop

local call = H.call

local ORIGINAL = "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"
local EDITED = "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"

local script = {
  models = { { name = "qwen3:8b", capabilities = { "completion", "tools" } } },
  turns = {
    { when = { lastUserContains = "say hello" }, reply = call("read", { path = "main.go" }) },
    { when = { lastUserContains = "say hello", lastRole = "tool", lastContains = "package main" },
      reply = call("edit", { path = "main.go", old_string = "println(\"hi\")", new_string = "println(\"hello\")" }) },
    { when = { lastUserContains = "say hello", lastRole = "tool" }, reply = { text = "Now it says hello." } },
    { ["repeat"] = true, reply = { text = "shared answer" } },
  },
}

local d, base, cmd, env

H.test("agentd connect starts the shared daemon; a reconnect finds the session", function()
  H.need_daemon()
  H.start_fakeollama(script)
  -- the shared daemon exits by itself 2 s after the last editor left (no leftover process)
  d = H.start_daemon({ ["main.go"] = ORIGINAL }, {
    setup = { cmd = { H.agentd_bin(), "connect", "--idle-timeout", "2s", "--ollama-host", H.fake.url } },
  })
  base, cmd, env = d.base, require("agentd.config").get().cmd, require("agentd.config").get().cmd_env
  H.agent("hello there")
  H.wait_turn_end(20000)
  H.contains(require("agentd.chat").lines(), "shared answer", "answered")
  local sid = require("agentd.session").current.sessionId
  -- the connection goes, the daemon stays: reconnecting attaches at once (no journal lock wait)
  d.client.stop()
  H.wait(function()
    return not d.client.any_alive()
  end, 10000, "connection closed")
  H.stub_select(function(items)
    for _, it in ipairs(items) do
      if it.sessionId == sid then
        return it
      end
    end
  end)
  vim.cmd("AgentSessions")
  H.wait(function()
    local c = require("agentd.session").current
    return d.client.get() ~= nil and c and c.sessionId == sid
  end, 10000, "resumed through a new connection")
end)

H.test("a review answered in a second Neovim disappears from this one", function()
  H.need_daemon()
  local nvim = os.getenv("AGENTD_TEST_NVIM")
  if not nvim or nvim == "" then
    H.skip("AGENTD_TEST_NVIM not set (scripts/test.sh sets it)")
  end
  local buf = H.edit(d.ws .. "/main.go")
  local sid = require("agentd.session").current.sessionId
  local review = require("agentd.review")
  H.agent("say hello")
  H.wait_review(buf)
  -- the second editor: attaches to the session and accepts the pending review
  local out, code = {}, nil
  local job = vim.fn.jobstart({ nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n",
    "-c", "luafile " .. H.tests_dir .. "/e2e/helpers/second_editor.lua", "-c", "cquit 1" }, {
    env = {
      AGENTD_SECOND_CMD = vim.json.encode(cmd),
      AGENTD_SECOND_ENV = vim.json.encode(env),
      AGENTD_SECOND_ROOT = d.ws,
      AGENTD_SECOND_SESSION = sid,
      AGENTD_TEST_OUT = H.out,
    },
    stdout_buffered = true,
    stderr_buffered = true,
    on_stdout = function(_, data)
      vim.list_extend(out, data)
    end,
    on_stderr = function(_, data)
      vim.list_extend(out, data)
    end,
    on_exit = function(_, c)
      code = c
    end,
  })
  H.ok(job > 0, "second editor started")
  H.wait(function()
    return code ~= nil
  end, 30000, "second editor done")
  H.eq(code, 0, "second editor succeeded:\n" .. table.concat(out, "\n"))
  H.eq(H.error_lines(out), {}, "the second editor printed no error")
  H.wait(function()
    return #review.marks(buf) == 0
  end, 10000, "the marks cleared here too (review/resolved)")
  H.ok(H.notified("by an editor"), "told another editor settled it")
  H.wait_turn_end(20000)
  H.wait(function()
    return H.read_file(d.ws .. "/main.go") == EDITED
  end, 10000, "the edit applied")
end)

H.test("the shared daemon exits when idle", function()
  H.need_daemon()
  d.client.stop()
  local sock = base .. "/run/agentd/agentd.sock"
  H.wait(function()
    return not uv.fs_stat(sock)
  end, 15000, "the daemon's socket to go away (idle timeout)")
end)

H.done()
