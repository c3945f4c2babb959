#!/usr/bin/env bash
# Installs the real VS Code test hosts (scripts/host/hosts.json) into the git-ignored .tools/ folder:
#   - Debian packages: chromium (the workbench client), libkrb5-dev (headers for code-server's
#     kerberos addon), ripgrep (stands in for @vscode/ripgrep's GitHub download in code-server 4.100.3),
#     pngquant (quantises the screenshots that screenshots.js and agentClis.js take: the packaged README inlines them);
#   - per host: its Node when it is not the machine's (the npm package node-linux-<arch>@<version>,
#     unpacked into .tools/<nodeDir>), then code-server into .tools/<dir>, built against that Node;
#   - checks that playwright-core (a devDependency) is installed.
# Today: code-server 4.100.3 (VS Code 1.100.3) on the machine's Node 20 in .tools/code-server, and
# code-server 4.139.1 (VS Code 1.139.1) on Node 24 in .tools/code-server-4.139.1 + .tools/node-24.
# Idempotent: a second run checks versions and markers and returns in about a second. Two installers
# running at once (several checkouts share one .tools) take turns on a lock.
# Usage: bash scripts/host/install.sh [--force] [--host NAME|all]...   (default: all hosts; --force reinstalls them)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TOOLS="$ROOT/.tools"
HOSTS_JSON="$ROOT/scripts/host/hosts.json"
APT_PACKAGES=(chromium libkrb5-dev ripgrep pngquant)
FORCE=0
selected=()
while (($#)); do
  case "$1" in
    --force) FORCE=1 ;;
    --host) shift; [[ $# -gt 0 ]] || { echo "--host needs a name" >&2; exit 2; }; selected+=("$1") ;;
    --host=*) selected+=("${1#--host=}") ;;
    *) echo "unknown argument $1 (usage: install.sh [--force] [--host NAME|all]...)" >&2; exit 2 ;;
  esac
  shift
done

log() { echo "[host-install] $*"; }
die() { echo "[host-install] ERROR: $*" >&2; exit 1; }

started=$(date +%s)

# ---------------------------------------------------------------- hosts.json
# `host_field NAME FIELD` prints one field of a host ('' when absent).
host_field() {
  node -e 'const [n, f] = process.argv.slice(1); const h = require(process.argv[3]).hosts.find((x) => x.name === n);
    if (!h) { console.error(`no host named ${n} in hosts.json`); process.exit(1); }
    const v = f.split(".").reduce((o, k) => (o == null ? undefined : o[k]), h); process.stdout.write(v == null ? "" : String(v));' \
    "$1" "$2" "$HOSTS_JSON"
}
all_hosts=($(node -e 'for (const h of require(process.argv[1]).hosts) console.log(h.name)' "$HOSTS_JSON"))
if ((${#selected[@]} == 0)) || [[ " ${selected[*]} " == *" all "* ]]; then selected=("${all_hosts[@]}"); fi
for h in "${selected[@]}"; do host_field "$h" name >/dev/null || die "unknown host '$h' (hosts.json has: ${all_hosts[*]})"; done

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
  # Another apt may hold dpkg's lock (a fresh machine's unattended upgrades, another checkout's install): wait for it.
  APT=("${SUDO[@]}" apt-get -o DPkg::Lock::Timeout=600)
  apt_update() {
    log "apt-get update"
    # A third-party source that cannot be reached makes update exit non-zero; the Debian lists may still be fine.
    "${APT[@]}" update -q || log "apt-get update reported errors (continuing; the install below decides)"
  }
  if ! compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null; then apt_update; fi
  log "apt-get install ${missing[*]}"
  if ! "${APT[@]}" install -y -q "${missing[@]}"; then
    # Stale lists: a package not found, or a version the mirror no longer has.
    apt_update
    "${APT[@]}" install -y -q "${missing[@]}" \
      || die "could not install ${missing[*]} with apt-get (are Debian's repositories reachable?)"
  fi
  for p in "${APT_PACKAGES[@]}"; do is_installed "$p" || die "$p is still not installed"; done
fi
[[ -x /usr/bin/chromium ]] || die "/usr/bin/chromium is missing"
[[ -x /usr/bin/rg ]] || die "/usr/bin/rg is missing"

# ---------------------------------------------------------------- the hosts
mkdir -p "$TOOLS"
exec 9>"$TOOLS/.install.lock"
if ! flock -n 9; then
  log "another install is running in $TOOLS; waiting for it"
  flock 9
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/agent-trees-host-install.XXXXXX")"
trap 'rm -rf "$work"' EXIT
arch="$(node -p process.arch)"
case "$arch" in
  x64) rg_target="x86_64-unknown-linux-musl" ;;
  arm64) rg_target="aarch64-unknown-linux-musl" ;;
  *) die "unsupported architecture $arch" ;;
esac

# `install_node VERSION DIR`: the npm package node-linux-<arch>@VERSION (a Node binary with its headers)
# unpacked into DIR. A registry package like any other: no download from nodejs.org.
install_node() {
  local version="$1" dir="$2" want marker
  want="node-linux-$arch@$version"
  marker="$dir/.installed"
  if [[ $FORCE == 0 && -f "$marker" && "$(cat "$marker")" == "$want" && -x "$dir/bin/node" ]]; then
    log "Node $version present in ${dir#$ROOT/}"
    return
  fi
  log "installing Node $version (npm package $want) into ${dir#$ROOT/}"
  rm -rf "$dir"
  mkdir -p "$work/node-pack" "$dir"
  (cd "$work/node-pack" && npm pack --silent "$want" >/dev/null) || die "npm pack $want failed"
  tar -xzf "$work/node-pack"/node-linux-"$arch"-*.tgz -C "$dir" --strip-components=1 || die "unpacking $want failed"
  [[ "$("$dir/bin/node" --version)" == "v$version" ]] || die "$dir/bin/node --version is not v$version"
  [[ -f "$dir/include/node/node_version.h" ]] || die "$want has no headers in include/node"
  echo "$want" >"$marker"
}

# `install_code_server HOST`: code-server at the host's version into .tools/<dir>, run by the host's Node.
install_code_server() {
  local host="$1" version dir node_version node_dir node_bin want marker entry got rg_pkg rg_asset
  version="$(host_field "$host" codeServer)"
  dir="$TOOLS/$(host_field "$host" dir)"
  node_version="$(host_field "$host" node)"
  local env_node=()
  node_bin="$(command -v node)"
  if [[ "$node_version" != system ]]; then
    node_dir="$TOOLS/$(host_field "$host" nodeDir)"
    install_node "$node_version" "$node_dir"
    node_bin="$node_dir/bin/node"
    # Its Node first on PATH: npm (and code-server's postinstall, which checks the Node version through
    # npm's user agent) run on it. Under `npm test` the outer npm's user agent (naming the machine's Node) is in
    # the environment and would win: drop it. nodedir: this machine's npmrc says /usr, Node 20's headers.
    env_node=(-u npm_config_user_agent -u npm_node_execpath -u NODE PATH="$node_dir/bin:$PATH" npm_config_nodedir="$node_dir")
  fi
  # The marker names everything the installed native addons depend on.
  want="code-server@$version node-abi=$("$node_bin" -p process.versions.modules) arch=$arch"
  marker="$dir/.installed"
  entry="$dir/node_modules/code-server/out/node/entry.js"
  if [[ $FORCE == 0 && -f "$marker" && "$(cat "$marker")" == "$want" && -f "$entry" ]]; then
    log "code-server $version present in ${dir#$ROOT/} (VS Code $(host_field "$host" vscode), Node $("$node_bin" --version))"
    return
  fi
  log "installing code-server@$version into ${dir#$ROOT/} on Node $("$node_bin" --version) (1 to 4 minutes)"
  rm -rf "$dir"
  mkdir -p "$dir" "$work/tmp-$host"
  echo '{ "name": "agent-trees-host-tools", "private": true }' >"$dir/package.json"
  rg_pkg="$(host_field "$host" ripgrepCache.package)"
  if [[ -n "$rg_pkg" ]]; then
    # @vscode/ripgrep's postinstall downloads rg from GitHub unless its cache already holds the asset:
    # Debian's rg, packed the way that cache expects it.
    rg_asset="$(host_field "$host" ripgrepCache.asset)"
    mkdir -p "$work/stage" "$work/tmp-$host/vscode-ripgrep-cache-$rg_pkg"
    cp /usr/bin/rg "$work/stage/rg"
    tar -C "$work/stage" -czf "$work/tmp-$host/vscode-ripgrep-cache-$rg_pkg/ripgrep-$rg_asset-$rg_target.tar.gz" rg
  fi
  # code-server's postinstall refuses to run as root unless npm_config_unsafe_perm=true, a setting npm 7+ no longer
  # has (set for npm itself, it warns 'Unknown env config "unsafe-perm"'): the shell npm runs install scripts
  # with sets it for the scripts alone.
  printf '#!/bin/sh\nexport npm_config_unsafe_perm=true\nexec /bin/sh "$@"\n' >"$work/script-shell"
  chmod +x "$work/script-shell"
  (
    cd "$dir"
    # yes: node-pty's postinstall runs `npx node-gyp`, and this machine's npmrc says yes=false.
    # dangerously_allow_all_scripts: npm 11 may block install scripts not listed in allowScripts.
    env "${env_node[@]}" \
      TMPDIR="$work/tmp-$host" \
      npm_config_yes=true \
      npm_config_script_shell="$work/script-shell" \
      npm_config_dangerously_allow_all_scripts=true \
      npm_config_audit=false \
      npm_config_fund=false \
      npm_config_update_notifier=false \
      npm install --no-save --loglevel=warn "code-server@$version"
  ) || die "npm install code-server@$version failed (see above)"
  [[ -f "$entry" ]] || die "code-server entry point missing after install: $entry"
  # --version writes a default config file: keep it inside the temp folder, not in ~/.config.
  got="$(XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" "$node_bin" "$entry" --version 2>/dev/null \
    | grep -E '^[0-9]+\.[0-9]+\.[0-9]+ ' | head -1 || true)"
  [[ "$got" == "$version"* ]] || die "code-server --version printed '$got', expected $version"
  echo "$want" >"$marker"
  log "code-server $got installed"
}

for h in "${selected[@]}"; do install_code_server "$h"; done

# ---------------------------------------------------------------- playwright-core
if ! (cd "$ROOT" && node -e "require.resolve('playwright-core')" 2>/dev/null); then
  die "playwright-core is not installed in $ROOT/node_modules: run 'npm ci' (it is a devDependency)"
fi
log "playwright-core $(cd "$ROOT" && node -p "require('playwright-core/package.json').version"), $(/usr/bin/chromium --version 2>/dev/null | head -1)"
log "done in $(($(date +%s) - started)) s"
