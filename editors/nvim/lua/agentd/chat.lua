-- The chat view: a read-only log buffer (agentd://chat) and a prompt box under it
-- (agentd://prompt). session/update notifications become operations in a queue; a timer flushes
-- the queue at most every chat.flush_ms, merging consecutive text deltas into one buffer change,
-- so streaming never competes with typing. Thinking is folded (za opens it); each tool call is one
-- line whose status is updated in place.
local compat = require("agentd.compat")
local config = require("agentd.config")
local protocol = require("agentd.protocol")
local util = require("agentd.util")

local M = {}
local U = protocol.update

M.ns = vim.api.nvim_create_namespace("agentd_chat")

local S = {
  log = nil, -- log buffer
  input = nil, -- prompt buffer
  log_win = nil,
  input_win = nil,
  session = nil,
  ops = {}, -- pending operations
  flush_pending = false,
  timer = nil,
  -- rendering state of the log buffer
  block = nil, -- "thinking" | "text" | nil: what the end of the buffer is writing
  assistant = false, -- the assistant header of the current turn is written
  streamed = { text = 0, thinking = 0 }, -- characters streamed for the current message
  tools = {}, -- callId -> { mark = extmark id, info = ToolCallInfo }
  folds = {}, -- thinking folds: list of { s = first line, e = last line or nil while open }
  thinking_mark = nil,
}
M._state = S

-- Statistics for benchmarks and tests.
M.stats = { flushes = 0, max_flush_ms = 0, max_flush_cpu_ms = 0, total_flush_ms = 0, ops = 0 }

local function opts()
  return config.get().chat
end

local function valid_buf(b)
  return b and vim.api.nvim_buf_is_valid(b)
end

local function valid_win(w)
  return w and vim.api.nvim_win_is_valid(w)
end

-- Buffers ------------------------------------------------------------------------------------

local function scratch(name, ft)
  local b = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, b, name)
  compat.set_buf_option(b, "buftype", "nofile")
  compat.set_buf_option(b, "bufhidden", "hide")
  compat.set_buf_option(b, "swapfile", false)
  compat.set_buf_option(b, "filetype", ft)
  return b
end

local function map(b, modes, lhs, rhs, desc)
  vim.keymap.set(modes, lhs, rhs, { buffer = b, silent = true, nowait = true, desc = desc })
end

local function ensure_buffers()
  if not valid_buf(S.log) then
    S.log = scratch("agentd://chat", "agentd")
    compat.set_buf_option(S.log, "modifiable", false)
    compat.set_buf_option(S.log, "syntax", "markdown")
    -- markdown's syntax flags a `_` inside a word (file_name.go) as an error: not in the chat.
    local function no_underscore_error()
      if valid_buf(S.log) then
        vim.api.nvim_buf_call(S.log, function()
          if vim.b.current_syntax == "markdown" and vim.fn.hlexists("markdownError") == 1 then
            local errmsg = vim.v.errmsg
            vim.cmd("silent! syntax clear markdownError")
            vim.v.errmsg = errmsg
          end
        end)
      end
    end
    no_underscore_error()
    vim.api.nvim_create_autocmd("Syntax", { buffer = S.log, callback = function()
      vim.schedule(no_underscore_error)
    end })
    map(S.log, "n", "q", M.close, "agentd: close the chat")
    map(S.log, "n", "i", M.focus_input, "agentd: type a prompt")
    map(S.log, "n", "a", M.focus_input, "agentd: type a prompt")
    map(S.log, "n", "<C-c>", function()
      require("agentd.session").cancel()
    end, "agentd: cancel the turn")
    map(S.log, "n", "<CR>", function()
      M.show_details()
    end, "agentd: the full result of the tool call under the cursor")
    map(S.log, "n", "K", function()
      M.show_details()
    end, "agentd: the full result of the tool call under the cursor")
    S.folds, S.tools, S.block, S.assistant = {}, {}, nil, false
  end
  if not valid_buf(S.input) then
    S.input = scratch("agentd://prompt", "agentd_prompt")
    map(S.input, "n", "<CR>", M.submit, "agentd: send the prompt")
    map(S.input, { "n", "i" }, "<C-s>", M.submit, "agentd: send the prompt")
    map(S.input, "n", "q", M.close, "agentd: close the chat")
    -- prompt history (the completion menu keeps <C-p>/<C-n> while it is open)
    for _, k in ipairs({ { "<C-p>", -1 }, { "<C-n>", 1 } }) do
      map(S.input, "n", k[1], function()
        M.history_step(k[2])
      end, "agentd: " .. (k[2] < 0 and "previous" or "next") .. " prompt of the history")
      map(S.input, "i", k[1], function()
        if vim.fn.pumvisible() == 1 then
          vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(k[1], true, false, true), "n", false)
        else
          M.history_step(k[2])
        end
      end, "agentd: prompt history (the completion menu's key while it is open)")
    end
    require("agentd.mentions").attach(S.input)
    map(S.input, { "n", "i" }, "<C-c>", function()
      require("agentd.session").cancel()
    end, "agentd: cancel the turn")
  end
end

function M.buffers()
  return S.log, S.input
end

-- Folding of thinking ------------------------------------------------------------------------

local function fold_at(lnum)
  local folds = S.folds
  local lo, hi = 1, #folds
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    local f = folds[mid]
    if lnum < f.s then
      hi = mid - 1
    elseif f.e and lnum > f.e then
      lo = mid + 1
    else
      if not f.e and lnum > vim.api.nvim_buf_line_count(S.log) then
        return nil
      end
      return f
    end
  end
  return nil
end

--- 'foldexpr' of the chat window.
function M.foldexpr(lnum)
  lnum = lnum or vim.v.lnum
  local f = fold_at(lnum)
  if not f then
    return "0"
  end
  if lnum == f.s then
    return ">1"
  end
  return "1"
end

--- 'foldtext' of the chat window.
function M.foldtext()
  local n = vim.v.foldend - vim.v.foldstart
  return string.format("▸ Thinking (%d line%s, za to open)", n, n == 1 and "" or "s")
end

-- Windows ------------------------------------------------------------------------------------

local function setup_log_win(w)
  compat.set_win_option(w, "wrap", true)
  compat.set_win_option(w, "linebreak", true)
  compat.set_win_option(w, "number", false)
  compat.set_win_option(w, "relativenumber", false)
  compat.set_win_option(w, "signcolumn", "no")
  compat.set_win_option(w, "spell", false)
  compat.set_win_option(w, "list", false)
  compat.set_win_option(w, "foldmethod", "expr")
  compat.set_win_option(w, "foldexpr", "v:lua.require'agentd.chat'.foldexpr(v:lnum)")
  compat.set_win_option(w, "foldtext", "v:lua.require'agentd.chat'.foldtext()")
  compat.set_win_option(w, "foldlevel", opts().thinking == "show" and 99 or 0)
  compat.set_win_option(w, "foldenable", opts().thinking == "fold")
  compat.set_win_option(w, "fillchars", "fold: ,eob: ")
  compat.set_win_option(w, "statusline", "%!v:lua.require'agentd.chat'.statusline()")
  compat.set_win_option(w, "winfixwidth", true)
end

local function setup_input_win(w)
  compat.set_win_option(w, "number", false)
  compat.set_win_option(w, "relativenumber", false)
  compat.set_win_option(w, "signcolumn", "no")
  compat.set_win_option(w, "winfixheight", true)
  compat.set_win_option(w, "wrap", true)
  compat.set_win_option(w, "statusline", " prompt  ·  <C-s> or <CR> (normal mode) sends  ·  q closes")
end

local function size(total, v)
  if v < 1 then
    return math.max(20, math.floor(total * v))
  end
  return math.floor(v)
end

function M.is_open()
  return valid_win(S.log_win) and vim.api.nvim_win_get_buf(S.log_win) == S.log
end

-- Whether the prompt box is shown in its window.
local function input_open()
  return valid_win(S.input_win) and vim.api.nvim_win_get_buf(S.input_win) == S.input
end

-- Position of the log and prompt floats.
local function float_geometry()
  local c = opts()
  local W = math.floor(vim.o.columns * c.float.width)
  local H = math.floor((vim.o.lines - 2) * c.float.height)
  local ih = c.input_height
  local row = math.floor((vim.o.lines - H) / 2) - 1
  local col = math.floor((vim.o.columns - W) / 2)
  return {
    log = { relative = "editor", row = row, col = col, width = W, height = math.max(3, H - ih - 2),
      border = c.float.border, style = "minimal" },
    input = { relative = "editor", row = row + H - ih, col = col, width = W, height = ih,
      border = c.float.border, style = "minimal" },
  }
end

-- Opens the prompt box under the log window (which is open); leaves the cursor where it was.
local function open_input_win()
  local c = opts()
  local prev = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_config(S.log_win).relative ~= "" then
    S.input_win = vim.api.nvim_open_win(S.input, false, float_geometry().input)
  else
    vim.api.nvim_set_current_win(S.log_win)
    vim.cmd("belowright split")
    S.input_win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(S.input_win, S.input)
    vim.api.nvim_win_set_height(S.input_win, c.input_height)
  end
  setup_input_win(S.input_win)
  if vim.api.nvim_win_is_valid(prev) then
    vim.api.nvim_set_current_win(prev)
  end
end

--- Opens the chat (focus: put the cursor in the prompt box; default true). When the log is open
--- but its prompt box was closed (:q), the prompt box is opened again under it.
function M.open(o)
  o = o or {}
  local focus = o.focus ~= false
  ensure_buffers()
  if M.is_open() then
    if not input_open() then
      open_input_win()
    end
    if focus then
      vim.api.nvim_set_current_win(S.input_win)
      M.start_insert()
    end
    return
  end
  -- the log window was closed: a prompt box left alone goes too, the layout is made again
  if input_open() and #vim.api.nvim_list_wins() > 1 then
    pcall(vim.api.nvim_win_close, S.input_win, true)
  end
  S.log_win, S.input_win = nil, nil
  local prev = vim.api.nvim_get_current_win()
  local c = opts()
  local layout = c.layout
  if layout == "float" then
    local g = float_geometry()
    S.log_win = vim.api.nvim_open_win(S.log, false, g.log)
    S.input_win = vim.api.nvim_open_win(S.input, false, g.input)
  else
    local cmd = ({
      right = "botright vsplit",
      left = "topleft vsplit",
      bottom = "botright split",
      top = "topleft split",
      tab = "tab split",
    })[layout]
    vim.cmd(cmd)
    S.log_win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(S.log_win, S.log)
    if layout == "right" or layout == "left" then
      vim.api.nvim_win_set_width(S.log_win, size(vim.o.columns, c.size))
    elseif layout == "bottom" or layout == "top" then
      vim.api.nvim_win_set_height(S.log_win, size(vim.o.lines, c.size))
    end
    vim.cmd("belowright split")
    S.input_win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(S.input_win, S.input)
    vim.api.nvim_win_set_height(S.input_win, c.input_height)
  end
  setup_log_win(S.log_win)
  setup_input_win(S.input_win)
  M.scroll_to_end()
  if focus then
    vim.api.nvim_set_current_win(S.input_win)
    M.start_insert()
  elseif vim.api.nvim_win_is_valid(prev) then
    vim.api.nvim_set_current_win(prev)
  end
end

function M.close()
  for _, w in ipairs({ S.input_win, S.log_win }) do
    if valid_win(w) and #vim.api.nvim_list_wins() > 1 then
      pcall(vim.api.nvim_win_close, w, true)
    end
  end
  S.log_win, S.input_win = nil, nil
end

function M.toggle()
  if M.is_open() then
    M.close()
  else
    M.open()
  end
end

--- Puts the cursor in the prompt box, opening the chat or the prompt box when needed, in Insert
--- mode: what is typed next is the prompt.
function M.focus_input()
  M.open({ focus = true })
end

--- Insert mode in the prompt box (the cursor at its end), when it has the cursor.
function M.start_insert()
  if input_open() and vim.api.nvim_get_current_win() == S.input_win and vim.api.nvim_get_mode().mode ~= "i" then
    vim.cmd("startinsert!")
  end
end

-- Prompt history: the prompts sent from this editor, oldest first; <C-p>/<C-n> in the prompt box.
S.history, S.history_pos, S.history_draft = {}, 1, nil
local HISTORY_MAX = 100

local function set_input(text)
  vim.api.nvim_buf_set_lines(S.input, 0, -1, false, util.split_lines(text))
  if input_open() then
    local n = vim.api.nvim_buf_line_count(S.input)
    local last = vim.api.nvim_buf_get_lines(S.input, n - 1, n, false)[1] or ""
    pcall(vim.api.nvim_win_set_cursor, S.input_win, { n, #last })
  end
end

--- Shows the previous (dir -1) or next (dir 1) prompt of the history in the prompt box; past the
--- newest, what was being typed. Returns false at either end.
function M.history_step(dir)
  if not valid_buf(S.input) then
    return false
  end
  local pos = S.history_pos + dir
  if pos < 1 or pos > #S.history + 1 then
    return false
  end
  if S.history_pos == #S.history + 1 then
    S.history_draft = table.concat(vim.api.nvim_buf_get_lines(S.input, 0, -1, false), "\n")
  end
  S.history_pos = pos
  set_input(pos == #S.history + 1 and (S.history_draft or "") or S.history[pos])
  return true
end

local function remember(text)
  if S.history[#S.history] ~= text then
    table.insert(S.history, text)
  end
  while #S.history > HISTORY_MAX do
    table.remove(S.history, 1)
  end
  S.history_pos, S.history_draft = #S.history + 1, nil
end

function M.submit()
  if not valid_buf(S.input) then
    return
  end
  local lines = vim.api.nvim_buf_get_lines(S.input, 0, -1, false)
  local text = vim.trim(table.concat(lines, "\n"))
  if text == "" then
    return
  end
  remember(text)
  vim.api.nvim_buf_set_lines(S.input, 0, -1, false, {})
  -- @file, @folder/, @#symbol and @open become context items; the text keeps them as typed. The
  -- daemon's echo is the text with one label per item (user_message); their content goes to the
  -- model only.
  local context = require("agentd.mentions").context(text)
  require("agentd.session").prompt(text, context, function()
    -- not sent: the prompt goes back into the box (unless something new was typed there)
    if valid_buf(S.input) and vim.trim(table.concat(vim.api.nvim_buf_get_lines(S.input, 0, -1, false), "\n")) == "" then
      set_input(text)
    end
  end)
end

function M.scroll_to_end()
  if not M.is_open() then
    return
  end
  local n = vim.api.nvim_buf_line_count(S.log)
  pcall(vim.api.nvim_win_set_cursor, S.log_win, { n, 0 })
end

function M.statusline()
  local s = require("agentd.session")
  local cur = s.current
  if not cur then
    return " agentd  (no session: type a prompt below)"
  end
  local parts = { " agentd", s.title_of(cur), cur.model, cur.approvalMode }
  local st = s.status()
  local extra = st:gsub("^agentd ?· ?", "")
  if extra ~= "" then
    table.insert(parts, extra)
  end
  return (table.concat(parts, "  ·  "):gsub("%%", "%%%%"))
end

-- Writing the log ----------------------------------------------------------------------------

local function line_count()
  return vim.api.nvim_buf_line_count(S.log)
end

-- Appends text at the end of the buffer (may contain newlines).
local function put_text(text)
  if text == "" then
    return
  end
  local last = line_count() - 1
  local cur = vim.api.nvim_buf_get_lines(S.log, last, last + 1, false)[1] or ""
  vim.api.nvim_buf_set_text(S.log, last, #cur, last, #cur, util.split_lines(text))
end

-- Starts a fresh line at the end (the last line becomes empty).
local function newline()
  local last = line_count() - 1
  local cur = vim.api.nvim_buf_get_lines(S.log, last, last + 1, false)[1] or ""
  if cur ~= "" then
    vim.api.nvim_buf_set_lines(S.log, line_count(), line_count(), false, { "" })
  end
end

-- Writes whole lines at the end, starting on a fresh line; returns the 0-based row of the first
-- one. The buffer keeps an empty last line for what comes next.
local function put_lines(lines, hl)
  newline()
  local first = line_count() - 1
  local out = vim.list_extend(vim.deepcopy(lines), { "" })
  vim.api.nvim_buf_set_lines(S.log, first, first + 1, false, out)
  if hl then
    for i = 0, #lines - 1 do
      vim.api.nvim_buf_set_extmark(S.log, M.ns, first + i, 0, { line_hl_group = hl })
    end
  end
  return first
end

local function close_thinking()
  if S.block == "thinking" then
    local f = S.folds[#S.folds]
    if f and not f.e then
      -- the fold ends at the last thinking line (the buffer's last line is the one after)
      local last = line_count()
      local cur = vim.api.nvim_buf_get_lines(S.log, last - 1, last, false)[1] or ""
      f.e = cur == "" and last - 1 or last
      if f.e <= f.s then
        f.e = f.s + 1
      end
    end
    if S.thinking_mark then
      local pos = vim.api.nvim_buf_get_extmark_by_id(S.log, M.ns, S.thinking_mark, {})
      if pos and pos[1] then
        local last = line_count() - 1
        local cur = vim.api.nvim_buf_get_lines(S.log, last, last + 1, false)[1] or ""
        pcall(vim.api.nvim_buf_set_extmark, S.log, M.ns, pos[1], 0, {
          id = S.thinking_mark, end_row = last, end_col = #cur, hl_group = "AgentdThinking",
        })
      end
      S.thinking_mark = nil
    end
    newline()
  end
  S.block = nil
end

local function assistant_header()
  if not S.assistant then
    put_lines({ "", "## agentd" }, nil)
    local row = line_count() - 2
    vim.api.nvim_buf_set_extmark(S.log, M.ns, row, 0, { line_hl_group = "AgentdHeader" })
    S.assistant = true
  end
end

local function begin_block(kind)
  if S.block == kind then
    return
  end
  close_thinking()
  assistant_header()
  if kind == "thinking" then
    local row = put_lines({ "Thinking…" }, nil)
    vim.api.nvim_buf_set_extmark(S.log, M.ns, row, 0, { line_hl_group = "AgentdThinkingHeader" })
    table.insert(S.folds, { s = row + 1 })
    -- highlight of the thinking text: grows as text is appended at its end
    S.thinking_mark = vim.api.nvim_buf_set_extmark(S.log, M.ns, row + 1, 0, {
      end_row = row + 1, end_col = 0, hl_group = "AgentdThinking", right_gravity = false, end_right_gravity = true,
    })
  else
    newline()
  end
  S.block = kind
end

local icons = {
  pending = "…",
  awaitingApproval = "?",
  running = "⏵",
  completed = "✓",
  failed = "✗",
}
local icon_hl = {
  pending = "AgentdToolPending",
  awaitingApproval = "AgentdToolWaiting",
  running = "AgentdToolRunning",
  completed = "AgentdToolOk",
  failed = "AgentdToolFailed",
}

-- What a call is about, from its arguments, when the daemon's label is only the tool's name.
local function describe_args(info)
  local a = info.arguments
  if type(a) ~= "table" then
    return nil
  end
  local main = a.path or a.command or a.pattern or a.file_path or a.url
  if type(main) ~= "string" or main == "" then
    return nil
  end
  main = main:gsub("\n.*", " …")
  if #main > 80 then
    main = main:sub(1, 77) .. "…"
  end
  if a.pattern and a.path then
    main = a.pattern .. " in " .. a.path
  end
  return main
end

local function tool_text(info)
  local label = info.label
  if type(info.mcp) == "table" then
    -- an MCP server's tool: "everything › echo" and its arguments, whole
    local args = info.arguments
    label = require("agentd.mcp").title(info.mcp) .. " (MCP)"
      .. ((args ~= nil and args ~= vim.NIL) and (" " .. require("agentd.mcp").compact(args)) or "")
  elseif not label or label == "" or label == info.tool then
    local what = describe_args(info)
    label = (info.tool or "tool") .. (what and (" " .. what) or "")
  end
  return string.format("  %s %s", icons[info.status] or "•", label:gsub("\n", " "))
end

local function tool_virt(info)
  local bits = {}
  if info.status == "awaitingApproval" then
    table.insert(bits, "waiting for your review")
    if info.preview and info.preview.summary then
      table.insert(bits, info.preview.summary)
    end
  elseif info.status == "pending" and type(info.waitsFor) == "string" and info.waitsFor ~= "" then
    -- a second change of a file the reply already changes: reviewed once the first is decided
    local a = type(info.arguments) == "table" and info.arguments or {}
    local file = (type(a.path) == "string" and a.path ~= "") and a.path:gsub("\n", " ") or "this file"
    table.insert(bits, "waits for the earlier change of " .. file .. ": reviewed once that one is decided")
  elseif info.status == "running" then
    local p = info.progress and vim.trim(info.progress) or ""
    if p ~= "" then
      local lines = util.split_lines(p)
      table.insert(bits, lines[#lines]:sub(1, 80))
    elseif info.activity then
      table.insert(bits, info.activity)
    end
  elseif info.result then
    local r = info.result
    if r.isError or info.status == "failed" then
      -- the whole text is written under the line (error_lines); here only its type
      table.insert(bits, r.type or "error")
    end
    for _, im in ipairs(type(r.images) == "table" and r.images or {}) do
      table.insert(bits, require("agentd.mcp").image_text(im))
    end
    if r.elapsedMs and r.elapsedMs > 0 then -- 0: unknown (resumed history)
      table.insert(bits, r.elapsedMs >= 1000 and string.format("%.1fs", r.elapsedMs / 1000)
        or (r.elapsedMs .. "ms"))
    end
  end
  local out = {}
  if #bits > 0 then
    table.insert(out, { "  " .. table.concat(bits, " · "), icon_hl[info.status] or "Comment" })
  end
  if info.result or info.preview then
    table.insert(out, { "  ⏎ details", "AgentdNote" })
  end
  if #out == 0 then
    return nil
  end
  return out
end

-- A failed call's text in full, as real (wrapping) lines under its tool line.
local function error_lines(info)
  local r = info.result
  if not r or not (r.isError or info.status == "failed") then
    return {}
  end
  local out = {}
  for _, l in ipairs(util.split_lines(vim.trim(r.text or ""))) do
    table.insert(out, "    " .. l)
  end
  return out
end

-- Output kept per tool call, as VS Code keeps: the last 64 KiB, from a line start when one is near.
local MAX_OUTPUT = 64 * 1024

local function keep_tail(s)
  if #s <= MAX_OUTPUT then
    return s
  end
  local t = s:sub(#s - MAX_OUTPUT + 1)
  local nl = t:find("\n", 1, true)
  if nl and nl < 4096 then
    t = t:sub(nl + 1)
  end
  return "[…]\n" .. t
end

local function render_tool(info)
  local t = S.tools[info.callId]
  if not t then
    close_thinking()
    assistant_header()
    S.block = nil
    local row = put_lines({ tool_text(info) }, nil)
    t = { info = info }
    t.mark = vim.api.nvim_buf_set_extmark(S.log, M.ns, row, 0, {})
    S.tools[info.callId] = t
  else
    -- merge: updates carry the fields that changed; progress is a chunk of output, appended to
    -- the output so far (the history's tail for a call that ran before this editor attached)
    for k, v in pairs(info) do
      if k == "progress" and type(v) == "string" and type(t.info.progress) == "string" then
        t.info.progress = keep_tail(t.info.progress .. v)
      else
        t.info[k] = v
      end
    end
  end
  local pos = vim.api.nvim_buf_get_extmark_by_id(S.log, M.ns, t.mark, {})
  local row = pos[1]
  if not row then
    return
  end
  local extra = error_lines(t.info)
  vim.api.nvim_buf_set_lines(S.log, row, row + 1 + (t.extra or 0), false,
    vim.list_extend({ tool_text(t.info) }, extra))
  if t.err_mark then
    pcall(vim.api.nvim_buf_del_extmark, S.log, M.ns, t.err_mark)
    t.err_mark = nil
  end
  t.extra = #extra
  if #extra > 0 then
    t.err_mark = vim.api.nvim_buf_set_extmark(S.log, M.ns, row + 1, 0, {
      end_row = row + #extra, end_col = #extra[#extra], hl_group = "AgentdError",
    })
  end
  if M.details_call == t.info.callId then
    M.refresh_details()
  end
  local virt = tool_virt(t.info)
  local icon = icons[t.info.status] or "•"
  local o = { id = t.mark, hl_group = icon_hl[t.info.status] or "AgentdTool", end_row = row, end_col = 2 + #icon }
  if virt then
    o.virt_text = virt
    o.virt_text_pos = "eol"
  end
  pcall(vim.api.nvim_buf_set_extmark, S.log, M.ns, row, 0, o)
end

local function note(text, hl)
  close_thinking()
  S.block = nil
  put_lines(util.split_lines(text), hl or "AgentdNote")
end

-- The user's words, then one line per label of the editor context sent with them ("↳ cart.go:3-5",
-- "↳ @docs/notes.md"): the daemon sends the same words and labels live (userMessage) and in a
-- session's history, so a resumed chat reads as it did live. The context's content is the model's.
local function user_message(text, context)
  close_thinking()
  S.block = nil
  S.assistant = false
  local row = put_lines({ "", "## You" }, nil)
  vim.api.nvim_buf_set_extmark(S.log, M.ns, row + 1, 0, { line_hl_group = "AgentdUser" })
  put_lines(util.split_lines(text), nil)
  local labels = {}
  for _, label in ipairs(type(context) == "table" and context or {}) do
    table.insert(labels, "  ↳ " .. tostring(label):gsub("\n", " "))
  end
  if #labels > 0 then
    put_lines(labels, "AgentdNote")
  end
end

local function turn_end(u)
  close_thinking()
  S.block = nil
  local s = require("agentd.session")
  local usage = s.usage
  local bits = {}
  if u.type == U.turn_failed then
    local e = u.error or {}
    note("✗ " .. (e.message or "the turn failed") .. ((e.fix and e.fix ~= "") and ("\n  fix: " .. e.fix) or ""),
      "AgentdError")
    return
  end
  table.insert(bits, u.reason or "done")
  if usage then
    table.insert(bits, string.format("%d→%d tokens", usage.promptTokens or 0, usage.outputTokens or 0))
    if usage.contextPercent then
      table.insert(bits, usage.contextPercent .. "% context")
    end
  end
  note("── " .. table.concat(bits, " · ") .. " ──", "AgentdNote")
end

-- Applies one queued operation to the buffer.
local function apply(op)
  local k = op.kind
  if k == "text" then
    S.streamed.text = S.streamed.text + #op.text
    begin_block("text")
    put_text(op.text)
  elseif k == "thinking" then
    S.streamed.thinking = S.streamed.thinking + #op.text
    if opts().thinking ~= "hide" then
      begin_block("thinking")
      put_text(op.text)
    end
  elseif k == "update" then
    local u = op.update
    local t = u.type
    if t == U.user_message then
      user_message(u.text or "", u.context)
    elseif t == U.message_completed then
      -- text that did not stream (attached mid-message, or deltas lost): write it now
      if opts().thinking ~= "hide" and (u.thinking or "") ~= "" and S.streamed.thinking == 0 then
        begin_block("thinking")
        put_text(u.thinking)
      end
      if (u.text or "") ~= "" and S.streamed.text == 0 then
        begin_block("text")
        put_text(u.text)
      end
      close_thinking()
      S.block = nil
      newline()
      S.streamed = { text = 0, thinking = 0 }
    elseif t == U.tool_call_started or t == U.tool_call_updated or t == U.tool_call_completed then
      if u.toolCall and u.toolCall.callId then
        render_tool(vim.deepcopy(u.toolCall))
      end
    elseif t == U.compaction and u.compaction then
      local c = u.compaction
      note(string.format("⟲ context compacted: %d → %d tokens", c.tokensBefore or 0, c.tokensAfter or 0))
    elseif t == U.turn_completed or t == U.turn_failed then
      turn_end(u)
      S.assistant = false
    end
  elseif k == "note" then
    note(op.text, op.hl)
  elseif k == "history" then
    for _, item in ipairs(op.items) do
      if item.type == "user" then
        user_message(item.text or "", item.context)
      elseif item.type == "assistant" then
        if opts().thinking ~= "hide" and (item.thinking or "") ~= "" then
          begin_block("thinking")
          put_text(item.thinking)
        end
        if (item.text or "") ~= "" then
          begin_block("text")
          put_text(item.text)
        end
        close_thinking()
        S.block = nil
      elseif item.type == "tool" and item.toolCall then
        render_tool(vim.deepcopy(item.toolCall))
      elseif item.type == "compaction" then
        -- agentd's summary of the earlier turns: a note, as live, never the user's words
        note("⟲ context compacted: the earlier conversation was replaced by a summary")
      end
    end
  end
end

local function flush()
  S.flush_pending = false
  if not valid_buf(S.log) or #S.ops == 0 then
    S.ops = {}
    return
  end
  local t0, c0 = util.hrtime_ms(), os.clock()
  local ops = S.ops
  S.ops = {}
  -- follow the end in windows whose cursor is on the last line
  local follow = {}
  local n0 = line_count()
  for _, w in ipairs(vim.fn.win_findbuf(S.log)) do
    if vim.api.nvim_win_get_cursor(w)[1] >= n0 - 1 then
      table.insert(follow, w)
    end
  end
  compat.set_buf_option(S.log, "modifiable", true)
  local ok, err = pcall(function()
    local i = 1
    while i <= #ops do
      local op = ops[i]
      if op.kind == "text" or op.kind == "thinking" then
        -- merge a run of deltas of the same kind into one buffer change
        local parts = { op.text }
        local j = i + 1
        while j <= #ops and ops[j].kind == op.kind do
          table.insert(parts, ops[j].text)
          j = j + 1
        end
        apply({ kind = op.kind, text = table.concat(parts) })
        i = j
      else
        apply(op)
        i = i + 1
      end
    end
  end)
  compat.set_buf_option(S.log, "modifiable", false)
  if not ok then
    util.error("chat rendering failed: " .. tostring(err))
  end
  local n = line_count()
  for _, w in ipairs(follow) do
    pcall(vim.api.nvim_win_set_cursor, w, { n, 0 })
  end
  local dt = util.hrtime_ms() - t0
  local st = M.stats
  st.max_flush_cpu_ms = math.max(st.max_flush_cpu_ms, (os.clock() - c0) * 1000)
  st.flushes = st.flushes + 1
  st.total_flush_ms = st.total_flush_ms + dt
  if dt > st.max_flush_ms then
    st.max_flush_ms = dt
  end
end

local function schedule()
  if S.flush_pending then
    return
  end
  S.flush_pending = true
  local delay = opts().flush_ms or 0
  if delay <= 0 then
    vim.schedule(flush)
    return
  end
  S.timer = S.timer or compat.uv.new_timer()
  S.timer:start(delay, 0, vim.schedule_wrap(flush))
end

local function push(op)
  ensure_buffers()
  table.insert(S.ops, op)
  M.stats.ops = M.stats.ops + 1
  schedule()
end

--- Writes everything queued now (tests, and before switching sessions).
function M.flush_now()
  if S.timer then
    S.timer:stop()
  end
  flush()
end

-- Entry points -------------------------------------------------------------------------------

--- A session/update of the current session.
function M.on_update(params)
  local u = params.update
  local t = u.type
  if t == U.text_delta then
    push({ kind = "text", text = u.text or "" })
  elseif t == U.thinking_delta then
    push({ kind = "thinking", text = u.text or "" })
  elseif t == U.turn_started or t == U.usage then
    schedule() -- only the status line changes
  else
    push({ kind = "update", update = u })
  end
end

--- Clears the log and shows a session's history.
function M.reset(session, history)
  ensure_buffers()
  if S.timer then
    S.timer:stop()
  end
  S.ops, S.flush_pending = {}, false
  S.session = session
  compat.set_buf_option(S.log, "modifiable", true)
  vim.api.nvim_buf_clear_namespace(S.log, M.ns, 0, -1)
  vim.api.nvim_buf_set_lines(S.log, 0, -1, false, {})
  compat.set_buf_option(S.log, "modifiable", false)
  S.folds, S.tools, S.block, S.assistant, S.thinking_mark = {}, {}, nil, false, nil
  S.streamed = { text = 0, thinking = 0 }
  local title = require("agentd.session").title_of(session)
  push({ kind = "note", text = string.format("# %s  (%s, %s)", title, session.model or "?",
    session.approvalMode or "?"), hl = "AgentdTitle" })
  local ins = session.instructions -- AGENTS.md: "using AGENTS.md (1.2 KB)", as `agentd run` prints
  if type(ins) == "table" and ins.path then
    local n = tonumber(ins.bytes) or 0
    local size = n < 1024 and string.format("%d B", n) or string.format("%.1f KB", n / 1024)
    push({ kind = "note", text = string.format("using %s (%s%s)", ins.path, size,
      ins.truncated and ", truncated to 8 KB" or ""), hl = "Comment" })
  end
  for _, w in ipairs(type(session.warnings) == "table" and session.warnings or {}) do
    push({ kind = "note", text = "warning: " .. w, hl = "WarningMsg" })
  end
  if history and #history > 0 then
    push({ kind = "history", items = history })
  end
  M.flush_now()
end

--- A line in the log (revert results, review notes).
function M.note(text, hl)
  push({ kind = "note", text = text, hl = hl })
end

function M.on_review(r)
  local s = require("agentd.session").current
  if not s or r.params.sessionId ~= s.sessionId then
    return
  end
  if r.params.kind == "edit" then
    push({ kind = "note", text = string.format("  ↳ review %s: %s — accept or reject the hunks in the file",
      r.id, (r.params.file and r.params.file.path) or r.params.label or "") })
  end
end

function M.on_review_resolved(r, params)
  local s = require("agentd.session").current
  if not s or r.params.sessionId ~= s.sessionId then
    return
  end
  local what = params.outcome or "settled"
  if params.hunks and #params.hunks > 0 and r.hunks and #params.hunks < #r.hunks then
    what = string.format("%s (%d of %d hunks)", what, #params.hunks, #r.hunks)
  end
  push({ kind = "note", text = string.format("  ↳ review %s %s", r.id, what) })
end

--- The tool call whose line (or error lines) is at row (0-based) of the log, or nil.
function M.tool_at(row)
  for _, t in pairs(S.tools) do
    local pos = vim.api.nvim_buf_get_extmark_by_id(S.log, M.ns, t.mark, {})
    if pos and pos[1] and row >= pos[1] and row <= pos[1] + (t.extra or 0) then
      return t.info
    end
  end
  return nil
end

-- The lines of a tool call's details (agentd.details).
function M.details_lines(info)
  return require("agentd.details").lines(info, vim.trim(tool_text(info)))
end

--- Opens the details of the tool call under the cursor (in the chat log) in a float; q closes it.
function M.show_details(info)
  if not info then
    if not valid_buf(S.log) or vim.api.nvim_get_current_buf() ~= S.log then
      return false
    end
    info = M.tool_at(vim.api.nvim_win_get_cursor(0)[1] - 1)
    if not info then
      util.notify("no tool call on this line (⏎ or K on a tool line shows its result)")
      return false
    end
  end
  local b = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, M.details_lines(info))
  M.details_call = info.callId
  compat.set_buf_option(b, "modifiable", false)
  compat.set_buf_option(b, "bufhidden", "wipe")
  compat.set_buf_option(b, "filetype", "markdown")
  local W = math.max(40, math.floor(vim.o.columns * 0.8))
  local Hh = math.max(5, math.floor((vim.o.lines - 2) * 0.8))
  local w = vim.api.nvim_open_win(b, true, {
    relative = "editor", row = math.floor((vim.o.lines - Hh) / 2) - 1, col = math.floor((vim.o.columns - W) / 2),
    width = W, height = Hh, border = "rounded", style = "minimal",
  })
  compat.set_win_option(w, "wrap", true)
  compat.set_win_option(w, "linebreak", true)
  vim.keymap.set("n", "q", "<cmd>close<CR>", { buffer = b, nowait = true, silent = true, desc = "agentd: close" })
  vim.keymap.set("n", "<Esc>", "<cmd>close<CR>", { buffer = b, nowait = true, silent = true, desc = "agentd: close" })
  M.details_win, M.details_buf = w, b
  return true
end

--- Writes the open details float again from its call's latest state (it follows the call: a
--- command that ends while its details are shown no longer says "running").
function M.refresh_details()
  local b = M.details_buf
  local t = S.tools[M.details_call or ""]
  if not (t and valid_buf(b)) then
    return
  end
  compat.set_buf_option(b, "modifiable", true)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, M.details_lines(t.info))
  compat.set_buf_option(b, "modifiable", false)
end

--- The log's text (tests).
function M.lines()
  if not valid_buf(S.log) then
    return {}
  end
  return vim.api.nvim_buf_get_lines(S.log, 0, -1, false)
end

return M
