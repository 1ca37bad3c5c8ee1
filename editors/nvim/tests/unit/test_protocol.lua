-- lua/agentd/protocol.lua must match rpc/protocol.go (and the error codes of docs/protocol.md).
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()
local P = require("agentd.protocol")

local go = H.read_file(H.repo .. "/rpc/protocol.go")
local doc = H.read_file(H.repo .. "/docs/protocol.md")

-- name -> value of every `Name = "value"` / `Name = 123` constant in the Go file
local consts = {}
if go then
  for name, value in go:gmatch("\n%s*([%w_]+)%s*=%s*\"([^\"]*)\"") do
    consts[name] = value
  end
  for name, value in go:gmatch("\n%s*const%s+([%w_]+)%s*=%s*(%d+)") do
    consts[name] = tonumber(value)
  end
end

local function values(t)
  local out = {}
  for _, v in pairs(t) do
    table.insert(out, v)
  end
  table.sort(out)
  return out
end

local function go_values(prefix)
  local out = {}
  for name, v in pairs(consts) do
    if name:sub(1, #prefix) == prefix and type(v) == "string" then
      table.insert(out, v)
    end
  end
  table.sort(out)
  return out
end

H.test("rpc/protocol.go is readable", function()
  H.ok(go, "cannot read " .. H.repo .. "/rpc/protocol.go")
  H.ok(consts.MethodSessionNew == "session/new", "parsed no Method constants")
end)

H.test("protocol version matches", function()
  H.eq(P.version, consts.ProtocolVersion, "ProtocolVersion")
end)

H.test("every Go method is in the Lua table and vice versa", function()
  local lua = {}
  vim.list_extend(lua, values(P.request))
  vim.list_extend(lua, values(P.notification))
  vim.list_extend(lua, values(P.server_request))
  table.sort(lua)
  H.eq(lua, go_values("Method"), "method names")
end)

H.test("directions and request/notification kinds match rpc.Methods", function()
  local block = go:match("var Methods = %[%]MethodInfo{(.-)\n}")
  H.ok(block, "rpc.Methods not found")
  local n = 0
  for const, dir, req in block:gmatch("{(Method[%w]+),%s*([%w]+),%s*(%a+)}") do
    n = n + 1
    local name = consts[const]
    local where
    if dir == "ClientToServer" and req == "true" then
      where = P.request
    elseif dir == "ServerToClient" and req == "false" then
      where = P.notification
    elseif dir == "ServerToClient" and req == "true" then
      where = P.server_request
    else
      error("unexpected kind for " .. const .. ": " .. dir .. " " .. req)
    end
    H.ok(vim.tbl_contains(values(where), name), name .. " is not in the right Lua table (" .. dir .. ", request=" .. req .. ")")
  end
  H.eq(n, #go_values("Method"), "every Method constant is listed in rpc.Methods")
end)

H.test("update kinds match", function()
  H.eq(values(P.update), go_values("Update"), "Update* constants")
end)

H.test("decision types match", function()
  H.eq(values(P.decision), go_values("Decision"), "Decision* constants")
end)

H.test("grant scope kinds match", function()
  H.eq(values(P.scope), go_values("Scope"), "Scope* constants")
end)

H.test("approval modes match the Go comment", function()
  local modes = go:match("ApprovalMode string `json:\"approvalMode\"` // ([%w| %-]+)")
  H.ok(modes, "approval mode comment not found")
  local list = vim.split(vim.trim(modes), "%s*|%s*")
  H.eq(P.approval_modes, list, "approval modes")
end)

H.test("error codes match docs/protocol.md", function()
  H.ok(doc, "cannot read docs/protocol.md")
  local section = doc:match("Error codes:(.-)\n\n")
  H.ok(section, "error code list not found")
  local codes = {}
  for code in section:gmatch("`(%-%d+)`") do
    codes[#codes + 1] = tonumber(code)
  end
  table.sort(codes)
  H.eq(values(P.error), codes, "error codes")
end)

H.done()
