#!/usr/bin/env node
// Lists live processes that carry AGENT_TREES_HOST_MARKER (left behind by a host run, or still running
// in one) and code-server processes of any installed host. Exit code 1 if there are any.
// Usage: node scripts/host/leftovers.js
'use strict';
const { counted } = require('../counted');
const processes = require('../../test/support/processes');
const { allHosts } = require('./hosts');
const { MARKER_VAR } = require('./marker');

const dirs = allHosts().map((h) => h.dir);
const found = [];
for (const pid of processes.allPids()) {
  if (pid === process.pid || !processes.isAlive(pid)) continue;
  const marker = processes.envOf(pid, MARKER_VAR);
  const cmd = processes.commandLine(pid);
  if (marker || dirs.some((d) => cmd.includes(d))) found.push(`${processes.describe(pid, 150)}${marker ? `  [${marker}]` : ''}`);
}
for (const line of found) console.log(line);
console.log(`${counted(found.length, 'host process', 'host processes')} running`);
process.exit(found.length ? 1 : 0);
