-- The connection to the daemon: one built-in LSP client ("agentd") per Neovim, started on demand,
-- attached to every buffer of the workspace so the daemon sees unsaved text. Requests issued
-- before the client is initialized wait in a queue; nothing here ever blocks the editor loop.
local compat = require("agentd.compat")
local config = require("agentd.config")
local protocol = require("agentd.protocol")
local util = require("agentd.util")

local M = {}

M.name = "agentd"
M.client_id = nil
M.root = nil -- absolute path of the workspace folder
M.server_info = nil -- capabilities.experimental.agentd of the initialize result
M.initialized = false
M.ready = false -- initialized and the current session re-attached
local queue = {} -- functions waiting for initialization
local augroup

local VERSION = "0.1.0"
M.plugin_version = VERSION

local function exists(path)
  return compat.uv.fs_stat(path) ~= nil
end

--- The workspace folder for a buffer (or the current directory).
function M.find_root(bufnr)
  local opts = config.get()
  if type(opts.root_dir) == "function" then
    local r = opts.root_dir(bufnr or vim.api.nvim_get_current_buf())
    return r and util.normalize(r) or nil
  elseif type(opts.root_dir) == "string" then
    return util.normalize(opts.root_dir)
  end
  local dir = util.normalize(vim.fn.getcwd())
  local d = dir
  while d and d ~= "" do
    for _, marker in ipairs(opts.root_markers or {}) do
      if exists(d .. "/" .. marker) then
        return d
      end
    end
    local parent = vim.fn.fnamemodify(d, ":h")
    if parent == d then
      break
    end
    d = parent
  end
  return dir
end

function M.root_uri()
  return M.root and vim.uri_from_fname(M.root) or nil
end

--- The client object once it is initialized, else nil.
function M.get()
  if not M.client_id or not M.initialized or not M.ready then
    return nil
  end
  local c = compat.get_client(M.client_id)
  if not c or compat.is_stopped(c) then
    return nil
  end
  return c
end

function M.is_running()
  return M.client_id ~= nil and compat.get_client(M.client_id) ~= nil
end

--- Whether a client (current or being stopped) still has a live process (tests).
function M.any_alive()
  for _, c in ipairs(compat.get_clients({ name = M.name })) do
    if not compat.is_stopped(c) then
      return true
    end
  end
  return false
end

local function init_options()
  local o = config.get()
  local opts = {
    protocolVersion = protocol.version,
    client = "agentd.nvim " .. VERSION,
    reviews = true,
    documentSave = true,
    diagnostics = true,
  }
  opts.model = o.model
  opts.approvalMode = o.approval_mode
  opts.ollamaHost = o.ollama_host
  opts.contextLength = o.context_length
  if type(o.completion.model) == "string" then
    opts.completionModel = o.completion.model
  end
  return opts
end

--- Whether a buffer is a file of the workspace (the ones the daemon should see).
function M.is_workspace_buf(bufnr)
  if not M.root or not vim.api.nvim_buf_is_valid(bufnr) or not vim.api.nvim_buf_is_loaded(bufnr) then
    return false
  end
  if compat.get_buf_option(bufnr, "buftype") ~= "" then
    return false
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or name:match("^%a[%w+.-]*://") then
    return false
  end
  return util.is_under(util.normalize(name), M.root)
end

function M.attach(bufnr)
  if not M.client_id or not M.is_workspace_buf(bufnr) then
    return false
  end
  if compat.buf_is_attached(bufnr, M.client_id) then
    return true
  end
  return vim.lsp.buf_attach_client(bufnr, M.client_id)
end

local function attach_all()
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    M.attach(b)
  end
end

local function on_init(client, result)
  M.initialized = true
  local caps = (result and result.capabilities) or {}
  M.server_info = caps.experimental and caps.experimental.agentd or nil
  if M.server_info and M.server_info.protocolVersion and M.server_info.protocolVersion ~= protocol.version then
    util.warn(string.format(
      "daemon speaks protocol %s, this plugin %d: update the plugin or the daemon",
      tostring(M.server_info.protocolVersion), protocol.version))
  end
  vim.schedule(function()
    attach_all()
    require("agentd.completion").on_connect()
    -- A new connection is attached to no session: re-attach the current one (after a restart of
    -- the daemon or :AgentStop) before anything queued runs.
    require("agentd.session").on_connect(client, function()
      local waiting = queue
      queue = {}
      for _, fn in ipairs(waiting) do
        local ok, err = pcall(fn, client)
        if not ok then
          util.error(tostring(err))
        end
      end
    end)
  end)
end

local function on_exit(code, signal, client_id)
  if M._stopping_ids and M._stopping_ids[client_id] then
    M._stopping_ids[client_id] = nil
    return -- stopped on purpose
  end
  if client_id ~= M.client_id then
    return
  end
  vim.schedule(function()
    local was_initialized = M.initialized
    M.client_id, M.initialized, M.ready, M.server_info = nil, false, false, nil
    local waiting = queue
    queue = {}
    require("agentd.review").clear_all("the daemon connection closed")
    require("agentd.session").on_disconnect()
    local how = was_initialized and "connection closed" or "could not start"
    local msg = string.format("daemon %s (exit code %d%s): see :checkhealth agentd", how, code or -1,
      (signal and signal ~= 0) and (", signal " .. signal) or "")
    if M._exiting then
      return
    elseif code ~= 0 or not was_initialized then
      util.error(msg)
    else
      util.warn(msg)
    end
    for _, fn in ipairs(waiting) do
      pcall(fn, nil, "the daemon is not running")
    end
  end)
end

--- document/save (server -> client request): write the buffer, answer synchronously.
function M.on_document_save(_, params)
  local uri = params and params.uri
  local bufnr = util.buf_for_uri(uri)
  if not bufnr or not vim.api.nvim_buf_is_loaded(bufnr) then
    return { saved = false }
  end
  local ok, err = pcall(vim.api.nvim_buf_call, bufnr, function()
    vim.cmd("silent keepalt lockmarks write")
  end)
  if not ok then
    util.warn("could not save " .. vim.fn.fnamemodify(vim.uri_to_fname(uri), ":~:.") .. ": " .. tostring(err))
    return { saved = false }
  end
  return { saved = not compat.get_buf_option(bufnr, "modified") }
end

local function handlers()
  local session = function()
    return require("agentd.session")
  end
  local review = function()
    return require("agentd.review")
  end
  local h = {}
  h[protocol.notification.session_update] = function(err, params, ctx)
    session().on_update(err, params, ctx)
  end
  h[protocol.notification.review_requested] = function(err, params, ctx)
    review().on_requested(err, params, ctx)
  end
  h[protocol.notification.review_resolved] = function(err, params, ctx)
    review().on_resolved(err, params, ctx)
  end
  h[protocol.notification.review_hunk_states] = function(err, params, ctx)
    review().on_hunk_states(err, params, ctx)
  end
  h[protocol.server_request.document_save] = M.on_document_save
  h[protocol.server_request.document_diagnostics] = require("agentd.diagnostics").on_request
  -- User-facing errors carry their fix; show them with vim.notify.
  h["window/showMessage"] = function(_, params)
    if params and params.message then
      local levels = { vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO, vim.log.levels.DEBUG }
      util.notify(params.message, levels[params.type] or vim.log.levels.INFO)
    end
    return vim.NIL
  end
  -- $/progress: keep the default (statusline plugins read it), and refresh our own status.
  local default_progress = compat.default_handler("$/progress")
  h["$/progress"] = function(err, result, ctx, cfg)
    local r
    if default_progress then
      r = default_progress(err, result, ctx, cfg)
    end
    session().on_progress(result)
    return r
  end
  return h
end

--- Starts the client if needed. fn(client) runs once it is initialized (at once if it is);
--- on failure fn(nil, reason).
function M.with_client(fn)
  local c = M.get()
  if c then
    fn(c)
    return
  end
  table.insert(queue, fn)
  if not M.is_running() then
    M.start()
  end
end

function M.start()
  if M.is_running() then
    return M.client_id
  end
  local opts = config.get()
  if vim.fn.executable(opts.cmd[1]) ~= 1 then
    local waiting = queue
    queue = {}
    util.error(string.format("`%s` not found: install agentd or set cmd in setup() (:checkhealth agentd)", opts.cmd[1]))
    for _, fn in ipairs(waiting) do
      pcall(fn, nil, "agentd not found")
    end
    return nil
  end
  M.root = M.find_root()
  local root_uri = vim.uri_from_fname(M.root)
  M.initialized, M.ready = false, false
  local id = compat.start_client({
    name = M.name,
    cmd = opts.cmd,
    cmd_env = opts.cmd_env,
    root_dir = M.root,
    workspace_folders = { { uri = root_uri, name = vim.fn.fnamemodify(M.root, ":t") } },
    init_options = init_options(),
    handlers = handlers(),
    on_init = on_init,
    on_exit = on_exit,
    flags = { debounce_text_changes = 80 },
  })
  if not id then
    util.error("could not start `" .. table.concat(opts.cmd, " ") .. "`")
    return nil
  end
  M.client_id = id
  if not augroup then
    augroup = vim.api.nvim_create_augroup("agentd_attach", { clear = true })
    vim.api.nvim_create_autocmd("VimLeavePre", {
      group = augroup,
      callback = function()
        M._exiting = true
      end,
    })
    vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufFilePost", "BufWinEnter" }, {
      group = augroup,
      callback = function(a)
        M.attach(a.buf)
      end,
      desc = "agentd: attach workspace buffers so the daemon sees unsaved text",
    })
  end
  return id
end

--- Stops the connection (the daemon keeps the sessions). The client is forgotten at once, so the
--- next command starts a new connection; a daemon that does not exit after shutdown/exit is
--- killed after a grace period.
function M.stop()
  local id = M.client_id
  local c = id and compat.get_client(id)
  M.client_id, M.initialized, M.ready, M.server_info = nil, false, false, nil
  queue = {}
  require("agentd.review").clear_all()
  require("agentd.session").on_disconnect()
  if not c then
    return
  end
  M._stopping_ids = M._stopping_ids or {}
  M._stopping_ids[id] = true
  compat.stop(c)
  local timer = compat.uv.new_timer()
  timer:start(3000, 0, vim.schedule_wrap(function()
    timer:close()
    local still = compat.get_client(id)
    if still and M._stopping_ids[id] then
      compat.stop(still, true)
    end
  end))
end

--- Sends a request once the client is up. cb(err, result) runs on the main loop.
function M.request(method, params, cb)
  cb = cb or function() end
  M.with_client(function(client, why)
    if not client then
      cb({ message = why or "the daemon is not running" }, nil)
      return
    end
    local ok, id = compat.request(client, method, params or vim.empty_dict(), function(err, result)
      cb(err, result)
    end)
    if not ok then
      cb({ message = "the daemon connection is closed" }, nil)
    end
    return id
  end)
end

--- Blocking request for :checkhealth and tests only (never from a handler or a keymap).
function M.request_sync(method, params, timeout_ms)
  local c = M.get()
  if not c then
    return nil, { message = "not connected" }
  end
  local resp, err = compat.request_sync(c, method, params or vim.empty_dict(), timeout_ms or 5000)
  if not resp then
    return nil, { message = err or "timeout" }
  end
  return resp.result, resp.err
end

return M
