-- The details of a tool call, as the chat's details float shows them (K or ⏎ on a tool line).
local util = require("agentd.util")

local M = {}

--- The lines of a tool call's details: what was called (heading: its line in the chat), the preview
--- (diff or command), the full result.
function M.lines(info, heading)
  local lines = { "# " .. heading, "" }
  local function section(title, text)
    if text and vim.trim(text) ~= "" then
      table.insert(lines, "## " .. title)
      vim.list_extend(lines, util.split_lines((text:gsub("\n$", ""))))
      table.insert(lines, "")
    end
  end
  table.insert(lines, "tool: " .. (info.tool or "?") .. "  ·  status: " .. (info.status or "?")
    .. "  ·  call " .. (info.callId or "?"))
  if type(info.mcp) == "table" then
    table.insert(lines, "MCP server: " .. (info.mcp.server or "?") .. "  ·  its tool: " .. (info.mcp.tool or "?"))
  end
  table.insert(lines, "")
  if info.arguments ~= nil and info.arguments ~= vim.NIL then
    -- agentd.mcp's encoder: keys sorted and "/" as sent (vim.json writes "\/" before 0.12)
    section("arguments", table.concat(require("agentd.mcp").pretty_lines(info.arguments), "\n"))
  end
  local p = info.preview
  if type(p) == "table" then
    if p.command then
      local c = p.command
      section("command", table.concat(c.argv or {}, " ") .. "\nin " .. (c.cwd or "?")
        .. (c.sandbox and ("; sandbox: " .. c.sandbox) or "") .. (c.network and "; network ON" or ""))
    end
    section("diff", p.unifiedDiff)
    if not p.command and not p.unifiedDiff then
      section("preview", p.summary)
    end
  end
  local r = info.result
  if type(r) == "table" then
    local head = "result: " .. (r.type or "?") .. (r.isError and " (error)" or "")
    if r.elapsedMs and r.elapsedMs > 0 then
      head = head .. string.format(" · %.1fs", r.elapsedMs / 1000)
    end
    if r.truncated then
      head = head .. " · truncated by the daemon"
    end
    table.insert(lines, head)
    table.insert(lines, "")
    section("output", r.text ~= "" and r.text or "(no output)")
    if type(r.images) == "table" and #r.images > 0 then
      section("images", table.concat(vim.tbl_map(require("agentd.mcp").image_text, r.images), "\n"))
    end
    if r.details ~= nil and r.details ~= vim.NIL then
      section("details", table.concat(require("agentd.mcp").pretty_lines(r.details), "\n"))
    end
  elseif info.progress and info.progress ~= "" then
    section("output so far", info.progress)
  end
  return lines
end

return M
