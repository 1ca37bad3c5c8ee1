-- agentd.nvim: the Neovim client of agentd, a coding agent daemon driven by a local Ollama model.
--
--   require("agentd").setup({ ... })   -- :h agentd-config
--
-- Modules: config (options), compat (Neovim 0.7-0.12 differences), protocol (method names,
-- mirrored from rpc/protocol.go), client (the LSP connection), session (sessions and turns), chat
-- (the chat view), review (inline diff review, the gate), approval (command approvals), health.
local M = {}

M.version = require("agentd.client").plugin_version

local function define_highlights()
  local links = {
    AgentdAdd = "DiffAdd",
    AgentdAddAccepted = "DiffAdd",
    AgentdDelete = "DiffDelete",
    AgentdSignAdd = "DiffAdd",
    AgentdSignDelete = "DiffDelete",
    AgentdHunkLabel = "Comment",
    AgentdHint = "Comment",
    AgentdAccepted = "DiagnosticHint",
    AgentdRejected = "DiagnosticWarn",
    AgentdHeader = "Title",
    AgentdUser = "Title",
    AgentdTitle = "Title",
    AgentdThinking = "Comment",
    AgentdThinkingHeader = "Comment",
    AgentdNote = "Comment",
    AgentdError = "DiagnosticError",
    AgentdTool = "Special",
    AgentdToolPending = "Comment",
    AgentdToolWaiting = "DiagnosticWarn",
    AgentdToolRunning = "DiagnosticInfo",
    AgentdToolOk = "DiagnosticHint",
    AgentdToolFailed = "DiagnosticError",
  }
  for name, target in pairs(links) do
    vim.api.nvim_set_hl(0, name, { link = target, default = true })
  end
end

local did_setup = false

--- Configures the plugin (:h agentd-config). Raises on an option of the wrong type; warns about
--- unknown options. Can be called again to change options.
function M.setup(opts)
  local config = require("agentd.config")
  local _, unknown = config.set(opts)
  if #unknown > 0 then
    require("agentd.util").warn("unknown option" .. (#unknown == 1 and "" or "s") .. " in setup(): "
      .. table.concat(unknown, ", "))
  end
  define_highlights()
  if not did_setup then
    did_setup = true
    vim.api.nvim_create_autocmd("ColorScheme", {
      group = vim.api.nvim_create_augroup("agentd_highlights", { clear = true }),
      callback = define_highlights,
    })
  end
  require("agentd.keymaps").apply(config.get().keymaps)
  if config.get().autostart then
    require("agentd.client").start()
  end
  return M
end

--- Makes sure setup() ran (commands work without an explicit setup() call, with the defaults).
function M.ensure_setup()
  if not did_setup then
    M.setup({})
  end
end

--- Sends a prompt. context: list of {uri, range?, text?} (defaults to the current file).
function M.prompt(text, context)
  M.ensure_setup()
  require("agentd.session").prompt(text, context)
end

--- A short status for statuslines ("agentd · ⏵ Edit cart.go · 1 review · 19% ctx"), "" when not
--- connected. The User AgentdStatus autocmd fires when it changes.
function M.status()
  return require("agentd.session").status()
end

M.chat = function(o)
  M.ensure_setup()
  require("agentd.chat").open(o)
end

return M
