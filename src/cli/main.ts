/**
 * `agent-trees`: the command-line front end to the process-tree core.
 *
 *   agent-trees run [--timeout SEC] [--grace SEC] [--records DIR] [--label NAME] [--keep-descendants] [--no-cgroup] [--mcp] -- CMD [ARGS...]
 *   agent-trees sweep [--records DIR] [--grace SEC] [--no-cgroup] [--json] [--verbose]
 *   agent-trees ps [--records DIR] [--no-cgroup] [--json]
 *   agent-trees kill TREE_ID [--records DIR] [--grace SEC]
 */
import * as os from 'os';
import * as path from 'path';
import {
  cgroupVerified,
  freshProcessTable,
  KillReport,
  localSweepParts,
  judgeRecord,
  OwnerRecord,
  ownerState,
  OwnerState,
  processCore,
  ProcessTable,
  RecordStore,
  resolveMembers,
  sameProcess,
  selfIdentity,
  SpawnError,
  stderrLogger,
  sweepOrphans,
  TreeOwner,
} from '../proc';
import { UsageError, parseArgs, ParsedArgs } from './args';

const USAGE = `Usage:
  agent-trees run [--timeout SEC] [--grace SEC] [--records DIR] [--label NAME] [--keep-descendants] [--no-cgroup] [--mcp] [--verbose] -- CMD [ARGS...]
  agent-trees sweep [--records DIR] [--grace SEC] [--no-cgroup] [--json] [--verbose]
  agent-trees ps [--records DIR] [--no-cgroup] [--json]
  agent-trees kill TREE_ID [--records DIR] [--grace SEC]

Runs CMD as an owned process tree and kills all of it on timeout (exit 124), Ctrl-C (130), SIGTERM (143),
SIGHUP or the death of this command's parent (129), and when CMD exits (unless --keep-descendants).
--mcp (a stdio MCP server): stdin is passed on to CMD, and when it closes (the client stopped the server)
the whole tree ends at once (exit 0).
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
      // --mcp: stdin passes through us, so its end (the client let go of the server) ends the tree.
      stdio: args.mcp ? ['pipe', 'inherit', 'inherit'] : 'inherit',
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
    if (args.mcp) {
      const toChild = tree.child.stdin!;
      toChild.on('error', () => {}); // CMD exited: its exit ends the run
      process.stdin.pipe(toChild);
      process.stdin.on('end', () => void finish(0, 'stdin closed'));
    }
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
  const parts = localSweepParts();
  const result = await sweepOrphans(store, {
    ...parts,
    self: selfIdentity(parts.table),
    graceMs: args.graceMs,
    cgroups: args.cgroups ? 'auto' : 'off',
    log: stderrLogger(args.verbose),
  });
  if (args.json) {
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } else {
    for (const t of result.trees) {
      process.stdout.write(`${t.treeId}\t${t.label}\towner ${t.ownerPid}\t${t.outcome}\tkilled ${t.killed}` +
        (t.survivors ? `\tsurvivors ${t.survivors}` : '') + (t.note ? `\t(${t.note})` : '') + '\n');
    }
    for (const s of result.skipped) process.stdout.write(`left alone\t${s.file}\t${s.reason}\n`);
    for (const p of result.problems) process.stdout.write(`problem\t${p.file}\t${p.problem}${p.setAsideTo ? `; moved to ${p.setAsideTo}` : ''}\n`);
    process.stdout.write(`swept ${result.trees.length} tree(s) of dead owners, ended ${result.killed} processes; ` +
      `${result.liveOwners} live owner(s) left alone\n`);
  }
  return result.trees.some((t) => t.outcome === 'survivors') ? 1 : 0;
}

/** What `ps` and `kill` may do with a record's trees: the sweep's own verdict, so the rules are one. */
function recordStanding(table: ProcessTable, record: OwnerRecord): { state: OwnerState; note?: string; resolvable: boolean } {
  const v = judgeRecord(record, { table, self: selfIdentity(table) });
  const state = v.act === 'refuse' ? 'unknown' : v.state ?? 'unknown';
  if (v.act === 'refuse') return { state, note: v.problem, resolvable: false };
  if (v.act === 'clean-up') return { state, note: 'recorded before the last boot: nothing of it runs', resolvable: false };
  return { state, note: v.resolvable ? undefined : v.why, resolvable: v.resolvable === true };
}

/** Read-only: lists records and their live members; renames, deletes and signals nothing. */
async function ps(args: ParsedArgs & { command: 'ps' }): Promise<number> {
  const store = new RecordStore(args.records ?? defaultRecordsDir());
  const mode = args.cgroups ? 'auto' : 'off';
  const core = processCore();
  const table = await freshProcessTable(core.table);
  const snap = table.snapshot();
  const { records, problems } = store.list();
  const owners = records.map(({ file, record }) => {
    const standing = recordStanding(table, record);
    return {
      file,
      owner: { ...record.owner, alive: standing.state === 'alive', state: standing.state },
      note: standing.note,
      trees: record.trees.map((t) => {
        const m = standing.resolvable
          ? resolveMembers(t, snap, { continuouslyOwned: standing.state === 'alive', cgroupVerified: mode !== 'off' && cgroupVerified(t, core) }, core).members
          : [];
        return {
          ...t,
          tier: t.cgroup ? 'cgroup' : 'group',
          members: m.map((p) => ({ pid: p.pid, ppid: p.ppid, pgid: p.pgid, state: p.state, rssBytes: p.rssBytes, cpuMs: p.cpuMs, command: snap.commandLine(p.pid) })),
        };
      }),
    };
  });
  if (args.json) {
    const tier = mode === 'off' ? null : (core.cgroupTier(mode).tier?.reason ?? null);
    process.stdout.write(JSON.stringify({ recordsDir: store.dir, cgroupTier: tier, owners, problems }, null, 2) + '\n');
    return 0;
  }
  if (owners.length === 0) process.stdout.write(`no owned trees recorded in ${store.dir}\n`);
  const described: Record<OwnerState, string> = {
    alive: 'alive',
    dead: 'dead: run agent-trees sweep',
    replaced: 'dead, its pid reused: run agent-trees sweep',
    'earlier-boot': 'gone with an earlier boot: run agent-trees sweep',
    unknown: 'cannot be judged',
  };
  for (const o of owners) {
    process.stdout.write(`owner ${o.owner.pid} (${described[o.owner.state]})${o.note ? `: ${o.note}` : ''}\n`);
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
  const core = processCore();
  const table = core.table;
  const { records, problems } = store.list();
  const found = records.find(({ record }) => record.trees.some((t) => t.id === args.treeId));
  if (!found) {
    for (const p of problems) process.stderr.write(`agent-trees: warning: ${p.file}: ${p.problem}\n`);
    process.stderr.write(`agent-trees: no recorded tree has the id ${args.treeId} (in ${store.dir})\n`);
    return 1;
  }
  const tree = found.record.trees.find((t) => t.id === args.treeId)!;
  const standing = recordStanding(table, found.record);
  if (!standing.resolvable) {
    process.stderr.write(`agent-trees: tree ${tree.id}: ${standing.note}; not killed\n`);
    return 1;
  }
  const report = await core.killer.kill(tree, {
    graceMs: args.graceMs,
    continuouslyOwned: false,
    cgroupVerified: cgroupVerified(tree, core),
    log: stderrLogger(args.verbose),
  });
  if (['dead', 'replaced'].includes(standing.state) && report.survivors === 0) dropFromDeadOwnersRecord(store, table, found.record, tree.id);
  process.stdout.write(`tree ${tree.id}: ended ${report.signalled} processes` + (report.survivors ? `, ${report.survivors} survived (${report.survivorPids.join(', ')})` : '') + '\n');
  return report.survivors > 0 ? 1 : 0;
}

/**
 * Nobody else will update a dead owner's record: take the killed tree out of it. Claimed first, and the claimed
 * content judged again, so a record its owner rewrote meanwhile (or a new owner with that pid) is given back.
 */
function dropFromDeadOwnersRecord(store: RecordStore, table: ProcessTable, record: OwnerRecord, treeId: string): void {
  const self = selfIdentity(table);
  const file = store.claim(record.owner.pid, self);
  if (!file) return;
  let claimed: OwnerRecord;
  try {
    claimed = store.readClaim(file);
  } catch {
    return; // left in place: a sweep reports it
  }
  const state = ownerState(table, claimed.owner);
  if (!sameProcess(claimed.owner, record.owner) || (state !== 'dead' && state !== 'replaced')) {
    store.restoreClaim(file, claimed, sameProcess);
    return;
  }
  store.finishClaim(file, claimed, claimed.trees.filter((t) => t.id !== treeId), self);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`agent-trees: ${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
