#!/usr/bin/env bash
# `npm test`: the bundles (esbuild), the unit suite (plain mocha), then the integration suite in a real VS Code extension host
# (code-server + headless Chromium, installed on first use by scripts/host/install.sh), then the totals
# of both as `N passed, N failed` on a line of its own. Exits non-zero if anything failed, or if no test ran.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
logdir="$(mktemp -d "${TMPDIR:-/tmp}/agent-trees-test-all.XXXXXX")"
trap 'rm -rf "$logdir"' EXIT

passed=0
failed=0
notes=()

# Last "N <word>" count in a mocha spec report ("  12 passing (3s)", "  1 failing"); empty if none.
mocha_count() { grep -E "^\s*[0-9]+ $2( |\$)" "$1" | tail -1 | grep -oE '[0-9]+' | head -1; }

# ---------------------------------------------------------------- build
# The bundles first: unit tests run dist/cli.js, and the integration suite loads dist/extension.js.
echo "==> build (node esbuild.js)"
if ! node esbuild.js; then
  failed=$((failed + 1))
  notes+=("build: node esbuild.js failed (see above)")
fi

# ---------------------------------------------------------------- lint and typecheck
# Before the tests, as CI runs them; each that fails counts as one failure in the totals.
for check in lint typecheck; do
  echo "==> $check (npm run $check)"
  if ! npm run --silent "$check"; then
    failed=$((failed + 1))
    notes+=("$check: npm run $check failed (see above)")
  fi
done

# ---------------------------------------------------------------- unit
echo "==> test tools (scripts/test-tools.sh)"
if ! bash scripts/test-tools.sh; then
  failed=$((failed + 1))
  notes+=("test tools: scripts/test-tools.sh failed (see above)")
fi
echo "==> unit tests (npm run test:unit)"
npm run --silent test:unit 2>&1 | tee "$logdir/unit.log"
unit_rc=${PIPESTATUS[0]}
up="$(mocha_count "$logdir/unit.log" passing)"
uf="$(mocha_count "$logdir/unit.log" failing)"
up=${up:-0}
uf=${uf:-0}
if [[ $unit_rc != 0 && $uf == 0 ]]; then
  uf=1 # build error, crash, or a failing leak check: counts as one failure
  notes+=("unit: exited with code $unit_rc without a failing test (see above)")
fi
[[ -z "$(mocha_count "$logdir/unit.log" passing)" ]] && notes+=("unit: no mocha report found")
passed=$((passed + up))
failed=$((failed + uf))

# ---------------------------------------------------------------- integration
echo "==> integration tests in a real VS Code extension host"
integration() {
  bash scripts/host/install.sh &&
    node scripts/host/runTests.js --phases 3
}
integration 2>&1 | tee "$logdir/integration.log"
int_rc=${PIPESTATUS[0]}
line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$logdir/integration.log" | tail -1)"
ip=0
if_=0
if [[ -n "$line" ]]; then
  ip="$(echo "$line" | awk '{print $1}')"
  if_="$(echo "$line" | awk '{print $3}')"
fi
if [[ $int_rc != 0 && $if_ == 0 ]]; then
  if_=1 # the host could not be installed or started
  notes+=("integration: exited with code $int_rc without a failing test (see above)")
fi
passed=$((passed + ip))
failed=$((failed + if_))

# ---------------------------------------------------------------- integration, Restricted Mode
# A second host run with workspace trust on and its folder not trusted: the suite's *.untrusted.test.js files.
echo "==> integration tests in Restricted Mode (node scripts/host/runTests.js --untrusted-workspace)"
node scripts/host/runTests.js --untrusted-workspace 2>&1 | tee "$logdir/untrusted.log"
untrusted_rc=${PIPESTATUS[0]}
line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$logdir/untrusted.log" | tail -1)"
rp="$(echo "$line" | awk '{print $1}')"
rf="$(echo "$line" | awk '{print $3}')"
rp=${rp:-0}
rf=${rf:-0}
if [[ $untrusted_rc != 0 && $rf == 0 ]]; then
  rf=1
  notes+=("Restricted Mode: exited with code $untrusted_rc without a failing test (see above)")
fi
notes+=("Restricted Mode run: $rp passed, $rf failed")
passed=$((passed + rp))
failed=$((failed + rf))

# ---------------------------------------------------------------- totals
echo
echo "unit: $up passed, $uf failed; integration: $ip passed, $if_ failed"
for n in "${notes[@]}"; do echo "note: $n"; done
if [[ $passed == 0 && $failed == 0 ]]; then
  echo "no test ran"
  failed=1
fi
echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
