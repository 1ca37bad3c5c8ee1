-- The user commands (plugin/agentd.lua defines them; this is what they do).
local client = require("agentd.client")
local protocol = require("agentd.protocol")
local util = require("agentd.util")

local M = {}

local function session()
  return require("agentd.session")
end

--- Editor context for a prompt: the given lines of the current buffer, else the current file.
function M.context(line1, line2)
  local bufnr = vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or vim.bo[bufnr].buftype ~= "" then
    return nil
  end
  local path = util.normalize(name)
  local root = client.root or client.find_root(bufnr)
  if not util.is_under(path, root) then
    return nil
  end
  local uri = vim.uri_from_fname(path)
  if line1 and line2 then
    local lines = vim.api.nvim_buf_get_lines(bufnr, line1 - 1, line2, false)
    return { {
      uri = uri,
      range = { start = { line = line1 - 1, character = 0 }, ["end"] = { line = line2, character = 0 } },
      text = table.concat(lines, "\n") .. "\n",
    } }
  end
  return { { uri = uri } }
end

function M.agent(o)
  local ctx
  if o.range and o.range > 0 then
    ctx = M.context(o.line1, o.line2)
  else
    ctx = M.context()
  end
  if o.args and vim.trim(o.args) ~= "" then
    session().prompt(o.args, ctx)
    return
  end
  vim.ui.input({ prompt = "agentd> " }, function(text)
    if text and vim.trim(text) ~= "" then
      session().prompt(text, ctx)
    end
  end)
end

function M.ask()
  M.agent({ args = "", range = 0 })
end

function M.ask_selection()
  local l1, l2 = vim.fn.line("v"), vim.fn.line(".")
  if l1 > l2 then
    l1, l2 = l2, l1
  end
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<Esc>", true, false, true), "nx", false)
  M.agent({ args = "", range = 2, line1 = l1, line2 = l2 })
end

function M.chat()
  local chat = require("agentd.chat")
  if chat.is_open() then
    chat.close()
    return
  end
  chat.open()
  -- connect and show the session (a new one is made on the first prompt); a model Ollama does
  -- not have is said now
  client.with_client(function(c)
    if c then
      session().check_model()
    end
  end)
end

function M.new(o)
  session().new(o.args, function()
    require("agentd.chat").open()
  end)
end

function M.sessions()
  session().pick()
end

function M.cancel()
  session().cancel()
end

function M.revert(o)
  session().revert(o.args)
end

function M.rewind(o)
  require("agentd.rewind").rewind(o.args)
end

function M.changes(o)
  require("agentd.changes").open(o.args)
end

function M.turns()
  require("agentd.changes").pick()
end

function M.accept(o)
  local review = require("agentd.review")
  if o.bang then
    review.accept_file()
  elseif o.range and o.range > 0 then
    review.accept_hunk(o.line1, o.line2)
  else
    review.accept_hunk()
  end
end

function M.edit_proposal()
  require("agentd.review").edit_proposal()
end

function M.reject(o)
  local review = require("agentd.review")
  if o.bang then
    review.reject_file()
  elseif o.args and vim.trim(o.args) ~= "" then
    review.reject_hunk_reason(o.args)
  elseif o.range and o.range > 0 then
    review.reject_hunk(o.line1, o.line2)
  else
    review.reject_hunk()
  end
end

function M.undo()
  require("agentd.review").undo()
end

function M.approve()
  require("agentd.approval").answer_current("accept")
end

function M.deny()
  require("agentd.approval").answer_current("reject")
end

function M.allow()
  require("agentd.review").allow_for_session()
end

function M.review()
  require("agentd.review").goto_pending()
end

function M.model(o)
  session().pick_model(o.args)
end

function M.mode(o)
  session().set_mode(o.args)
end

function M.status()
  client.request(protocol.request.daemon_status, vim.empty_dict(), function(err, r)
    if err then
      util.error("daemon/status failed: " .. util.err_text(err))
      return
    end
    local s = session()
    local cur = s.current
    util.notify(string.format("daemon %s · sandbox %s · %d session%s · engine %s: %s\n%s%s", r.version or "?",
      r.sandbox or "?", r.sessions or 0, r.sessions == 1 and "" or "s", r.engine or "?", r.ollama or "?",
      require("agentd.completion").describe(),
      cur and string.format("\nsession %s (%s, %s)", cur.title ~= "" and cur.title or cur.sessionId, cur.model or "?",
        cur.approvalMode or "?") or ""))
  end)
end

function M.completion(o)
  require("agentd.completion").command(o.fargs or {})
end

function M.mcp_approve()
  require("agentd.mcp").approve()
end

function M.grants()
  session().grants()
end

function M.stop()
  client.stop()
end

return M
