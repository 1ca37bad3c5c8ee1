-- document/diagnostics (server -> client request): after an applied edit the daemon asks for a
-- file's diagnostics, to tell the model about the errors its change introduced. The answer waits
-- (at most settleMs) until the buffer's diagnostics were published for its current text: the
-- DiagnosticChanged autocmd records the buffer's changedtick each time they change, and they are
-- fresh when that tick is the buffer's current one. See docs/protocol.md.
local util = require("agentd.util")

local M = {}

-- fresh[bufnr] = the changedtick at the buffer's last DiagnosticChanged.
local fresh = {}

local group = vim.api.nvim_create_augroup("agentd_diagnostics", { clear = true })
vim.api.nvim_create_autocmd("DiagnosticChanged", {
  group = group,
  callback = function(args)
    local b = args.buf
    if b and vim.api.nvim_buf_is_valid(b) then
      fresh[b] = vim.api.nvim_buf_get_changedtick(b)
    end
  end,
})
vim.api.nvim_create_autocmd({ "BufWipeout", "BufDelete" }, {
  group = group,
  callback = function(args)
    fresh[args.buf] = nil
  end,
})

local severities = { "error", "warning", "info", "hint" } -- vim.diagnostic.severity 1..4

--- Whether the buffer's diagnostics were published for its current text (tests).
function M.is_fresh(bufnr)
  return fresh[bufnr] ~= nil and fresh[bufnr] == vim.api.nvim_buf_get_changedtick(bufnr)
end

--- The buffer's diagnostics on the wire: errors and warnings only (the daemon wants no more).
function M.collect(bufnr)
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    local sev = severities[d.severity] or "info"
    if sev == "error" or sev == "warning" then
      table.insert(out, {
        line = d.lnum or 0,
        character = d.col or 0,
        severity = sev,
        message = tostring(d.message or ""),
        source = d.source and tostring(d.source) or nil,
      })
    end
  end
  return out
end

--- The request handler: answers synchronously, after waiting (vim.wait keeps the event loop,
--- and so the language server's messages, running) for fresh diagnostics or settleMs.
function M.on_request(_, params)
  local uri = params and params.uri
  local bufnr = util.buf_for_uri(uri)
  if not bufnr or not vim.api.nvim_buf_is_loaded(bufnr) then
    -- Neovim knows diagnostics of loaded buffers only.
    return { diagnostics = {} }
  end
  local settle = tonumber(params.settleMs) or 0
  if settle > 0 and not M.is_fresh(bufnr) then
    vim.wait(math.min(settle, 10000), function()
      return not vim.api.nvim_buf_is_valid(bufnr) or M.is_fresh(bufnr)
    end, 20)
  end
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return { diagnostics = {} }
  end
  return { diagnostics = M.collect(bufnr) }
end

return M
