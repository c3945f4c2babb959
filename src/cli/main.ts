/**
 * `agent-trees`: the command-line front end to the process-tree core.
 *
 *   agent-trees run [--timeout SEC] [--grace SEC] [--records DIR] [--label NAME] [--keep-descendants] [--no-cgroup] -- CMD [ARGS...]
 *   agent-trees sweep [--records DIR] [--grace SEC] [--json]
 *   agent-trees ps [--records DIR] [--json]
 *   agent-trees kill TREE_ID [--records DIR] [--grace SEC]
 */
import * as os from 'os';
import * as path from 'path';
import {
  cgroupTier,
  cgroupVerified,
  freshProcessTable,
  KillReport,
  ownerState,
  processTable,
  RecordStore,
  resolveMembers,
  SpawnError,
  stderrLogger,
  sweepOrphans,
  treeKiller,
  TreeOwner,
} from '../proc';
import { UsageError, parseArgs, ParsedArgs } from './args';

const USAGE = `Usage:
  agent-trees run [--timeout SEC] [--grace SEC] [--records DIR] [--label NAME] [--keep-descendants] [--no-cgroup] [--verbose] -- CMD [ARGS...]
  agent-trees sweep [--records DIR] [--grace SEC] [--json]
  agent-trees ps [--records DIR] [--json]
  agent-trees kill TREE_ID [--records DIR] [--grace SEC]

Runs CMD as an owned process tree and kills all of it on timeout (exit 124), Ctrl-C (130), SIGTERM (143),
SIGHUP or the death of this command's parent (129), and when CMD exits (unless --keep-descendants).
Records are kept in --records DIR (default ${defaultRecordsDir()}) so 'sweep' can reap the trees of owners that died.`;

export function defaultRecordsDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.AGENT_TREES_RECORDS) return env.AGENT_TREES_RECORDS;
  const home = os.homedir();
  if (process.platform === 'win32') return path.join(env.LOCALAPPDATA ?? path.join(home, 'AppData', 'Local'), 'agent-trees', 'owned-trees');
  if (process.platform === 'darwin') return path.join(home, 'Library', 'Application Support', 'agent-trees', 'owned-trees');
  return path.join(env.XDG_STATE_HOME || path.join(home, '.local', 'state'), 'agent-trees', 'owned-trees');
}

// Run by an editor's launcher with Electron as Node (see the extension's terminal launcher): what CMD starts must
// not inherit that, or any Electron app it runs would start as plain Node.
if (process.versions.electron) delete process.env.ELECTRON_RUN_AS_NODE;

const EXIT = { usage: 2, timeout: 124, sigint: 130, sigterm: 143, sighup: 129 } as const;

async function main(argv: string[]): Promise<number> {
  let args: ParsedArgs;
  try {
    args = parseArgs(argv);
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`agent-trees: ${e.message}\n${e.showUsage ? `\n${USAGE}\n` : "Run 'agent-trees --help' for usage.\n"}`);
      return EXIT.usage;
    }
    throw e;
  }
  switch (args.command) {
    case 'help':
      process.stdout.write(USAGE + '\n');
      return 0;
    case 'run':
      return run(args);
    case 'sweep':
      return sweep(args);
    case 'ps':
      return ps(args);
    case 'kill':
      return kill(args);
  }
}

async function run(args: ParsedArgs & { command: 'run' }): Promise<number> {
  const log = stderrLogger(args.verbose);
  const owner = new TreeOwner({ recordsDir: args.records ?? defaultRecordsDir(), log, cgroups: args.cgroups ? 'auto' : 'off' });
  let tree;
  try {
    tree = owner.spawn({
      command: args.cmd[0],
      args: args.cmd.slice(1),
      label: args.label,
      stdio: 'inherit',
      deadline: args.timeoutMs > 0 ? Date.now() + args.timeoutMs : undefined,
    });
  } catch (e) {
    if (e instanceof SpawnError) {
      process.stderr.write(`agent-trees: ${e.message}\n`);
      return EXIT.usage;
    }
    throw e;
  }
  const id = tree.record.id;
  log.info(`tree ${id}: tier ${tree.tier}`);

  return new Promise<number>((resolve) => {
    let finishing = false;
    const timers: NodeJS.Timeout[] = [];
    const finish = async (code: number, why: string, keep = false) => {
      if (finishing) return;
      finishing = true;
      for (const t of timers) {
        clearTimeout(t);
        clearInterval(t);
      }
      if (keep) {
        owner.release(id);
      } else {
        const report: KillReport = await owner.kill(id, args.graceMs);
        if (why) log.warn(`${why}: ended ${report.signalled} processes` + (report.survivors ? `, ${report.survivors} survived` : ''));
        else if (report.signalled > 0) log.info(`ended ${report.signalled} processes ${args.cmd[0]} left running`);
      }
      await owner.dispose(args.graceMs);
      resolve(code);
    };
    tree.child.on('exit', (code, signal) => {
      const exitCode = code ?? 128 + (signal ? os.constants.signals[signal] ?? 0 : 0);
      void finish(exitCode, '', args.keepDescendants);
    });
    tree.child.on('error', (e) => {
      process.stderr.write(`agent-trees: ${args.cmd[0]}: ${e.message}\n`);
      void finish(EXIT.usage, '');
    });
    if (args.timeoutMs > 0) {
      timers.push(setTimeout(() => void finish(EXIT.timeout, `timed out after ${args.timeoutMs / 1000} s`), args.timeoutMs));
    }
    process.on('SIGINT', () => void finish(EXIT.sigint, 'interrupted'));
    process.on('SIGTERM', () => void finish(EXIT.sigterm, 'terminated'));
    process.on('SIGHUP', () => void finish(EXIT.sighup, 'hung up'));
    // The parent died: nobody is left to wait for the tree, so it goes too.
    const parent = process.ppid;
    timers.push(setInterval(() => {
      if (process.ppid !== parent) void finish(EXIT.sighup, `parent process ${parent} exited`);
    }, 500));
  });
}

async function sweep(args: ParsedArgs & { command: 'sweep' }): Promise<number> {
  const store = new RecordStore(args.records ?? defaultRecordsDir());
  const me = processTable().read(process.pid);
  const result = await sweepOrphans(store, {
    self: { pid: process.pid, startTime: me?.startTime ?? Date.now() },
    graceMs: args.graceMs,
    log: stderrLogger(false),
  });
  if (args.json) {
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } else {
    for (const t of result.trees) {
      process.stdout.write(`${t.treeId}\t${t.label}\towner ${t.ownerPid}\t${t.outcome}\tkilled ${t.killed}` +
        (t.survivors ? `\tsurvivors ${t.survivors}` : '') + (t.note ? `\t(${t.note})` : '') + '\n');
    }
    for (const p of result.problems) process.stdout.write(`problem\t${p.file}\t${p.problem}\n`);
    process.stdout.write(`swept ${result.trees.length} tree(s) of dead owners, ended ${result.killed} processes; ` +
      `${result.liveOwners} live owner(s) left alone\n`);
  }
  return result.trees.some((t) => t.outcome === 'survivors') ? 1 : 0;
}

async function ps(args: ParsedArgs & { command: 'ps' }): Promise<number> {
  const store = new RecordStore(args.records ?? defaultRecordsDir());
  const table = await freshProcessTable();
  const snap = table.snapshot();
  const { records, problems } = store.list();
  const owners = records.map(({ file, record }) => {
    const state = ownerState(table, record.owner.pid, record.owner.startTime);
    return {
      file,
      owner: { ...record.owner, alive: state === 'alive' },
      trees: record.trees.map((t) => {
        const m = resolveMembers(t, snap, { continuouslyOwned: state === 'alive', cgroupVerified: cgroupVerified(t) });
        return {
          ...t,
          tier: t.cgroup ? 'cgroup' : 'group',
          members: m.members.map((p) => ({ pid: p.pid, ppid: p.ppid, pgid: p.pgid, state: p.state, rssBytes: p.rssBytes, cpuMs: p.cpuMs, command: snap.commandLine(p.pid) })),
        };
      }),
    };
  });
  if (args.json) {
    process.stdout.write(JSON.stringify({ recordsDir: store.dir, cgroupTier: cgroupTier('auto').tier?.reason ?? null, owners, problems }, null, 2) + '\n');
    return 0;
  }
  if (owners.length === 0) process.stdout.write(`no owned trees recorded in ${store.dir}\n`);
  for (const o of owners) {
    process.stdout.write(`owner ${o.owner.pid} (${o.owner.alive ? 'alive' : 'dead: run agent-trees sweep'})\n`);
    for (const t of o.trees) {
      process.stdout.write(`  tree ${t.id}  ${t.label}  tier ${t.tier}  root ${t.rootPid}  ${t.members.length} live member(s)\n`);
      for (const m of t.members) process.stdout.write(`    ${String(m.pid).padStart(7)}  ${m.command}\n`);
    }
  }
  for (const p of problems) process.stdout.write(`problem: ${p.file}: ${p.problem}\n`);
  return 0;
}

async function kill(args: ParsedArgs & { command: 'kill' }): Promise<number> {
  const store = new RecordStore(args.records ?? defaultRecordsDir());
  const table = processTable();
  const found = store.list().records.find(({ record }) => record.trees.some((t) => t.id === args.treeId));
  if (!found) {
    process.stderr.write(`agent-trees: no recorded tree has the id ${args.treeId} (in ${store.dir})\n`);
    return 1;
  }
  const tree = found.record.trees.find((t) => t.id === args.treeId)!;
  const ownerAlive = ownerState(table, found.record.owner.pid, found.record.owner.startTime) === 'alive';
  const report = await treeKiller.kill(tree, {
    graceMs: args.graceMs,
    continuouslyOwned: false,
    cgroupVerified: cgroupVerified(tree),
    log: stderrLogger(false),
  });
  if (!ownerAlive && report.survivors === 0) {
    // Nobody else will update a dead owner's record: take the tree out of it.
    const file = store.claim(found.record.owner.pid, { pid: process.pid, startTime: table.read(process.pid)?.startTime ?? Date.now() });
    if (file) store.release(file, found.record, found.record.trees.filter((t) => t.id !== tree.id));
  }
  process.stdout.write(`tree ${tree.id}: ended ${report.signalled} processes` + (report.survivors ? `, ${report.survivors} survived (${report.survivorPids.join(', ')})` : '') + '\n');
  return report.survivors > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`agent-trees: ${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
