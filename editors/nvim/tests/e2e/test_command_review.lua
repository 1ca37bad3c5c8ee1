-- End to end: a command (in yolo mode, so it runs without a question) writes a git hook and an
-- ordinary file. The ordinary file applies; the hook comes to Neovim as a file review like an
-- edit's (its path, hunks and a label naming the command), even in yolo; accepting it writes it,
-- and the model reads what the user decided in the command's result.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local call = H.call
-- A computed name: the command classifier does not see the hook, so yolo runs the command.
local COMMAND = "d=.hus; mkdir -p ${d}ky && printf '#!/bin/sh\\nnpm test\\n' > ${d}ky/pre-commit && echo x > ordinary.txt"

local script = {
  models = { { name = "qwen3:8b", capabilities = { "completion", "tools" } } },
  turns = {
    { name = "run", when = { lastUserContains = "set up the hook", lastRole = "user" }, reply = call("bash", { command = COMMAND }) },
    { name = "done", when = { lastUserContains = "set up the hook", lastRole = "tool" }, reply = { text = "Hook set up." } },
    { name = "fallback", ["repeat"] = true, reply = { text = "fallback answer" } },
  },
}

local review = require("agentd.review")

local function hook_review()
  for _, r in pairs(review.reviews) do
    if r.params.file and r.params.file.path == ".husky/pre-commit" and not r.sent then
      return r
    end
  end
end

H.test("a command's hook is reviewed like an edit, in yolo too, and accepted", function()
  H.need_daemon()
  H.start_fakeollama(script)
  local d = H.start_daemon({ ["README.md"] = "hello\n" }, { setup = { approval_mode = "yolo" } })
  H.agent("set up the hook")
  local ok = pcall(H.wait, function()
    return hook_review() ~= nil
  end, 30000)
  H.ok(ok, "the hook's review arrived; chat:\n" .. table.concat(require("agentd.chat").lines(), "\n")
    .. "\nmodel transcript:\n" .. H.fake_transcript())
  local r = hook_review()
  H.eq(r.params.kind, "edit", "a file review")
  H.eq(r.params.tool, "bash", "of the command's call")
  H.contains(r.params.label, "from the command `d=.hus; mkdir", "the label names the command")
  H.eq(#r.params.file.hunks, 1, "one hunk")
  H.contains(table.concat(r.params.file.hunks[1].added, "\n"), "npm test", "the hunk is the hook's text")
  H.eq(H.read_file(d.ws .. "/ordinary.txt"), "x\n", "the ordinary file applied without a question")
  H.eq(vim.fn.filereadable(d.ws .. "/.husky/pre-commit"), 0, "the hook is not written before the review")
  local decided = false
  review.decide(r, { type = "accept" }, function()
    decided = true
  end)
  H.wait(function()
    return decided
  end, 10000, "the hook's review decided")
  H.wait_turn_end(30000)
  H.eq(H.read_file(d.ws .. "/.husky/pre-commit"), "#!/bin/sh\nnpm test\n", "the accepted hook is on disk")
  H.contains(H.fake_transcript(), "Review of the created .husky/pre-commit: accepted by the user and written",
    "the model reads the decision in the command's result")
end)

H.done()
