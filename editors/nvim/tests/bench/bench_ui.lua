-- Benchmarks of the plugin's own work on the main loop (no daemon):
--   1. review/requested with 200 hunks -> every extmark placed (ms)
--   2. 10,000 streamed tokens (textDelta notifications) into an open chat: time of each
--      notification handler and of each buffer flush, and the main loop's latency measured by a
--      2 ms timer probe. Target: no callback over 16 ms.
-- Prints "BENCH name value unit" lines. Exits non-zero when a callback of the plugin exceeds
-- 16 ms.
local H = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h") .. "/helpers.lua")
H.setup({ name = "bench_ui" })
require("agentd").setup({ cmd = { "true" } })
local uv = vim.uv or vim.loop
local review = require("agentd.review")
local session = require("agentd.session")
local chat = require("agentd.chat")
require("agentd.client").request = function() end

local function bench(name, value, unit)
  H.print(string.format("BENCH %-44s %10.2f %s", name, value, unit))
end

local function stats(xs)
  table.sort(xs)
  local sum = 0
  for _, x in ipairs(xs) do
    sum = sum + x
  end
  local function pct(p)
    return xs[math.max(1, math.ceil(#xs * p))] or 0
  end
  return { n = #xs, mean = #xs > 0 and sum / #xs or 0, p50 = pct(0.5), p99 = pct(0.99), max = xs[#xs] or 0 }
end

local over_budget = {}

H.test("200-hunk review: notification to extmarks placed", function()
  local dir = H.tmpdir("ws")
  local lines = {}
  for i = 1, 2000 do
    lines[i] = string.format("\tvalue_%04d := compute(%d) // line %d", i, i, i)
  end
  local path = dir .. "/big.go"
  H.write_file(path, table.concat(lines, "\n") .. "\n")
  vim.cmd("edit " .. path)
  local buf = vim.api.nvim_get_current_buf()
  local times, slice_max, cpus = {}, {}, {}
  for run = 1, 7 do
    local hunks = {}
    for k = 1, 200 do
      local at = (k - 1) * 10 + 3
      hunks[k] = {
        id = string.format("h%03d", k), oldStart = at, oldLines = 1, newStart = at + k - 1, newLines = 2,
        removed = { lines[at] }, added = { lines[at]:gsub("compute", "computeFast"), "\t// checked" },
      }
    end
    local params = {
      reviewId = "r-bench-" .. run, sessionId = "s", turnId = "t", callId = "c", tool = "write", label = "Write big.go",
      kind = "edit", why = "ask", scopes = {},
      file = { uri = vim.uri_from_fname(path), path = "big.go", hunks = hunks, unifiedDiff = "", edit = { edits = {} } },
    }
    local t0, c0 = uv.hrtime(), os.clock()
    review.on_requested(nil, params)
    local first_cb_ms = (uv.hrtime() - t0) / 1e6
    local r = review.reviews[params.reviewId]
    H.wait(function()
      return r.placed
    end, 10000, "all marks placed")
    local dt, cpu = (uv.hrtime() - t0) / 1e6, (os.clock() - c0) * 1000
    H.eq(#review.marks(buf), 200, "200 marks")
    vim.cmd("redraw")
    table.insert(times, dt)
    table.insert(slice_max, r.max_slice_ms)
    table.insert(cpus, cpu)
    H.print(string.format("  run %d: %.2f ms wall, %.2f ms cpu, %d slices, longest slice %.2f ms, first callback %.2f ms",
      run, dt, cpu, r.slices, r.max_slice_ms, first_cb_ms))
    review.on_resolved(nil, { reviewId = params.reviewId, sessionId = "s", outcome = "rejected", by = "editor" })
  end
  local s, sl, c = stats(times), stats(slice_max), stats(cpus)
  bench("review 200 hunks: notification -> all marks (median)", s.p50, "ms")
  bench("review 200 hunks: notification -> all marks (max of 7)", s.max, "ms")
  bench("review 200 hunks: CPU time (median)", c.p50, "ms")
  bench("review 200 hunks: longest callback (median)", sl.p50, "ms")
  if sl.p50 > 16 then
    table.insert(over_budget, "review placement")
  end
end)

H.test("10,000 streamed tokens into the chat", function()
  session.current = { sessionId = "s-b", title = "bench", model = "m", approvalMode = "ask" }
  chat.reset(session.current, {})
  chat.open({ focus = false })
  -- probe: a 2 ms repeating timer; lateness = how long the loop was busy elsewhere
  local probe = uv.new_timer()
  local last, last_cpu = uv.hrtime(), os.clock()
  local lateness, busy = {}, {}
  probe:start(2, 2, function()
    local now, cpu = uv.hrtime(), os.clock()
    table.insert(lateness, math.max(0, (now - last) / 1e6 - 2))
    -- CPU the process used between two ticks: a gap with little CPU was the OS scheduling
    -- other processes (a loaded machine), not the editor's loop being busy
    table.insert(busy, (cpu - last_cpu) * 1000)
    last, last_cpu = now, cpu
  end)
  -- handler timing, as the LSP client calls it (one vim.schedule per notification)
  local handler_ms, handler_cpu = {}, {}
  local seq = 0
  local function notify(u)
    seq = seq + 1
    local p = { sessionId = "s-b", turnId = "t1", seq = seq, update = u }
    vim.schedule(function()
      local t0, c0 = uv.hrtime(), os.clock()
      session.on_update(nil, p)
      local dt = (uv.hrtime() - t0) / 1e6
      table.insert(handler_ms, dt)
      table.insert(handler_cpu, (os.clock() - c0) * 1000)
      if dt > 5 then
        H.print(string.format("  slow handler: %s %.1f ms (seq %d)", u.type, dt, p.seq))
      end
    end)
  end
  notify({ type = "turnStarted" })
  notify({ type = "userMessage", text = "write a long story" })
  local words = {}
  for i = 1, 10000 do
    words[i] = (i % 17 == 0) and ("word" .. i .. ".\n") or (" word" .. i)
  end
  -- tokens arrive in bursts of 20 every millisecond (~20,000 tokens/s, faster than a local model)
  local feeder = uv.new_timer()
  local i = 0
  local t_start = uv.hrtime()
  chat.stats.max_flush_ms, chat.stats.flushes, chat.stats.total_flush_ms, chat.stats.max_flush_cpu_ms = 0, 0, 0, 0
  feeder:start(1, 1, function()
    for _ = 1, 20 do
      i = i + 1
      if i > #words then
        feeder:stop()
        notify({ type = "messageCompleted", text = "" })
        notify({ type = "turnCompleted", reason = "done" })
        return
      end
      notify({ type = "textDelta", text = words[i] })
    end
  end)
  H.wait(function()
    return not session.is_running("s-b") and seq >= 10004
  end, 60000, "stream end")
  chat.flush_now()
  local wall = (uv.hrtime() - t_start) / 1e6
  probe:stop()
  probe:close()
  feeder:close()
  local text = table.concat(chat.lines(), "\n")
  H.contains(text, "word10000", "last token rendered")
  H.contains(text, " word9999", "tokens in order")
  local hs, ls = stats(handler_ms), stats(lateness)
  bench("stream 10k tokens: wall time", wall, "ms")
  bench("stream 10k tokens: handler max", hs.max, "ms")
  bench("stream 10k tokens: handler p99", hs.p99, "ms")
  bench("stream 10k tokens: flushes", chat.stats.flushes, "")
  bench("stream 10k tokens: flush max", chat.stats.max_flush_ms, "ms")
  bench("stream 10k tokens: flush mean", chat.stats.total_flush_ms / math.max(1, chat.stats.flushes), "ms")
  bench("stream 10k tokens: loop latency max (2ms probe)", ls.max, "ms")
  bench("stream 10k tokens: loop latency p99", ls.p99, "ms")
  local over = 0
  for _, x in ipairs(lateness) do
    if x > 16 then
      over = over + 1
    end
  end
  bench("stream 10k tokens: probe ticks late > 16 ms", over, "")
  local bs = stats(busy)
  bench("stream 10k tokens: loop busy max (CPU between ticks)", bs.max, "ms")
  bench("stream 10k tokens: probe ticks", #lateness, "")
  local hc = stats(handler_cpu)
  bench("stream 10k tokens: handler CPU max", hc.max, "ms")
  bench("stream 10k tokens: flush CPU max", chat.stats.max_flush_cpu_ms, "ms")
  -- budget on CPU time: wall time includes preemption on a loaded machine
  if hc.max > 16 or chat.stats.max_flush_cpu_ms > 16 then
    table.insert(over_budget, "streaming")
  end
end)

H.test("plugin callbacks stay under 16 ms", function()
  H.eq(over_budget, {}, "callbacks over budget")
end)

H.done()
