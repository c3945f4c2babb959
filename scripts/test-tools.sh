#!/usr/bin/env bash
# Installs the Debian tools the unit suite drives as real attackers and real terminals would:
#   faketime (clock steps), strace (a SIGKILL injected at a chosen system call). unshare and setpriv come with
#   util-linux, which every Debian has.
# Idempotent: returns at once when everything is present.
set -euo pipefail
PACKAGES=(faketime strace)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0
SUDO=()
if [[ "$(id -u)" != 0 ]]; then
  command -v sudo >/dev/null && sudo -n true 2>/dev/null || { echo "[test-tools] need root to install: ${missing[*]} (sudo apt-get install -y ${missing[*]})" >&2; exit 1; }
  SUDO=(sudo -n)
fi
export DEBIAN_FRONTEND=noninteractive
echo "[test-tools] apt-get install ${missing[*]}"
"${SUDO[@]}" apt-get install -y -q "${missing[@]}" || { "${SUDO[@]}" apt-get update -q || true; "${SUDO[@]}" apt-get install -y -q "${missing[@]}"; }
