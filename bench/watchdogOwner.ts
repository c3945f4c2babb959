/**
 * An owner process for the watchdog benchmark (bench/watchdog.ts): a TreeOwner with TREES sleeping trees and
 * one way of noticing its death, then idle. Prints {"owner", "watchers": [pid...], "trees": [pid...]} and lives
 * until its stdin closes.
 *
 *   node out/bench/watchdogOwner.js MODE RECORDS_DIR TREES CLI
 * MODE: none | sh-pipe (ours) | node-pipe | node-poll | shepherds (one sh-pipe per tree)
 */
import { ChildProcess, spawn } from 'child_process';
import { processCore, TreeOwner } from '../src/proc';

const [mode, records, treesText, cli] = process.argv.slice(2);
const owner = new TreeOwner({
  core: processCore(),
  recordsDir: records,
  cgroups: 'off',
  watchdog: mode === 'sh-pipe' ? { cliPath: cli } : undefined,
});
const trees = Array.from({ length: Number(treesText) }, () => owner.spawn({ command: 'sleep', args: ['3600'], stdio: 'ignore' }));

/** A watcher that holds the read end of a pipe whose write end we keep (unused here: the owner never dies). */
function piped(file: string, args: string[]): ChildProcess {
  const child = spawn(file, args, { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
  child.unref();
  return child;
}

const watchers: ChildProcess[] = [];
if (mode === 'node-pipe') {
  // A resident Node watchdog on the same pipe: wakes only when the pipe closes.
  watchers.push(piped(process.execPath, ['-e', "process.stdin.on('end', () => process.exit(0)).resume()"]));
} else if (mode === 'node-poll') {
  // A resident Node watchdog polling the owner's /proc entry every 500 ms (what Node can do without a pidfd).
  watchers.push(
    piped(process.execPath, [
      '-e',
      `const fs = require('fs'); setInterval(() => { try { fs.readFileSync('/proc/${process.pid}/stat'); } catch { process.exit(0); } }, 500);`,
    ]),
  );
} else if (mode === 'shepherds') {
  for (let i = 0; i < trees.length; i++) watchers.push(piped('/bin/sh', ['-c', 'read -r line']));
}
const watcherPids = mode === 'sh-pipe' ? [owner.watchdogPid!] : watchers.map((w) => w.pid!);
process.stdout.write(JSON.stringify({ owner: process.pid, watchers: watcherPids, trees: trees.map((t) => t.child.pid) }) + '\n');
process.stdin
  .on('end', () => {
    for (const w of watchers) w.stdin?.end('quit\n');
    void owner.dispose(0).then(() => process.exit(0));
  })
  .resume();
