-- The keys of a buffer under review: the buffer-local mappings of the decisions (set while the
-- buffer has a review, from the keymaps option; the user's own buffer-local mappings win), and
-- how they are shown to the user (the hint line, the labels, messages).
local config = require("agentd.config")

local M = {}

local mapped = {} -- bufnr -> list of lhs we mapped buffer-locally

--- The key of an action (a name in the keymaps option) as the user types it, nil when unmapped.
function M.keyhint(name)
  local km = config.get().keymaps
  if type(km) ~= "table" or not km[name] then
    return nil
  end
  local leader = vim.g.mapleader
  if leader == nil then
    leader = "\\"
  elseif leader == " " then
    leader = "<Space>"
  end
  return (km[name]:gsub("<[Ll]eader>", function()
    return leader
  end))
end

--- The key hint of a review: every action and its key (also in :help agentd-review).
function M.hint_text()
  local parts = {}
  local function add(name, what)
    local k = M.keyhint(name)
    if k then
      table.insert(parts, k .. " " .. what)
    end
  end
  local n, p = M.keyhint("next_hunk"), M.keyhint("prev_hunk")
  if n and p then
    table.insert(parts, n .. "/" .. p .. " next/prev")
  end
  add("accept_hunk", "accept")
  add("reject_hunk", "reject")
  add("reject_hunk_reason", "reject with reason")
  add("reject_file", "reject the rest (reason)")
  add("accept_file", "accept the rest")
  add("undo", "undo")
  if #parts == 0 then
    return " agentd review: :AgentAccept[!] · :AgentReject[!] · :AgentUndo"
  end
  return " agentd review: " .. table.concat(parts, " · ")
end

--- Maps the decision keys in bufnr (once; every review of the buffer shares them).
function M.set_keymaps(bufnr)
  if mapped[bufnr] then
    return
  end
  local km = config.get().keymaps
  mapped[bufnr] = {}
  if type(km) ~= "table" then
    return
  end
  local function map(key, plug, desc)
    local lhs = km[key]
    if not lhs then
      return
    end
    local existing = vim.fn.maparg(lhs, "n", false, true)
    if type(existing) == "table" and existing.buffer == 1 then
      return -- the user's own buffer-local mapping wins
    end
    vim.keymap.set("n", lhs, plug, { buffer = bufnr, remap = true, desc = desc })
    table.insert(mapped[bufnr], lhs)
  end
  map("next_hunk", "<Plug>(agentd-next-hunk)", "agentd: next hunk")
  map("prev_hunk", "<Plug>(agentd-prev-hunk)", "agentd: previous hunk")
  map("accept_hunk", "<Plug>(agentd-accept-hunk)", "agentd: accept hunk")
  map("reject_hunk", "<Plug>(agentd-reject-hunk)", "agentd: reject hunk")
  map("reject_hunk_reason", "<Plug>(agentd-reject-hunk-reason)", "agentd: reject the hunk with a reason")
  map("accept_file", "<Plug>(agentd-accept-file)", "agentd: accept all hunks of the file")
  map("reject_file", "<Plug>(agentd-reject-file)", "agentd: reject the file's pending hunks (with a reason)")
  map("undo", "<Plug>(agentd-undo)", "agentd: undo a hunk decision")
end

--- Removes the keys set_keymaps mapped in bufnr (when its last review is gone).
function M.unset_keymaps(bufnr)
  for _, lhs in ipairs(mapped[bufnr] or {}) do
    pcall(vim.keymap.del, "n", lhs, { buffer = bufnr })
  end
  mapped[bufnr] = nil
end

return M
