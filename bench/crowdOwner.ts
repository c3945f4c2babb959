/**
 * An owner process for the crowded-machine watchdog benchmark (bench/watchdogCrowd.ts): a TreeOwner with a
 * watchdog and TREES trees that ignore SIGTERM (a shell and a sleep each, both ignoring it), in the given cgroup
 * mode. Prints {"owner", "watchdog", "pids": [...]} once every tree runs, then idles until it is killed (at most an
 * hour).
 *
 *   node out/bench/crowdOwner.js RECORDS_DIR TREES CLI auto|off
 */
import { processCore, TreeOwner } from '../src/proc';

const [records, treesText, cli, cgroups] = process.argv.slice(2);
const mode = cgroups === 'auto' ? 'auto' : 'off';
const owner = new TreeOwner({ core: processCore(), recordsDir: records, cgroups: mode, watchdog: { cliPath: cli } });

async function main(): Promise<void> {
  await owner.prepare();
  const trees = Array.from({ length: Number(treesText) }, () =>
    owner.spawn({ command: 'sh', args: ['-c', "trap '' TERM; sleep 3600 & wait"], stdio: 'ignore' }),
  );
  // Each tree's sleep, once its shell has started it.
  const pids: number[] = [];
  for (const t of trees) {
    for (let i = 0; i < 500 && owner.members(t.record.id).length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    pids.push(...owner.members(t.record.id).map((p) => p.pid));
  }
  process.stdout.write(JSON.stringify({ owner: process.pid, watchdog: owner.watchdogPid ?? 0, pids }) + '\n');
  setTimeout(() => process.exit(0), 3_600_000);
}

void main();
