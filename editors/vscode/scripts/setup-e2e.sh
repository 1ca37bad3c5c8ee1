#!/usr/bin/env bash
# Installs what the VS Code end-to-end tests need, on Debian 12 with Node 20, as root.
# Idempotent and non-interactive (works with CI=true and no stdin). Reaches only Debian's apt mirror
# and the npm registry.
#
#   AGENTD_E2E_DIR   cache dir for the heavy tools (default /opt/agentd-e2e)
#   CS_DIR           code-server install dir (default $AGENTD_E2E_DIR/code-server)
#   CS_VERSION       code-server version (default 4.100.3 = VS Code 1.100.3)
#   SKIP_APT=1       skip apt-get (the packages are known to be there)
#
# What it installs:
#   apt: chromium (driven by playwright-core), ripgrep, curl and VS Code's native-module prerequisites
#        (build-essential pkg-config python3 libx11-dev libxkbfile-dev libsecret-1-dev libkrb5-dev)
#   code-server $CS_VERSION under $CS_DIR, with the four fixes of docs/notes "editor-testing":
#     1. libkrb5-dev for kerberos, 2. npm_config_nodedir=/usr (no header download),
#     3. npm_config_yes=true (node-pty's postinstall runs npx), 4. a pre-seeded @vscode/ripgrep cache
#   editors/vscode: `npm ci` (esbuild, typescript, vsce, playwright-core, vscode-languageclient)
set -euo pipefail
exec </dev/null

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
EXT_DIR=$(cd "$HERE/.." && pwd)
AGENTD_E2E_DIR=${AGENTD_E2E_DIR:-/opt/agentd-e2e}
CS_DIR=${CS_DIR:-$AGENTD_E2E_DIR/code-server}
CS_VERSION=${CS_VERSION:-4.100.3}
# @vscode/ripgrep pinned by code-server 4.100.3, and the asset tag its postinstall asks for.
RG_PKG_VERSION=${RG_PKG_VERSION:-1.15.11}
RG_ASSET=${RG_ASSET:-ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz}
export DEBIAN_FRONTEND=noninteractive
t() { echo "[setup-e2e $(date +%T)] $*"; }

if [ "$(id -u)" != 0 ] && [ -z "${SKIP_APT:-}" ]; then
	echo "setup-e2e: needs root for apt-get (or set SKIP_APT=1 when the packages are installed)" >&2
	exit 1
fi

APT_PKGS=(chromium ripgrep curl ca-certificates build-essential pkg-config python3 unzip
	libx11-dev libxkbfile-dev libsecret-1-dev libkrb5-dev fonts-dejavu-core)
if [ -z "${SKIP_APT:-}" ]; then
	missing=()
	for p in "${APT_PKGS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		t "apt-get install ${missing[*]}"
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	else
		t "apt packages present"
	fi
fi
command -v chromium >/dev/null || { echo "setup-e2e: chromium missing after apt" >&2; exit 1; }

CS_BIN="$CS_DIR/node_modules/.bin/code-server"
cs_ok() {
	[ -x "$CS_BIN" ] || return 1
	"$CS_BIN" --version 2>/dev/null | grep -q "^$CS_VERSION " || return 1
	# The native modules must have been built (npm may skip install scripts silently one day).
	[ -n "$(find "$CS_DIR/node_modules/code-server/lib/vscode/node_modules/node-pty" -name '*.node' 2>/dev/null | head -1)" ] || return 1
	[ -x "$CS_DIR/node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" ] || return 1
}
if cs_ok; then
	t "code-server $CS_VERSION present in $CS_DIR"
else
	t "code-server $CS_VERSION into $CS_DIR (builds native modules, ~90 s)"
	mkdir -p "$CS_DIR/tmp"
	cd "$CS_DIR"
	# npm walks up to an ancestor package.json without this one.
	[ -f package.json ] || echo '{"name":"agentd-e2e-code-server","private":true}' > package.json
	# Fix 4: @vscode/ripgrep downloads rg from GitHub releases; it first looks into
	# os.tmpdir()/vscode-ripgrep-cache-<version>/<asset>. Seed it with Debian's rg.
	rg_cache="$CS_DIR/tmp/vscode-ripgrep-cache-$RG_PKG_VERSION"
	if [ ! -f "$rg_cache/$RG_ASSET" ]; then
		mkdir -p "$rg_cache"
		d=$(mktemp -d)
		cp "$(command -v rg)" "$d/rg"
		tar czf "$rg_cache/$RG_ASSET" -C "$d" rg
		rm -rf "$d"
	fi
	# Fix 2: node-gyp uses /usr/include/node instead of downloading headers.
	# Fix 3: node-pty's postinstall runs `npx node-gyp`; npx must not prompt.
	# --unsafe-perm: code-server's postinstall refuses to run as root without it (npm 11 warns, still needed).
	TMPDIR="$CS_DIR/tmp" npm_config_nodedir=/usr npm_config_yes=true npm_config_audit=false npm_config_fund=false \
		npm install --unsafe-perm --no-audit --no-fund --loglevel=error "code-server@$CS_VERSION" >"$CS_DIR/install.log" 2>&1 || {
		tail -40 "$CS_DIR/install.log" >&2
		echo "setup-e2e: code-server install failed (log: $CS_DIR/install.log)" >&2
		exit 1
	}
	cs_ok || { tail -40 "$CS_DIR/install.log" >&2; echo "setup-e2e: code-server installed but incomplete" >&2; exit 1; }
	t "$("$CS_BIN" --version | head -1)"
fi

t "editors/vscode: npm ci"
cd "$EXT_DIR"
lock_sum=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f node_modules/.agentd-lock-sum ] && [ "$(cat node_modules/.agentd-lock-sum)" = "$lock_sum" ]; then
	t "node_modules up to date"
else
	npm ci --no-audit --no-fund --loglevel=error
	echo "$lock_sum" > node_modules/.agentd-lock-sum
fi
test -x node_modules/.bin/esbuild && test -x node_modules/.bin/vsce && test -d node_modules/playwright-core
t "done (code-server: $CS_BIN, chromium: $(command -v chromium))"
