#!/usr/bin/env bash
# Prints the Neovim plugin's benchmark figures (for docs/benchmarks.md) on 0.7.2 and 0.10:
# tests/bench/bench_ui.lua (plugin only) and tests/bench/bench_e2e.lua (real daemon + fake Ollama).
# Same environment as scripts/test.sh. The machine's load shows in wall times: the CPU-time
# figures are the plugin's own cost.
set -uo pipefail
exec </dev/null
here=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$here/../.." && pwd)
out=${AGENTD_TEST_OUT:-$repo/out/nvim-tests}
e2e_dir=${AGENTD_E2E_DIR:-/opt/agentd-e2e}
mkdir -p "$out/bin"
export AGENTD_TEST_OUT=$out
if [ -z "${AGENTD_BIN:-}" ]; then
  export AGENTD_BIN=$out/bin/agentd
  (cd "$repo" && go build -o "$AGENTD_BIN" ./cmd/agentd) || exit 1
fi
if [ -z "${FAKEOLLAMA_BIN:-}" ]; then
  export FAKEOLLAMA_BIN=$out/bin/fakeollama
  (cd "$repo" && go build -o "$FAKEOLLAMA_BIN" ./ollama/ollamatest/cmd/fakeollama) || exit 1
fi
status=0
for spec in "0.7:${AGENTD_NVIM_07:-/usr/bin/nvim}" "0.10:${AGENTD_NVIM_010:-$e2e_dir/bin/nvim-0.10}"; do
  v=${spec%%:*} bin=${spec#*:}
  if ! command -v "$bin" >/dev/null 2>&1; then
    echo "SKIP nvim $v: $bin is not installed"
    continue
  fi
  for f in "$here"/tests/bench/bench_*.lua; do
    XDG_STATE_HOME="$out/xdg-$v/state" XDG_CACHE_HOME="$out/xdg-$v/cache" XDG_DATA_HOME="$out/xdg-$v/data" \
      XDG_CONFIG_HOME="$out/xdg-$v/config" \
      timeout -k 5 300 "$bin" --headless -u NONE -i NONE -n -c "luafile $f" -c 'cquit 1' </dev/null 2>&1 || status=1
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
exit $status
