-- MCP in the editor: how an MCP server's tool call is shown ("everything › echo", its exact
-- arguments, image placeholders), and the servers a trusted workspace proposes (.agentd/mcp.json,
-- .mcp.json): when a session starts, the user is told about the ones not approved yet (once each);
-- :AgentMcpApprove shows each one's exact definition and approves it with mcp/approve (the record
-- `agentd mcp approve` writes), for the next session. An untrusted workspace gets nothing offered.
local protocol = require("agentd.protocol")
local util = require("agentd.util")

local M = {}

--- "everything › echo"
function M.title(m)
  return (m.server or "?") .. " › " .. (m.tool or "?")
end

local function is_list(t)
  local n = 0
  for _ in pairs(t) do
    n = n + 1
  end
  if n == 0 then
    return false -- an empty table is shown as {} (arguments are objects)
  end
  for i = 1, n do
    if t[i] == nil then
      return false
    end
  end
  return true
end

-- A JSON string. vim.json escapes "/" as "\/" up to Neovim 0.11 and not from 0.12 on: both are
-- valid, but only the second is what was sent. In a run of backslashes before a "/", pairs are
-- encoded backslashes; an odd one left over escapes the slash and is dropped.
local function jstring(s)
  return (vim.json.encode(s):gsub("(\\+)/", function(bs)
    return (#bs % 2 == 1 and bs:sub(2) or bs) .. "/"
  end))
end

-- JSON with sorted keys; indent nil: compact, else pretty with that indent.
local function encode(v, indent, depth)
  local t = type(v)
  if v == nil or v == vim.NIL then
    return "null"
  elseif t == "string" then
    return jstring(v)
  elseif t == "number" or t == "boolean" then
    return vim.json.encode(v)
  elseif t ~= "table" then
    return jstring(tostring(v))
  end
  local nl, pad, inner, colon = "", "", "", ":"
  if indent then
    nl = "\n"
    pad = string.rep(indent, depth)
    inner = string.rep(indent, depth + 1)
    colon = ": "
  end
  local parts = {}
  if is_list(v) then
    for _, x in ipairs(v) do
      table.insert(parts, inner .. encode(x, indent, depth + 1))
    end
    return "[" .. nl .. table.concat(parts, "," .. nl) .. nl .. pad .. "]"
  end
  local keys = vim.tbl_keys(v)
  if #keys == 0 then
    return "{}"
  end
  table.sort(keys, function(a, b)
    return tostring(a) < tostring(b)
  end)
  for _, k in ipairs(keys) do
    table.insert(parts, inner .. jstring(tostring(k)) .. colon .. encode(v[k], indent, depth + 1))
  end
  return "{" .. nl .. table.concat(parts, "," .. nl) .. nl .. pad .. "}"
end

--- The arguments in full, one line (keys sorted).
function M.compact(v)
  if type(v) == "string" then
    return v -- the model's broken arguments, as sent
  end
  return encode(v, nil, 0)
end

--- The arguments in full, pretty-printed (keys sorted), as a list of lines.
function M.pretty_lines(v)
  if type(v) == "string" then
    return util.split_lines(v)
  end
  return util.split_lines(encode(v, "  ", 0))
end

local function fmt_bytes(n)
  n = tonumber(n) or 0
  if n < 1024 then
    return n .. " B"
  elseif n < 1024 * 1024 then
    return string.format("%.1f KB", n / 1024)
  end
  return string.format("%.1f MB", n / 1024 / 1024)
end
M.fmt_bytes = fmt_bytes

--- "[image image/png, 1.2 KB]": what an image of a result is shown as (the data goes to the model).
function M.image_text(im)
  return string.format("[image %s, %s]", im.mimeType or "of unknown type", fmt_bytes(im.bytes))
end

--- What a proposal runs, on one line.
function M.target(p)
  if p.transport == "stdio" then
    local words = { p.command or "" }
    for _, a in ipairs(p.args or {}) do
      table.insert(words, a:match("^[%w_@%%+=:,./-]+$") and a or ("'" .. a:gsub("'", "'\\''") .. "'"))
    end
    return table.concat(words, " ")
  end
  return p.url or ""
end

--- The exact definition the user approves, one fact a line.
function M.describe_proposal(p)
  local lines = { "MCP server " .. p.name .. ", proposed in " .. (p.file or "?") }
  if p.transport == "stdio" then
    table.insert(lines, "command: " .. (p.command or ""))
    table.insert(lines, "args: " .. encode(p.args or {}, nil, 0):gsub("^{}$", "[]"))
    local env = {}
    for k, v in pairs(p.env or {}) do
      table.insert(env, k .. "=" .. v)
    end
    table.sort(env)
    table.insert(lines, "env: " .. (#env > 0 and table.concat(env, ", ") or "(none beyond PATH, HOME, LANG…)"))
    if p.cwd and p.cwd ~= "" then
      table.insert(lines, "cwd: " .. p.cwd)
    end
    table.insert(lines, "network: " .. (p.network and "ON" or "off")
      .. " (it runs in agentd's sandbox: it can write the workspace and its own cache only)")
  else
    table.insert(lines, "url: " .. (p.url or ""))
    local hs = {}
    for k, v in pairs(p.headers or {}) do
      table.insert(hs, k .. ": " .. v)
    end
    table.sort(hs)
    if #hs > 0 then
      table.insert(lines, "headers: " .. table.concat(hs, ", "))
    end
  end
  table.insert(lines, "approval applies from the next session on (the current one keeps its tools)")
  return lines
end

local offered = {} -- proposal hashes already announced after a session start

local function client()
  return require("agentd.client")
end

local function pending(folder, cb)
  client().request(protocol.request.mcp_proposals, folder and { workspaceFolder = folder } or vim.empty_dict(),
    function(err, result)
      if err or type(result) ~= "table" then
        util.warn("mcp/proposals failed: " .. util.err_text(err or { message = "no result" }))
        return cb(nil)
      end
      local out = {}
      for _, p in ipairs(result.proposals or {}) do
        if p.state == protocol.proposal.needs_approval then
          table.insert(out, p)
        end
      end
      cb(result.trusted == true, out, result.workspaceFolder)
    end)
end

--- After a session started in folder (URI; nil: the connection's): say which proposals wait for
--- an approval, once each.
function M.session_started(folder)
  pending(folder, function(trusted, ps)
    if not trusted then
      return
    end
    local names = {}
    for _, p in ipairs(ps) do
      if p.hash and not offered[p.hash] then
        offered[p.hash] = true
        table.insert(names, p.name)
      end
    end
    if #names > 0 then
      util.notify(string.format("this workspace proposes MCP server%s not approved yet: %s. Starting one runs the "
        .. "repository's code (in agentd's sandbox); :AgentMcpApprove shows each and approves it for the next session",
        #names > 1 and "s" or "", table.concat(names, ", ")))
    end
  end)
end

local function approve_one(p, folder, done)
  local lines = M.describe_proposal(p)
  vim.ui.select({ "Approve " .. p.name, "Not now" }, {
    prompt = table.concat(lines, "\n") .. "\nApprove it?",
    kind = "agentd.mcp_approve",
  }, function(choice)
    if choice ~= "Approve " .. p.name then
      return done and done(false)
    end
    client().request(protocol.request.mcp_approve, { workspaceFolder = folder, name = p.name, hash = p.hash or "" },
      function(err, result)
        if err then
          util.error(p.name .. " was not approved: " .. util.err_text(err))
          return done and done(false)
        end
        util.notify(result.note or ("approved " .. p.name))
        return done and done(true)
      end)
  end)
end

--- :AgentMcpApprove — pick a proposed server not approved yet, see its definition, approve it.
function M.approve()
  pending(client().root_uri(), function(trusted, ps, folder)
    if trusted == nil then
      return
    end
    if not trusted then
      util.notify("this workspace is not trusted: the MCP servers it proposes are ignored and cannot be approved")
      return
    end
    if #ps == 0 then
      util.notify("this workspace proposes no MCP server that needs your approval")
      return
    end
    vim.ui.select(ps, {
      prompt = "Approve a workspace MCP server (its exact definition is shown next):",
      kind = "agentd.mcp_proposals",
      format_item = function(p)
        return p.name .. " — " .. M.target(p) .. " (" .. (p.file or "?") .. ")"
      end,
    }, function(p)
      if p then
        approve_one(p, folder)
      end
    end)
  end)
end

return M
