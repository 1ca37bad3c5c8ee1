-- End to end: mentions typed in the prompt box reach the model through the real agentd: the
-- mentioned file's content and the folder's listing are in the model's request.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local MODEL = { name = "qwen3:8b", capabilities = { "completion", "tools" }, contextLength = 40960 }

H.test("a prompt with @file and @folder/ carries the file's content and the folder's tree", function()
  H.need_daemon()
  H.start_fakeollama({
    models = { MODEL },
    turns = {
      { name = "mentioned", when = { lastUserContains = "MENTIONED-NOTES-CONTENT" }, reply = { text = "I read your notes." } },
      { name = "fallback", ["repeat"] = true, reply = { text = "the mention did not arrive" } },
    },
  })
  H.start_daemon({
    ["main.go"] = "package main\n\nfunc main() {}\n",
    ["docs/notes.md"] = "MENTIONED-NOTES-CONTENT\n",
    ["pkg/util/strings.go"] = "package util\n",
  })
  H.edit("main.go")
  local chat = require("agentd.chat")
  chat.open()
  local _, input = chat.buffers()
  H._turns_before = require("agentd.session").turns_ended
  vim.api.nvim_buf_set_lines(input, 0, -1, false, { "summarise @docs/notes.md and @pkg/" })
  chat.submit()
  H.wait_turn_end()
  H.wait(function()
    chat.flush_now()
    return table.concat(chat.lines(), "\n"):find("I read your notes.", 1, true)
  end, 10000, "the answer to the prompt with the mentioned file")
  local shown = table.concat(chat.lines(), "\n")
  H.contains(shown, "## You\nsummarise @docs/notes.md and @pkg/\n  ↳ @docs/notes.md\n  ↳ @pkg/", "the words and the mentions' labels")
  H.ok(not shown:find("MENTIONED-NOTES-CONTENT", 1, true), "the file's content is the model's, not the chat's")
  local t = H.fake_transcript()
  H.contains(t, "summarise @docs/notes.md and @pkg/", "the text as typed")
  H.contains(t, "The user mentions the file docs/notes.md:\n```\nMENTIONED-NOTES-CONTENT", "the file mention with its content")
  H.contains(t, "The user mentions the folder pkg", "the folder mention")
  H.contains(t, "strings.go", "the folder's tree")
end)

H.done()
