-- Version differences between Neovim 0.7.2 and 0.12, in one place. Everything else in the plugin
-- calls these instead of feature-testing on its own.
local M = {}

local function has(v)
  return vim.fn.has("nvim-" .. v) == 1
end
M.has = has

M.uv = vim.uv or vim.loop

--- Whether a list-like table (vim.islist is 0.10+, vim.tbl_islist is deprecated there).
M.islist = vim.islist or vim.tbl_islist

--- vim.validate for one value: the (name, value, validator, optional, message) form is 0.11+; the
--- table form works everywhere but is deprecated from 0.11.
function M.validate(name, value, validator, optional, message)
  if has("0.11") then
    if message ~= nil then
      vim.validate(name, value, validator, optional, message)
    else
      vim.validate(name, value, validator, optional)
    end
  else
    vim.validate({ [name] = { value, validator, message or optional } })
  end
end

--- Starts an LSP client without attaching any buffer; returns the client id or nil.
--- 0.11+: vim.lsp.start{attach = false} (start_client is deprecated there).
--- 0.7-0.10: vim.lsp.start_client (vim.lsp.start of 0.8-0.10 always attaches a buffer).
function M.start_client(config)
  if has("0.11") then
    return vim.lsp.start(config, {
      attach = false,
      reuse_client = function()
        return false
      end,
    })
  end
  return vim.lsp.start_client(config)
end

function M.get_client(id)
  return vim.lsp.get_client_by_id(id)
end

--- Active clients, optionally filtered by name.
function M.get_clients(filter)
  if vim.lsp.get_clients then
    return vim.lsp.get_clients(filter)
  end
  local out = {}
  for _, c in ipairs(vim.lsp.get_active_clients()) do
    if not (filter and filter.name) or c.name == filter.name then
      table.insert(out, c)
    end
  end
  return out
end

-- Client methods: 0.11+ wants the colon form (the dot form is deprecated, removal in 0.13); 0.7
-- only has the dot form (functions that close over the client).
local colon = has("0.11")

function M.request(client, method, params, handler, bufnr)
  if colon then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

function M.request_sync(client, method, params, timeout_ms, bufnr)
  if colon then
    return client:request_sync(method, params, timeout_ms, bufnr)
  end
  return client.request_sync(method, params, timeout_ms, bufnr)
end

function M.notify(client, method, params)
  if colon then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

function M.cancel_request(client, id)
  if colon then
    return client:cancel_request(id)
  end
  return client.cancel_request(id)
end

function M.stop(client, force)
  if colon then
    return client:stop(force)
  end
  return client.stop(force)
end

function M.is_stopped(client)
  if colon then
    return client:is_stopped()
  end
  return client.is_stopped()
end

--- The server's capabilities (resolved_capabilities is 0.7's flattened form; the raw table is
--- server_capabilities from 0.5 on).
function M.server_capabilities(client)
  return client.server_capabilities or {}
end

function M.buf_is_attached(bufnr, client_id)
  return vim.lsp.buf_is_attached(bufnr, client_id)
end

--- The autocmd a $/progress message fires, for statusline integrations.
M.progress_event = has("0.10") and { "LspProgress" } or { "User", "LspProgressUpdate" }

--- :checkhealth reporters: vim.health.start/ok/... (0.8+ names, report_* removed in 0.11) vs
--- require("health").report_* on 0.7.
function M.health()
  local h = vim.health
  if h and h.start then
    return { start = h.start, ok = h.ok, warn = h.warn, error = h.error, info = h.info }
  end
  if h and h.report_start then
    return { start = h.report_start, ok = h.report_ok, warn = h.report_warn, error = h.report_error, info = h.report_info }
  end
  local old = require("health")
  return {
    start = old.report_start,
    ok = old.report_ok,
    warn = old.report_warn,
    error = old.report_error,
    info = old.report_info,
  }
end

--- Sets an option of a buffer or window (nvim_set_option_value is 0.7+, but its {buf=} scope
--- only arrived in 0.9).
function M.set_buf_option(bufnr, name, value)
  if has("0.10") then
    vim.api.nvim_set_option_value(name, value, { buf = bufnr })
  else
    vim.api.nvim_buf_set_option(bufnr, name, value)
  end
end

function M.set_win_option(winid, name, value)
  if has("0.10") then
    vim.api.nvim_set_option_value(name, value, { win = winid, scope = "local" })
  else
    vim.api.nvim_win_set_option(winid, name, value)
  end
end

function M.get_buf_option(bufnr, name)
  if has("0.10") then
    return vim.api.nvim_get_option_value(name, { buf = bufnr })
  end
  return vim.api.nvim_buf_get_option(bufnr, name)
end

--- Default handler of an LSP method (vim.lsp.handlers is the same table in every version).
function M.default_handler(method)
  return vim.lsp.handlers[method]
end

--- Whether the extmark API knows virt_lines (0.6+) and sign_text (0.6+). Kept as functions so a
--- test can assert them on each version.
function M.has_virt_lines()
  return has("0.6")
end

return M
