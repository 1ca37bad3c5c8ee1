#!/usr/bin/env bash
# Runs every Neovim test file (tests/unit, tests/e2e) on Neovim 0.7.2, 0.10 and 0.12, the
# end-to-end ones against the real agentd binary and the fake Ollama server.
#
#   editors/nvim/scripts/test.sh [pattern]      # e.g. test.sh review  -> files matching *review*
#
# Exit status: 0 when every test of every installed version passed; 1 otherwise. A Neovim version
# that is not installed prints a SKIP line and is not an error (CI installs both with
# scripts/setup-e2e.sh, so there they run).
#
# Errors fail the run even when the test file exits 0: Neovim prints errors raised in callbacks
# (vim.schedule, timers, autocmds, jobs) on stderr, so stderr is scanned for "Error executing",
# "Error detected while processing", "E123:" and tracebacks; each is reported with the test that
# was running (tests/helpers.lua writes "agentd-test: begin <name>" there). Before the suite, a
# harness self-test (tests/harness/) checks that errors injected into callbacks fail a test file
# and are named, so a harness that stops seeing errors fails the run too.
#
# Environment:
#   AGENTD_NVIM_07   Neovim 0.7.2 binary            (default: /usr/bin/nvim)
#   AGENTD_NVIM_010  Neovim 0.10 binary             (default: $AGENTD_E2E_DIR/bin/nvim-0.10)
#   AGENTD_NVIM_012  Neovim 0.12 binary             (default: $AGENTD_E2E_DIR/bin/nvim-0.12)
#   AGENTD_NVIM_VERSIONS  the versions to run, e.g. "0.12" or "0.7 0.10" (default: all three)
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
nvim012=${AGENTD_NVIM_012:-$e2e_dir/bin/nvim-0.12}
versions=${AGENTD_NVIM_VERSIONS:-0.7 0.10 0.12}
timeout_s=${AGENTD_TEST_TIMEOUT:-180}
pattern=${1:-}
mkdir -p "$out/bin"
# Test workspaces under out/ hold .go files: a nested module keeps them out of the repository's ./...
[ -f "$repo/out/go.mod" ] || { mkdir -p "$repo/out" && printf 'module agentd.invalid/out\n' > "$repo/out/go.mod"; }
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
  (cd "$repo" && CGO_ENABLED=0 go build -o "$AGENTD_BIN" ./cmd/agentd) || { echo "test.sh: building agentd failed" >&2; exit 1; }
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

# Lines of Neovim error output (extended regexp). Neovim 0.12 heads an error with "Error in …:"
# and puts the message on the next line ("vim.schedule callback: …: injected"), so the line after
# a heading is reported with it.
error_re='Error executing|Error detected while processing|Error in |stack traceback:|(^|[^[:alnum:]_])E[0-9]+:'

# run_file BIN FILE LOG: runs one test file; stdout goes to LOG, stderr to LOG.stderr. Sets rc (the
# exit status) and errs (the error lines found on stderr, each prefixed with the test running then).
run_file() {
  local bin=$1 f=$2 log=$3
  AGENTD_TEST_NVIM="$bin" \
  XDG_CONFIG_HOME="$xdg/config" XDG_DATA_HOME="$xdg/data" \
    XDG_STATE_HOME="$xdg/state" XDG_CACHE_HOME="$xdg/cache" \
    NVIM_LOG_FILE="$xdg/nvim.log" \
    timeout -k 5 "$timeout_s" "$bin" --headless -u NONE -i NONE -n \
      -c "luafile $f" -c 'cquit 1' </dev/null >"$log" 2>"$log.stderr"
  rc=$?
  errs=$(awk -v re="$error_re" '
    /^agentd-test: begin / { t = substr($0, 20); next }
    /^agentd-test: end$/ { t = "(after the tests)"; next }
    $0 ~ re || next_too { print "[" (t == "" ? "(before the first test)" : t) "] " $0
      next_too = ($0 ~ /Error (in |detected while processing)/); next }
  ' "$log.stderr")
}

# harness_selftest LABEL BIN: errors injected into callbacks must fail a test file, named.
harness_selftest() {
  local label=$1 bin=$2 vdir="$out/logs/$1" problems=()
  local f="$here/tests/harness/selftest_errors.lua" log="$out/logs/$1/selftest_errors.log"
  run_file "$bin" "$f" "$log"
  [ $rc -ne 0 ] || problems+=("selftest_errors.lua exited 0 (want 1: its injected errors must fail it)")
  [ $rc -ne 124 ] || problems+=("selftest_errors.lua timed out")
  # every "FAIL <test>" block must name the error that test injected
  local want=(
    "injected: error in a vim.schedule callback|injected-schedule"
    "injected: error in a vim.defer_fn callback|injected-defer"
    "injected: error in an autocmd callback|injected-autocmd"
    "injected: error in a jobstart callback|injected-job"
    "injected: error in a luv timer callback|injected-luv"
    "injected: E-message from a scheduled Ex command|injectedNotACommand"
    "injected: unexpected vim.notify ERROR|injected-notify"
    "injected: nvim_err_writeln|injected-err-writeln"
    "injected: v:errmsg set by a silenced error|injectedSilenced"
    "injected: error in a callback of a skipped test|injected-skip"
    "before 'control: a clean test after failing ones'|injected-between"
    "(cleanup, after the last test)|injected-cleanup"
  )
  local found
  found=$(awk '/^FAIL / { t = substr($0, 6); sub(/ \([0-9]+ ms\)$/, "", t); next } /^ok / { t = ""; next }
    t != "" && match($0, /injected[A-Za-z-]+/) { print t "|" substr($0, RSTART, RLENGTH) }' "$log" | sort -u)
  local w
  for w in "${want[@]}"; do
    grep -qxF -- "$w" <<<"$found" || problems+=("no FAIL of test '${w%%|*}' naming '${w##*|}'")
  done
  local c
  for c in "control: an expected error notification" "control: a caught error" \
    "control: a clean test after failing ones"; do
    grep -q "^ok   $c (" "$log" || problems+=("control test '$c' did not pass")
  done
  grep -q "selftest_errors: 3 passed, ${#want[@]} failed" "$log" ||
    problems+=("summary is not '3 passed, ${#want[@]} failed'")
  # an error the in-process harness cannot see (a file without it) is found on stderr
  f="$here/tests/harness/selftest_stderr.lua" log="$out/logs/$1/selftest_stderr.log"
  run_file "$bin" "$f" "$log"
  [ $rc -eq 0 ] || problems+=("selftest_stderr.lua exited $rc (want 0: only the stderr scan sees its error)")
  grep -q "injected-stderr" <<<"$errs" || problems+=("the stderr scan missed selftest_stderr.lua's injected error")
  if [ ${#problems[@]} -gt 0 ]; then
    status=1
    echo "FAIL harness self-test (nvim $label): injected errors are not all reported:"
    printf '  %s\n' "${problems[@]}"
    echo "  logs: $vdir/selftest_errors.log, $vdir/selftest_stderr.log (and .stderr)"
    summary+=("nvim $label: FAIL harness self-test")
  else
    echo "ok   harness self-test: ${#want[@]} injected errors each failed their test, by name; stderr scan works"
  fi
}

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
  # Neovim's own state (LSP log, shada) stays under out/.
  xdg="$out/xdg-$label"
  mkdir -p "$vdir" "$xdg"/{config,data,state,cache}
  harness_selftest "$label" "$bin"
  local failed=0 passed=0 tests_passed=0 tests_failed=0 tests_skipped=0
  for f in "${files[@]}"; do
    local name
    name=$(basename "$f" .lua)
    local log="$vdir/$name.log"
    local t0=$SECONDS
    run_file "$bin" "$f" "$log"
    cat "$log"
    # Neovim's messages (stderr in headless mode), without the harness's markers
    grep -v -e '^agentd-test: ' -e '^[[:space:]]*$' "$log.stderr" | sed 's/^/  stderr: /'
    local counts
    counts=$(sed -n 's/^.*: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped (nvim .*$/\1 \2 \3/p' "$log" | tail -1)
    if [ -n "$counts" ]; then
      read -r p fl sk <<<"$counts"
      tests_passed=$((tests_passed + p)) tests_failed=$((tests_failed + fl)) tests_skipped=$((tests_skipped + sk))
    fi
    if [ -n "$errs" ]; then
      echo "FAIL $name: Neovim printed errors (test in brackets):"
      sed 's/^/  /' <<<"$errs"
      [ $rc -eq 0 ] && rc=1
    fi
    if [ $rc -eq 0 ]; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      status=1
      [ $rc -eq 124 ] && echo "FAIL $name: timed out after ${timeout_s}s"
      echo "FAIL $name (nvim $label, exit $rc, $((SECONDS - t0))s); log: $log (stderr: $log.stderr)"
    fi
  done
  summary+=("nvim $label: $passed file(s) passed, $failed failed; tests: $tests_passed passed, $tests_failed failed, $tests_skipped skipped")
}

for v in $versions; do
  case $v in
    0.7) run_version 0.7 "$nvim07" 0.7 ;;
    0.10) run_version 0.10 "$nvim010" 0.10 ;;
    0.12) run_version 0.12 "$nvim012" 0.12 ;;
    *) echo "test.sh: unknown version '$v' in AGENTD_NVIM_VERSIONS" >&2; status=1 ;;
  esac
done
echo "=== summary"
printf '%s\n' "${summary[@]}"
exit $status
