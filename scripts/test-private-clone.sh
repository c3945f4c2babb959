#!/usr/bin/env bash
# The tests that run as another user (their titles say "(as another user)"), from a clone of this checkout under a
# private folder (mode 0700, as root's home is): that user can reach nothing of the clone, so each such test must
# give it what it runs in a folder it can read (test/support/otherUser.ts). Root only. Prints
# `private clone: N passed, N failed` last; exits non-zero if anything failed. Called by scripts/test-all.sh in CI.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ $(id -u) != 0 ]]; then
  echo "test-private-clone: needs root (its tests switch to another user)" >&2
  echo "private clone: 0 passed, 1 failed"
  exit 1
fi
private="$(mktemp -d "${TMPDIR:-/tmp}/agent-trees-private.XXXXXX")"
chmod 700 "$private"
trap 'rm -rf "$private"' EXIT
clone="$private/clone"

fail() {
  echo "test-private-clone: $1" >&2
  echo "private clone: 0 passed, 1 failed"
  exit 1
}
# The committed tree, as CI checks it out, with this checkout's dependencies (copied: a link would reach back here).
git clone --quiet --no-hardlinks "$ROOT" "$clone" || fail "git clone failed"
cp -a "$ROOT/node_modules" "$clone/node_modules" || fail "copying node_modules failed"
cd "$clone" || fail "no clone"
node esbuild.js >/dev/null || fail "node esbuild.js failed"
npx tsc -p tsconfig.test.json || fail "tsc -p tsconfig.test.json failed"
echo "clone at $clone (folder $private, mode $(stat -c %a "$private"))"

npx mocha --config .mocharc.system.json --grep '(as another user)' 2>&1 | tee "$private/mocha.log"
rc=${PIPESTATUS[0]}
passed="$(grep -E '^\s*[0-9]+ passing' "$private/mocha.log" | grep -oE '[0-9]+' | head -1)"
failed="$(grep -E '^\s*[0-9]+ failing' "$private/mocha.log" | grep -oE '[0-9]+' | head -1)"
passed=${passed:-0}
failed=${failed:-0}
[[ $rc != 0 && $failed == 0 ]] && failed=1
[[ $passed == 0 && $failed == 0 ]] && failed=1 # no such test ran: the selection is broken
echo "private clone: $passed passed, $failed failed"
[[ $failed == 0 ]]
