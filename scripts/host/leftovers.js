#!/usr/bin/env node
// Lists live processes that carry AGENT_TREES_HOST_MARKER (left behind by a host run, or still running
// in one) and chromium/code-server processes started from this checkout. Exit code 1 if there are any.
// Usage: node scripts/host/leftovers.js
'use strict';
const fs = require('fs');
const lib = require('./hostLib');

const found = [];
for (const name of fs.readdirSync('/proc')) {
  if (!/^\d+$/.test(name)) continue;
  const pid = Number(name);
  if (pid === process.pid || !lib.isAlive(pid)) continue;
  const env = lib.readEnviron(pid);
  const marker = env && env.get(lib.MARKER_VAR);
  let cmd = '';
  try { cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8'); } catch {}
  if (marker || cmd.includes(lib.CODE_SERVER_ENTRY)) found.push(`${lib.describe(pid, 150)}${marker ? `  [${marker}]` : ''}`);
}
for (const line of found) console.log(line);
console.log(`${found.length} host process(es) running`);
process.exit(found.length ? 1 : 0);
