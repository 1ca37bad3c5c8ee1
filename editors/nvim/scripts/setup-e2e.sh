#!/usr/bin/env bash
# Installs what the Neovim end-to-end tests need on a fresh Debian 12 machine (run as root):
#   - Neovim 0.7.2 from Debian 12 (/usr/bin/nvim), curl, bubblewrap, debootstrap
#   - Neovim 0.10 from a Debian trixie rootfs made with debootstrap, run through trixie's own loader
#     (no chroot) by the wrapper $AGENTD_E2E_DIR/bin/nvim-0.10 this script writes.
#   - Neovim 0.12 (the current stable release, what lazy.nvim users run) from a Debian sid rootfs,
#     the same way: the wrapper $AGENTD_E2E_DIR/bin/nvim-0.12. sid moves: test.sh checks that it
#     is still a 0.12 and says so when it is not.
#   - llama.cpp's llama-server (sid's llama.cpp-tools, CPU backends from libggml0) in the same sid
#     rootfs: the wrapper $AGENTD_E2E_DIR/bin/llama-server, which cmd/agentd's tests against a real
#     inference engine run (AGENTD_LLAMA_SERVER). One sid root serves both.
# Idempotent and non-interactive: a second run only checks. Reaches only Debian's apt mirror.
#
# Environment:
#   AGENTD_E2E_DIR     cache dir outside the repository (default /opt/agentd-e2e)
#   AGENTD_TRIXIE_DIR  the trixie rootfs (default $AGENTD_E2E_DIR/trixie)
#   DEBIAN_MIRROR      mirror for debootstrap (default: the one apt already uses)
#   AGENTD_SID_DIR     the sid rootfs with Neovim 0.12 and llama-server (default $AGENTD_E2E_DIR/sid)
set -euo pipefail
export CI=true DEBIAN_FRONTEND=noninteractive
exec </dev/null

E2E_DIR=${AGENTD_E2E_DIR:-/opt/agentd-e2e}
TRIXIE=${AGENTD_TRIXIE_DIR:-$E2E_DIR/trixie}
t() { echo "[setup-e2e $(date +%T)] $*"; }

if [ "$(id -u)" != 0 ]; then
  echo "setup-e2e.sh: must run as root (apt-get, debootstrap)" >&2
  exit 1
fi

need=()
command -v nvim >/dev/null 2>&1 || need+=(neovim)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v curl >/dev/null 2>&1 || need+=(curl)            # the tests read the fake Ollama's log
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)     # the daemon's command sandbox
if [ ${#need[@]} -gt 0 ]; then
  t "apt-get install ${need[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
t "$(nvim --version | head -1) at $(command -v nvim)"

mkdir -p "$E2E_DIR"
mirror=${DEBIAN_MIRROR:-}
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
  mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
fi
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
  mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list)
fi
mirror=${mirror:-http://deb.debian.org/debian}

if [ ! -x "$TRIXIE/usr/bin/nvim" ]; then
  t "debootstrap trixie with neovim into $TRIXIE (mirror $mirror)"
  # A half-made rootfs from an interrupted run would make debootstrap fail: start clean.
  rm -rf "$TRIXIE"
  mkdir -p "$(dirname "$TRIXIE")"
  tmp="$TRIXIE.tmp.$$"
  rm -rf "$tmp"
  if ! debootstrap --variant=minbase --include=neovim trixie "$tmp" "$mirror" >"$E2E_DIR/debootstrap-trixie.log" 2>&1; then
    tail -30 "$E2E_DIR/debootstrap-trixie.log" >&2
    rm -rf "$tmp"
    exit 1
  fi
  mv "$tmp" "$TRIXIE"
  # apt caches are not needed to run nvim.
  rm -rf "$TRIXIE/var/cache/apt/archives/"*.deb "$TRIXIE/var/lib/apt/lists/"* 2>/dev/null || true
fi

mkdir -p "$E2E_DIR/bin"
cat >"$E2E_DIR/bin/nvim-0.10" <<WRAP
#!/bin/sh
# Neovim from the trixie rootfs, started with trixie's loader (the host glibc is too old).
T=\${AGENTD_TRIXIE_DIR:-$TRIXIE}
export VIMRUNTIME=\$T/usr/share/nvim/runtime
exec "\$T/lib64/ld-linux-x86-64.so.2" --library-path "\$T/lib/x86_64-linux-gnu:\$T/usr/lib/x86_64-linux-gnu" "\$T/usr/bin/nvim" "\$@"
WRAP
chmod +x "$E2E_DIR/bin/nvim-0.10"
t "$("$E2E_DIR/bin/nvim-0.10" --version </dev/null | head -1) at $E2E_DIR/bin/nvim-0.10"
SID=${AGENTD_SID_DIR:-$E2E_DIR/sid}
if [ ! -x "$SID/usr/bin/nvim" ]; then
  t "debootstrap sid with neovim and llama.cpp-tools into $SID (mirror $mirror)"
  rm -rf "$SID" "$SID.tmp"
  if ! debootstrap --variant=minbase --include=neovim,llama.cpp-tools sid "$SID.tmp" "$mirror" >"$E2E_DIR/debootstrap-sid.log" 2>&1; then
    tail -30 "$E2E_DIR/debootstrap-sid.log" >&2
    rm -rf "$SID.tmp"
    exit 1
  fi
  mv "$SID.tmp" "$SID"
  rm -rf "$SID/var/cache/apt/archives/"*.deb "$SID/var/lib/apt/lists/"* 2>/dev/null || true
fi
cat >"$E2E_DIR/bin/nvim-0.12" <<WRAP
#!/bin/sh
# Neovim from the sid rootfs, started with sid's loader.
T=\${AGENTD_SID_DIR:-$SID}
export VIMRUNTIME=\$T/usr/share/nvim/runtime
exec "\$T/lib64/ld-linux-x86-64.so.2" --library-path "\$T/lib/x86_64-linux-gnu:\$T/usr/lib/x86_64-linux-gnu" "\$T/usr/bin/nvim" "\$@"
WRAP
chmod +x "$E2E_DIR/bin/nvim-0.12"
rm -f "$E2E_DIR/bin/nvim-next" # the optional wrapper of earlier rounds
t "$("$E2E_DIR/bin/nvim-0.12" --version </dev/null | head -1) at $E2E_DIR/bin/nvim-0.12"

if [ ! -x "$SID/usr/bin/llama-server" ]; then
  # A sid root made before llama-server was needed: install it in place (Neovim keeps running
  # from the same root meanwhile).
  t "apt-get install llama.cpp-tools into $SID"
  cp /etc/resolv.conf "$SID/etc/resolv.conf"
  # The machine's clock can be past the Release file's Valid-Until (debootstrap does not check it).
  chroot "$SID" apt-get -o Acquire::Check-Valid-Until=false update -qq
  chroot "$SID" apt-get install -y -qq --no-install-recommends llama.cpp-tools >"$E2E_DIR/apt-sid-llama.log" 2>&1 ||
    { tail -30 "$E2E_DIR/apt-sid-llama.log" >&2; exit 1; }
  rm -rf "$SID/var/cache/apt/archives/"*.deb "$SID/var/lib/apt/lists/"* 2>/dev/null || true
fi
# ggml loads its CPU backend (the variant this CPU runs best) from the directory of the running
# executable, which under the wrapper is sid's loader: link the variants there.
for f in "$SID"/usr/lib/x86_64-linux-gnu/ggml/backends0/libggml-cpu-*.so; do
  ln -sfn "ggml/backends0/${f##*/}" "$SID/usr/lib/x86_64-linux-gnu/${f##*/}"
done
cat >"$E2E_DIR/bin/llama-server" <<WRAP
#!/bin/sh
# llama.cpp's llama-server from the sid rootfs, started with sid's loader.
T=\${AGENTD_SID_DIR:-$SID}
exec "\$T/lib64/ld-linux-x86-64.so.2" --library-path "\$T/lib/x86_64-linux-gnu:\$T/usr/lib/x86_64-linux-gnu:\$T/usr/lib/x86_64-linux-gnu/llama" "\$T/usr/bin/llama-server" "\$@"
WRAP
chmod +x "$E2E_DIR/bin/llama-server"
t "llama-server $("$E2E_DIR/bin/llama-server" --version </dev/null 2>&1 | grep -m1 '^version') at $E2E_DIR/bin/llama-server"
t "done"
