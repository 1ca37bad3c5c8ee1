-- The two-hunk cart of the per-hunk end-to-end tests (test_hunk_reason, test_hunk_relay): cart.go
-- as the daemon starts with it, the model's edit (hunk 1 removes the second discount, hunk 2 clamps
-- the total), the file with either hunk alone, and the turns of a prompt that reads and edits it.
local M = {}

M.ORIGINAL = table.concat({
  "package shop",
  "",
  "func Total(c *Cart) int {",
  "\ttotal := c.Sum()",
  "\ttotal -= c.Discount",
  "\ttotal -= c.Discount",
  "\t// shipping is free above 50",
  "\tif total < 50 {",
  "\t\ttotal += 5",
  "\t}",
  "\t// taxes are included in the prices",
  "\t// and rounded by the caller",
  "\t// to whole cents",
  "\treturn total",
  "}",
  "",
}, "\n")

M.EDITS = {
  { old_string = "\ttotal -= c.Discount\n\ttotal -= c.Discount\n", new_string = "\ttotal -= c.Discount\n" },
  { old_string = "\treturn total\n", new_string = "\treturn max(total, 0)\n" },
}
M.ONLY_FIRST = M.ORIGINAL:gsub("\ttotal %-= c.Discount\n\ttotal %-= c.Discount\n", "\ttotal -= c.Discount\n", 1)
M.ONLY_SECOND = M.ORIGINAL:gsub("\treturn total\n", "\treturn max(total, 0)\n", 1)

--- The fake model's turns for a prompt containing `prompt`: read cart.go, propose EDITS, then
--- answer `answer` (names prefixed with `name`).
function M.turns(call, name, prompt, answer)
  return {
    { name = name .. "read", when = { lastUserContains = prompt }, reply = call("read", { path = "cart.go" }) },
    { name = name .. "edit", when = { lastUserContains = prompt, lastRole = "tool", lastContains = "package shop" },
      reply = call("edit", { path = "cart.go", edits = M.EDITS }) },
    { name = name .. "done", when = { lastUserContains = prompt, lastRole = "tool" }, reply = { text = answer } },
  }
end

return M
