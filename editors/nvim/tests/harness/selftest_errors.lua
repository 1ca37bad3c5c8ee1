-- Harness self-test, run by scripts/test.sh before the suite: each "injected:" test raises an
-- error where a test's pcall cannot see it (a callback) and must be reported as FAIL with the
-- injected text; the "control:" tests must pass. test.sh checks the names, the texts and the
-- summary line, so this file is expected to exit 1. Not a test of the plugin.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup({ name = "selftest_errors" })
local uv = vim.uv or vim.loop

H.test("injected: error in a vim.schedule callback", function()
  vim.schedule(function()
    error("injected-schedule")
  end)
end)

H.test("injected: error in a vim.defer_fn callback", function()
  local fired = false
  vim.defer_fn(function()
    fired = true
    error("injected-defer")
  end, 1)
  H.wait(function()
    return fired
  end, 5000, "the deferred callback")
end)

H.test("injected: error in an autocmd callback", function()
  local fired = false
  local group = vim.api.nvim_create_augroup("agentd_selftest", { clear = true })
  vim.api.nvim_create_autocmd("User", {
    group = group,
    pattern = "AgentdSelftest",
    callback = function()
      fired = true
      error("injected-autocmd")
    end,
  })
  -- fired from the event loop, as Neovim fires autocmds, not from the test's own call stack
  vim.schedule(function()
    vim.cmd("doautocmd User AgentdSelftest")
  end)
  H.wait(function()
    return fired
  end, 5000, "the autocmd")
end)

H.test("injected: error in a jobstart callback", function()
  local exited = false
  vim.fn.jobstart({ "true" }, {
    on_exit = function()
      exited = true
      error("injected-job")
    end,
  })
  H.wait(function()
    return exited
  end, 5000, "the job's on_exit")
end)

H.test("injected: error in a luv timer callback", function()
  local fired = false
  local t = uv.new_timer()
  t:start(1, 0, function()
    t:close()
    fired = true
    error("injected-luv")
  end)
  H.wait(function()
    return fired
  end, 5000, "the timer")
end)

H.test("injected: E-message from a scheduled Ex command", function()
  vim.schedule(function()
    vim.cmd("injectedNotACommand")
  end)
end)

H.test("injected: unexpected vim.notify ERROR", function()
  vim.notify("injected-notify", vim.log.levels.ERROR)
end)

H.test("injected: nvim_err_writeln", function()
  vim.api.nvim_err_writeln("injected-err-writeln")
end)

H.test("injected: v:errmsg set by a silenced error", function()
  vim.cmd("silent! injectedSilenced")
end)

H.test("injected: error in a callback of a skipped test", function()
  vim.schedule(function()
    error("injected-skip")
  end)
  H.skip("a skip does not hide an error")
end)

H.test("control: an expected error notification", function()
  vim.notify("expected failure, shown to the user", vim.log.levels.ERROR)
  H.expect_error("expected failure")
end)

H.test("control: a caught error", function()
  local ok = pcall(error, "caught by the test")
  H.ok(not ok, "pcall caught it")
end)

-- between two tests: reported as a failure before the next one
vim.schedule(function()
  error("injected-between")
end)

H.test("control: a clean test after failing ones", function()
  H.eq(1 + 1, 2)
end)

H.on_cleanup(function()
  error("injected-cleanup")
end)

H.done()
