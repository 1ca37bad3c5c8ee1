#!/usr/bin/env bash
# Runs every Neovim test file (tests/unit, tests/e2e) on Neovim 0.7.2 and on Neovim 0.10, the
# end-to-end ones against the real agentd binary and the fake Ollama server.
#
#   editors/nvim/scripts/test.sh [pattern]      # e.g. test.sh review  -> files matching *review*
#
# Exit status: 0 when every test of every installed version passed; 1 otherwise. A Neovim version
# that is not installed prints a SKIP line and is not an error (CI installs both with
# scripts/setup-e2e.sh, so there they run).
#
# Environment:
#   AGENTD_NVIM_07   Neovim 0.7.2 binary            (default: /usr/bin/nvim)
#   AGENTD_NVIM_010  Neovim 0.10 binary             (default: $AGENTD_E2E_DIR/bin/nvim-0.10)
#   AGENTD_NVIM_NEXT an extra, newer Neovim run when present (default: $AGENTD_E2E_DIR/bin/nvim-next,
#                    installed by setup-e2e.sh with AGENTD_E2E_NEXT=1)
#   AGENTD_E2E_DIR   where setup-e2e.sh installed things (default: /opt/agentd-e2e)
#   AGENTD_BIN       agentd binary (default: built from the repository into out/nvim-tests/bin)
#   FAKEOLLAMA_BIN   fakeollama binary (default: built likewise)
#   AGENTD_REQUIRE_DAEMON=0   let end-to-end tests skip when `agentd serve` is not available
#                             (default 1: they fail, as in CI)
#   AGENTD_TEST_TIMEOUT       seconds per test file (default 180)
set -uo pipefail
exec </dev/null
export CI=${CI:-true}

here=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$here/../.." && pwd)
out=${AGENTD_TEST_OUT:-$repo/out/nvim-tests}
e2e_dir=${AGENTD_E2E_DIR:-/opt/agentd-e2e}
nvim07=${AGENTD_NVIM_07:-/usr/bin/nvim}
nvim010=${AGENTD_NVIM_010:-$e2e_dir/bin/nvim-0.10}
nvimnext=${AGENTD_NVIM_NEXT:-$e2e_dir/bin/nvim-next}
timeout_s=${AGENTD_TEST_TIMEOUT:-180}
pattern=${1:-}
mkdir -p "$out/bin"
export AGENTD_TEST_OUT=$out
export AGENTD_REQUIRE_DAEMON=${AGENTD_REQUIRE_DAEMON:-1}

# Binaries under test.
if [ -z "${AGENTD_BIN:-}" ] || [ -z "${FAKEOLLAMA_BIN:-}" ]; then
  if ! command -v go >/dev/null 2>&1; then
    echo "test.sh: go not found (needed to build agentd and fakeollama); set AGENTD_BIN and FAKEOLLAMA_BIN" >&2
    exit 1
  fi
fi
if [ -z "${AGENTD_BIN:-}" ]; then
  export AGENTD_BIN=$out/bin/agentd
  (cd "$repo" && go build -o "$AGENTD_BIN" ./cmd/agentd) || { echo "test.sh: building agentd failed" >&2; exit 1; }
fi
if [ -z "${FAKEOLLAMA_BIN:-}" ]; then
  export FAKEOLLAMA_BIN=$out/bin/fakeollama
  (cd "$repo" && go build -o "$FAKEOLLAMA_BIN" ./ollama/ollamatest/cmd/fakeollama) || { echo "test.sh: building fakeollama failed" >&2; exit 1; }
fi
if ! command -v curl >/dev/null 2>&1; then
  echo "test.sh: curl not found (the tests read the fake Ollama's request log with it): apt-get install curl" >&2
  exit 1
fi

files=()
for f in "$here"/tests/unit/test_*.lua "$here"/tests/e2e/test_*.lua; do
  [ -f "$f" ] || continue
  if [ -n "$pattern" ] && [[ "$f" != *"$pattern"* ]]; then continue; fi
  files+=("$f")
done
if [ ${#files[@]} -eq 0 ]; then
  echo "test.sh: no test files match '$pattern'" >&2
  exit 1
fi

status=0
summary=()
run_version() {
  local label=$1 bin=$2 want=$3
  if [ ! -x "$bin" ] && ! command -v "$bin" >/dev/null 2>&1; then
    echo "SKIP nvim $label: $bin is not installed (scripts/setup-e2e.sh installs it)"
    summary+=("nvim $label: SKIP (not installed)")
    return
  fi
  local version
  version=$("$bin" --version 2>/dev/null | head -1)
  if [ -n "$want" ] && [[ "$version" != "NVIM v$want"* ]]; then
    echo "test.sh: $bin is '$version', expected NVIM v$want" >&2
    status=1
    summary+=("nvim $label: FAIL (wrong version: $version)")
    return
  fi
  echo "=== $version ($bin)"
  local vdir="$out/logs/$label"
  want=$label
  mkdir -p "$vdir" "$out/xdg-$want"/{config,data,state,cache}
  local failed=0 passed=0
  for f in "${files[@]}"; do
    local name
    name=$(basename "$f" .lua)
    local log="$vdir/$name.log"
    local t0=$SECONDS
    # Neovim's own state (LSP log, shada) stays under out/.
    AGENTD_TEST_NVIM="$bin" \
    XDG_CONFIG_HOME="$out/xdg-$want/config" XDG_DATA_HOME="$out/xdg-$want/data" \
      XDG_STATE_HOME="$out/xdg-$want/state" XDG_CACHE_HOME="$out/xdg-$want/cache" \
      NVIM_LOG_FILE="$out/xdg-$want/nvim.log" \
      timeout -k 5 "$timeout_s" "$bin" --headless -u NONE -i NONE -n \
        -c "luafile $f" -c 'cquit 1' </dev/null >"$log" 2>&1
    local rc=$?
    cat "$log"
    if [ $rc -eq 0 ]; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      status=1
      [ $rc -eq 124 ] && echo "FAIL $name: timed out after ${timeout_s}s"
      echo "FAIL $name (nvim $want, exit $rc, $((SECONDS - t0))s); log: $log"
    fi
  done
  summary+=("nvim $label: $passed file(s) passed, $failed failed")
}

run_version 0.7 "$nvim07" 0.7
run_version 0.10 "$nvim010" 0.10
if [ -x "$nvimnext" ]; then
  run_version next "$nvimnext" ""
fi
echo "=== summary"
printf '%s\n' "${summary[@]}"
exit $status
