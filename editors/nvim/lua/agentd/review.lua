-- Reviews: the editor is the gate. An edit review is shown inline in the file's buffer, without
-- changing the buffer or the file:
--   * the lines a hunk removes or replaces stay as they are, highlighted with AgentdDelete
--     (DiffDelete) as a line highlight, with a sign on each;
--   * the lines the hunk proposes are virtual lines (virt_lines) right below them, highlighted
--     with AgentdAdd (DiffAdd); a pure insertion shows them between the lines where they would go;
--   * the first line of each hunk carries an end-of-line label (hunk n/m, +a -r, keys).
-- The user decides hunk by hunk (or for the whole file); once every hunk has a decision the
-- plugin sends one review/decide. The daemon then applies the accepted hunks through
-- workspace/applyEdit (one undoable change) and asks for document/save. review/resolved clears
-- the marks, whoever settled the review.
-- Command and tool reviews go to agentd.approval (vim.ui.select).
local client = require("agentd.client")
local config = require("agentd.config")
local protocol = require("agentd.protocol")
local util = require("agentd.util")
local compat = require("agentd.compat")

local M = {}

M.ns = vim.api.nvim_create_namespace("agentd_review")
-- The key hint above each review's first hunk (its own namespace: M.marks lists only hunk marks).
M.hint_ns = vim.api.nvim_create_namespace("agentd_review_hint")
M.reviews = {} -- reviewId -> review state
local order = {} -- reviewIds in arrival order
local mapped = {} -- bufnr -> list of lhs we mapped buffer-locally
local augroup = vim.api.nvim_create_augroup("agentd_review", { clear = true })

-- Timing of the last placement (benchmarks read it): ms from notification to marks placed.
M.last_place_ms = nil

local function cfg()
  return config.get().review
end

local function path_of(r)
  return r.params.file and vim.uri_to_fname(r.params.file.uri) or nil
end

local function display_path(r)
  return (r.params.file and r.params.file.path) or r.params.label or r.id
end

--- Reviews waiting for a decision (of one session when session_id is given).
function M.pending_count(session_id)
  local n = 0
  for _, r in pairs(M.reviews) do
    if not r.sent and (session_id == nil or r.params.sessionId == session_id) then
      n = n + 1
    end
  end
  return n
end

-- Marks --------------------------------------------------------------------------------------

local function pad(s, width)
  local w = vim.api.nvim_strwidth(s)
  if w < width then
    return s .. string.rep(" ", width - w)
  end
  return s
end

local function del_marks(bufnr, h)
  for _, id in ipairs(h.marks or {}) do
    pcall(vim.api.nvim_buf_del_extmark, bufnr, M.ns, id)
  end
  h.marks = {}
end

local function keyhint(name)
  local km = config.get().keymaps
  if type(km) ~= "table" or not km[name] then
    return nil
  end
  local leader = vim.g.mapleader
  if leader == nil then
    leader = "\\"
  elseif leader == " " then
    leader = "<Space>"
  end
  return (km[name]:gsub("<[Ll]eader>", function()
    return leader
  end))
end

--- The key hint of a review: every action and its key (also in :help agentd-review).
function M.hint_text()
  local parts = {}
  local function add(name, what)
    local k = keyhint(name)
    if k then
      table.insert(parts, k .. " " .. what)
    end
  end
  local n, p = keyhint("next_hunk"), keyhint("prev_hunk")
  if n and p then
    table.insert(parts, n .. "/" .. p .. " next/prev")
  end
  add("accept_hunk", "accept")
  add("reject_hunk", "reject")
  add("reject_hunk_reason", "reject with reason")
  add("reject_file", "reject the rest (reason)")
  add("accept_file", "accept the rest")
  add("undo", "undo")
  if #parts == 0 then
    return " agentd review: :AgentAccept[!] · :AgentReject[!] · :AgentUndo"
  end
  return " agentd review: " .. table.concat(parts, " · ")
end

--- s on one line, cut to n characters (not bytes) with an ellipsis.
function M.clip(s, n)
  s = vim.trim((s:gsub("%s+", " ")))
  local len = vim.str_utfindex(s)
  if len <= n then
    return s
  end
  return s:sub(1, vim.str_byteindex(s, n - 1)) .. "…"
end

local function label_for(r, h)
  local n = #r.hunks
  local s = string.format(" ◆ agentd %d/%d  +%d −%d", h.index, n, #(h.hunk.added or {}), #(h.hunk.removed or {}))
  local u = keyhint("undo")
  if h.status == "accepted" then
    s = s .. "  ✓ accepted" .. (r.sent and "" or ((u and ("  " .. u .. " undo") or "") .. " (decide the other hunks to apply)"))
  elseif h.status == "rejected" then
    s = s .. "  ✗ rejected" .. (h.reason and (": “" .. M.clip(h.reason, 60) .. "”") or "")
      .. ((not r.sent and u) and ("  " .. u .. " undo") or "")
  else
    local a, j, w = keyhint("accept_hunk"), keyhint("reject_hunk"), keyhint("reject_hunk_reason")
    if a and j then
      s = s .. string.format("  %s accept · %s reject", a, j) .. (w and string.format(" · %s reason", w) or "")
    else
      s = s .. "  :AgentAccept · :AgentReject"
    end
  end
  if r.stale then
    s = s .. "  (buffer changed: positions may be off)"
  end
  return s
end

-- Places the marks of one hunk. Rows are the hunk's current position (0-based).
local function place_hunk(bufnr, r, h, width, tabstop)
  del_marks(bufnr, h)
  local hk = h.hunk
  local signs = cfg().signs
  local set = vim.api.nvim_buf_set_extmark
  local nlines = vim.api.nvim_buf_line_count(bufnr)
  local marks = h.marks
  local status = h.status
  local label_hl = status == "accepted" and "AgentdAccepted" or status == "rejected" and "AgentdRejected" or "AgentdHunkLabel"

  local added = {}
  if status ~= "rejected" then
    local hl = status == "accepted" and "AgentdAddAccepted" or "AgentdAdd"
    for i, line in ipairs(hk.added or {}) do
      added[i] = { { pad(util.expand_tabs(line, tabstop), width), hl } }
    end
  end

  if (hk.oldLines or 0) > 0 then
    local first = h.row
    local last = math.min(first + hk.oldLines - 1, nlines - 1)
    local sign = #(hk.added or {}) > 0 and signs.change or signs.delete
    if status == "accepted" then
      sign = signs.accepted
    elseif status == "rejected" then
      sign = signs.rejected
    end
    for row = first, last do
      local opts = {
        sign_text = sign,
        sign_hl_group = status == "rejected" and "AgentdRejected" or "AgentdSignDelete",
        priority = 200,
      }
      if status ~= "rejected" then
        opts.line_hl_group = "AgentdDelete"
      end
      if row == first then
        opts.virt_text = { { label_for(r, h), label_hl } }
        opts.virt_text_pos = "eol"
      end
      if row == last and #added > 0 then
        opts.virt_lines = added
      end
      table.insert(marks, set(bufnr, M.ns, row, 0, opts))
    end
  else
    -- Pure insertion before old line oldStart: below the line before it, or above the first line.
    local above = h.row < 0
    local row = above and 0 or math.min(h.row, nlines - 1)
    local opts = {
      sign_text = status == "accepted" and signs.accepted or status == "rejected" and signs.rejected or signs.add,
      sign_hl_group = status == "rejected" and "AgentdRejected" or "AgentdSignAdd",
      virt_text = { { label_for(r, h), label_hl } },
      virt_text_pos = "eol",
      priority = 200,
    }
    if #added > 0 then
      opts.virt_lines = added
      opts.virt_lines_above = above
    end
    table.insert(marks, set(bufnr, M.ns, row, 0, opts))
  end
  h.anchor = marks[1]
end

-- The hint line above the review's first hunk (virtual, above its first row).
local function place_hint(bufnr, r)
  if r.hint_mark then
    pcall(vim.api.nvim_buf_del_extmark, bufnr, M.hint_ns, r.hint_mark)
    r.hint_mark = nil
  end
  local h = r.hunks[1]
  if r.sent or r.diff_buf or not h or not h.anchor then
    return
  end
  local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, M.ns, h.anchor, {})
  if not pos or not pos[1] then
    return
  end
  r.hint_mark = vim.api.nvim_buf_set_extmark(bufnr, M.hint_ns, pos[1], 0, {
    virt_lines = { { { M.hint_text(), "AgentdHint" } } },
    virt_lines_above = true,
  })
end

-- Current row (0-based) of a hunk's first mark; for an insertion at the top, -1.
local function hunk_row(bufnr, h)
  if not h.anchor then
    return h.row
  end
  local pos = vim.api.nvim_buf_get_extmark_by_id(bufnr, M.ns, h.anchor, {})
  if not pos or not pos[1] then
    return h.row
  end
  if (h.hunk.oldLines or 0) == 0 and h.row < 0 then
    return -1
  end
  return pos[1]
end

-- Rows (0-based, inclusive) a hunk covers now, for "hunk under the cursor".
local function hunk_span(bufnr, h)
  local row = hunk_row(bufnr, h)
  if (h.hunk.oldLines or 0) > 0 then
    local last = h.marks[#h.marks]
    local pos = last and vim.api.nvim_buf_get_extmark_by_id(bufnr, M.ns, last, {})
    return row, (pos and pos[1]) or (row + h.hunk.oldLines - 1)
  end
  if row < 0 then
    return 0, 0
  end
  return row, row
end

local function lines_match(text, row, removed)
  for i = 1, #removed do
    if text[row + i] ~= removed[i] then
      return false
    end
  end
  return true
end

-- Where the hunk's removed lines are now (text: the buffer's lines): at the expected row, else
-- the nearest exact match.
local function locate(text, expected, removed, total)
  if #removed == 0 or lines_match(text, expected, removed) then
    return expected, true
  end
  for d = 1, total do
    local up, down = expected - d, expected + d
    if up >= 0 and lines_match(text, up, removed) then
      return up, true
    end
    if down + #removed <= total and lines_match(text, down, removed) then
      return down, true
    end
    if up < 0 and down + #removed > total then
      break
    end
  end
  return expected, false
end

local function set_keymaps(bufnr)
  if mapped[bufnr] then
    return
  end
  local km = config.get().keymaps
  mapped[bufnr] = {}
  if type(km) ~= "table" then
    return
  end
  local function map(key, plug, desc)
    local lhs = km[key]
    if not lhs then
      return
    end
    local existing = vim.fn.maparg(lhs, "n", false, true)
    if type(existing) == "table" and existing.buffer == 1 then
      return -- the user's own buffer-local mapping wins
    end
    vim.keymap.set("n", lhs, plug, { buffer = bufnr, remap = true, desc = desc })
    table.insert(mapped[bufnr], lhs)
  end
  map("next_hunk", "<Plug>(agentd-next-hunk)", "agentd: next hunk")
  map("prev_hunk", "<Plug>(agentd-prev-hunk)", "agentd: previous hunk")
  map("accept_hunk", "<Plug>(agentd-accept-hunk)", "agentd: accept hunk")
  map("reject_hunk", "<Plug>(agentd-reject-hunk)", "agentd: reject hunk")
  map("reject_hunk_reason", "<Plug>(agentd-reject-hunk-reason)", "agentd: reject the hunk with a reason")
  map("accept_file", "<Plug>(agentd-accept-file)", "agentd: accept all hunks of the file")
  map("reject_file", "<Plug>(agentd-reject-file)", "agentd: reject the file's pending hunks (with a reason)")
  map("undo", "<Plug>(agentd-undo)", "agentd: undo a hunk decision")
end

local function unset_keymaps(bufnr)
  for _, lhs in ipairs(mapped[bufnr] or {}) do
    pcall(vim.keymap.del, "n", lhs, { buffer = bufnr })
  end
  mapped[bufnr] = nil
end

local function buf_has_reviews(bufnr)
  for _, r in pairs(M.reviews) do
    if r.bufnr == bufnr then
      return true
    end
  end
  return false
end

local function width_for(bufnr)
  local w = vim.o.columns
  for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
    w = math.max(w, vim.api.nvim_win_get_width(win))
  end
  return w
end

-- Placement is time-sliced: a big review (hundreds of hunks) is placed in slices of at most
-- SLICE_MS of work, one per loop iteration, so no callback holds the editor for long.
local SLICE_MS = 6

--- Places every mark of an edit review in bufnr. done() runs when every hunk is placed.
function M.place(r, bufnr, done)
  r.bufnr = bufnr
  r.placed = false
  local t_start, cpu_start = util.hrtime_ms(), os.clock()
  local total = vim.api.nvim_buf_line_count(bufnr)
  local text = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  r.stale = false
  for _, h in ipairs(r.hunks) do
    local hk = h.hunk
    if (hk.oldLines or 0) > 0 then
      local row, found = locate(text, hk.oldStart - 1, hk.removed or {}, total)
      if not found then
        r.stale = true
      end
      h.row = math.max(0, math.min(row, total - 1))
    else
      h.row = hk.oldStart - 2 -- below this row; -1: above the first line
    end
  end
  local width, tabstop = width_for(bufnr), compat.get_buf_option(bufnr, "tabstop")
  set_keymaps(bufnr)
  local i = 1
  r.slices, r.max_slice_ms, r.place_cpu_ms = 0, 0, (os.clock() - cpu_start) * 1000
  local function slice()
    if M.reviews[r.id] ~= r or r.bufnr ~= bufnr or not vim.api.nvim_buf_is_valid(bufnr) then
      return -- resolved or moved meanwhile
    end
    local t0, c0 = util.hrtime_ms(), os.clock()
    r.slices = r.slices + 1
    while i <= #r.hunks do
      place_hunk(bufnr, r, r.hunks[i], width, tabstop)
      i = i + 1
      if i <= #r.hunks and util.hrtime_ms() - t0 > SLICE_MS then
        r.max_slice_ms = math.max(r.max_slice_ms, util.hrtime_ms() - t0)
        r.place_cpu_ms = r.place_cpu_ms + (os.clock() - c0) * 1000
        vim.schedule(slice)
        return
      end
    end
    r.max_slice_ms = math.max(r.max_slice_ms, util.hrtime_ms() - t0)
    r.place_cpu_ms = r.place_cpu_ms + (os.clock() - c0) * 1000
    place_hint(bufnr, r)
    r.placed = true
    r.place_ms = util.hrtime_ms() - t_start
    M.last_place_ms = r.place_ms
    -- Virtual lines above the first line only show with topfill.
    local fill = 0
    for _, h in ipairs(r.hunks) do
      if h.row < 0 and #(h.hunk.added or {}) > 0 then
        fill = fill + #h.hunk.added
      end
    end
    local first_row = r.hunks[1] and hunk_row(bufnr, r.hunks[1])
    if first_row and first_row <= 0 then
      fill = fill + 1 -- the hint line
    end
    if fill > 0 then
      for _, win in ipairs(vim.fn.win_findbuf(bufnr)) do
        vim.api.nvim_win_call(win, function()
          if vim.fn.line("w0") == 1 then
            vim.fn.winrestview({ topfill = fill })
          end
        end)
      end
    end
    if done then
      done()
    end
  end
  slice()
end

local function refresh(r)
  if r.bufnr and vim.api.nvim_buf_is_valid(r.bufnr) then
    local width, tabstop = width_for(r.bufnr), compat.get_buf_option(r.bufnr, "tabstop")
    for _, h in ipairs(r.hunks) do
      local row = hunk_row(r.bufnr, h)
      if (h.hunk.oldLines or 0) > 0 or row >= 0 then
        h.row = row
      end
      place_hunk(r.bufnr, r, h, width, tabstop)
    end
    place_hint(r.bufnr, r)
  end
end

local function clear(r)
  if r.bufnr and vim.api.nvim_buf_is_valid(r.bufnr) then
    for _, h in ipairs(r.hunks) do
      del_marks(r.bufnr, h)
    end
    if r.hint_mark then
      pcall(vim.api.nvim_buf_del_extmark, r.bufnr, M.hint_ns, r.hint_mark)
      r.hint_mark = nil
    end
  end
  M.reviews[r.id] = nil
  for i, id in ipairs(order) do
    if id == r.id then
      table.remove(order, i)
      break
    end
  end
  if r.bufnr and not buf_has_reviews(r.bufnr) then
    unset_keymaps(r.bufnr)
  end
  if r.diff_buf and vim.api.nvim_buf_is_valid(r.diff_buf) then
    pcall(vim.api.nvim_buf_delete, r.diff_buf, { force = true })
  end
end

-- A scratch buffer with the unified diff, for created/deleted files: accept/reject there act on
-- the whole review.
local function show_diff_buffer(r, open)
  local b = vim.api.nvim_create_buf(false, true)
  pcall(vim.api.nvim_buf_set_name, b, "agentd://review/" .. r.id .. "/" .. display_path(r))
  local f = r.params.file
  local header = {
    string.format("# agentd review %s: %s (%s)", r.id, r.params.label or display_path(r), r.params.why or ""),
    f.created and "# creates " .. f.path or f.deleted and "# deletes " .. f.path or "# edits " .. f.path,
    "# :AgentAccept! applies it, :AgentReject! rejects it (ask for a reason)",
    "",
  }
  local lines = vim.list_extend(header, util.split_lines(f.unifiedDiff or ""))
  vim.api.nvim_buf_set_lines(b, 0, -1, false, lines)
  compat.set_buf_option(b, "modifiable", false)
  compat.set_buf_option(b, "filetype", "diff")
  compat.set_buf_option(b, "bufhidden", "wipe")
  r.diff_buf = b
  r.bufnr = b
  for _, h in ipairs(r.hunks) do
    h.row = 0
  end
  set_keymaps(b)
  if open then
    vim.cmd("belowright split")
    vim.api.nvim_win_set_buf(0, b)
    vim.cmd("wincmd p")
  end
end

local function try_place_when_loaded(r)
  local path = path_of(r)
  if not path then
    return
  end
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufWinEnter" }, {
    group = augroup,
    callback = function(a)
      if not M.reviews[r.id] then
        return true -- resolved meanwhile: drop this autocmd
      end
      if r.bufnr then
        return true
      end
      if util.normalize(vim.api.nvim_buf_get_name(a.buf)) == util.normalize(path) then
        M.place(r, a.buf)
        return true
      end
    end,
    desc = "agentd: show review " .. r.id .. " when its file is opened",
  })
end

local function show_edit(r)
  local f = r.params.file
  if f.created or f.deleted or #r.hunks == 0 then
    show_diff_buffer(r, cfg().open ~= "notify")
    util.notify(string.format("review: %s — :AgentReview to see it", r.params.label or display_path(r)))
    return
  end
  local bufnr = util.buf_for_uri(f.uri)
  if bufnr and vim.api.nvim_buf_is_loaded(bufnr) then
    M.place(r, bufnr)
    if #vim.fn.win_findbuf(bufnr) == 0 then
      util.notify(string.format("review: %s (%d hunk%s) — :AgentReview to see it", display_path(r), #r.hunks,
        #r.hunks == 1 and "" or "s"))
    end
    return
  end
  local open = cfg().open
  if open == "split" or open == "edit" then
    local cur = vim.api.nvim_get_current_win()
    if open == "split" then
      vim.cmd("belowright split " .. vim.fn.fnameescape(path_of(r)))
    else
      vim.cmd("edit " .. vim.fn.fnameescape(path_of(r)))
    end
    local b = vim.api.nvim_get_current_buf()
    if not M.reviews[r.id].bufnr then
      M.place(r, b)
    end
    if open == "split" and vim.api.nvim_win_is_valid(cur) then
      vim.api.nvim_set_current_win(cur)
    end
    return
  end
  try_place_when_loaded(r)
  util.notify(string.format("review: %s (%d hunk%s) — :AgentReview to open it", display_path(r), #r.hunks,
    #r.hunks == 1 and "" or "s"))
end

-- Per-hunk decisions shared with the session's other editors ----------------------------------

--- Takes the per-hunk decisions of the session's other editors (review/hunkStates, or a pending
--- review's hunkStates at attach): every decided hunk, so a hunk not listed is pending again.
--- Unknown hunks and states are ignored. Returns whether anything changed.
local function apply_states(r, hunks)
  if type(hunks) ~= "table" then
    hunks = {}
  end
  local changed = false
  for _, h in ipairs(r.hunks) do
    local got = hunks[h.id]
    local status = "pending"
    if type(got) == "table" and (got.state == "accepted" or got.state == "rejected") then
      status = got.state
    end
    local reason = nil
    if status == "rejected" and type(got.reason) == "string" and vim.trim(got.reason) ~= "" then
      reason = vim.trim(got.reason)
    end
    if h.status ~= status then
      h.status = status
      h.seq = nil -- decided elsewhere: this editor's undo takes its own decisions first
      changed = true
    end
    if h.reason ~= reason then
      h.reason = reason
      changed = true
    end
  end
  return changed
end

--- Sends this editor's per-hunk decisions of a review that is not settled yet (review/hunkState):
--- the daemon relays them to the session's other editors. Every hunk is sent, the pending ones
--- as "pending", so an undo reaches the others too. Failing to share decides nothing.
local function share(r)
  if r.sent or #r.hunks == 0 or r.diff_buf then
    return
  end
  local hunks = {}
  for _, h in ipairs(r.hunks) do
    hunks[h.id] = { state = h.status, reason = h.status == "rejected" and h.reason or nil }
  end
  client.request(protocol.request.review_hunk_state, { reviewId = r.id, hunks = hunks }, function(err)
    if err and err.code ~= protocol.error.review_resolved and err.code ~= protocol.error.unknown_review then
      util.warn("hunk decisions not shared with the other editors: " .. util.err_text(err))
    end
  end)
end

function M.on_hunk_states(_, params)
  if type(params) ~= "table" then
    return
  end
  local r = M.reviews[params.reviewId]
  if not r or r.sent or (params.sessionId and r.params.sessionId ~= params.sessionId) then
    return
  end
  if apply_states(r, params.hunks) then
    refresh(r)
    util.status_changed()
  end
end

-- Notifications ------------------------------------------------------------------------------

function M.on_requested(_, params)
  if type(params) ~= "table" or not params.reviewId then
    return
  end
  if M.reviews[params.reviewId] then
    return -- already shown (e.g. again in session/attach's pendingReviews)
  end
  local r = { id = params.reviewId, params = params, hunks = {}, sent = false }
  M.reviews[r.id] = r
  table.insert(order, r.id)
  if params.kind == "edit" and params.file then
    for i, hk in ipairs(params.file.hunks or {}) do
      r.hunks[i] = { index = i, id = hk.id, hunk = hk, status = "pending", marks = {} }
    end
    -- Hunks decided already in another editor of the session (attached mid-review).
    apply_states(r, params.hunkStates)
    show_edit(r)
  else
    require("agentd.approval").enqueue(r)
  end
  require("agentd.chat").on_review(r)
  util.status_changed()
end

local by_text = {
  editor = "by an editor",
  grant = "by a session grant",
  timeout = "after the timeout",
  disconnect = "no editor could review it",
  turnEnded = "the turn ended",
}

function M.on_resolved(_, params)
  if type(params) ~= "table" then
    return
  end
  local r = M.reviews[params.reviewId]
  if not r then
    return
  end
  local mine = r.sent
  clear(r)
  require("agentd.approval").drop(r.id)
  if not mine or params.by ~= "editor" then
    util.notify(string.format("review of %s %s (%s)", display_path(r), params.outcome or "settled",
      by_text[params.by] or params.by or "?"))
  end
  require("agentd.chat").on_review_resolved(r, params)
  util.status_changed()
end

function M.clear_all(reason)
  local n = 0
  for _, r in pairs(vim.tbl_values(M.reviews)) do
    clear(r)
    n = n + 1
  end
  require("agentd.approval").drop_all()
  if n > 0 and reason then
    util.warn(string.format("%d review%s dropped: %s (the daemon rejects them)", n, n == 1 and "" or "s", reason))
  end
end

-- Decisions ----------------------------------------------------------------------------------

--- Sends a decision for a review. cb(err, result) optional.
function M.decide(r, decision, cb)
  if r.sent then
    util.notify("a decision for this review is already on its way")
    return
  end
  r.sent = true
  refresh(r)
  client.request(protocol.request.review_decide, { reviewId = r.id, decision = decision }, function(err, result)
    if err then
      if err.code == protocol.error.review_resolved or err.code == protocol.error.unknown_review then
        util.notify("review " .. r.id .. " was already settled")
        clear(r)
      else
        r.sent = false
        refresh(r)
        util.error("review/decide failed: " .. util.err_text(err))
      end
    end
    if cb then
      cb(err, result)
    end
  end)
end

local function ask_reason(cb)
  if not cfg().ask_reason then
    cb(nil)
    return
  end
  vim.ui.input({ prompt = "Reason for the agent (optional): " }, function(text)
    if text == nil then
      cb(false) -- cancelled: do not reject
      return
    end
    cb(vim.trim(text) ~= "" and vim.trim(text) or nil)
  end)
end

--- The hunkReasons of a decision: the reasons of the rejected hunks that have one (hunk ID →
--- reason), nil when there is none.
function M.hunk_reasons(r)
  local out, n = {}, 0
  for _, h in ipairs(r.hunks) do
    if h.status == "rejected" and h.reason then
      out[h.id], n = h.reason, n + 1
    end
  end
  return n > 0 and out or nil
end

-- Sends the decision once every hunk is decided.
local function maybe_submit(r)
  local accepted, pending = {}, 0
  for _, h in ipairs(r.hunks) do
    if h.status == "pending" then
      pending = pending + 1
    elseif h.status == "accepted" then
      table.insert(accepted, h.id)
    end
  end
  if pending > 0 then
    refresh(r)
    share(r)
    return
  end
  local why = M.hunk_reasons(r)
  if #accepted == #r.hunks then
    M.decide(r, { type = protocol.decision.accept })
  elseif #accepted > 0 then
    M.decide(r, { type = protocol.decision.accept, hunks = accepted, hunkReasons = why })
  elseif why then
    -- Every hunk rejected, some with their own reason: that is what the user had to say.
    M.decide(r, { type = protocol.decision.reject, hunkReasons = why })
  else
    ask_reason(function(reason)
      if reason == false then
        for _, h in ipairs(r.hunks) do
          h.status, h.seq, h.reason = "pending", nil, nil
        end
        refresh(r)
        share(r)
        return
      end
      M.decide(r, { type = protocol.decision.reject, reason = reason })
    end)
  end
end

--- The review and hunk at (bufnr, row), or the only pending hunk of the buffer.
function M.hunk_at(bufnr, row)
  local best_r, best_h
  local candidates = 0
  for _, id in ipairs(order) do
    local r = M.reviews[id]
    if r and r.bufnr == bufnr and not r.sent then
      for _, h in ipairs(r.hunks) do
        candidates = candidates + 1
        best_r, best_h = best_r or r, best_h or h
        if r.diff_buf then
          return r, h
        end
        local s, e = hunk_span(bufnr, h)
        if row >= s and row <= e then
          return r, h
        end
      end
    end
  end
  if candidates == 1 then
    return best_r, best_h
  end
  return nil
end

--- The pending reviews of a buffer (for "whole file" decisions).
function M.reviews_in(bufnr)
  local out = {}
  for _, id in ipairs(order) do
    local r = M.reviews[id]
    if r and r.bufnr == bufnr and not r.sent then
      table.insert(out, r)
    end
  end
  return out
end

local function cursor()
  return vim.api.nvim_get_current_buf(), vim.api.nvim_win_get_cursor(0)[1] - 1
end

local decided_seq = 0 -- order of hunk decisions, for undo

local function set_status(h, status)
  h.status = status
  if status ~= "rejected" then
    h.reason = nil
  end
  if status == "pending" then
    h.seq = nil
  else
    decided_seq = decided_seq + 1
    h.seq = decided_seq
  end
end

-- Hunks still pending in the reviews of a buffer, as {row, top, added, r, h}, sorted by row.
local function pending_rows(bufnr)
  local rows = {}
  for _, r in ipairs(M.reviews_in(bufnr)) do
    for _, h in ipairs(r.hunks) do
      if h.status == "pending" then
        local row = r.diff_buf and 0 or hunk_row(bufnr, h)
        table.insert(rows, { row = math.max(row, 0), top = row < 0, added = #(h.hunk.added or {}), r = r, h = h })
      end
    end
  end
  table.sort(rows, function(a, b)
    return a.row < b.row
  end)
  return rows
end

local function jump(target)
  vim.cmd("normal! m'")
  vim.api.nvim_win_set_cursor(0, { target.row + 1, 0 })
  if target.top then
    vim.fn.winrestview({ topfill = target.added + 1 })
  end
end

-- Shows review r's buffer in the current window (or its window), placing it when needed; then
-- done(bufnr) once its marks are placed.

--- Shows bufnr: focuses a window that has it, else puts it in the current window.
local function show_buf(bufnr)
  local wins = vim.fn.win_findbuf(bufnr)
  if #wins > 0 then
    vim.api.nvim_set_current_win(wins[1])
  else
    vim.api.nvim_win_set_buf(0, bufnr)
  end
end

local function open_review(r, done)
  if r.diff_buf and vim.api.nvim_buf_is_valid(r.diff_buf) then
    local wins = vim.fn.win_findbuf(r.diff_buf)
    if #wins > 0 then
      vim.api.nvim_set_current_win(wins[1])
    else
      vim.cmd("belowright split")
      vim.api.nvim_win_set_buf(0, r.diff_buf)
    end
    return done(r.diff_buf)
  end
  if not r.bufnr then
    vim.cmd("edit " .. vim.fn.fnameescape(path_of(r)))
    if not r.bufnr then
      M.place(r, vim.api.nvim_get_current_buf(), function()
        done(r.bufnr)
      end)
      return
    end
  else
    show_buf(r.bufnr)
  end
  if r.placed or r.diff_buf then
    done(r.bufnr)
  else
    -- placement under way (time-sliced): wait for it
    local function poll()
      if M.reviews[r.id] ~= r then
        return
      end
      if r.placed then
        return done(r.bufnr)
      end
      vim.schedule(poll)
    end
    poll()
  end
end

--- After a decision: moves the cursor to the next pending hunk, in this buffer (after the
--- cursor, wrapping), else in the next file with a pending review. Returns true when it moved.
function M.advance()
  local bufnr, row = cursor()
  local rows = pending_rows(bufnr)
  if #rows > 0 then
    for _, t in ipairs(rows) do
      if t.row > row then
        jump(t)
        return true
      end
    end
    jump(rows[1])
    return true
  end
  for _, id in ipairs(order) do
    local r = M.reviews[id]
    if r and not r.sent and r.params.kind == "edit" and r.bufnr ~= bufnr then
      local pending = false
      for _, h in ipairs(r.hunks) do
        pending = pending or h.status == "pending"
      end
      if pending then
        open_review(r, function(b)
          local prs = pending_rows(b)
          if prs[1] and vim.api.nvim_get_current_buf() == b then
            jump(prs[1])
          end
        end)
        util.notify("next review: " .. display_path(r))
        return true
      end
    end
  end
  return false
end

local function set_hunks(status, line1, line2)
  local bufnr, row = cursor()
  local targets = {}
  local ranged = line1 and line2 and line1 ~= line2
  if ranged then
    for _, r in ipairs(M.reviews_in(bufnr)) do
      for _, h in ipairs(r.hunks) do
        local s, e = hunk_span(bufnr, h)
        if e >= line1 - 1 and s <= line2 - 1 then
          table.insert(targets, { r, h })
        end
      end
    end
  else
    local r, h = M.hunk_at(bufnr, row)
    if r and r.diff_buf then
      for _, hh in ipairs(r.hunks) do
        table.insert(targets, { r, hh })
      end
    elseif r then
      table.insert(targets, { r, h })
    end
  end
  if #targets == 0 then
    if #M.reviews_in(bufnr) == 0 then
      util.notify("no pending review in this buffer" .. (M.pending_count() > 0 and " (:AgentReview jumps to one)" or ""))
    else
      util.notify("no hunk under the cursor (]h / [h move between hunks)")
    end
    return
  end
  local touched = {}
  for _, t in ipairs(targets) do
    set_status(t[2], status)
    touched[t[1].id] = t[1]
  end
  for _, r in pairs(touched) do
    maybe_submit(r)
  end
  if not ranged then
    M.advance()
  end
end

function M.accept_hunk(line1, line2)
  set_hunks("accepted", line1, line2)
end

function M.reject_hunk(line1, line2)
  set_hunks("rejected", line1, line2)
end

--- Rejects the hunk under the cursor with a reason (asked with vim.ui.input; given: reason): the
--- reason is shown on the hunk until the file is settled and goes with the file's decision
--- (hunkReasons), for the model to read with that hunk. An empty answer rejects without a reason;
--- cancelling decides nothing. A new or deleted file (one diff buffer) is rejected as a whole.
function M.reject_hunk_reason(given)
  local bufnr, row = cursor()
  local r, h = M.hunk_at(bufnr, row)
  if not r then
    if #M.reviews_in(bufnr) == 0 then
      util.notify("no pending review in this buffer")
    else
      util.notify("no hunk under the cursor (]h / [h move between hunks)")
    end
    return
  end
  if h.status ~= "pending" then
    util.notify(string.format("hunk %d/%d is already %s (%s undoes it)", h.index, #r.hunks, h.status, keyhint("undo") or ":AgentUndo"))
    return
  end
  local function apply(text)
    if text == nil or M.reviews[r.id] ~= r or r.sent or h.status ~= "pending" then
      return
    end
    text = vim.trim(text)
    if r.diff_buf then
      for _, hh in ipairs(r.hunks) do
        set_status(hh, "rejected")
      end
      return M.decide(r, { type = protocol.decision.reject, reason = text ~= "" and text or nil })
    end
    set_status(h, "rejected")
    h.reason = text ~= "" and text or nil
    maybe_submit(r)
    M.advance()
  end
  if given and vim.trim(given) ~= "" then
    return apply(given)
  end
  vim.ui.input({ prompt = string.format("Why not hunk %d/%d? (the agent reads it): ", h.index, #r.hunks) }, apply)
end

-- The decision for a review whose pending hunks all get status; reason goes with it. Hunks the
-- user decided before keep their decision: a partial accept lists the accepted ones.
local function settle_rest(r, status, reason)
  local accepted = {}
  for _, h in ipairs(r.hunks) do
    if h.status == "pending" then
      set_status(h, status)
    end
    if h.status == "accepted" then
      table.insert(accepted, h.id)
    end
  end
  local why = M.hunk_reasons(r)
  if #accepted == #r.hunks then
    return { type = protocol.decision.accept }
  elseif #accepted > 0 then
    return { type = protocol.decision.accept, hunks = accepted, reason = reason, hunkReasons = why }
  end
  return { type = protocol.decision.reject, reason = reason, hunkReasons = why }
end

--- Accepts the hunks of the buffer's reviews still pending (hunks rejected before stay rejected).
function M.accept_file()
  local bufnr = vim.api.nvim_get_current_buf()
  local rs = M.reviews_in(bufnr)
  if #rs == 0 then
    return require("agentd.approval").answer_current("accept")
  end
  for _, r in ipairs(rs) do
    M.decide(r, settle_rest(r, "accepted"))
  end
  M.advance()
end

--- The review's proposed text of its file, as lines: the file (its buffer when loaded) with the
--- whole proposal applied; a new file's added lines.
local function proposed_lines(r)
  local f = r.params.file
  if f.created then
    local out = {}
    for _, h in ipairs(f.hunks or {}) do
      vim.list_extend(out, h.added or {})
    end
    return out
  end
  local path = path_of(r)
  local src = vim.fn.bufnr(path)
  local lines
  if src > 0 and vim.api.nvim_buf_is_loaded(src) then
    lines = vim.api.nvim_buf_get_lines(src, 0, -1, false)
  else
    lines = vim.fn.readfile(path)
  end
  local tmp = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_lines(tmp, 0, -1, false, lines)
  vim.lsp.util.apply_text_edits((f.edit and f.edit.edits) or {}, tmp, "utf-16")
  local out = vim.api.nvim_buf_get_lines(tmp, 0, -1, false)
  vim.api.nvim_buf_delete(tmp, { force = true })
  return out
end

--- :AgentEditProposal: the proposal of the buffer's first pending file review (or the review
--- given) in a buffer of its own (agentd://proposal/…), to change before accepting it. :w accepts
--- your version: it is what is written, and the model is told you changed its proposal, and how.
function M.edit_proposal(r)
  if not r then
    r = M.reviews_in(vim.api.nvim_get_current_buf())[1]
  end
  if not r or not r.params.file or r.sent then
    util.notify("no pending file review here (:AgentEditProposal works in a file under review)")
    return nil
  end
  local src = path_of(r) and vim.fn.bufnr(path_of(r)) or -1
  local ft = src > 0 and compat.get_buf_option(src, "filetype") or nil
  if (ft == nil or ft == "") and vim.filetype and vim.filetype.match then
    local ok, m = pcall(vim.filetype.match, { filename = r.params.file.path })
    ft = ok and m or nil
  end
  local b = vim.api.nvim_create_buf(false, false)
  pcall(vim.api.nvim_buf_set_name, b, "agentd://proposal/" .. r.id .. "/" .. r.params.file.path)
  vim.api.nvim_buf_set_lines(b, 0, -1, false, proposed_lines(r))
  compat.set_buf_option(b, "buftype", "acwrite")
  compat.set_buf_option(b, "bufhidden", "wipe")
  compat.set_buf_option(b, "swapfile", false)
  if ft and ft ~= "" then
    compat.set_buf_option(b, "filetype", ft)
  end
  compat.set_buf_option(b, "modified", false)
  vim.api.nvim_create_autocmd("BufWriteCmd", {
    buffer = b,
    callback = function()
      if not M.reviews[r.id] or r.sent then
        util.warn("review " .. r.id .. " is already settled: your version was not used")
        return
      end
      local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), "\n") .. "\n"
      M.decide(r, { type = "accept", content = text }, function(err)
        if not err and vim.api.nvim_buf_is_valid(b) then
          compat.set_buf_option(b, "modified", false)
          for _, w in ipairs(vim.fn.win_findbuf(b)) do
            if #vim.api.nvim_list_wins() > 1 then
              pcall(vim.api.nvim_win_close, w, true)
            end
          end
          pcall(vim.api.nvim_buf_delete, b, { force = true })
        end
      end)
    end,
    desc = "agentd: accept your version of the proposal",
  })
  vim.cmd("belowright split")
  vim.api.nvim_win_set_buf(0, b)
  compat.set_win_option(0, "statusline", " agentd proposal for " .. r.params.file.path:gsub("%%", "%%%%")
    .. "  ·  edit it, :w accepts your version  ·  :q! leaves it")
  return b
end

--- Rejects the hunks of the buffer's reviews still pending, asking for a reason (hunks accepted
--- before are applied: the decision is a partial accept carrying the reason).
function M.reject_file()
  local bufnr = vim.api.nvim_get_current_buf()
  local rs = M.reviews_in(bufnr)
  if #rs == 0 then
    return require("agentd.approval").answer_current("reject")
  end
  ask_reason(function(reason)
    if reason == false then
      return
    end
    for _, r in ipairs(rs) do
      if not r.sent and M.reviews[r.id] == r then
        M.decide(r, settle_rest(r, "rejected", reason))
      end
    end
    M.advance()
  end)
end

--- Undoes a hunk decision not sent yet: the hunk under the cursor, else the last one decided in
--- this buffer. A review whose every hunk is decided is sent at once: it is settled.
function M.undo()
  local bufnr, row = cursor()
  local target, target_r
  for _, r in ipairs(M.reviews_in(bufnr)) do
    for _, h in ipairs(r.hunks) do
      if h.status ~= "pending" then
        local s, e = hunk_span(bufnr, h)
        if not r.diff_buf and row >= s and row <= e then
          target, target_r = h, r
          break
        end
        if not target or (h.seq or 0) > (target.seq or 0) then
          target, target_r = h, r
        end
      end
    end
  end
  if not target then
    local settled = false
    for _, r in pairs(M.reviews) do
      settled = settled or (r.bufnr == bufnr and r.sent)
    end
    util.notify(settled and "the decision for this file is already sent: it is settled (:AgentRevert undoes a turn)"
      or "no hunk decision to undo in this buffer")
    return
  end
  set_status(target, "pending")
  refresh(target_r)
  share(target_r)
  if not target_r.diff_buf then
    local r0 = hunk_row(bufnr, target)
    jump({ row = math.max(r0, 0), top = r0 < 0, added = #(target.hunk.added or {}) })
  end
  util.notify(string.format("hunk %d/%d is pending again", target.index, #target_r.hunks))
end

--- Accept for the session with one of the review's scopes (picked with vim.ui.select).
function M.allow_for_session()
  local bufnr, row = cursor()
  local r = M.hunk_at(bufnr, row)
  if not r then
    r = M.reviews_in(bufnr)[1]
  end
  if not r then
    return require("agentd.approval").answer_current("session")
  end
  local scopes = require("agentd.approval").scopes(r)
  if #scopes == 0 then
    util.notify("this review offers no session scope")
    return
  end
  vim.ui.select(scopes, {
    prompt = "Allow for this session",
    format_item = function(c)
      return c.label
    end,
  }, function(c)
    if not c then
      return
    end
    if not c.confirm then
      return M.decide(r, c.decision)
    end
    vim.ui.select({ "no", "yes" }, { prompt = c.confirm, kind = "agentd.confirm" }, function(yes)
      if yes == "yes" and M.reviews[r.id] == r then
        M.decide(r, c.decision)
      end
    end)
  end)
end

-- Navigation ---------------------------------------------------------------------------------

local function hunk_rows(bufnr)
  local rows = {}
  for _, r in ipairs(M.reviews_in(bufnr)) do
    for _, h in ipairs(r.hunks) do
      if not r.diff_buf then
        local row = hunk_row(bufnr, h)
        table.insert(rows, { row = math.max(row, 0), top = row < 0, added = #(h.hunk.added or {}) })
      end
    end
  end
  table.sort(rows, function(a, b)
    return a.row < b.row
  end)
  return rows
end

function M.next_hunk()
  local bufnr, row = cursor()
  local rows = hunk_rows(bufnr)
  if #rows == 0 then
    util.notify("no hunks in this buffer")
    return
  end
  for _, t in ipairs(rows) do
    if t.row > row then
      return jump(t)
    end
  end
  util.notify("wrapped to the first hunk")
  jump(rows[1])
end

function M.prev_hunk()
  local bufnr, row = cursor()
  local rows = hunk_rows(bufnr)
  if #rows == 0 then
    util.notify("no hunks in this buffer")
    return
  end
  for i = #rows, 1, -1 do
    if rows[i].row < row then
      return jump(rows[i])
    end
  end
  util.notify("wrapped to the last hunk")
  jump(rows[#rows])
end

--- :AgentReview — answer the waiting command approval, or open the first pending edit review.
function M.goto_pending()
  if require("agentd.approval").show_next(true) then
    return
  end
  for _, id in ipairs(order) do
    local r = M.reviews[id]
    if r and not r.sent and r.params.kind == "edit" then
      if r.diff_buf and vim.api.nvim_buf_is_valid(r.diff_buf) then
        if #vim.fn.win_findbuf(r.diff_buf) == 0 then
          vim.cmd("belowright split")
          vim.api.nvim_win_set_buf(0, r.diff_buf)
        end
        return
      end
      if not r.bufnr then
        vim.cmd("edit " .. vim.fn.fnameescape(path_of(r)))
        if not r.bufnr then
          M.place(r, vim.api.nvim_get_current_buf())
        end
      else
        show_buf(r.bufnr)
      end
      local rows = hunk_rows(r.bufnr)
      if rows[1] then
        jump(rows[1])
      end
      return
    end
  end
  util.notify("no pending reviews")
end

--- Marks of a buffer, for tests: list of {row, opts} in the review namespace.
function M.marks(bufnr)
  return vim.api.nvim_buf_get_extmarks(bufnr, M.ns, 0, -1, { details = true })
end

return M
