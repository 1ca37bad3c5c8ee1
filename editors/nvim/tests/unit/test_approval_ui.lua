-- Command approvals and document/save without a daemon.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()
require("agentd").setup({ cmd = { "true" } })
local client = require("agentd.client")
local review = require("agentd.review")
local approval = require("agentd.approval")

local sent = {}
client.request = function(method, params, cb)
  table.insert(sent, { method = method, params = params })
  if cb then
    vim.schedule(function()
      cb(nil, { outcome = "accepted", settled = {} })
    end)
  end
end

local function cmd_review(id)
  return {
    reviewId = id, sessionId = "s-1", turnId = "t2", callId = "call_9a0b", tool = "bash", label = "go test ./...",
    kind = "command", why = "ask mode: commands ask before they run",
    command = { argv = { "bash", "-c", "go test ./..." }, cwd = "/home/ada/src/shop", timeoutMs = 120000,
      sandbox = "bubblewrap+landlock+seccomp", network = false },
    scopes = {
      { kind = "command", commandPrefix = { "go", "test" }, label = "commands starting with `go test`" },
      { kind = "tool", tool = "bash", label = "all commands in this session" },
    },
  }
end

H.test("the handler does not ask synchronously; the question comes on the next loop turn", function()
  local calls = H.stub_select(H.pick("Run once"))
  review.on_requested(nil, cmd_review("r-1"))
  H.eq(#calls, 0, "not asked inside the notification handler")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(#calls, 1, "asked once")
  H.contains(calls[1].opts.prompt, "go test ./...", "shows the command")
  H.contains(calls[1].opts.prompt, "bubblewrap", "shows the sandbox")
  H.contains(calls[1].opts.prompt, "ask mode", "shows why")
  local labels = vim.tbl_map(calls[1].opts.format_item, calls[1].items)
  H.eq(labels, { "Run once", "Allow for this session: commands starting with `go test`",
    "Allow for this session: all commands in this session (asks to confirm)", "Reject (tell the agent why)",
    "Cancel the turn" })
  H.eq(sent[1].params, { reviewId = "r-1", decision = { type = "accept" } })
  review.on_resolved(nil, { reviewId = "r-1", sessionId = "s-1", outcome = "accepted", by = "editor" })
end)

H.test("allow for the session sends the scope without its label", function()
  sent = {}
  H.stub_select(H.pick("commands starting with"))
  review.on_requested(nil, cmd_review("r-2"))
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(sent[1].params.decision, { type = "acceptForSession", scope = { kind = "command", commandPrefix = { "go", "test" } } })
  review.on_resolved(nil, { reviewId = "r-2", sessionId = "s-1", outcome = "accepted", by = "editor" })
end)

H.test("reject asks for a reason", function()
  sent = {}
  H.stub_select(H.pick("Reject"))
  local inputs = H.stub_input("use make test")
  review.on_requested(nil, cmd_review("r-3"))
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(#inputs, 1)
  H.eq(sent[1].params.decision, { type = "reject", reason = "use make test" })
  review.on_resolved(nil, { reviewId = "r-3", sessionId = "s-1", outcome = "rejected", by = "editor" })
end)

H.test("cancel the turn", function()
  sent = {}
  H.stub_select(H.pick("Cancel the turn"))
  review.on_requested(nil, cmd_review("r-4"))
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(sent[1].params.decision, { type = "cancelTurn" })
  review.on_resolved(nil, { reviewId = "r-4", sessionId = "s-1", outcome = "cancelled", by = "editor" })
end)

H.test("two reviews are asked one after the other", function()
  sent = {}
  local calls = H.stub_select(H.pick("Run once"))
  review.on_requested(nil, cmd_review("r-5"))
  review.on_requested(nil, cmd_review("r-6"))
  H.wait(function()
    return #sent == 2
  end, 2000, "two decisions")
  H.eq(#calls, 2)
  H.eq({ sent[1].params.reviewId, sent[2].params.reviewId }, { "r-5", "r-6" }, "in order")
  review.on_resolved(nil, { reviewId = "r-5", sessionId = "s-1", outcome = "accepted", by = "editor" })
  review.on_resolved(nil, { reviewId = "r-6", sessionId = "s-1", outcome = "accepted", by = "editor" })
end)

H.test("dismissing keeps the review; :AgentReview asks again", function()
  sent = {}
  H.stub_select(function()
    return nil
  end)
  review.on_requested(nil, cmd_review("r-7"))
  H.wait(function()
    return H.notified("still waiting")
  end, 2000, "reminder")
  H.eq(#sent, 0, "nothing decided")
  H.eq(review.pending_count(), 1, "still pending")
  H.stub_select(H.pick("Run once"))
  vim.cmd("AgentReview")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  review.on_resolved(nil, { reviewId = "r-7", sessionId = "s-1", outcome = "accepted", by = "editor" })
end)

H.test("settled by a grant while queued: never asked", function()
  sent = {}
  local calls = H.stub_select(H.pick("Run once"))
  review.on_requested(nil, cmd_review("r-8"))
  review.on_resolved(nil, { reviewId = "r-8", sessionId = "s-1", outcome = "accepted", by = "grant" })
  -- the question would be asked from the callback approval.enqueue scheduled: let it run
  H.drain("the scheduled approval prompt")
  H.eq(#calls, 0, "not asked")
  H.eq(#sent, 0, "nothing sent")
  H.eq(approval.pending(), 0, "queue empty")
end)

H.test("document/save writes the buffer and answers synchronously", function()
  local dir = H.tmpdir("ws")
  local path = dir .. "/a.txt"
  H.write_file(path, "one\n")
  vim.cmd("edit " .. path)
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { "two" })
  local res = client.on_document_save(nil, { uri = vim.uri_from_fname(path) })
  H.eq(res, { saved = true })
  H.eq(H.read_file(path), "two\n", "written")
  H.eq(client.on_document_save(nil, { uri = vim.uri_from_fname(dir .. "/missing.txt") }), { saved = false },
    "unknown document")
  H.eq(vim.fn.bufnr(dir .. "/missing.txt"), -1, "no buffer created for it")
end)

H.test("session scopes come narrowest first; a whole-tool grant asks to confirm (no: asked again)", function()
  sent = {}
  local p = cmd_review("r-30")
  p.label = "go vet ./... && go test ./..."
  p.command.argv = { "bash", "-c", "go vet ./... && go test ./..." }
  -- the daemon's order, broadest first, must not decide the editor's order
  p.scopes = {
    { kind = "tool", tool = "bash", label = "all bash calls in this session" },
    { kind = "command", commandPrefix = { "go" }, label = "commands starting with `go`" },
    { kind = "command", commandPrefix = { "go", "test" }, label = "commands starting with `go test`" },
  }
  local answers = { "all bash calls", "no", "Run once" }
  local calls = H.stub_select(function(items, o)
    local want = table.remove(answers, 1)
    return H.pick(want)(items, o)
  end)
  review.on_requested(nil, p)
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  local labels = vim.tbl_map(calls[1].opts.format_item, calls[1].items)
  H.eq(labels, { "Run once", "Allow for this session: commands starting with `go test`",
    "Allow for this session: commands starting with `go`",
    "Allow for this session: all bash calls in this session (asks to confirm)",
    "Reject (tell the agent why)", "Cancel the turn" }, "narrowest first, the whole tool last")
  H.eq(calls[2].items, { "no", "yes" }, "a second question, 'no' first")
  H.eq(calls[2].opts.prompt, "Allow every bash call for this session?")
  H.eq(#calls, 3, "'no' asks the first question again")
  H.eq(sent[1].params.decision, { type = "accept" }, "no grant was sent")
  review.on_resolved(nil, { reviewId = "r-30", sessionId = "s-1", outcome = "accepted", by = "editor" })
end)

H.test("a confirmed whole-tool grant is sent", function()
  sent = {}
  local p = cmd_review("r-31")
  p.scopes = { { kind = "tool", tool = "bash", label = "all bash calls in this session" } }
  local answers = { "all bash calls", "yes" }
  H.stub_select(function(items, o)
    return H.pick(table.remove(answers, 1))(items, o)
  end)
  review.on_requested(nil, p)
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(sent[1].params.decision, { type = "acceptForSession", scope = { kind = "tool", tool = "bash" } })
  review.on_resolved(nil, { reviewId = "r-31", sessionId = "s-1", outcome = "accepted", by = "editor" })
end)

H.test("<leader>ay approves and <leader>an denies the waiting command without the picker", function()
  sent = {}
  H.stub_select(function()
    return nil -- the user dismisses the picker
  end)
  review.on_requested(nil, cmd_review("r-32"))
  H.wait(function()
    return H.notified("still waiting for your answer")
  end, 2000, "the dismissed question")
  vim.cmd("normal \\ay")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(sent[1].params, { reviewId = "r-32", decision = { type = "accept" } })
  review.on_resolved(nil, { reviewId = "r-32", sessionId = "s-1", outcome = "accepted", by = "editor" })
  sent = {}
  review.on_requested(nil, cmd_review("r-33"))
  H.wait(function()
    return approval.pending() == 1 and H.drain() == nil
  end, 2000, "the second question dismissed")
  H.stub_input("not now")
  vim.cmd("normal \\an")
  H.wait(function()
    return #sent == 1
  end, 2000, "review/decide")
  H.eq(sent[1].params.decision, { type = "reject", reason = "not now" })
  review.on_resolved(nil, { reviewId = "r-33", sessionId = "s-1", outcome = "rejected", by = "editor" })
end)

H.done()
