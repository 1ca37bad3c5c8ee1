-- Rewind: back to before a turn of the chat's session (:AgentRewind [turnId], the last turn by
-- default). The daemon restores the files that turn and the later ones changed — never a file
-- changed since, which it names — and continues the conversation before the turn in a new
-- session; the chat switches to it and the prompt box holds the turn's prompt, to send again,
-- edited or not.
local client = require("agentd.client")
local protocol = require("agentd.protocol")
local util = require("agentd.util")

local M = {}

M.last = nil -- the last rewind's result (tests read it)

--- The number of the session's last turn: from its info when attached, or the turns seen ending.
function M.last_turn(s)
  local n = s.turns or 0
  local prefix = s.sessionId .. "/t"
  for key in pairs(require("agentd.session").ended) do
    if key:sub(1, #prefix) == prefix then
      n = math.max(n, tonumber(key:sub(#prefix + 1)) or 0)
    end
  end
  return n
end

function M.rewind(turn_id)
  local session = require("agentd.session")
  local s = session.current
  if not s then
    util.notify("no session")
    return
  end
  if session.is_running(s.sessionId) then
    util.notify("a turn is running: cancel it first (:AgentCancel)")
    return
  end
  if not turn_id or turn_id == "" then
    local last = M.last_turn(s)
    if last < 1 then
      util.notify("the session has no turn to go back to")
      return
    end
    turn_id = "t" .. last
  end
  client.request(protocol.request.session_rewind, { sessionId = s.sessionId, turnId = turn_id }, function(err, result)
    if err then
      util.error("rewind: " .. ((type(err) == "table" and err.message) or util.err_text(err)))
      return
    end
    M.last = result
    local n = #(result.restored or {})
    local msg = string.format("back to before turn %s: %d file%s restored", result.turnId, n, n == 1 and "" or "s")
    local level = vim.log.levels.INFO
    for _, sk in ipairs(result.skipped or {}) do
      msg = msg .. "\n  left as it is: " .. sk.path .. " (" .. sk.reason .. ")"
      level = vim.log.levels.WARN
    end
    util.notify(msg, level)
    util.reload_files(result.restored or {}, client.root)
    session.attach(result.session.sessionId, function()
      local chat = require("agentd.chat")
      chat.open({ focus = true })
      local _, input = chat.buffers()
      if input and vim.api.nvim_buf_is_valid(input) then
        vim.api.nvim_buf_set_lines(input, 0, -1, false, vim.split(result.prompt or "", "\n", { plain = true }))
      end
    end)
  end)
end

return M
