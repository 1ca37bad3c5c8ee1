-- Command and tool approvals: review/requested for something that is not a file edit. The
-- notification handler only queues the review; the question is asked with vim.ui.select on the
-- next loop iteration (client-initiated, so any vim.ui.select implementation works, including
-- asynchronous pickers), and the answer goes out as a review/decide request.
local protocol = require("agentd.protocol")
local util = require("agentd.util")

local M = {}

local queue = {} -- review states waiting for a question
local asking = nil -- the review whose question is open

local function review()
  return require("agentd.review")
end

local function describe(r)
  local p = r.params
  local lines = {}
  if p.command then
    local c = p.command
    local argv = c.argv or {}
    local shown
    if #argv == 3 and (argv[1] == "bash" or argv[1] == "sh") and argv[2] == "-c" then
      shown = argv[3]
    else
      shown = table.concat(argv, " ")
    end
    table.insert(lines, "agentd wants to run: " .. shown)
    local where = {}
    if c.cwd and c.cwd ~= "" then
      table.insert(where, "in " .. vim.fn.fnamemodify(c.cwd, ":~"))
    end
    if c.sandbox and c.sandbox ~= "" then
      table.insert(where, "sandbox: " .. c.sandbox)
    end
    table.insert(where, c.network and "network: ON" or "no network")
    if c.timeoutMs and c.timeoutMs > 0 then
      table.insert(where, string.format("timeout %ds", math.floor(c.timeoutMs / 1000)))
    end
    table.insert(lines, "(" .. table.concat(where, ", ") .. ")")
  elseif type(p.mcp) == "table" then
    local mcp = require("agentd.mcp")
    -- the exact arguments the approval is bound to, whole (the details float pretty-prints them)
    table.insert(lines, string.format("agentd wants to call %s (MCP server %s, tool %s) with arguments %s",
      mcp.title(p.mcp), p.mcp.server or "?", p.mcp.tool or "?", mcp.compact(p.mcp.arguments or vim.empty_dict())))
  else
    table.insert(lines, string.format("agentd wants to use %s: %s", p.tool or "a tool", p.label or ""))
  end
  if p.why and p.why ~= "" then
    table.insert(lines, "why: " .. p.why)
  end
  return table.concat(lines, " ")
end
M.describe = describe

-- How narrow a scope is: lower comes first. A command prefix of more words is narrower; a path
-- scope is narrower the deeper it is; a whole tool comes last.
local function breadth(s)
  if s.kind == protocol.scope.command then
    return 100 - #(s.commandPrefix or {})
  elseif s.kind == protocol.scope.path then
    local p = s.pathPrefix or ""
    local depth = (p == "" or p == ".") and 0 or select(2, p:gsub("/", "")) + 1
    return 200 - depth
  end
  return 1000
end

--- The session scopes of a review, narrowest first (a stable order among equals). A scope that
--- covers a whole tool has confirm set: it is granted only after a second question.
function M.scopes(r)
  local list = {}
  for i, s in ipairs(r.params.scopes or {}) do
    table.insert(list, { i = i, s = s })
  end
  table.sort(list, function(a, b)
    local ba, bb = breadth(a.s), breadth(b.s)
    if ba ~= bb then
      return ba < bb
    end
    return a.i < b.i
  end)
  local out = {}
  for _, e in ipairs(list) do
    local s = e.s
    local sc = vim.deepcopy(s)
    sc.label = nil
    local whole = s.kind == protocol.scope.tool
    table.insert(out, {
      label = "Allow for this session: " .. (s.label or s.kind) .. (whole and " (asks to confirm)" or ""),
      decision = { type = protocol.decision.accept_for_session, scope = sc },
      confirm = whole and string.format("Allow every %s call for this session?", s.tool or "tool") or nil,
    })
  end
  return out
end

--- The choices offered for a review, in order (also used by tests).
function M.choices(r)
  local out = {}
  local once = r.params.kind == "command" and "Run once" or "Allow once"
  table.insert(out, { label = once, decision = { type = protocol.decision.accept } })
  vim.list_extend(out, M.scopes(r))
  table.insert(out, { label = "Reject (tell the agent why)", reject = true })
  table.insert(out, { label = "Cancel the turn", decision = { type = protocol.decision.cancel_turn } })
  return out
end

local function finish()
  asking = nil
  vim.schedule(function()
    M.show_next()
  end)
end

local function reject(r)
  local ask = require("agentd.config").get().review.ask_reason
  if not ask then
    review().decide(r, { type = protocol.decision.reject })
    return finish()
  end
  vim.ui.input({ prompt = "Reason for the agent (optional): " }, function(text)
    if text == nil then
      -- cancelled: ask the question again
      table.insert(queue, 1, r)
      return finish()
    end
    text = vim.trim(text)
    review().decide(r, { type = protocol.decision.reject, reason = text ~= "" and text or nil })
    finish()
  end)
end

-- Sends choice's decision; a whole-tool grant first asks "yes/no" (no: the question comes back).
local function decide_choice(r, choice)
  if not choice.confirm then
    review().decide(r, choice.decision)
    return finish()
  end
  vim.ui.select({ "no", "yes" }, { prompt = choice.confirm, kind = "agentd.confirm" }, function(yes)
    if yes == "yes" and review().reviews[r.id] then
      review().decide(r, choice.decision)
    elseif review().reviews[r.id] then
      table.insert(queue, 1, r)
    end
    finish()
  end)
end

local function ask(r)
  asking = r
  local choices = M.choices(r)
  vim.ui.select(choices, {
    prompt = describe(r),
    kind = "agentd.approval",
    format_item = function(c)
      return c.label
    end,
  }, function(choice)
    if not review().reviews[r.id] then
      return finish() -- settled meanwhile (another editor, a grant, the turn ended)
    end
    if r.sent then
      if asking == r then
        asking = nil -- answered by key (:AgentApprove) while the picker was open
      end
      return
    end
    if not choice then
      util.notify("still waiting for your answer on " .. (r.params.label or r.id) .. ": :AgentReview")
      r.dismissed = true
      table.insert(queue, 1, r)
      asking = nil
      return
    end
    if choice.reject then
      return reject(r)
    end
    decide_choice(r, choice)
  end)
end

--- Shows the next waiting question. With force, also one the user dismissed. Returns true when
--- a question is (now) open.
function M.show_next(force)
  if asking then
    return true
  end
  for i, r in ipairs(queue) do
    if force or not r.dismissed then
      table.remove(queue, i)
      r.dismissed = false
      ask(r)
      return true
    end
  end
  return false
end

function M.enqueue(r)
  table.insert(queue, r)
  vim.schedule(function()
    M.show_next()
  end)
end

--- Answers the oldest waiting approval without a picker ("accept", "reject", "session").
function M.answer_current(what)
  local r = asking or queue[1]
  if not r then
    util.notify("no pending review here")
    return
  end
  for i, q in ipairs(queue) do
    if q == r then
      table.remove(queue, i)
      break
    end
  end
  if asking == r then
    asking = nil -- answered by key while its picker is open (or was dismissed)
  end
  if what == "accept" then
    review().decide(r, { type = protocol.decision.accept })
    finish()
  elseif what == "reject" then
    return reject(r)
  elseif what == "session" then
    local scoped = M.scopes(r)
    if #scoped == 0 then
      util.notify("this review offers no session scope")
      table.insert(queue, 1, r)
      return
    end
    vim.ui.select(scoped, { prompt = "Allow for this session", format_item = function(c)
      return c.label
    end }, function(c)
      if c then
        asking = r
        decide_choice(r, c)
      else
        table.insert(queue, 1, r)
      end
    end)
  end
end

function M.drop(id)
  for i, r in ipairs(queue) do
    if r.id == id then
      table.remove(queue, i)
      break
    end
  end
end

function M.drop_all()
  queue = {}
  asking = nil
end

function M.pending()
  return #queue + (asking and 1 or 0)
end

return M
