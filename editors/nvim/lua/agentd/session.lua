-- Sessions and turns: the current session, prompts, steering, cancel, revert, modes, models.
-- Every call is asynchronous (callbacks); the chat view renders what arrives in session/update.
local client = require("agentd.client")
local config = require("agentd.config")
local protocol = require("agentd.protocol")
local util = require("agentd.util")

local M = {}

M.current = nil -- SessionInfo of the session the chat shows
M.running = {} -- sessionId -> turnId while a turn runs
M.last_seq = {} -- sessionId -> last seq seen
M.gaps = 0 -- seq gaps seen (updates lost: the chat re-syncs at the end of the turn)
M.progress = nil -- latest $/progress value ({title, message, percentage})
M.ended = {} -- "sessionId/turnId" of turns that ended (a prompt's reply may come after the end)
M.turns_ended = 0 -- count of turnCompleted/turnFailed seen (tests wait on it)
M.usage = nil -- latest usage of the current session
M.first_prompts = {} -- sessionId -> first prompt sent from this editor (title when the daemon has none)
local listeners = {}

local function chat()
  return require("agentd.chat")
end

--- fn(event, data) is called on "session", "turn", "status" changes (chat header, statusline).
function M.on_change(fn)
  table.insert(listeners, fn)
end

local function changed(what)
  for _, fn in ipairs(listeners) do
    pcall(fn, what)
  end
  util.status_changed()
end

function M.is_running(id)
  id = id or (M.current and M.current.sessionId)
  return id ~= nil and M.running[id] ~= nil
end

local function set_current(info)
  M.current = info
  M.usage = nil
  changed("session")
end

--- The title for a session started by a prompt: its first line, at most 60 characters.
function M.prompt_title(text)
  local line = vim.trim((util.split_lines(vim.trim(text or ""))[1]) or "")
  if vim.fn.strchars(line) > 60 then
    line = vim.fn.strcharpart(line, 0, 59) .. "…"
  end
  return line
end

--- cb(session) with the current session, creating one if there is none (titled title);
--- on_error() when it could not be created.
function M.ensure(cb, title, on_error)
  if M.current then
    cb(M.current)
    return
  end
  M.new(title, cb, on_error)
end

function M.new(title, cb, on_error)
  client.request(protocol.request.session_new, {
    workspaceFolder = nil, -- the connection's folder
    model = config.get().model,
    approvalMode = config.get().approval_mode,
    title = (title and title ~= "") and title or nil,
  }, function(err, result)
    if err then
      util.error("session/new failed: " .. util.err_text(err))
      if on_error then
        on_error(err)
      end
      return
    end
    local previous = M.current
    set_current(result.session)
    chat().reset(result.session, {})
    if previous and previous.sessionId ~= result.session.sessionId and not M.is_running(previous.sessionId) then
      client.request(protocol.request.session_detach, { sessionId = previous.sessionId })
    end
    -- the workspace may propose MCP servers not approved yet: say so
    require("agentd.mcp").session_started(result.session.workspaceFolder)
    if cb then
      cb(result.session)
    end
  end)
end

--- Attaches to a session (live or stored) and shows its history and pending reviews.
-- Updates the daemon sends from the moment it attached this editor can arrive before the
-- session/attach result. They come after the result's history, so they are kept (on_update) until
-- the history is shown, then applied (end_attach with replay), or dropped when the attach failed.
local function begin_attach(session_id)
  local a = { sessionId = session_id, buffered = {} }
  M._attaching = a
  return a
end

local function end_attach(a, replay)
  if M._attaching == a then
    M._attaching = nil
  end
  if replay then
    for _, params in ipairs(a.buffered) do
      M.on_update(nil, params)
    end
  end
end

function M.attach(session_id, cb)
  local attaching = begin_attach(session_id)
  client.request(protocol.request.session_attach, { sessionId = session_id }, function(err, result)
    if err then
      end_attach(attaching, false)
      util.error("session/attach failed: " .. util.err_text(err))
      return
    end
    local previous = M.current
    local h1 = (result.history or {})[1]
    if h1 and h1.type == "user" and not M.first_prompts[session_id] then
      M.first_prompts[session_id] = h1.text
    end
    set_current(result.session)
    if result.session.running then
      M.running[session_id] = M.running[session_id] or "?"
    end
    chat().reset(result.session, result.history or {})
    for _, r in ipairs(result.pendingReviews or {}) do
      require("agentd.review").on_requested(nil, r)
    end
    end_attach(attaching, true)
    if previous and previous.sessionId ~= session_id and not M.is_running(previous.sessionId) then
      client.request(protocol.request.session_detach, { sessionId = previous.sessionId })
    end
    if cb then
      cb(result.session)
    end
  end)
end

--- A session's title: the daemon's, else the first line of its first prompt, else its id.
function M.title_of(s)
  if s.title and s.title ~= "" then
    return s.title
  end
  local first = M.first_prompts[s.sessionId or ""]
  if type(first) == "string" and vim.trim(first) ~= "" then
    return M.prompt_title(first)
  end
  return s.sessionId or "(untitled)"
end

local function fmt_session(s)
  local title = M.title_of(s)
  local when = (s.updatedAt or ""):gsub("T", " "):gsub("Z$", ""):sub(1, 16)
  local flags = {}
  if s.running then
    table.insert(flags, "running")
  end
  if M.current and M.current.sessionId == s.sessionId then
    table.insert(flags, "current")
  end
  return string.format("%s  [%d turn%s, %s, %s]%s", title, s.turns or 0, (s.turns == 1) and "" or "s",
    s.model or "?", when, #flags > 0 and (" " .. table.concat(flags, ", ")) or "")
end
M.format_session = fmt_session

--- Lists the workspace's sessions and attaches to the one picked.
function M.pick()
  client.request(protocol.request.session_list, { workspaceFolder = client.root_uri() }, function(err, result)
    if err then
      util.error("session/list failed: " .. util.err_text(err))
      return
    end
    local sessions = result.sessions or {}
    if #sessions == 0 then
      util.notify("no sessions in this workspace yet: :Agent {prompt} starts one")
      return
    end
    table.sort(sessions, function(a, b)
      return (a.updatedAt or "") > (b.updatedAt or "")
    end)
    vim.ui.select(sessions, { prompt = "agentd sessions", format_item = fmt_session, kind = "agentd.session" },
      function(choice)
        if choice then
          M.attach(choice.sessionId, function()
            chat().open()
          end)
        end
      end)
  end)
end

--- Sends a prompt: a new turn, or a steering message while a turn runs.
--- Sends a prompt (or steers the running turn); on_error(err) when it was not sent.
function M.prompt(text, context, on_error)
  if not text or vim.trim(text) == "" then
    util.warn("empty prompt")
    return
  end
  M.ensure(function(s)
    local method = M.is_running(s.sessionId) and protocol.request.session_steer or protocol.request.session_prompt
    if (not s.title or s.title == "") and not M.first_prompts[s.sessionId] then
      M.first_prompts[s.sessionId] = text
      s.title = M.prompt_title(text)
      changed("session")
    end
    local params = { sessionId = s.sessionId, text = text }
    if method == protocol.request.session_prompt and context and #context > 0 then
      params.context = context
    end
    if config.get().chat.open_on_prompt then
      chat().open({ focus = false })
    end
    client.request(method, params, function(err, result)
      if err and err.code == protocol.error.turn_running then
        -- a turn started meanwhile (another editor): steer it instead
        client.request(protocol.request.session_steer, { sessionId = s.sessionId, text = text }, function(e2, r2)
          if e2 then
            util.error("session/steer failed: " .. util.err_text(e2))
            if on_error then
              on_error(e2)
            end
          elseif r2 and not M.ended[s.sessionId .. "/" .. tostring(r2.turnId)] then
            M.running[s.sessionId] = r2.turnId
          end
        end)
        return
      end
      if err then
        util.error(method .. " failed: " .. util.err_text(err))
        chat().note("✗ " .. (err.message or util.err_text(err)), "AgentdError")
        if on_error then
          on_error(err)
        end
        return
      end
      if not M.ended[s.sessionId .. "/" .. tostring(result.turnId)] then
        M.running[s.sessionId] = result.turnId
        changed("turn")
      end
    end)
  end, M.prompt_title(text), on_error)
end

function M.cancel()
  local s = M.current
  if not s then
    util.notify("no session")
    return
  end
  client.request(protocol.request.session_cancel, { sessionId = s.sessionId }, function(err, result)
    if err then
      util.error("session/cancel failed: " .. util.err_text(err))
    elseif result and not result.cancelled then
      util.notify("no turn is running")
    end
  end)
end

--- Reloads clean buffers of files the daemon changed on disk (no W11 prompt).
local function reload(paths)
  util.reload_files(paths, client.root)
end

--- Restores the files a turn changed (the last turn without turn_id), after a yes/no question.
function M.revert(turn_id)
  local s = M.current
  if not s then
    util.notify("no session")
    return
  end
  turn_id = (turn_id and turn_id ~= "") and turn_id or nil
  local prompt = string.format("Restore the files %s changed? (files you changed since are skipped)",
    turn_id and ("turn " .. turn_id) or "the last turn")
  vim.ui.select({ "no", "yes" }, { prompt = prompt, kind = "agentd.confirm" }, function(answer)
    if answer == "yes" then
      M.do_revert(s, turn_id)
    end
  end)
end

function M.do_revert(s, turn_id)
  client.request(protocol.request.session_revert,
    { sessionId = s.sessionId, turnId = turn_id }, function(err, result)
      if err then
        -- the daemon's message says what and why; the JSON-RPC code means nothing to a user
        util.error("revert: " .. ((type(err) == "table" and err.message) or util.err_text(err)))
        return
      end
      local msg = string.format("reverted turn %s: %d file%s restored", result.turnId or "?",
        #(result.restored or {}), #(result.restored or {}) == 1 and "" or "s")
      if result.restored and #result.restored > 0 then
        msg = msg .. " (" .. table.concat(result.restored, ", ") .. ")"
      end
      local level = vim.log.levels.INFO
      for _, sk in ipairs(result.skipped or {}) do
        msg = msg .. "\n  skipped " .. sk.path .. ": " .. sk.reason
        level = vim.log.levels.WARN
      end
      util.notify(msg, level)
      reload(result.restored)
      -- the chat keeps a line (not a second message)
      chat().note("↶ " .. msg:gsub("\n.*", ""))
    end)
end

function M.set_mode(mode)
  local function apply(m)
    M.ensure(function(s)
      client.request(protocol.request.session_set_mode, { sessionId = s.sessionId, approvalMode = m },
        function(err, result)
          if err then
            util.error("session/setMode failed: " .. util.err_text(err))
            return
          end
          s.approvalMode = result.approvalMode
          util.notify("approval mode: " .. result.approvalMode)
          changed("session")
        end)
    end)
  end
  if mode and mode ~= "" then
    apply(mode)
    return
  end
  vim.ui.select(protocol.approval_modes, { prompt = "agentd approval mode" }, function(m)
    if m then
      apply(m)
    end
  end)
end

-- Whether Ollama has the model new sessions use, from daemon/status: nil (not asked, or it has
-- it), or what is wrong with the fix and the models Ollama has.
M.model_problem = nil
local model_checked -- "client id/model" asked last

--- Says at once (a warning in the chat, a notification, the status) when Ollama does not have the
--- model new sessions use, before the first prompt fails on it. Once per connection and model.
function M.check_model()
  local model = config.get().model
  local key = tostring(client.client_id) .. "/" .. tostring(model)
  if model_checked == key then
    return
  end
  model_checked = key
  client.request(protocol.request.daemon_status, model and { model = model } or vim.empty_dict(), function(err, result)
    if err or type(result) ~= "table" then
      return
    end
    local problem = (type(result.model) == "string" and result.model ~= "ok") and result.model or nil
    M.model_problem = problem
    if problem then
      util.warn(problem)
      chat().note("⚠ " .. problem, "WarningMsg")
    end
    changed("status")
  end)
end

--- Picks the model for new sessions (the protocol has no way to change a session's model).
function M.pick_model(name)
  local function use(m)
    config.get().model = m
    M.check_model()
    local note = ""
    if M.current and M.current.model ~= m then
      note = " (for new sessions: :AgentNew; the current session keeps " .. (M.current.model or "its model") .. ")"
    end
    util.notify("model: " .. m .. note)
    changed("session")
  end
  if name and name ~= "" then
    use(name)
    return
  end
  client.request(protocol.request.model_list, vim.empty_dict(), function(err, result)
    if err then
      util.error("model/list failed: " .. util.err_text(err))
      return
    end
    local models = result.models or {}
    if #models == 0 then
      util.warn("Ollama has no models: pull one with `ollama pull qwen3:8b`")
      return
    end
    vim.ui.select(models, {
      prompt = "agentd model",
      kind = "agentd.model",
      format_item = function(m)
        local caps = table.concat(m.capabilities or {}, ", ")
        local mark = (m.name == (config.get().model or result.default)) and " *" or ""
        return string.format("%s%s  %s  [%s]", m.name, mark, m.parameterSize or "", caps)
      end,
    }, function(choice)
      if choice then
        use(choice.name)
      end
    end)
  end)
end

--- Lists the session's "allow for this session" grants; the one picked is revoked.
function M.grants()
  local s = M.current
  if not s then
    util.notify("no session")
    return
  end
  client.request(protocol.request.grant_list, { sessionId = s.sessionId }, function(err, result)
    if err then
      util.error("grant/list failed: " .. util.err_text(err))
      return
    end
    local grants = result.grants or {}
    if #grants == 0 then
      util.notify("no grants in this session")
      return
    end
    vim.ui.select(grants, {
      prompt = "Revoke a grant",
      kind = "agentd.grant",
      format_item = function(g)
        local sc = g.scope or {}
        return sc.label or (sc.kind .. " " .. (sc.tool or sc.pathPrefix or table.concat(sc.commandPrefix or {}, " ")))
      end,
    }, function(g)
      if not g then
        return
      end
      client.request(protocol.request.grant_revoke, { sessionId = s.sessionId, grantId = g.id }, function(e2, r2)
        if e2 then
          util.error("grant/revoke failed: " .. util.err_text(e2))
        elseif r2 and r2.revoked then
          util.notify("revoked: " .. ((g.scope and g.scope.label) or g.id))
        end
      end)
    end)
  end)
end

--- Completion for :AgentModel (synchronous model/list with a short timeout; only while typing).
function M.complete_models()
  if not client.get() then
    return {}
  end
  local result = client.request_sync(protocol.request.model_list, vim.empty_dict(), 1000)
  local names = {}
  for _, m in ipairs((result and result.models) or {}) do
    table.insert(names, m.name)
  end
  return names
end

-- session/update ------------------------------------------------------------------------------

local U = protocol.update

function M.on_update(_, params)
  if type(params) ~= "table" or type(params.update) ~= "table" then
    return
  end
  local sid, u = params.sessionId, params.update
  if M._attaching and M._attaching.sessionId == sid then
    table.insert(M._attaching.buffered, params)
    return
  end
  if params.seq then
    local last = M.last_seq[sid]
    if last and params.seq > last + 1 then
      M.gaps = M.gaps + 1
      M._resync = sid
    end
    if not last or params.seq > last then
      M.last_seq[sid] = params.seq
    end
  end
  local t = u.type
  if t == U.turn_started then
    M.running[sid] = params.turnId or "?"
    changed("turn")
  elseif t == U.turn_completed or t == U.turn_failed then
    M.running[sid] = nil
    M.turns_ended = M.turns_ended + 1
    if params.turnId then
      M.ended[sid .. "/" .. params.turnId] = true
    end
    M.progress = nil
    changed("turn")
    if t == U.turn_failed and u.error then
      local msg = u.error.message or "the turn failed"
      if u.error.fix and u.error.fix ~= "" then
        msg = msg .. "\nfix: " .. u.error.fix
      end
      util.error(msg)
    end
  elseif t == U.usage and M.current and sid == M.current.sessionId then
    M.usage = u.usage
    changed("status")
  end
  if M.current and sid == M.current.sessionId then
    chat().on_update(params)
    if (t == U.turn_completed or t == U.turn_failed) and M._resync == sid then
      M._resync = nil
      M.attach(sid) -- an update was lost: redraw the chat from the daemon's history
    end
  end
end

function M.on_progress(result)
  if type(result) ~= "table" or type(result.value) ~= "table" then
    return
  end
  local v = result.value
  if v.kind == "end" then
    M.progress = nil
  else
    M.progress = M.progress or {}
    M.progress.title = v.title or M.progress.title
    M.progress.message = v.message or M.progress.message
    M.progress.percentage = v.percentage or M.progress.percentage
  end
  changed("status")
end

--- A new connection is up: re-attach the current session (the daemon keeps sessions, but a new
--- connection is attached to none), then done(). Uses the client directly: the plugin's request
--- queue waits for this.
function M.on_connect(c, done)
  local cur = M.current
  if not cur then
    client.ready = true
    done()
    return
  end
  local attaching = begin_attach(cur.sessionId)
  require("agentd.compat").request(c, protocol.request.session_attach, { sessionId = cur.sessionId }, function(err, result)
    if err then
      end_attach(attaching, false)
      util.warn("could not resume session " .. cur.sessionId .. ": " .. util.err_text(err) .. " (a new one starts with the next prompt)")
      M.current = nil
      changed("session")
    else
      M.current = result.session
      M.running[cur.sessionId] = result.session.running and (M.running[cur.sessionId] or "?") or nil
      chat().reset(result.session, result.history or {})
      for _, r in ipairs(result.pendingReviews or {}) do
        require("agentd.review").on_requested(nil, r)
      end
      end_attach(attaching, true)
      changed("session")
    end
    client.ready = true
    done()
  end)
end

function M.on_disconnect()
  M.running = {}
  M.progress = nil
  changed("turn")
end

--- A short status for statuslines: "agentd: idle", "agentd: ⏵ Edit cart.go".
function M.status()
  if not client.is_running() then
    return ""
  end
  local parts = { "agentd" }
  local review = require("agentd.review")
  local reviews = review.pending_count()
  local waiting = M.current and review.pending_count(M.current.sessionId) > 0
  if M.is_running() and waiting then
    -- the turn waits on the user, whatever the last progress said ("Thinking…")
    table.insert(parts, "⏸ waiting for your review")
  elseif M.is_running() then
    local p = M.progress
    table.insert(parts, "⏵ " .. ((p and (p.message or p.title)) or "working"))
  elseif M.current then
    table.insert(parts, "idle")
  end
  if M.model_problem then
    table.insert(parts, "⚠ model not pulled")
  end
  if reviews > 0 then
    table.insert(parts, string.format("%d review%s", reviews, reviews == 1 and "" or "s"))
  end
  if M.usage and M.usage.contextPercent then
    table.insert(parts, M.usage.contextPercent .. "% ctx")
  end
  return table.concat(parts, " · ")
end

return M
