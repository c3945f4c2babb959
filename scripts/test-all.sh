#!/usr/bin/env bash
# `npm test`: one build (the bundles and the compiled tests), lint, the unit suite (test/unit, pure) and the system
# suite (test/system, real processes) in plain mocha, then the
# integration suite in every real VS Code host of scripts/host/hosts.json (code-server + headless Chromium,
# installed on first use by scripts/host/install.sh: VS Code 1.100.3 on Node 20, the oldest supported, and
# 1.139.1 on Node 24, the newest), then the totals over everything as `N passed, N failed` on the last line.
# Harness self-tests are reported apart and not counted. Exits non-zero if anything failed, or if no test ran.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
logdir="$(mktemp -d "${TMPDIR:-/tmp}/agent-trees-test-all.XXXXXX")"
trap 'rm -rf "$logdir"' EXIT
started=$(date +%s)

passed=0
failed=0
notes=()

# Last "N <word>" count in a mocha spec report ("  12 passing (3s)", "  1 failing"); empty if none.
mocha_count() { grep -E "^\s*[0-9]+ $2( |\$)" "$1" | tail -1 | grep -oE '[0-9]+' | head -1; }

# ---------------------------------------------------------------- build (once for the whole run)
# The bundles: unit tests run dist/cli.js, and the integration suite loads dist/extension.js. The tests:
# out/test/unit and out/test/system for mocha, out/test/integration for the extension host. Compiling the tests type-checks every
# file `npm run typecheck` checks (tsconfig.test.json is tsconfig.json with output), so it is the typecheck too.
echo "==> build and typecheck (node esbuild.js; tsc -p tsconfig.test.json)"
if ! node esbuild.js; then
  failed=$((failed + 1))
  notes+=("build: node esbuild.js failed (see above)")
fi
# A clean out/test first: a test file deleted or moved in the sources must not live on as a stale .js.
rm -rf out/test
if ! npx tsc -p tsconfig.test.json; then
  failed=$((failed + 1))
  notes+=("typecheck and test build: tsc -p tsconfig.test.json failed (see above)")
fi

# ---------------------------------------------------------------- lint
# Before the tests, as CI runs it; a failure counts as one failure in the totals.
echo "==> lint (npm run lint)"
if ! npm run --silent lint; then
  failed=$((failed + 1))
  notes+=("lint: npm run lint failed (see above)")
fi

# ---------------------------------------------------------------- unit and system
# Mocha, one run per part: unit (test/unit: pure, no process), then system (test/system: real processes, Linux,
# with the leak check). Each run lists its skips and their reasons in $logdir/skips (see test/support/environment.ts).
export AGENT_TREES_SKIP_LOG="$logdir/skips"
: >"$AGENT_TREES_SKIP_LOG"
declare -A part_passed part_failed part_pending
mocha_part() { # part config
  local part=$1 config=$2
  echo "==> $part tests (mocha --config $config)"
  npx mocha --config "$config" 2>&1 | tee "$logdir/$part.log"
  local rc=${PIPESTATUS[0]}
  local p f k
  p="$(mocha_count "$logdir/$part.log" passing)"
  f="$(mocha_count "$logdir/$part.log" failing)"
  k="$(mocha_count "$logdir/$part.log" pending)"
  [[ -z $p ]] && notes+=("$part: no mocha report found")
  p=${p:-0}
  f=${f:-0}
  if [[ $rc != 0 && $f == 0 ]]; then
    f=1 # a crash or a failing leak check: counts as one failure
    notes+=("$part: exited with code $rc without a failing test (see above)")
  fi
  part_passed[$part]=$p
  part_failed[$part]=$f
  part_pending[$part]=${k:-0}
  passed=$((passed + p))
  failed=$((failed + f))
}
# What the tests read or drive, installed before any of them runs: the Debian test tools and the real agent CLIs
# (scripts/test-tools.sh), and the VS Code hosts, whose terminal module a unit test reads as well.
echo "==> test tools and VS Code hosts (scripts/test-tools.sh; scripts/host/install.sh)"
if ! bash scripts/test-tools.sh; then
  failed=$((failed + 1))
  notes+=("test tools: scripts/test-tools.sh failed (see above)")
fi
if ! bash scripts/host/install.sh; then
  failed=$((failed + 1))
  notes+=("VS Code hosts: scripts/host/install.sh failed (see above)")
fi
mocha_part unit .mocharc.unit.json
mocha_part system .mocharc.system.json

# ---------------------------------------------------------------- the tests that run as another user, from a 0700 clone
# Root's home is a private folder (mode 0700): what a test runs as another uid must not come from the checkout. CI
# (AGENT_TREES_TESTS_REQUIRE_ALL) checks it on a clone under a 0700 folder; elsewhere AGENT_TREES_TESTS_PRIVATE_CLONE=1.
if [[ $(id -u) == 0 && (${AGENT_TREES_TESTS_REQUIRE_ALL:-} == 1 || ${AGENT_TREES_TESTS_PRIVATE_CLONE:-} == 1) ]]; then
  echo "==> the tests that run as another user, in a clone under a 0700 folder (scripts/test-private-clone.sh)"
  bash scripts/test-private-clone.sh 2>&1 | tee "$logdir/private.log"
  private_rc=${PIPESTATUS[0]}
  line="$(grep -E '^private clone: [0-9]+ passed, [0-9]+ failed' "$logdir/private.log" | tail -1)"
  pp="$(echo "$line" | awk '{print $3}')"
  pf="$(echo "$line" | awk '{print $5}')"
  pp=${pp:-0}
  pf=${pf:-0}
  if [[ $private_rc != 0 && $pf == 0 ]]; then
    pf=1
    notes+=("private clone: exited with code $private_rc without a failing test (see above)")
  fi
  passed=$((passed + pp))
  failed=$((failed + pf))
fi

# ---------------------------------------------------------------- integration, every host
# `host_run LABEL LOG CMD...`: one run of the real-host runner (runTests.js), its output to $logdir/LOG.log; its
# "N passed, N failed" added to the totals (an exit code without a failing test counts as one failure), and the
# per-host lines it printed kept for the totals, prefixed with LABEL.
host_lines=()
host_run() {
  local label=$1 log="$logdir/$2.log"
  shift 2
  "$@" 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]}
  local line p=0 f=0
  line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1)"
  if [[ -n "$line" ]]; then
    p="$(echo "$line" | awk '{print $1}')"
    f="$(echo "$line" | awk '{print $3}')"
  fi
  if [[ $rc != 0 && $f == 0 ]]; then
    f=1 # a host could not be installed or started
    notes+=("$label: exited with code $rc without a failing test (see above)")
  fi
  passed=$((passed + p))
  failed=$((failed + f))
  local ran
  ran="$(grep -E '^\[host\] VS Code [0-9.]+ \(.*\): [0-9]+ passed, [0-9]+ failed' "$log" | sed 's/^\[host\] //')"
  if [[ -n "$ran" ]]; then
    while IFS= read -r l; do host_lines+=("$label, $l"); done <<<"$ran"
  else
    host_lines+=("$label: $p passed, $f failed (no host reported)")
  fi
}

echo "==> integration tests in real VS Code extension hosts (every host of scripts/host/hosts.json)"
integration() {
  bash scripts/host/install.sh &&
    node scripts/host/runTests.js --host all --phases 6
}
host_run integration integration integration

# ---------------------------------------------------------------- integration, Restricted Mode
# A second run in every host, with workspace trust on and its folder not trusted: the suite's *.untrusted.test.js files.
echo "==> integration tests in Restricted Mode (node scripts/host/runTests.js --host all --untrusted-workspace)"
host_run "Restricted Mode" untrusted node scripts/host/runTests.js --host all --untrusted-workspace

# ---------------------------------------------------------------- integration, with the stand-ins of other extensions
# A third run in every host, with the stand-ins of Claude Code's and Codex's extensions loaded beside Agent Trees
# (their real agent packages prepared first): the suite's *.standIns.* files, in 5 phases (a host SIGKILLed twice,
# a reload).
echo "==> integration tests with the stand-in extensions (node scripts/host/runTests.js --host all --phases 5 --extension ...)"
standins() {
  node test/fixtures/extensions/standIns.js >/dev/null &&
    node scripts/host/runTests.js --host all --phases 5 \
      --extension test/fixtures/extensions/claude-code --extension test/fixtures/extensions/codex
}
host_run "with the stand-ins" standins standins

# ---------------------------------------------------------------- totals
echo
for part in unit system; do
  echo "$part: ${part_passed[$part]} passed, ${part_failed[$part]} failed, ${part_pending[$part]} skipped"
done
[[ -n ${pp:-} || -n ${pf:-} ]] && echo "private clone (as another user, from a 0700 folder): $pp passed, $pf failed"
# One line per host and run, as runTests.js printed them: "integration, VS Code 1.139.1 (code-server 4.139.1, Node 24): N passed, ..."
for l in "${host_lines[@]}"; do echo "$l"; done
echo "VS Code versions run: $(printf '%s\n' "${host_lines[@]}" | grep -E '^integration, VS Code' | grep -oE 'VS Code [0-9.]+' | sed 's/VS Code //' | paste -sd, - | sed 's/,/, /g')"
echo "time: $(($(date +%s) - started)) s"
# Why each skipped test was skipped (kind<TAB>tests<TAB>reason<TAB>test lines), by reason.
if [[ -s $AGENT_TREES_SKIP_LOG ]]; then
  echo "skipped, and why:"
  awk -F'\t' '{ n[$1 ": " $3] += $2 } END { for (r in n) printf "  %d × %s\n", n[r], r }' "$AGENT_TREES_SKIP_LOG" | sort -k3
fi
for n in "${notes[@]}"; do echo "note: $n"; done
if [[ $passed == 0 && $failed == 0 ]]; then
  echo "no test ran"
  failed=1
fi
echo "$passed passed, $failed failed"
[[ $failed == 0 ]]
