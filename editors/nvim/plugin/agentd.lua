-- agentd.nvim: commands and <Plug> mappings. Cheap at startup: modules load on first use.
if vim.g.loaded_agentd then
  return
end
if vim.fn.has("nvim-0.7") ~= 1 then
  vim.api.nvim_echo({ { "agentd.nvim needs Neovim 0.7 or newer", "ErrorMsg" } }, true, {})
  return
end
vim.g.loaded_agentd = true

local function cmd(name)
  return function(o)
    require("agentd").ensure_setup()
    require("agentd.commands")[name](o)
  end
end

local command = vim.api.nvim_create_user_command

command("Agent", cmd("agent"), {
  nargs = "*", range = true, desc = "agentd: send a prompt (with a range: about those lines)",
})
command("AgentChat", cmd("chat"), { nargs = 0, desc = "agentd: open or close the chat" })
command("AgentNew", cmd("new"), { nargs = "*", desc = "agentd: start a new session [title]" })
command("AgentSessions", cmd("sessions"), { nargs = 0, desc = "agentd: pick a session to resume" })
command("AgentCancel", cmd("cancel"), { nargs = 0, desc = "agentd: cancel the running turn" })
command("AgentRevert", cmd("revert"), { nargs = "?", desc = "agentd: restore the files a turn changed [turnId]" })
command("AgentRewind", cmd("rewind"), {
  nargs = "?", desc = "agentd: back to before a turn, files restored (never yours), to prompt again [turnId]",
})
command("AgentChanges", cmd("changes"), { nargs = "?", desc = "agentd: a turn's changed files and hunks, to undo [turnId]" })
command("AgentTurns", cmd("turns"), { nargs = 0, desc = "agentd: pick a turn that changed files" })
command("AgentAccept", cmd("accept"), {
  bang = true, range = true, desc = "agentd: accept the hunk under the cursor (! the whole file)",
})
command("AgentReject", cmd("reject"), {
  bang = true, range = true, nargs = "*",
  desc = "agentd: reject the hunk under the cursor [with the reason given] (! the whole file)",
})
command("AgentEditProposal", cmd("edit_proposal"), {
  nargs = 0, desc = "agentd: the proposal of the file under review in a buffer to change; :w accepts your version",
})
command("AgentUndo", cmd("undo"), { nargs = 0, desc = "agentd: undo a hunk decision not sent yet" })
command("AgentApprove", cmd("approve"), { nargs = 0, desc = "agentd: approve the waiting command once" })
command("AgentDeny", cmd("deny"), { nargs = 0, desc = "agentd: deny the waiting command (with a reason)" })
command("AgentAllow", cmd("allow"), { nargs = 0, desc = "agentd: accept the review and allow it for the session" })
command("AgentReview", cmd("review"), { nargs = 0, desc = "agentd: go to the next pending review" })
command("AgentModel", cmd("model"), {
  nargs = "?",
  complete = function()
    return require("agentd.session").complete_models()
  end,
  desc = "agentd: choose the model for new sessions",
})
command("AgentMode", cmd("mode"), {
  nargs = "?",
  complete = function()
    return require("agentd.protocol").approval_modes
  end,
  desc = "agentd: set the approval mode of the session",
})
command("AgentGrants", cmd("grants"), { nargs = 0, desc = "agentd: list the session's grants and revoke one" })
command("AgentMcpApprove", cmd("mcp_approve"), {
  nargs = 0, desc = "agentd: approve an MCP server this workspace proposes (for the next session)",
})
command("AgentCompletion", cmd("completion"), {
  nargs = "*",
  complete = function(_, line)
    return #vim.split(line, "%s+") <= 2 and { "on", "off", "toggle" } or vim.fn.getcompletion("", "filetype")
  end,
  desc = "agentd: inline completion on, off or toggle [for a filetype]",
})
command("AgentStatus", cmd("status"), { nargs = 0, desc = "agentd: show the daemon's status" })
command("AgentStop", cmd("stop"), { nargs = 0, desc = "agentd: close the connection (sessions keep running)" })

local function plug(mode, name, fn, desc)
  vim.keymap.set(mode, "<Plug>(agentd-" .. name .. ")", function()
    require("agentd").ensure_setup()
    fn()
  end, { silent = true, desc = "agentd: " .. desc })
end

local function C()
  return require("agentd.commands")
end
local function R()
  return require("agentd.review")
end

plug("n", "chat", function() C().chat({}) end, "toggle the chat")
plug("n", "prompt", function() C().ask() end, "ask the agent")
plug("x", "prompt-selection", function() C().ask_selection() end, "ask about the selection")
plug("n", "cancel", function() C().cancel({}) end, "cancel the turn")
plug("n", "next-hunk", function() R().next_hunk() end, "next hunk")
plug("n", "prev-hunk", function() R().prev_hunk() end, "previous hunk")
plug("n", "accept-hunk", function() R().accept_hunk() end, "accept the hunk")
plug("n", "reject-hunk", function() R().reject_hunk() end, "reject the hunk")
plug("n", "reject-hunk-reason", function() R().reject_hunk_reason() end, "reject the hunk with a reason")
plug("n", "accept-file", function() R().accept_file() end, "accept the file")
plug("n", "reject-file", function() R().reject_file() end, "reject the file")
plug("n", "review", function() R().goto_pending() end, "next pending review")
plug("n", "undo", function() R().undo() end, "undo a hunk decision")
plug("n", "approve", function() require("agentd.approval").answer_current("accept") end, "approve the waiting command")
plug("n", "deny", function() require("agentd.approval").answer_current("reject") end, "deny the waiting command")
