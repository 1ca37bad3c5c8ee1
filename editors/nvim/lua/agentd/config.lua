-- Options of require("agentd").setup(): defaults, validation, and the merged result.
local compat = require("agentd.compat")

local M = {}

M.defaults = {
  -- How to reach the daemon: `agentd connect` forwards stdio to the shared daemon (started on
  -- demand). A list (no shell involved).
  cmd = { "agentd", "connect" },
  -- Extra environment for cmd, e.g. { OLLAMA_HOST = "http://127.0.0.1:11434" }.
  cmd_env = nil,
  -- The workspace folder: a path, or a function(bufnr) returning one. Default: the nearest
  -- directory above the current directory holding one of root_markers, else the current directory.
  root_dir = nil,
  root_markers = { ".git", ".hg", "go.mod", "package.json", "Cargo.toml", "pyproject.toml" },
  -- true: start the daemon connection in setup(); false: on the first :Agent* command.
  autostart = false,
  -- Defaults for new sessions (sent as initializationOptions; nil leaves the daemon's default).
  model = nil,
  approval_mode = nil, -- "ask" | "auto-edit" | "plan" | "yolo"
  ollama_host = nil,
  context_length = nil,
  chat = {
    -- "right" | "left" | "bottom" | "top" | "float" | "tab"
    layout = "right",
    -- Columns (or rows for bottom/top) of a split; fraction of the editor if < 1.
    size = 0.4,
    -- Float size as fractions of the editor.
    float = { width = 0.7, height = 0.8, border = "rounded" },
    -- Lines of the prompt box under the chat log.
    input_height = 4,
    -- "fold" (closed fold, za opens it), "show" or "hide".
    thinking = "fold",
    -- Streamed text is written to the chat buffer at most this often (milliseconds).
    flush_ms = 30,
    -- Open the chat window when :Agent sends a prompt.
    open_on_prompt = true,
  },
  review = {
    -- What happens when a review arrives for a file that is not in a window:
    -- "notify" (message; :AgentReview jumps to it), "split" (open it in a split, keeping focus),
    -- "edit" (open it in the current window).
    open = "notify",
    -- Ask for an optional reason with vim.ui.input when rejecting.
    ask_reason = true,
    -- Sign column text.
    signs = { change = "~", delete = "-", add = "+", accepted = "✓", rejected = "✗" },
  },
  -- Key mappings; false disables all defaults, a key set to false disables that one.
  -- <Plug>(agentd-...) mappings exist either way (:h agentd-mappings).
  keymaps = {
    -- global (normal mode; prompt also in visual mode, sending the selection)
    chat = "<leader>ac",
    prompt = "<leader>ap",
    cancel = "<leader>ax",
    -- buffer-local while a review is shown in the buffer
    next_hunk = "]h",
    prev_hunk = "[h",
    accept_hunk = "<leader>aa",
    reject_hunk = "<leader>ar",
    reject_hunk_reason = "<leader>aw", -- reject the hunk with a reason ("why")
    accept_file = "<leader>aA",
    reject_file = "<leader>aR",
    undo = "<leader>au",
    -- global: answer the waiting command/tool approval (run once / reject with a reason)
    approve = "<leader>ay",
    deny = "<leader>an",
  },
  -- Inline completion (ghost text) from the completion model (:h agentd-completion).
  completion = {
    -- true, false, or "auto": on when a completion model is configured (model below, or the
    -- daemon's completion-model), else off.
    enabled = "auto",
    -- The completion model for this editor (false: the daemon's).
    model = false,
    -- Per filetype on/off, over `enabled`: { markdown = false, go = true }.
    filetypes = {},
    -- Insert-mode keys that accept the ghost text (else they do what they always do); false
    -- maps none.
    keymaps = { accept = "<Tab>", accept_alt = "<C-y>" },
    -- Wait this long after a keystroke before asking (milliseconds; 0.7–0.11, the built-in
    -- completion of 0.12 has its own).
    debounce_ms = 150,
  },
  -- Minimum level of vim.notify messages from the plugin (vim.log.levels.*).
  notify_level = vim.log.levels.INFO,
}

M.options = vim.deepcopy(M.defaults)

local function one_of(values)
  return function(v)
    return v == nil or vim.tbl_contains(values, v), "one of " .. table.concat(values, ", ")
  end
end

local function optional_string_or_false(v)
  return v == nil or v == false or type(v) == "string", "string or false"
end

local function positive(v)
  return v == nil or (type(v) == "number" and v > 0), "positive number"
end

local function string_list(v)
  if type(v) ~= "table" or not compat.islist(v) or #v == 0 then
    return false, "non-empty list of strings"
  end
  for _, s in ipairs(v) do
    if type(s) ~= "string" then
      return false, "non-empty list of strings"
    end
  end
  return true
end

-- Warns about keys the defaults do not have (a typo otherwise goes unnoticed).
local function unknown_keys(user, defaults, prefix, out)
  for k, v in pairs(user) do
    local d = defaults[k]
    local path = prefix .. tostring(k)
    if d == nil and not (defaults == M.defaults and (k == "cmd_env" or k == "root_dir" or k == "model"
          or k == "approval_mode" or k == "ollama_host" or k == "context_length")) then
      table.insert(out, path)
    elseif type(d) == "table" and type(v) == "table" and not compat.islist(d) then
      unknown_keys(v, d, path .. ".", out)
    end
  end
end

--- Validates a user config (raises like vim.validate on a wrong type) and returns the merged
--- options plus a list of unknown keys.
function M.validate(user)
  user = user or {}
  compat.validate("opts", user, "table")
  local v = compat.validate
  v("cmd", user.cmd, function(x)
    return x == nil or string_list(x)
  end, false, "non-empty list of strings")
  v("cmd_env", user.cmd_env, "table", true)
  v("root_dir", user.root_dir, function(x)
    return x == nil or type(x) == "string" or type(x) == "function"
  end, false, "string or function")
  v("root_markers", user.root_markers, "table", true)
  v("autostart", user.autostart, "boolean", true)
  v("model", user.model, "string", true)
  v("approval_mode", user.approval_mode, one_of({ "ask", "auto-edit", "plan", "yolo" }), false, "ask, auto-edit, plan or yolo")
  v("ollama_host", user.ollama_host, "string", true)
  v("context_length", user.context_length, positive, false, "positive number")
  v("chat", user.chat, "table", true)
  v("review", user.review, "table", true)
  v("keymaps", user.keymaps, function(x)
    return x == nil or x == false or type(x) == "table"
  end, false, "table or false")
  v("notify_level", user.notify_level, "number", true)
  v("completion", user.completion, "table", true)
  local completion = user.completion or {}
  v("completion.enabled", completion.enabled, function(x)
    return x == nil or x == true or x == false or x == "auto"
  end, false, "true, false or \"auto\"")
  v("completion.model", completion.model, optional_string_or_false, false, "string or false")
  v("completion.filetypes", completion.filetypes, "table", true)
  v("completion.keymaps", completion.keymaps, function(x)
    return x == nil or x == false or type(x) == "table"
  end, false, "table or false")
  v("completion.debounce_ms", completion.debounce_ms, function(x)
    return x == nil or (type(x) == "number" and x >= 0)
  end, false, "number >= 0")

  local chat = user.chat or {}
  v("chat.layout", chat.layout, one_of({ "right", "left", "bottom", "top", "float", "tab" }), false,
    "right, left, bottom, top, float or tab")
  v("chat.size", chat.size, positive, false, "positive number")
  v("chat.float", chat.float, "table", true)
  v("chat.input_height", chat.input_height, positive, false, "positive number")
  v("chat.thinking", chat.thinking, one_of({ "fold", "show", "hide" }), false, "fold, show or hide")
  v("chat.flush_ms", chat.flush_ms, function(x)
    return x == nil or (type(x) == "number" and x >= 0)
  end, false, "number >= 0")
  v("chat.open_on_prompt", chat.open_on_prompt, "boolean", true)

  local review = user.review or {}
  v("review.open", review.open, one_of({ "notify", "split", "edit" }), false, "notify, split or edit")
  v("review.ask_reason", review.ask_reason, "boolean", true)
  v("review.signs", review.signs, "table", true)

  if type(user.keymaps) == "table" then
    for name, lhs in pairs(user.keymaps) do
      v("keymaps." .. tostring(name), lhs, optional_string_or_false, false, "string or false")
    end
  end

  local unknown = {}
  unknown_keys(user, M.defaults, "", unknown)
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), user)
  if user.keymaps == false then
    merged.keymaps = false
  end
  if user.completion and user.completion.keymaps == false then
    merged.completion.keymaps = false
  end
  if user.cmd then
    merged.cmd = vim.deepcopy(user.cmd) -- lists are replaced, not merged index by index
  end
  if user.root_markers then
    merged.root_markers = vim.deepcopy(user.root_markers)
  end
  return merged, unknown
end

function M.set(user)
  local merged, unknown = M.validate(user)
  M.options = merged
  return merged, unknown
end

function M.get()
  return M.options
end

return M
