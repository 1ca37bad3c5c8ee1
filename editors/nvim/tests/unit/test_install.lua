-- Installation as documented: a fresh Neovim whose only configuration is a spec from README.md
-- defines the :Agent commands. The lazy.nvim spec is taken from the README (the block after
-- "<!-- install:lazy -->") and its config(plugin, opts) is called the way lazy.nvim calls it,
-- with plugin.dir = the repository root (where lazy.nvim clones the git URL). The manual setup
-- (the block after "<!-- install:manual -->") is run as an init.lua, with the path replaced.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup()

local nvim = os.getenv("AGENTD_TEST_NVIM")
if not nvim or nvim == "" then
  nvim = vim.v.progpath
end

local function readme_block(marker)
  local text = H.read_file(H.plugin_dir .. "/README.md")
  H.ok(text, "README.md readable")
  local at = text:find("<!-- install:" .. marker .. " -->", 1, true)
  H.ok(at, "README has the " .. marker .. " spec")
  local block = text:sub(at):match("```lua\n(.-)\n```")
  H.ok(block, "a lua block after the " .. marker .. " marker")
  return block
end

-- Runs a fresh Neovim with init.lua (plugins load as usual: -u file keeps 'loadplugins'), then
-- reports which :Agent commands exist and whether plugin/agentd.lua ran.
local function fresh_nvim(init)
  local dir = H.tmpdir("fresh")
  H.write_file(dir .. "/init.lua", init)
  local report = dir .. "/report.json"
  local probe = "lua local f = io.open(" .. string.format("%q", report) .. ", 'w');"
    .. "f:write(vim.json.encode({ agent = vim.fn.exists(':Agent'), chat = vim.fn.exists(':AgentChat'),"
    .. " undo = vim.fn.exists(':AgentUndo'), loaded = vim.g.loaded_agentd == true,"
    .. " setup = package.loaded['agentd.config'] ~= nil and require('agentd.config').get().model or vim.NIL,"
    .. " errmsg = vim.v.errmsg })); f:close()"
  local out = vim.fn.system({ nvim, "--headless", "-u", dir .. "/init.lua", "-i", "NONE", "-n",
    "-c", probe, "-c", "qall!" })
  H.eq(vim.v.shell_error, 0, "fresh nvim exit status (output: " .. out .. ")")
  local got = H.read_file(report)
  H.ok(got, "the fresh nvim wrote its report (output: " .. out .. ")")
  return vim.json.decode(got)
end

H.test("lazy.nvim: the README's spec from the git URL loads plugin/agentd.lua and :Agent", function()
  local spec = readme_block("lazy")
  H.contains(spec, '"agentd/agentd"', "the spec names the git repository, not a local dir")
  local init = "local spec = " .. spec .. "\n"
    .. "assert(spec.lazy == false, 'loaded at startup')\n"
    -- lazy.nvim clones the repository into plugin.dir and calls config(plugin, opts)
    .. "spec.config({ name = 'agentd', dir = " .. string.format("%q", H.repo) .. " }, spec.opts)\n"
  local r = fresh_nvim(init)
  H.eq(r.agent, 2, ":Agent exists")
  H.eq(r.chat, 2, ":AgentChat exists")
  H.eq(r.undo, 2, ":AgentUndo exists")
  H.eq(r.loaded, true, "plugin/agentd.lua ran")
  H.eq(r.setup, "qwen3:8b", "setup() got the spec's opts")
  H.eq(r.errmsg, "", "no error")
end)

H.test("the old subdirectory-less spec does not load the plugin (why the README's spec is needed)", function()
  -- what lazy.nvim does with a plain git spec: the repository root on 'runtimepath'
  local r = fresh_nvim("vim.opt.rtp:append(" .. string.format("%q", H.repo) .. ")\n")
  H.eq(r.agent, 0, "no :Agent from the repository root alone")
end)

H.test("by hand: the README's manual setup loads :Agent", function()
  local block = readme_block("manual"):gsub('vim%.fn%.expand%("~/src/agentd/editors/nvim"%)',
    string.format("%q", H.plugin_dir))
  H.ok(block:find(H.plugin_dir, 1, true), "path replaced in:\n" .. block)
  local r = fresh_nvim(block)
  H.eq(r.agent, 2, ":Agent exists")
  H.eq(r.loaded, true, "plugin/agentd.lua ran")
  H.eq(r.setup, "qwen3:8b", "setup() ran")
end)

-- packer.nvim and vim-plug: their specs are read from the README (the lua block with `use(` and
-- the vim block with `Plug`). Both managers put <clone>/<rtp> on 'runtimepath' before Neovim
-- loads plugins (vim-plug at plug#end(), packer in its loader); that is emulated here with the
-- spec's own rtp value, then the spec's setup runs as the README says.
local function readme_text()
  local text = H.read_file(H.plugin_dir .. "/README.md")
  H.ok(text, "README.md readable")
  return text
end

H.test("packer.nvim: the README's spec (rtp) loads plugin/agentd.lua and its config runs", function()
  local block = readme_text():match("```lua\n(use%(.-)\n```")
  H.ok(block, "README has a packer `use(` block")
  local init = "local spec\nlocal function use(s) spec = s end\n" .. block .. "\n"
    .. "assert(spec[1] == 'agentd/agentd', 'the spec names the git repository')\n"
    .. "vim.opt.rtp:append(" .. string.format("%q", H.repo) .. " .. '/' .. spec.rtp)\n"
    .. "spec.config()\n"
  local r = fresh_nvim(init)
  H.eq(r.agent, 2, ":Agent exists")
  H.eq(r.loaded, true, "plugin/agentd.lua ran")
  H.eq(r.setup, "qwen3:8b", "config() ran setup()")
  H.eq(r.errmsg, "", "no error")
end)

H.test("vim-plug: the README's Plug line (rtp) loads plugin/agentd.lua and the setup line runs", function()
  local block = readme_text():match("```vim\n(Plug .-)\n```")
  H.ok(block, "README has a vim-plug `Plug` block")
  local repo, rtp = block:match("^Plug '([^']+)', { 'rtp': '([^']+)' }")
  H.eq(repo, "agentd/agentd", "the Plug line names the git repository")
  H.ok(rtp, "the Plug line has an rtp option:\n" .. block)
  local setup = block:match("\n(lua [^\n]+)")
  H.ok(setup, "a `lua …setup` line after plug#end():\n" .. block)
  local init = "vim.opt.rtp:append(" .. string.format("%q", H.repo .. "/" .. rtp) .. ")\n"
    .. "vim.cmd(" .. string.format("%q", setup) .. ")\n"
  local r = fresh_nvim(init)
  H.eq(r.agent, 2, ":Agent exists")
  H.eq(r.loaded, true, "plugin/agentd.lua ran")
  H.eq(r.setup, "qwen3:8b", "setup() ran")
  H.eq(r.errmsg, "", "no error")
end)

H.done()
