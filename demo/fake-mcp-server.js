#!/usr/bin/env node
// A stand-in for an MCP server, for the Agent Trees demo: answers JSON-RPC requests read line by line
// from stdin ("initialize", "tools/list", anything else gets an error), and, like the servers users
// find orphaned, ignores SIGHUP and SIGTERM and keeps running after its stdin closes.
'use strict';
const readline = require('readline');

process.on('SIGHUP', () => {});
process.on('SIGTERM', () => {});

const answer = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...msg }) + '\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    return answer({ id: null, error: { code: -32700, message: 'parse error' } });
  }
  if (req.method === 'initialize') {
    answer({
      id: req.id,
      result: { protocolVersion: '2025-06-18', serverInfo: { name: 'fake-mcp', version: '0.0.1' }, capabilities: { tools: {} } },
    });
  } else if (req.method === 'tools/list') {
    answer({ id: req.id, result: { tools: [{ name: 'grep', description: 'search the workspace' }] } });
  } else {
    answer({ id: req.id, error: { code: -32601, message: `unknown method ${req.method}` } });
  }
});
// Keep running after stdin closes, as a leaked server would.
setInterval(() => {}, 60000);
