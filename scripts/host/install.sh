#!/usr/bin/env bash
# Installs the real VS Code test host into the git-ignored .tools/ folder:
#   - Debian packages: chromium (the workbench client), libkrb5-dev (headers for code-server's
#     kerberos addon), ripgrep (stands in for @vscode/ripgrep's GitHub download);
#   - code-server 4.100.3 (= VS Code 1.100.3, the last line that runs on Node 20) in .tools/code-server;
#   - checks that playwright-core (a devDependency) is installed.
# Idempotent: a second run checks versions and markers and returns in about a second.
# Usage: bash scripts/host/install.sh [--force]   (--force reinstalls code-server)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TOOLS="$ROOT/.tools"
CS_VERSION="4.100.3"
CS_DIR="$TOOLS/code-server"
# code-server 4.100.3's bundled VS Code depends on @vscode/ripgrep 1.15.11, whose postinstall
# downloads ripgrep v13.0.0-10 from GitHub unless this cache file already exists.
RG_PKG_VERSION="1.15.11"
RG_ASSET_VERSION="v13.0.0-10"
APT_PACKAGES=(chromium libkrb5-dev ripgrep)
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

log() { echo "[host-install] $*"; }
die() { echo "[host-install] ERROR: $*" >&2; exit 1; }

started=$(date +%s)

# ---------------------------------------------------------------- Debian packages
is_installed() { dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null | grep -qx installed; }

missing=()
for p in "${APT_PACKAGES[@]}"; do is_installed "$p" || missing+=("$p"); done

if ((${#missing[@]} == 0)); then
  log "Debian packages present: ${APT_PACKAGES[*]}"
else
  command -v apt-get >/dev/null || die "apt-get not found; install ${missing[*]} by hand (this script expects Debian 12)."
  SUDO=()
  if [[ "$(id -u)" != 0 ]]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO=(sudo -n)
    else die "need root (or password-less sudo) to install: ${missing[*]}. Run: sudo apt-get install -y ${missing[*]}"; fi
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt_update() {
    log "apt-get update"
    # A third-party source that cannot be reached makes update exit non-zero; the Debian lists may still be fine.
    "${SUDO[@]}" apt-get update -q || log "apt-get update reported errors (continuing; the install below decides)"
  }
  if ! compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null; then apt_update; fi
  log "apt-get install ${missing[*]}"
  if ! "${SUDO[@]}" apt-get install -y -q "${missing[@]}"; then
    # Stale lists: a package not found, or a version the mirror no longer has.
    apt_update
    "${SUDO[@]}" apt-get install -y -q "${missing[@]}" \
      || die "could not install ${missing[*]} with apt-get (are Debian's repositories reachable?)"
  fi
  for p in "${APT_PACKAGES[@]}"; do is_installed "$p" || die "$p is still not installed"; done
fi
[[ -x /usr/bin/chromium ]] || die "/usr/bin/chromium is missing"
[[ -x /usr/bin/rg ]] || die "/usr/bin/rg is missing"

# ---------------------------------------------------------------- code-server
# The marker names everything the installed native addons depend on.
want="code-server@$CS_VERSION node-abi=$(node -p process.versions.modules) arch=$(node -p process.arch)"
marker="$CS_DIR/.installed"
cs_bin="$CS_DIR/node_modules/code-server/out/node/entry.js"

if [[ $FORCE == 0 && -f "$marker" && "$(cat "$marker")" == "$want" && -f "$cs_bin" ]]; then
  log "code-server $CS_VERSION present in ${CS_DIR#$ROOT/}"
else
  case "$(node -p process.arch)" in
    x64) rg_target="x86_64-unknown-linux-musl" ;;
    arm64) rg_target="aarch64-unknown-linux-musl" ;;
    *) die "unsupported architecture $(node -p process.arch)" ;;
  esac
  log "installing code-server@$CS_VERSION into ${CS_DIR#$ROOT/} (about a minute)"
  rm -rf "$CS_DIR"
  mkdir -p "$CS_DIR"
  echo '{ "name": "agent-trees-host-tools", "private": true }' >"$CS_DIR/package.json"
  work="$(mktemp -d "${TMPDIR:-/tmp}/agent-trees-host-install.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  # ripgrep: Debian's rg, packed the way @vscode/ripgrep's cache expects it.
  mkdir -p "$work/stage" "$work/tmp/vscode-ripgrep-cache-$RG_PKG_VERSION"
  cp /usr/bin/rg "$work/stage/rg"
  tar -C "$work/stage" -czf "$work/tmp/vscode-ripgrep-cache-$RG_PKG_VERSION/ripgrep-$RG_ASSET_VERSION-$rg_target.tar.gz" rg
  (
    cd "$CS_DIR"
    # yes: node-pty's postinstall runs `npx node-gyp`, and this machine's npmrc says yes=false.
    # unsafe_perm: code-server's postinstall refuses to run as root otherwise.
    # dangerously_allow_all_scripts: npm 11 may block install scripts not listed in allowScripts.
    TMPDIR="$work/tmp" \
    npm_config_yes=true \
    npm_config_unsafe_perm=true \
    npm_config_dangerously_allow_all_scripts=true \
    npm_config_audit=false \
    npm_config_fund=false \
    npm_config_update_notifier=false \
      npm install --no-save --loglevel=warn "code-server@$CS_VERSION"
  ) || die "npm install code-server@$CS_VERSION failed (see above)"
  [[ -f "$cs_bin" ]] || die "code-server entry point missing after install: $cs_bin"
  # --version writes a default config file: keep it inside the temp folder, not in ~/.config.
  got="$(XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" node "$cs_bin" --version 2>/dev/null \
    | grep -E '^[0-9]+\.[0-9]+\.[0-9]+ ' | head -1 || true)"
  [[ "$got" == "$CS_VERSION"* ]] || die "code-server --version printed '$got', expected $CS_VERSION"
  echo "$want" >"$marker"
  log "code-server $got installed"
fi

# ---------------------------------------------------------------- playwright-core
if ! (cd "$ROOT" && node -e "require.resolve('playwright-core')" 2>/dev/null); then
  die "playwright-core is not installed in $ROOT/node_modules: run 'npm ci' (it is a devDependency)"
fi
log "playwright-core $(cd "$ROOT" && node -p "require('playwright-core/package.json').version"), $(/usr/bin/chromium --version 2>/dev/null | head -1)"
log "done in $(($(date +%s) - started)) s"
