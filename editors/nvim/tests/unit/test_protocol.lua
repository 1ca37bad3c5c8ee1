-- lua/agentd/protocol.lua must match rpc/protocol.json (generated from the Go protocol table,
-- package rpc, by `go test ./rpc -run TestProtocolJSONIsFresh -update`) and the error codes of
-- docs/protocol.md.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()
local P = require("agentd.protocol")

local raw = H.read_file(H.repo .. "/rpc/protocol.json")
local doc = H.read_file(H.repo .. "/docs/protocol.md")
local proto = raw and vim.fn.json_decode(raw) or {}

local function sorted_values(t)
  local out = {}
  for _, v in pairs(t) do
    table.insert(out, v)
  end
  table.sort(out)
  return out
end

-- the agentd methods of the table (not LSP's own)
local function agentd_methods()
  local out = {}
  for _, m in ipairs(proto.methods or {}) do
    if not m.lsp then
      table.insert(out, m)
    end
  end
  return out
end

local function enum(name)
  for _, e in ipairs(proto.enums or {}) do
    if e.name == name then
      local out = {}
      for _, v in ipairs(e.values) do
        table.insert(out, v.value)
      end
      return out
    end
  end
  error("enum " .. name .. " not in rpc/protocol.json")
end

local function sorted(list)
  local out = vim.deepcopy(list)
  table.sort(out)
  return out
end

H.test("rpc/protocol.json is readable and holds the protocol", function()
  H.ok(raw, "cannot read " .. H.repo .. "/rpc/protocol.json")
  H.ok(#agentd_methods() >= 19, "protocol.json lists only " .. #agentd_methods() .. " agentd methods")
end)

H.test("protocol version matches", function()
  H.eq(P.version, proto.protocolVersion, "protocolVersion")
end)

H.test("every method of the table is in the Lua tables and vice versa", function()
  local lua = {}
  vim.list_extend(lua, sorted_values(P.request))
  vim.list_extend(lua, sorted_values(P.notification))
  vim.list_extend(lua, sorted_values(P.server_request))
  table.sort(lua)
  local want = {}
  for _, m in ipairs(agentd_methods()) do
    table.insert(want, m.name)
  end
  table.sort(want)
  H.eq(lua, want, "method names")
end)

H.test("directions and request/notification kinds match the table", function()
  for _, m in ipairs(agentd_methods()) do
    local where
    if m.direction == "client→server" and m.kind == "request" then
      where = P.request
    elseif m.direction == "server→client" and m.kind == "notification" then
      where = P.notification
    elseif m.direction == "server→client" and m.kind == "request" then
      where = P.server_request
    else
      error("no Lua table for " .. m.name .. ": " .. m.direction .. " " .. m.kind)
    end
    H.ok(vim.tbl_contains(sorted_values(where), m.name), m.name .. " is not in the right Lua table (" .. m.direction .. ", " .. m.kind .. ")")
  end
end)

H.test("update kinds match", function()
  H.eq(sorted_values(P.update), sorted(enum("UpdateType")), "UpdateType enum")
end)

H.test("decision types match", function()
  H.eq(sorted_values(P.decision), sorted(enum("Decision")), "Decision enum")
end)

H.test("grant scope kinds match", function()
  H.eq(sorted_values(P.scope), sorted(enum("Scope")), "Scope enum")
  H.eq(sorted_values(P.proposal), sorted(enum("Proposal")), "Proposal enum")
end)

H.test("approval modes match, in order", function()
  H.eq(P.approval_modes, enum("Mode"), "Mode enum")
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
  H.eq(sorted_values(P.error), codes, "error codes")
end)

H.done()
