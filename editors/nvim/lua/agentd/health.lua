-- :checkhealth agentd
local compat = require("agentd.compat")

local M = {}

function M.check()
  local h = compat.health()
  local config = require("agentd.config")
  local client = require("agentd.client")
  local protocol = require("agentd.protocol")
  local opts = config.get()

  h.start("agentd: Neovim")
  local v = vim.version()
  local vs = string.format("%d.%d.%d", v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.7.2") == 1 then
    h.ok("Neovim " .. vs)
  else
    h.error("Neovim " .. vs .. " is too old", { "agentd.nvim needs Neovim 0.7.2 or newer" })
  end

  h.start("agentd: daemon binary")
  local exe = opts.cmd[1]
  if vim.fn.executable(exe) ~= 1 then
    h.error("`" .. exe .. "` not found", {
      "install agentd (make build puts it in bin/agentd) and put it on $PATH",
      "or set cmd in setup(): require('agentd').setup({ cmd = { '/path/to/agentd', 'connect' } })",
    })
    return
  end
  local path = vim.fn.exepath(exe)
  local out = vim.fn.system({ path, "version" })
  if vim.v.shell_error == 0 then
    h.ok(string.format("%s: %s", path, vim.trim(out)))
  else
    h.warn(string.format("%s version failed: %s", path, vim.trim(out)))
  end
  h.info("command: " .. table.concat(opts.cmd, " "))

  h.start("agentd: connection")
  if not client.get() then
    client.with_client(function() end)
    vim.wait(10000, function()
      return client.get() ~= nil or not client.is_running()
    end, 50)
  end
  if not client.get() then
    h.error("could not connect to the daemon", {
      "run `" .. table.concat(opts.cmd, " ") .. "` in a terminal to see why",
      "the LSP log (:lua vim.cmd.edit(vim.lsp.get_log_path())) has the daemon's stderr",
    })
    return
  end
  local info = client.server_info or {}
  h.ok(string.format("connected (workspace %s)", client.root or "?"))
  if info.protocolVersion == protocol.version then
    h.ok(string.format("protocol version %d", protocol.version))
  else
    h.error(string.format("the daemon speaks protocol %s, the plugin %d", tostring(info.protocolVersion), protocol.version),
      { "update agentd and the plugin to the same release" })
  end

  local status, err = client.request_sync(protocol.request.daemon_status, vim.empty_dict(), 5000)
  if not status then
    h.error("daemon/status failed: " .. require("agentd.util").err_text(err))
    return
  end
  h.ok(string.format("daemon %s, %d session%s", status.version or "?", status.sessions or 0,
    status.sessions == 1 and "" or "s"))

  h.start("agentd: model server")
  if status.ollama == "ok" then
    h.ok("reachable: " .. tostring(status.engine or opts.ollama_host or "ollama"))
  else
    h.error("Ollama: " .. tostring(status.ollama), { "start it with `ollama serve`, or set ollama_host in setup()" })
  end
  local models = client.request_sync(protocol.request.model_list, vim.empty_dict(), 5000)
  if models then
    local want = opts.model or models.default
    local names = {}
    local found
    for _, m in ipairs(models.models or {}) do
      table.insert(names, m.name)
      if m.name == want or m.name == (want or "") .. ":latest" then
        found = m
      end
    end
    if not want or want == "" then
      h.warn("no model configured and no daemon default", { "set model in setup() or pick one with :AgentModel" })
    elseif found then
      local caps = found.capabilities or {}
      h.ok(string.format("model %s is pulled%s", found.name,
        #caps > 0 and (" (" .. table.concat(caps, ", ") .. ")") or ""))
      if not vim.tbl_contains(caps, "tools") and #caps > 0 then
        h.warn("model " .. found.name .. " does not support tools: the agent cannot edit files with it",
          { "pick a model with tool support, e.g. qwen3:8b (:AgentModel)" })
      end
    else
      h.error("model " .. want .. " is not pulled", { "run `ollama pull " .. want .. "`",
        #names > 0 and ("or pick one of: " .. table.concat(names, ", ")) or "no models are pulled yet" })
    end
  else
    h.warn("model/list failed")
  end

  h.start("agentd: inline completion")
  local completion = require("agentd.completion")
  h.info(completion.describe())
  if status.completionModel and status.completionModel ~= "" then
    h.ok("completion model " .. status.completionModel
      .. " (it must be pulled and fill in the middle: `ollama pull " .. status.completionModel .. "`)")
  end

  h.start("agentd: sandbox")
  local sandbox = status.sandbox or info.sandbox
  if not sandbox or sandbox == "" or sandbox == "none" then
    h.warn("commands run without a sandbox", { "install bubblewrap (apt-get install bubblewrap) and use a kernel with Landlock" })
  else
    h.ok("commands run under " .. sandbox)
    local missing = {}
    for _, f in ipairs({ "bubblewrap", "landlock", "seccomp" }) do
      if not sandbox:lower():find(f, 1, true) then
        table.insert(missing, f)
      end
    end
    if #missing > 0 then
      h.warn("not available: " .. table.concat(missing, ", "))
    end
  end
end

return M
