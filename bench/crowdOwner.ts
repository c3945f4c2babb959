/**
 * An owner process for the crowded-machine watchdog benchmark (bench/watchdogCrowd.ts): a TreeOwner with a
 * watchdog and TREES trees that ignore SIGTERM (a shell and a sleep each, both ignoring it), in the given cgroup
 * mode. Prints {"owner", "watchdog", "pids": [...]} once every tree runs, then idles until it is killed (at most an
 * hour).
 *
 *   node out/bench/crowdOwner.js RECORDS_DIR TREES CLI auto|off
 */
import * as fs from 'fs';
import { processCore, TreeOwner } from '../src/proc';

const [records, treesText, cli, cgroups] = process.argv.slice(2);
const mode = cgroups === 'auto' ? 'auto' : 'off';
const owner = new TreeOwner({ core: processCore(), recordsDir: records, cgroups: mode, watchdog: { cliPath: cli } });

async function main(): Promise<void> {
  await owner.prepare();
  const trees = Array.from({ length: Number(treesText) }, () =>
    owner.spawn({ command: 'sh', args: ['-c', "trap '' TERM; sleep 3600 & wait"], stdio: 'ignore' }),
  );
  // Each tree's shell and its sleep, once the shell has started it (read from the shell's children list: a full
  // look at the crowded machine per tree would take seconds).
  const pids: number[] = [];
  for (const t of trees) {
    const root = t.child.pid!;
    let children: number[] = [];
    for (let i = 0; i < 500 && children.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
      children = fs.readFileSync(`/proc/${root}/task/${root}/children`, 'latin1').split(' ').filter(Boolean).map(Number);
    }
    pids.push(root, ...children);
  }
  process.stdout.write(JSON.stringify({ owner: process.pid, watchdog: owner.watchdogPid ?? 0, pids }) + '\n');
  setTimeout(() => process.exit(0), 3_600_000);
}

void main();
