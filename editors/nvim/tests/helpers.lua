-- Test harness for headless Neovim (0.7.2 and later), run as
--   timeout 60 nvim --headless -u NONE -i NONE -n -c 'luafile tests/x/test_y.lua' -c 'cquit 1' </dev/null
-- A test file does:  local H = dofile(<dir>/helpers.lua); H.setup(); H.test("name", fn) ...; H.done()
-- H.done() quits with status 0 when everything passed, else 1 (cquit). An error outside H.test
-- falls through to the runner's trailing `cquit 1`.
--
-- Errors never pass silently. Errors raised in callbacks (vim.schedule, vim.defer_fn, timers,
-- autocmds, jobs, LSP handlers) do not reach the test's pcall: Neovim prints them, sets v:errmsg
-- and keeps them in :messages. So after each test the harness drains the scheduled callbacks and
-- fails the test when
--   - v:errmsg is not empty, or :messages (cleared before each test) holds an error
--     ("Error executing …", "E123: …", "Error detected while processing …", a stack traceback);
--   - vim.api.nvim_err_writeln / nvim_err_write was called;
--   - vim.notify was called with level ERROR and the test did not look at that notification
--     (H.notified / H.expect_error mark it as expected).
-- Errors between tests are reported as failures named after the next test (or the file's end).
-- Before each test a line "agentd-test: begin <name>" goes to stderr, where Neovim prints errors
-- in headless mode, so scripts/test.sh can name the test of any error line it finds there.
local H = {}

local uv = vim.uv or vim.loop
local src = debug.getinfo(1, "S").source:sub(2)
H.tests_dir = vim.fn.fnamemodify(src, ":p:h")
H.plugin_dir = vim.fn.fnamemodify(H.tests_dir, ":h")
H.repo = vim.fn.fnamemodify(H.plugin_dir, ":h:h")
H.out = os.getenv("AGENTD_TEST_OUT") or (H.repo .. "/out/nvim-tests")

local passed, failed, skipped = 0, 0, 0
local failures = {}
local cleanups = {}
local recorded = {} -- errors seen by the wrappers below since the last check: { source, text }
local current = nil -- name of the running test

local function out(s)
  io.stdout:write(s .. "\n")
  io.stdout:flush()
end
H.print = out

function H.version()
  local v = vim.version()
  return string.format("%d.%d.%d", v.major, v.minor, v.patch)
end

--- Puts the plugin on the runtimepath and loads plugin/agentd.lua (-u NONE loads no plugins).
function H.setup(opts)
  opts = opts or {}
  vim.opt.rtp:prepend(H.plugin_dir)
  vim.cmd("runtime plugin/agentd.lua")
  vim.o.columns = opts.columns or 120
  vim.o.lines = opts.lines or 40
  vim.o.swapfile = false
  vim.o.hidden = true
  H.name = opts.name or vim.fn.fnamemodify(debug.getinfo(2, "S").source:sub(2), ":t:r")
  H.notifications = {}
  H.capture_errors()
  local notify = vim.notify
  vim.notify = function(msg, level, o)
    local n = { msg = msg, level = level, test = current }
    table.insert(H.notifications, n)
    if level and level >= vim.log.levels.ERROR then
      table.insert(recorded, { source = "vim.notify(ERROR)", text = tostring(msg), notification = n })
    end
    if os.getenv("AGENTD_TEST_VERBOSE") then
      out("  notify[" .. tostring(level) .. "] " .. tostring(msg))
    end
    if H.notify_passthrough then
      in_notify = true
      local ok, res = pcall(notify, msg, level, o)
      in_notify = false
      if not ok then
        error(res, 0)
      end
      return res
    end
  end
  out(string.format("# %s on nvim %s", H.name, H.version()))
end

--- A fresh directory for this test file (under out/, gitignored).
function H.tmpdir(sub)
  local d = string.format("%s/%s/%s/%s", H.out, H.version(), H.name, sub or "")
  vim.fn.delete(d, "rf")
  vim.fn.mkdir(d, "p")
  return (vim.fn.fnamemodify(d, ":p"):gsub("/$", ""))
end

function H.write_file(path, text)
  vim.fn.mkdir(vim.fn.fnamemodify(path, ":h"), "p")
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

function H.read_file(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local s = f:read("*a")
  f:close()
  return s
end

function H.on_cleanup(fn)
  table.insert(cleanups, fn)
end

local function fmt(v)
  return vim.inspect(v)
end

function H.eq(got, want, what)
  if not vim.deep_equal(got, want) then
    error(string.format("%s\n    got:  %s\n    want: %s", what or "values differ", fmt(got), fmt(want)), 2)
  end
end

function H.ok(cond, what)
  if not cond then
    error(what or "expected a true value", 2)
  end
  return cond
end

function H.contains(haystack, needle, what)
  if type(haystack) == "table" then
    haystack = table.concat(haystack, "\n")
  end
  if not tostring(haystack):find(needle, 1, true) then
    error(string.format("%s\n    %s\n    does not contain %s", what or "text missing", fmt(haystack), fmt(needle)), 2)
  end
end

--- Waits (processing events) until cond() is true; raises with msg after timeout_ms.
function H.wait(cond, timeout_ms, msg)
  local ok = vim.wait(timeout_ms or 10000, function()
    local good, v = pcall(cond)
    return good and v
  end, 10)
  if not ok then
    error("timed out waiting for " .. (msg or "condition"), 2)
  end
end

-- Errors ----------------------------------------------------------------------------------------

-- What Neovim prints for an error: "Error executing lua callback: …", "Error executing vim.schedule
-- lua callback: …", "Error detected while processing …", "E5108: …", and the traceback Neovim 0.7
-- prints alone for an error in a job callback.
local error_patterns = { "Error executing", "Error detected while processing", "stack traceback:", "^E%d+:",
  "[^%w_]E%d+:" }

--- The lines of text (a string or a list of lines) that are Neovim error messages.
function H.error_lines(text)
  if type(text) == "table" then
    text = table.concat(text, "\n")
  end
  local found = {}
  for line in (tostring(text) .. "\n"):gmatch("([^\n]*)\n") do
    for _, p in ipairs(error_patterns) do
      if line:find(p) then
        table.insert(found, line)
        break
      end
    end
  end
  return found
end

local in_notify = false

--- Starts recording errors (H.setup calls it; idempotent).
function H.capture_errors()
  if H._capturing then
    return
  end
  H._capturing = true
  for _, fname in ipairs({ "nvim_err_writeln", "nvim_err_write" }) do
    local orig = vim.api[fname]
    vim.api[fname] = function(str)
      if not in_notify then
        table.insert(recorded, { source = fname, text = tostring(str) })
      end
      return orig(str)
    end
  end
  vim.v.errmsg = ""
  pcall(vim.cmd, "messages clear")
end

--- Runs the callbacks already queued with vim.schedule, and the ones they queue in turn: a
--- callback scheduled now runs after them (the queue is first in, first out). A test that checks
--- that something does NOT happen in a scheduled callback waits for this positive event.
--- Timers (vim.defer_fn) are not covered: wait for what they do instead.
function H.drain(what)
  for _ = 1, 2 do
    local ran = false
    vim.schedule(function()
      ran = true
    end)
    if not vim.wait(10000, function()
      return ran
    end, 1) then
      error("timed out waiting for the scheduled callbacks to run" .. (what and (" (" .. what .. ")") or ""), 2)
    end
  end
end

-- Errors seen since the last call: v:errmsg, error lines in :messages, recorded calls. Clears them.
local function collect()
  local found = {}
  local em = vim.v.errmsg
  if em ~= nil and em ~= "" then
    table.insert(found, "v:errmsg: " .. em)
    vim.v.errmsg = ""
  end
  local ok, msgs = pcall(vim.fn.execute, "messages")
  if ok then
    -- all of it: an error's text may be on a line of its own (0.7 prints a job callback's error
    -- as "<n> function: 0x… <file>:<line>: <message>", then the traceback)
    if #H.error_lines(msgs) > 0 then
      table.insert(found, ":messages:\n" .. vim.trim(msgs))
    end
  else
    table.insert(found, ":messages failed: " .. tostring(msgs))
  end
  pcall(vim.cmd, "messages clear")
  for _, r in ipairs(recorded) do
    if not (r.notification and r.notification.seen) then
      table.insert(found, r.source .. ": " .. r.text)
    end
  end
  recorded = {}
  return found
end

local function begin(name)
  current = name
  -- on a line of its own: Neovim's last message may not end with a newline
  io.stderr:write("\nagentd-test: begin " .. name .. "\n")
  io.stderr:flush()
end

local function indent(s)
  return (tostring(s):gsub("\n", "\n  "))
end

local function fail(name, ms, err, errs)
  failed = failed + 1
  table.insert(failures, name)
  local parts = { string.format("FAIL %s%s", name, ms and string.format(" (%.0f ms)", ms) or "") }
  if err then
    table.insert(parts, "  " .. indent(err))
  end
  if errs and #errs > 0 then
    table.insert(parts, "  errors produced while it ran:")
    for i, e in ipairs(errs) do
      if i > 30 then
        table.insert(parts, string.format("    … and %d more", #errs - 30))
        break
      end
      table.insert(parts, "    " .. (tostring(e):gsub("\n", "\n      ")))
    end
  end
  out(table.concat(parts, "\n"))
end

function H.test(name, fn)
  local pre_drained, pre_err = pcall(H.drain)
  local before = collect()
  if not pre_drained then
    table.insert(before, tostring(pre_err))
  end
  if #before > 0 then
    fail("before '" .. name .. "'", nil, "errors outside a test (file code, or callbacks of an earlier test)", before)
  end
  begin(name)
  local t0 = uv.hrtime()
  local ok, err = xpcall(fn, debug.traceback)
  local drained, derr = pcall(H.drain)
  local errs = collect()
  if not drained then
    table.insert(errs, tostring(derr))
  end
  current = nil
  local ms = (uv.hrtime() - t0) / 1e6
  local skip = not ok and type(err) == "string" and err:find("SKIP:", 1, true)
  if #errs > 0 then
    fail(name, ms, (not ok and not skip) and err or nil, errs)
  elseif ok then
    passed = passed + 1
    out(string.format("ok   %s (%.0f ms)", name, ms))
  elseif skip then
    skipped = skipped + 1
    out(string.format("skip %s: %s", name, err:match("SKIP:%s*([^\n]*)")))
  else
    fail(name, ms, err)
  end
end

function H.skip(why)
  error("SKIP: " .. why, 0)
end

function H.done()
  begin("(cleanup)")
  local cerrs = {}
  for i = #cleanups, 1, -1 do
    local ok, err = xpcall(cleanups[i], debug.traceback)
    if not ok then
      table.insert(cerrs, "cleanup: " .. tostring(err))
    end
  end
  cleanups = {}
  local drained, derr = pcall(H.drain)
  vim.list_extend(cerrs, collect())
  if not drained then
    table.insert(cerrs, tostring(derr))
  end
  if #cerrs > 0 then
    fail("(cleanup, after the last test)", nil, nil, cerrs)
  end
  -- the plugin must not use APIs this Neovim deprecates (vim.deprecate goes through vim.notify)
  local deprecations = {}
  for _, n in ipairs(H.notifications or {}) do
    if tostring(n.msg):lower():find("deprecated", 1, true) then
      table.insert(deprecations, tostring(n.msg))
    end
  end
  if #deprecations > 0 then
    failed = failed + 1
    table.insert(failures, "deprecated API")
    out("FAIL deprecated API used:\n  " .. table.concat(deprecations, "\n  "))
  end
  out(string.format("%s: %d passed, %d failed, %d skipped (nvim %s)", H.name, passed, failed, skipped, H.version()))
  io.stderr:write("\nagentd-test: end\n")
  if failed > 0 then
    out("failed: " .. table.concat(failures, ", "))
    vim.cmd("cquit 1")
  else
    vim.cmd("qall!")
  end
end

-- Screen ----------------------------------------------------------------------------------------

--- The screen grid as lines (after a redraw).
function H.screen()
  vim.cmd("redraw!")
  local rows = {}
  for r = 1, vim.o.lines do
    local s = {}
    for c = 1, vim.o.columns do
      table.insert(s, vim.fn.screenstring(r, c))
    end
    rows[r] = (table.concat(s):gsub("%s+$", ""))
  end
  return rows
end

-- Stubs -----------------------------------------------------------------------------------------

--- Replaces vim.ui.select: answer(items, opts) returns the item to choose (or nil).
function H.stub_select(answer)
  local calls = {}
  vim.ui.select = function(items, o, cb)
    local call = { items = items, opts = o }
    table.insert(calls, call)
    local choice = answer(items, o)
    vim.schedule(function()
      cb(choice, choice and vim.fn.index(items, choice) + 1 or nil)
      call.answered = true
    end)
  end
  return calls
end

function H.stub_input(answer)
  local calls = {}
  vim.ui.input = function(o, cb)
    local call = { opts = o }
    table.insert(calls, call)
    local v = type(answer) == "function" and answer(o) or answer
    vim.schedule(function()
      cb(v)
      call.answered = true
    end)
  end
  return calls
end

--- The first item whose formatted label contains text.
function H.pick(text)
  return function(items, o)
    for _, it in ipairs(items) do
      local label = o and o.format_item and o.format_item(it) or tostring(it)
      if label:find(text, 1, true) then
        return it
      end
    end
    error("no choice containing " .. text)
  end
end

--- The first notification containing text (at level, when given). Looking at an error
--- notification marks it as expected: unexpected ones fail the test.
function H.notified(text, level)
  for _, n in ipairs(H.notifications) do
    if tostring(n.msg):find(text, 1, true) and (level == nil or n.level == level) then
      n.seen = true
      return n
    end
  end
  return nil
end

--- Asserts that an error notification containing text was made (and so expected).
function H.expect_error(text)
  local n = H.notified(text, vim.log.levels.ERROR)
  if not n then
    error("no error notification containing " .. fmt(text), 2)
  end
  return n
end

-- Processes: agentd and the fake Ollama ---------------------------------------------------------

function H.agentd_bin()
  return os.getenv("AGENTD_BIN") or (H.repo .. "/bin/agentd")
end

function H.fakeollama_bin()
  return os.getenv("FAKEOLLAMA_BIN") or (H.repo .. "/out/nvim-tests/bin/fakeollama")
end

--- Skips the calling test unless the daemon binary exists and serves (AGENTD_E2E=0 skips too).
function H.need_daemon()
  if not H._daemon_checked then
    H._daemon_checked = true
    local bin = H.agentd_bin()
    if vim.fn.executable(bin) ~= 1 then
      H._daemon_missing = "agentd binary not built (" .. bin .. ")"
    elseif vim.fn.executable(H.fakeollama_bin()) ~= 1 then
      H._daemon_missing = "fakeollama not built (" .. H.fakeollama_bin() .. ")"
    else
      local help = vim.fn.system({ bin, "serve", "--help" })
      if not help:find("stdio", 1, true) then
        H._daemon_missing = "`agentd serve` not available yet"
      end
    end
  end
  if H._daemon_missing then
    if os.getenv("AGENTD_REQUIRE_DAEMON") == "1" then
      error(H._daemon_missing)
    end
    H.skip(H._daemon_missing)
  end
end

--- A model reply that calls one tool, for fake Ollama scripts.
function H.call(name, args)
  return { toolCalls = { { name = name, arguments = args } } }
end

--- Starts fakeollama with a script (a Lua table or a path); returns { url, stop }.
function H.start_fakeollama(script)
  local path = script
  if type(script) == "table" then
    path = H.tmpdir("fake") .. "/script.json"
    H.write_file(path, vim.json.encode(script))
  end
  local stdin, stdout, stderr = uv.new_pipe(false), uv.new_pipe(false), uv.new_pipe(false)
  local url, errbuf, outbuf = nil, {}, ""
  local handle, pid = uv.spawn(H.fakeollama_bin(), {
    args = { "-script", path, "-exit-with-stdin" },
    stdio = { stdin, stdout, stderr },
  }, function() end)
  assert(handle, "could not start fakeollama: " .. tostring(pid))
  stdout:read_start(function(_, data)
    if data and not url then
      outbuf = outbuf .. data
      local line = outbuf:match("^([^\n]*)\n")
      if line then
        url = line
      end
    end
  end)
  stderr:read_start(function(_, data)
    if data then
      table.insert(errbuf, data)
    end
  end)
  H.wait(function()
    return url ~= nil
  end, 10000, "fakeollama's URL")
  local fake = { url = url, stderr = errbuf }
  function fake.stop()
    pcall(stdin.close, stdin)
    if handle and not handle:is_closing() then
      pcall(uv.process_kill, handle, "sigterm")
    end
  end
  H.on_cleanup(fake.stop)
  H.fake = fake
  return fake
end

local function http(method, url, body)
  local args = { "curl", "-sS", "-X", method, url }
  if body then
    table.insert(args, "--data-binary")
    table.insert(args, body)
  end
  local res = vim.fn.system(args)
  if vim.v.shell_error ~= 0 then
    error("curl " .. url .. " failed: " .. res)
  end
  return res
end

--- The chat requests the fake Ollama received: list of {body, turn}.
function H.fake_requests()
  return vim.json.decode(http("GET", H.fake.url .. "/_fake/requests"))
end

function H.fake_reset(script)
  http("POST", H.fake.url .. "/_fake/reset", vim.json.encode(script))
end

--- Everything the model was sent, as one string (to look for a reason or a tool result).
function H.fake_transcript()
  local parts = {}
  for _, r in ipairs(H.fake_requests()) do
    for _, m in ipairs((r.body or {}).messages or {}) do
      table.insert(parts, (m.role or "?") .. ": " .. tostring(m.content))
    end
  end
  return table.concat(parts, "\n")
end

--- Sets up the plugin against the real daemon (serve --stdio) in a fresh workspace with files.
--- Returns { ws = workspace path, client = agentd.client }.
function H.start_daemon(files, opts)
  opts = opts or {}
  local base = H.tmpdir("run")
  local ws = base .. "/ws"
  vim.fn.mkdir(ws, "p")
  H.write_file(ws .. "/.git/HEAD", "ref: refs/heads/main\n")
  for name, text in pairs(files or {}) do
    H.write_file(ws .. "/" .. name, text)
  end
  vim.cmd("cd " .. vim.fn.fnameescape(ws))
  local env = {
    OLLAMA_HOST = H.fake and H.fake.url or nil,
    XDG_STATE_HOME = base .. "/state",
    XDG_RUNTIME_DIR = base .. "/run",
    XDG_CONFIG_HOME = base .. "/config",
    XDG_CACHE_HOME = base .. "/cache",
    HOME = base .. "/home",
  }
  for _, d in ipairs({ "state", "run", "config", "cache", "home" }) do
    vim.fn.mkdir(base .. "/" .. d, "p")
  end
  local cmd = { H.agentd_bin(), "serve", "--stdio" }
  if H.fake then
    vim.list_extend(cmd, { "--ollama-host", H.fake.url })
  end
  require("agentd").setup(vim.tbl_deep_extend("force", {
    cmd = cmd,
    cmd_env = env,
    root_dir = ws,
    model = "qwen3:8b",
    chat = { flush_ms = 10 },
  }, opts.setup or {}))
  local client = require("agentd.client")
  client.start()
  H.wait(function()
    return client.get() ~= nil
  end, 15000, "the daemon to initialize")
  H.on_cleanup(function()
    client.stop()
    vim.wait(2000, function()
      return not client.is_running()
    end, 20)
  end)
  return { ws = ws, base = base, client = client }
end

--- Opens a workspace file in the current window and waits until the daemon has it.
function H.edit(path)
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  local b = vim.api.nvim_get_current_buf()
  local client = require("agentd.client")
  H.wait(function()
    return vim.lsp.buf_is_attached(b, client.client_id)
  end, 5000, "buffer attached")
  return b
end

--- Waits until buffer buf shows a review's marks; on a timeout the error holds the chat and what
--- the model was sent.
function H.wait_review(buf, timeout)
  local ok = pcall(H.wait, function()
    return #require("agentd.review").marks(buf) > 0
  end, timeout or 20000)
  if not ok then
    error("no review arrived; chat:\n" .. table.concat(require("agentd.chat").lines(), "\n")
      .. "\nmodel transcript:\n" .. H.fake_transcript())
  end
end

--- Sends a prompt with :Agent; H.wait_turn_end() then waits for the end of that turn.
function H.agent(text)
  H._turns_before = require("agentd.session").turns_ended
  vim.cmd("Agent " .. text)
end

--- Waits until a turn that started after the last H.agent() has ended.
function H.wait_turn_end(timeout)
  local s = require("agentd.session")
  local before = H._turns_before or 0
  H.wait(function()
    return s.turns_ended > before and not s.is_running()
  end, timeout or 20000, "the turn to end")
  H._turns_before = s.turns_ended
  require("agentd.chat").flush_now()
end

return H
