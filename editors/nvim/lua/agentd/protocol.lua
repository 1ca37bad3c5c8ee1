-- The agentd editor protocol as the plugin uses it: method names, update kinds, decision types and
-- error codes. It mirrors rpc/protocol.go one to one; tests/unit/test_protocol.lua reads
-- rpc/protocol.json (generated from the Go table) and fails when the two drift apart. Do not add a
-- method here that the Go table lacks.
local M = {}

M.version = 1

-- Client -> server requests.
M.request = {
  session_new = "session/new",
  session_list = "session/list",
  session_attach = "session/attach",
  session_detach = "session/detach",
  session_prompt = "session/prompt",
  session_steer = "session/steer",
  session_cancel = "session/cancel",
  session_revert = "session/revert",
  session_fork = "session/fork",
  session_rewind = "session/rewind",
  session_set_mode = "session/setMode",
  model_list = "model/list",
  review_decide = "review/decide",
  review_list = "review/list",
  review_hunk_state = "review/hunkState",
  grant_list = "grant/list",
  grant_revoke = "grant/revoke",
  daemon_status = "daemon/status",
  turn_list = "turn/list",
  turn_changes = "turn/changes",
  turn_undo = "turn/undo",
  mcp_proposals = "mcp/proposals",
  mcp_approve = "mcp/approve",
}

-- Server -> client notifications.
M.notification = {
  session_update = "session/update",
  review_requested = "review/requested",
  review_resolved = "review/resolved",
  review_hunk_states = "review/hunkStates",
}

-- Server -> client requests (the handler must return a result synchronously).
M.server_request = {
  document_save = "document/save",
  document_diagnostics = "document/diagnostics",
}

-- session/update kinds (Update.type).
M.update = {
  turn_started = "turnStarted",
  user_message = "userMessage",
  text_delta = "textDelta",
  thinking_delta = "thinkingDelta",
  message_completed = "messageCompleted",
  tool_call_started = "toolCallStarted",
  tool_call_updated = "toolCallUpdated",
  tool_call_completed = "toolCallCompleted",
  usage = "usage",
  compaction = "compaction",
  turn_completed = "turnCompleted",
  turn_failed = "turnFailed",
}

-- review/decide decision types (Decision.type).
M.decision = {
  accept = "accept",
  accept_for_session = "acceptForSession",
  reject = "reject",
  cancel_turn = "cancelTurn",
}

-- Grant scope kinds (GrantScope.kind).
M.scope = {
  tool = "tool",
  command = "command",
  path = "path",
}

-- States of a workspace's proposed MCP server (MCPProposal.state, mcp/proposals).
M.proposal = {
  approved = "approved",
  needs_approval = "needsApproval",
  invalid = "invalid",
  shadowed = "shadowed",
}

-- Approval modes (session/setMode).
M.approval_modes = { "ask", "auto-edit", "plan", "yolo" }

-- JSON-RPC error codes (docs/protocol.md section 8).
M.error = {
  model_unavailable = -32001,
  parse_error = -32700,
  invalid_request = -32600,
  method_not_found = -32601,
  invalid_params = -32602,
  request_cancelled = -32800,
  unknown_session = -32801,
  unknown_review = -32802,
  turn_running = -32803,
  review_resolved = -32804,
  workspace_folder = -32805,
  request_failed = -32806,
}

return M
