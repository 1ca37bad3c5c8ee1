-- Small helpers shared by the modules: notifications, paths and URIs, error text.
local compat = require("agentd.compat")

local M = {}

function M.notify(msg, level, opts)
  level = level or vim.log.levels.INFO
  local cfg = require("agentd.config").get()
  if level < (cfg.notify_level or vim.log.levels.INFO) then
    return
  end
  vim.notify("agentd: " .. msg, level, vim.tbl_extend("keep", opts or {}, { title = "agentd" }))
end

function M.error(msg)
  M.notify(msg, vim.log.levels.ERROR)
end

function M.warn(msg)
  M.notify(msg, vim.log.levels.WARN)
end

--- agentd's status changed (require'agentd'.status()): the User AgentdStatus autocmd fires for
--- statusline plugins, and statuslines are drawn again (nothing else redraws them on a change).
function M.status_changed()
  if vim.in_fast_event() then
    vim.schedule(M.status_changed)
    return
  end
  pcall(vim.api.nvim_exec_autocmds, "User", { pattern = "AgentdStatus", modeline = false })
  pcall(vim.cmd, "redrawstatus!")
end

--- Text of a JSON-RPC error as the LSP client hands it over ({code, message, data}).
function M.err_text(err)
  if type(err) ~= "table" then
    return tostring(err)
  end
  local msg = err.message or vim.inspect(err)
  if err.code then
    msg = string.format("%s (%d)", msg, err.code)
  end
  return msg
end

function M.normalize(path)
  if not path or path == "" then
    return path
  end
  path = vim.fn.fnamemodify(path, ":p")
  if #path > 1 then
    path = path:gsub("/+$", "")
  end
  return path
end

--- Whether path is root or below root (directory-boundary aware).
function M.is_under(path, root)
  if not path or not root then
    return false
  end
  return path == root or path:sub(1, #root + 1) == root .. "/"
end

--- The loaded buffer of a file: URI, or nil. Never creates a buffer.
function M.buf_for_uri(uri)
  if type(uri) ~= "string" or not uri:match("^file:") then
    return nil
  end
  local path = vim.uri_to_fname(uri)
  local bufnr = vim.fn.bufnr(path)
  if bufnr == -1 then
    -- bufnr() matches patterns; fall back to an exact scan for names with special characters.
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_get_name(b) == path then
        return b
      end
    end
    return nil
  end
  return bufnr
end

--- Expands tabs the way the buffer shows them (virtual text shows a tab as one cell otherwise).
function M.expand_tabs(line, tabstop)
  if not line:find("\t", 1, true) then
    return line
  end
  tabstop = tabstop or 8
  local out, col = {}, 0
  for ch in line:gmatch(".[\128-\191]*") do
    if ch == "\t" then
      local n = tabstop - (col % tabstop)
      table.insert(out, string.rep(" ", n))
      col = col + n
    else
      table.insert(out, ch)
      col = col + 1
    end
  end
  return table.concat(out)
end

--- Reloads the loaded, unmodified buffers of paths (absolute, or relative to root) after agentd
--- changed them on disk; buffers with unsaved changes are left alone.
function M.reload_files(paths, root)
  for _, p in ipairs(paths or {}) do
    local path = p:sub(1, 1) == "/" and p or ((root or vim.fn.getcwd()) .. "/" .. p)
    local b = vim.fn.bufnr(path)
    if b ~= -1 and vim.api.nvim_buf_is_loaded(b) and not vim.bo[b].modified then
      pcall(vim.api.nvim_buf_call, b, function()
        vim.cmd("silent! checktime " .. b)
        vim.cmd("silent! edit")
      end)
    end
  end
end

function M.split_lines(text)
  return vim.split(text, "\n", { plain = true })
end

function M.hrtime_ms()
  return compat.uv.hrtime() / 1e6
end

--- Debounced/coalesced scheduling: returns a function that runs fn once, `delay` ms after the
--- first call since the last run (0: on the next loop iteration through vim.schedule).
function M.coalesce(fn, delay)
  local pending = false
  local timer
  return function()
    if pending then
      return
    end
    pending = true
    local function run()
      pending = false
      fn()
    end
    if not delay or delay <= 0 then
      vim.schedule(run)
    else
      timer = timer or compat.uv.new_timer()
      timer:start(delay, 0, vim.schedule_wrap(run))
    end
  end
end

return M
