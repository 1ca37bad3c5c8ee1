#!/usr/bin/env bash
# End-to-end tests of the VS Code extension in a real VS Code (code-server + headless Chromium +
# playwright-core), against the real agentd binary and the scripted fake Ollama.
#
#   scripts/test-e2e.sh            the scenarios (chat, review, reject with reason, command, stop, context)
#   scripts/test-e2e.sh --bench    the scenarios and the benchmarks (activation, review latency,
#                                  streaming 10,000 tokens over a 2,000-message session)
#
# It also packages the platform-specific .vsix with the bundled daemon (scripts/package-platform.mjs,
# as `make vsix` does) for the "vsix" scenario, which installs it into a second code-server.
#
# Environment: AGENTD_E2E_DIR (/opt/agentd-e2e), CS_DIR (code-server install), AGENTD_BIN
# (default: builds bin/agentd), OUT_DIR (default <repo>/out/vscode-e2e), E2E_ONLY=chat,review…,
# E2E_REPEAT=N (run the scenarios N times in one VS Code), E2E_KEEP=1 keeps the temp run dir.
#
# A scenario fails on its own checks and on any error from the extension while it runs (extension
# host errors, unhandled rejections, failed commands, its error logs, the chat webview's console
# errors); the run first tests that injected errors are reported (scenario "harness"). See the
# header of test/e2e/run.mjs.
#
# Prints a SKIP line and exits 0 only when the tools are not installed and CI is not "true"
# (scripts/setup-e2e.sh installs them; CI runs it first). Any failure exits non-zero.
set -euo pipefail
exec </dev/null

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EXT_DIR=$(cd "$HERE/.." && pwd)
REPO=$(cd "$EXT_DIR/../.." && pwd)
AGENTD_E2E_DIR=${AGENTD_E2E_DIR:-/opt/agentd-e2e}
CS_DIR=${CS_DIR:-$AGENTD_E2E_DIR/code-server}
CS_BIN="$CS_DIR/node_modules/.bin/code-server"
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}
OUT_DIR=${OUT_DIR:-$REPO/out/vscode-e2e}
BENCH=0
for a in "$@"; do
	case "$a" in
	--bench) BENCH=1 ;;
	*) echo "test-e2e: unknown argument $a" >&2; exit 2 ;;
	esac
done

missing=()
[ -x "$CS_BIN" ] || missing+=("code-server ($CS_BIN)")
[ -n "$CHROMIUM" ] && [ -x "$CHROMIUM" ] || missing+=("chromium")
[ -d "$EXT_DIR/node_modules/playwright-core" ] || missing+=("playwright-core (npm ci in editors/vscode)")
[ -x "$EXT_DIR/node_modules/.bin/vsce" ] || missing+=("@vscode/vsce (npm ci in editors/vscode)")
command -v go >/dev/null || missing+=("go")
command -v unzip >/dev/null || missing+=("unzip (package-platform.mjs lists the .vsix)")
if [ ${#missing[@]} -gt 0 ]; then
	if [ "${CI:-}" = true ]; then
		echo "FAIL vscode e2e: not installed: ${missing[*]} (CI runs editors/vscode/scripts/setup-e2e.sh first)" >&2
		exit 1
	fi
	echo "SKIP vscode e2e: not installed: ${missing[*]} (run editors/vscode/scripts/setup-e2e.sh)"
	exit 0
fi

t() { echo "[test-e2e $(date +%T)] $*"; }
mkdir -p "$OUT_DIR"
rm -f "$OUT_DIR"/*.png "$OUT_DIR/results.json" "$OUT_DIR/ignored-errors.log"
rm -rf "$OUT_DIR/logs"

BIN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/agentd-e2e-bin.XXXXXX")
trap 'rm -rf "$BIN_DIR"' EXIT
if [ -z "${AGENTD_BIN:-}" ]; then
	t "building agentd"
	(cd "$REPO" && CGO_ENABLED=0 go build -o "$BIN_DIR/agentd" ./cmd/agentd)
	AGENTD_BIN="$BIN_DIR/agentd"
fi
t "building fakeollama"
(cd "$REPO" && go build -o "$BIN_DIR/fakeollama" ./ollama/ollamatest/cmd/fakeollama)

t "packaging the extension"
cd "$EXT_DIR"
npm run --silent package >"$BIN_DIR/package.log" 2>&1 || { cat "$BIN_DIR/package.log" >&2; exit 1; }
VSIX="$EXT_DIR/dist/agentd.vsix"
# The platform-specific .vsix users install (what `make vsix` builds), bundling agentd and
# agentd-sandbox: the "vsix" scenario installs it into a second code-server.
t "packaging the platform .vsix (bundled daemon)"
mkdir -p "$BIN_DIR/platform"
cp "$AGENTD_BIN" "$BIN_DIR/platform/agentd"
(cd "$REPO" && CGO_ENABLED=0 go build -o "$BIN_DIR/platform/agentd-sandbox" ./cmd/agentd-sandbox)
VSIX_PLATFORM=$(node "$EXT_DIR/scripts/package-platform.mjs" --bin "$BIN_DIR/platform" 2>"$BIN_DIR/package-platform.log" | tail -1) ||
	{ cat "$BIN_DIR/package-platform.log" >&2; exit 1; }

t "running the scenarios$([ "$BENCH" = 1 ] && echo ' and benchmarks')"
set +e
CS_BIN="$CS_BIN" AGENTD_BIN="$AGENTD_BIN" FAKEOLLAMA="$BIN_DIR/fakeollama" VSIX="$VSIX" VSIX_PLATFORM="$VSIX_PLATFORM" OUT_DIR="$OUT_DIR" \
	CHROMIUM="$CHROMIUM" BENCH="$BENCH" node "$EXT_DIR/test/e2e/run.mjs"
rc=$?
if [ "$BENCH" = 1 ]; then
	# A benchmark, not a test: it prints numbers and only fails when it cannot run. Only --bench
	# runs it (make test does not).
	t "benchmarking the chat view alone (webview-bench)"
	CHROMIUM="$CHROMIUM" node "$EXT_DIR/test/e2e/webview-bench.mjs" | tee "$OUT_DIR/webview-bench.json" || rc=1
fi
set -e
t "screenshots in $OUT_DIR"
exit $rc
