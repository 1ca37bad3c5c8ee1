-- Global default mappings (the buffer-local review mappings live in agentd.review.keys). Every
-- mapping points at a <Plug>(agentd-...) mapping defined in plugin/agentd.lua.
local M = {}

local applied = {}

local global = {
  { key = "chat", mode = "n", plug = "<Plug>(agentd-chat)", desc = "agentd: toggle the chat" },
  { key = "prompt", mode = "n", plug = "<Plug>(agentd-prompt)", desc = "agentd: ask the agent" },
  { key = "prompt", mode = "x", plug = "<Plug>(agentd-prompt-selection)", desc = "agentd: ask about the selection" },
  { key = "cancel", mode = "n", plug = "<Plug>(agentd-cancel)", desc = "agentd: cancel the turn" },
  { key = "approve", mode = "n", plug = "<Plug>(agentd-approve)", desc = "agentd: approve the waiting command" },
  { key = "deny", mode = "n", plug = "<Plug>(agentd-deny)", desc = "agentd: deny the waiting command (with a reason)" },
}

function M.apply(keymaps)
  for _, m in ipairs(applied) do
    -- only remove it when it is still ours (the user may have mapped the key since)
    if vim.fn.maparg(m[2], m[1]) == m[3] then
      pcall(vim.keymap.del, m[1], m[2])
    end
  end
  applied = {}
  if type(keymaps) ~= "table" then
    return
  end
  for _, g in ipairs(global) do
    local lhs = keymaps[g.key]
    if lhs then
      -- never override a mapping the user made
      if vim.fn.maparg(lhs, g.mode) == "" then
        vim.keymap.set(g.mode, lhs, g.plug, { remap = true, desc = g.desc })
        table.insert(applied, { g.mode, lhs, g.plug })
      end
    end
  end
end

return M
