-- Mentions in the prompt box: typing `@` offers `@open` (all open files), the workspace's files and
-- folders, and `@#query` symbols from the attached language servers (workspace/symbol). On submit,
-- each `@token` that resolves becomes a session/prompt context item (docs/protocol.md); the text
-- keeps the tokens as typed. Works on Neovim 0.7.2 and later (no vim.fs, vim.uv or vim.system).
local compat = require("agentd.compat")
local util = require("agentd.util")

local M = {}

M.max_items = 50 -- completion items shown at once
M.max_files = 5000 -- workspace files listed at most
M.symbol_timeout_ms = 500 -- workspace/symbol wait per language server

-- Symbols offered in completion, by their word ("@#Total"): what submit sends for them.
M.symbols = {}

-- LSP SymbolKind numbers to the lower-case names the protocol carries.
local symbol_kinds = {
  "file", "module", "namespace", "package", "class", "method", "property", "field", "constructor",
  "enum", "interface", "function", "variable", "constant", "string", "number", "boolean", "array",
  "object", "key", "null", "enummember", "struct", "event", "operator", "typeparameter",
}

function M.root()
  local root = require("agentd.client").root
  if root then
    return root
  end
  return util.normalize(vim.fn.getcwd())
end

--- Workspace files, relative to root, sorted: git ls-files (tracked and untracked, not ignored),
--- else a glob of the tree. At most M.max_files.
function M.files(root)
  root = root or M.root()
  local out = {}
  local list = vim.fn.systemlist({ "git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard" })
  -- An empty list: not a repository, or one that ignores the whole folder (then glob it).
  if vim.v.shell_error == 0 and #list > 0 then
    for _, f in ipairs(list) do
      if f ~= "" then
        table.insert(out, f)
      end
      if #out >= M.max_files then
        break
      end
    end
  else
    for _, abs in ipairs(vim.fn.globpath(root, "**/*", false, true)) do
      if vim.fn.isdirectory(abs) == 0 then
        table.insert(out, abs:sub(#root + 2))
      end
      if #out >= M.max_files then
        break
      end
    end
  end
  table.sort(out)
  return out
end

--- Folders ("dir/") of a list of relative files, sorted.
local function folders(files)
  local seen, out = {}, {}
  for _, f in ipairs(files) do
    local dir = f:match("^(.*)/[^/]*$")
    while dir and not seen[dir] do
      seen[dir] = true
      table.insert(out, dir .. "/")
      dir = dir:match("^(.*)/[^/]*$")
    end
  end
  table.sort(out)
  return out
end

-- The language servers that answer workspace/symbol (agentd's own client left out).
local function symbol_clients()
  local own = require("agentd.client").client_id
  local out = {}
  for _, c in ipairs(compat.get_clients()) do
    local caps = compat.server_capabilities(c) or {}
    if c.id ~= own and caps.workspaceSymbolProvider then
      table.insert(out, c)
    end
  end
  return out
end

-- The source text of a symbol at a location: the lines of its range; a range on one line (the
-- name only, as many servers send) extends to the end of the declaration: the first later line
-- indented no deeper that closes it, at most 200 lines.
local function symbol_text(uri, range)
  local path = vim.uri_to_fname(uri)
  local bufnr = vim.fn.bufnr(path)
  local lines
  if bufnr ~= -1 and vim.api.nvim_buf_is_loaded(bufnr) then
    lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  elseif vim.fn.filereadable(path) == 1 then
    lines = vim.fn.readfile(path)
  else
    return nil, range
  end
  local s, e = range.start.line + 1, range["end"].line + 1
  if s > #lines then
    return nil, range
  end
  if e == s then
    local indent = #(lines[s]:match("^%s*"))
    local last = math.min(#lines, s + 199)
    for i = s + 1, last do
      local l = lines[i]
      if l:match("%S") and #(l:match("^%s*")) <= indent then
        if l:match("^%s*[%}%)%]]") or l:match("^%s*end") then
          e = i
        end
        break
      end
    end
  end
  e = math.min(e, #lines)
  local out = {}
  for i = s, e do
    table.insert(out, lines[i])
  end
  local r = { start = { line = s - 1, character = 0 }, ["end"] = { line = e - 1, character = #lines[e] } }
  return table.concat(out, "\n"), r
end

--- Symbols matching query from the attached language servers, as completion items; each is
--- remembered in M.symbols for submit. Nothing when no server answers workspace/symbol.
function M.symbol_items(query, root)
  root = root or M.root()
  local items = {}
  for _, c in ipairs(symbol_clients()) do
    local ok, resp = pcall(compat.request_sync, c, "workspace/symbol", { query = query }, M.symbol_timeout_ms)
    local result = ok and resp and resp.result
    if type(result) == "table" then
      for _, sym in ipairs(result) do
        local loc = sym.location
        if loc and loc.uri and loc.range and #items < M.max_items then
          local path = util.normalize(vim.uri_to_fname(loc.uri))
          if util.is_under(path, root) then
            local word = "@#" .. sym.name
            local kind = symbol_kinds[sym.kind] or "symbol"
            local rel = path:sub(#root + 2)
            if not M.symbols[word] then
              M.symbols[word] = { uri = loc.uri, range = loc.range, name = sym.name, symbolKind = kind }
            end
            table.insert(items, { word = word, menu = kind .. " " .. rel .. ":" .. (loc.range.start.line + 1) })
          end
        end
      end
    end
  end
  return items
end

--- Completion items for a token typed after `@` (base includes the `@`).
function M.items(base)
  local q = base:gsub("^@", "")
  if q:sub(1, 1) == "#" then
    return M.symbol_items(q:sub(2))
  end
  local items = {}
  if ("open"):sub(1, #q) == q then
    table.insert(items, { word = "@open", menu = "all open files" })
  end
  local files = M.files()
  local candidates = folders(files)
  for _, f in ipairs(files) do
    table.insert(candidates, f)
  end
  local later = {}
  for _, c in ipairs(candidates) do
    if #items >= M.max_items then
      break
    end
    local menu = c:sub(-1) == "/" and "folder" or "file"
    if c:sub(1, #q) == q then
      table.insert(items, { word = "@" .. c, menu = menu })
    elseif q ~= "" and c:find(q, 1, true) then
      table.insert(later, { word = "@" .. c, menu = menu })
    end
  end
  for _, it in ipairs(later) do
    if #items >= M.max_items then
      break
    end
    table.insert(items, it)
  end
  return items
end

-- The start (1-based byte column) of the `@token` that ends at col in line, or nil.
local function token_start(line, col)
  local before = line:sub(1, col)
  local s = before:find("@[^%s@]*$")
  if s and (s == 1 or before:sub(s - 1, s - 1):match("%s")) then
    return s
  end
  return nil
end

--- completefunc of the prompt box.
function M.completefunc(findstart, base)
  if findstart == 1 then
    local col = vim.api.nvim_win_get_cursor(0)[2]
    local s = token_start(vim.api.nvim_get_current_line(), col)
    return s and (s - 1) or -3 -- -3: leave completion mode quietly
  end
  return M.items(base)
end

_G.agentd_mention_complete = function(findstart, base)
  return M.completefunc(findstart, base)
end

-- Starts completion when the cursor ends an `@token` and no menu is shown.
local function trigger()
  if vim.fn.mode() ~= "i" or vim.fn.pumvisible() == 1 then
    return
  end
  local col = vim.api.nvim_win_get_cursor(0)[2]
  if token_start(vim.api.nvim_get_current_line(), col) then
    vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<C-x><C-u>", true, false, true), "n", false)
  end
end

--- Sets up completion of mentions in the prompt box bufnr.
function M.attach(bufnr)
  compat.set_buf_option(bufnr, "completefunc", "v:lua.agentd_mention_complete")
  local group = vim.api.nvim_create_augroup("agentd_mentions_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd("InsertCharPre", {
    group = group,
    buffer = bufnr,
    callback = function()
      if vim.v.char == "@" then
        vim.schedule(trigger)
      end
    end,
  })
  vim.api.nvim_create_autocmd("TextChangedI", { group = group, buffer = bufnr, callback = trigger })
end

-- Files open in the editor under root, as absolute paths (listed, loaded, named, normal buffers).
local function open_files(root)
  local out = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) and vim.fn.buflisted(b) == 1 and compat.get_buf_option(b, "buftype") == "" then
      local name = vim.api.nvim_buf_get_name(b)
      if name ~= "" then
        local path = util.normalize(name)
        if util.is_under(path, root) and vim.fn.filereadable(path) == 1 then
          table.insert(out, path)
        end
      end
    end
  end
  table.sort(out)
  return out
end

--- The context items of the `@tokens` in text that resolve: `@open` → one file item per open
--- file, `@path` → a file or folder item, `@#name` → the symbol offered in completion (its text
--- read now). Unresolved tokens stay text only. Returns nil when there is none.
function M.context(text, root)
  root = root or M.root()
  local items, seen = {}, {}
  local function add(it)
    local key = it.kind .. " " .. it.uri .. " " .. (it.name or "")
    if not seen[key] then
      seen[key] = true
      table.insert(items, it)
    end
  end
  for token in (" " .. text):gmatch("%s@([^%s@]+)") do
    local bare = token:gsub("[%.,;:!%?%)]+$", "") -- "@open," in a sentence
    if token == "open" or bare == "open" then
      for _, path in ipairs(open_files(root)) do
        add({ kind = "file", uri = vim.uri_from_fname(path) })
      end
    elseif token:sub(1, 1) == "#" then
      local sym = M.symbols["@" .. token] or M.symbols["@" .. bare]
      if sym then
        local body, range = symbol_text(sym.uri, sym.range)
        if body then
          add({ kind = "symbol", uri = sym.uri, range = range, text = body, name = sym.name, symbolKind = sym.symbolKind })
        end
      end
    else
      for _, t in ipairs({ token, bare }) do
        local abs = util.normalize(root .. "/" .. t)
        if t ~= "" and util.is_under(abs, root) then
          if vim.fn.isdirectory(abs) == 1 then
            add({ kind = "folder", uri = vim.uri_from_fname(abs) })
            break
          elseif vim.fn.filereadable(abs) == 1 then
            add({ kind = "file", uri = vim.uri_from_fname(abs) })
            break
          end
        end
      end
    end
  end
  if #items == 0 then
    return nil
  end
  return items
end

return M
