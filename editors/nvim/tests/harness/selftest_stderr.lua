-- Harness self-test for scripts/test.sh's stderr scan: no harness here, so the error raised in a
-- scheduled callback reaches only Neovim's stderr, and the file exits 0. test.sh must still see it.
local ran = false
vim.schedule(function()
  ran = true
  error("injected-stderr")
end)
vim.wait(5000, function()
  return ran
end, 1)
vim.cmd("qall!")
