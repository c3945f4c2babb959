#!/usr/bin/env bash
# Installs the Debian tools the unit suite drives as real attackers and real terminals would:
#   faketime (clock steps), strace (a SIGKILL injected at a chosen system call). unshare and setpriv come with
#   util-linux, which every Debian has. Then the real agent CLIs the tests run (scripts/host/agentPackages.js:
#   pinned claude, the Agent SDK, codex, an MCP server, into the shared .tools/agents).
# Idempotent: returns at once when everything is present.
set -euo pipefail
PACKAGES=(faketime strace)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed || missing+=("$p")
done
install_debian() {
  SUDO=()
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null && sudo -n true 2>/dev/null || { echo "[test-tools] need root to install: ${missing[*]} (sudo apt-get install -y ${missing[*]})" >&2; exit 1; }
    SUDO=(sudo -n)
  fi
  export DEBIAN_FRONTEND=noninteractive
  echo "[test-tools] apt-get install ${missing[*]}"
  "${SUDO[@]}" apt-get install -y -q "${missing[@]}" || { "${SUDO[@]}" apt-get update -q || true; "${SUDO[@]}" apt-get install -y -q "${missing[@]}"; }
}
((${#missing[@]} == 0)) || install_debian
# The agents: where the registry cannot be reached this prints why and the tests that need them say so.
node "$(dirname "${BASH_SOURCE[0]}")/host/agentPackages.js" >/dev/null || echo "[test-tools] the real agent CLIs are not installed (see above)" >&2
