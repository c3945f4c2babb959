/**
 * `agent-trees`: the command-line front end to the process-tree core. It uses the tree owner (`run`), the sweep
 * and the queries on recorded trees (`ps`, `kill`), and nothing below them.
 *
 *   agent-trees run [--timeout SEC] [--grace SEC] [--records DIR] [--label NAME] [--keep-descendants] [--no-cgroup] [--mcp] [--no-watchdog]
 *                   [--max-memory MB] [--max-processes N] [--idle-timeout SEC] [--attention claude|codex|none] [--verbose] -- CMD [ARGS...]
 *   agent-trees sweep [--records DIR] [--grace SEC] [--no-cgroup] [--json] [--verbose] [--owner PID:START_KEY]
 *   agent-trees ps [--records DIR] [--no-cgroup] [--json]
 *   agent-trees kill TREE_ID [--records DIR] [--grace SEC] [--verbose]
 *   agent-trees notify [--agent claude|codex] [--message TEXT] [--idle] [JSON]
 */
import * as os from 'os';
import {
  awaitOwnerExit,
  Breach,
  breachText,
  counted,
  KillReport,
  guardedPidOf,
  Logger,
  killTreeById,
  LIMIT_FIELDS,
  limitsOf,
  listOwnedTrees,
  localSweepParts,
  ownerInfoOf,
  OwnedTree,
  OwnerState,
  processCore,
  processCount,
  ptyProblem,
  PtyRoot,
  RecordStore,
  selfIdentity,
  SIGHUP_IGNORED_VARIABLE,
  SpawnError,
  stderrLogger,
  sweepOrphans,
  TreeOwner,
  usePart,
  WATCHDOG_GRACE_MS,
} from '../proc';
import { NOTIFY_VARIABLE } from '../agents/attentionChannel';
import { UsageError, parseArgs, ParsedArgs } from './args';
import { defaultRecordsDir, realRecordsDir, recordsDirProblem } from './recordsDir';
import { notify } from './notify';
import { processTerminal, relayWanted, TtyRelay } from './relay';
import { RunAttention } from './runAttention';
import { openTerminalOutput } from './terminalOutput';

const USAGE = `Usage:
  agent-trees run [--timeout SEC] [--grace SEC] [--records DIR] [--label NAME] [--keep-descendants] [--no-cgroup] [--mcp] [--no-watchdog]
                  [--max-memory MB] [--max-processes N] [--idle-timeout SEC] [--attention claude|codex|none] [--verbose] -- CMD [ARGS...]
  agent-trees sweep [--records DIR] [--grace SEC] [--no-cgroup] [--json] [--verbose] [--owner PID:START_KEY]
  agent-trees ps [--records DIR] [--no-cgroup] [--json]
  agent-trees kill TREE_ID [--records DIR] [--grace SEC] [--verbose]
  agent-trees notify [--agent claude|codex] [--message TEXT] [--idle] [JSON]

Runs CMD as an owned process tree and kills all of it on timeout (exit 124), on Ctrl-C (130), SIGTERM (143),
SIGHUP or the death of this command's parent (129), on any other catchable fatal signal N (128+N), and when
CMD exits (unless --keep-descendants); if this command is itself killed outright (SIGKILL), its watchdog ends
the tree within about 2 s (unless --no-watchdog). With --max-memory (MB, PSS where it can be read), --max-processes
or --idle-timeout (seconds without CPU time or a byte through its terminal), the tree is ended past that (exit 125).
--mcp (a stdio MCP server): stdin is passed on to CMD, and when it closes (the client stopped the server)
the whole tree ends at once (exit 0).
Records are kept in --records DIR (default ${defaultRecordsDir()}) so 'sweep' can reap the trees of owners that died.
Typed in a terminal of a VS Code window with Agent Trees, 'run' shows the window when the agent waits for you,
and gives Claude Code and Codex (proven from their npm package, or named by --attention) their notification hooks.
'notify' is what those hooks run, inside the tree: it tells the tree's owner that the agent waits (or is idle).`;

// Run by an editor's launcher with Electron as Node (see the extension's terminal launcher): what CMD starts must
// not inherit that, or any Electron app it runs would start as plain Node.
if (process.versions.electron) delete process.env.ELECTRON_RUN_AS_NODE;

/**
 * Started with SIGHUP ignored (`nohup agent-trees run ...`), as the launcher says (Node resets an inherited ignore):
 * then a hang-up, and the death of the parent that usually comes with it, leave the run and its tree running.
 */
const HUP_IGNORED = process.env[SIGHUP_IGNORED_VARIABLE] === 'ignore';
delete process.env[SIGHUP_IGNORED_VARIABLE];

const EXIT = { usage: 2, timeout: 124, limit: 125 } as const;

/** The longest a watchdog's sweep may run (its kills wait at most grace + a few seconds each). */
const WATCHDOG_RUN_LIMIT_MS = 60_000;

/**
 * The signals that end a Node process by default and that it can catch: `run` ends its tree on each, then exits
 * 128+N. SIGUSR1 (Node's debugger signal) ends it as it would any program. Left to their default: SIGSEGV,
 * SIGBUS, SIGFPE and SIGILL (after a real fault no JavaScript can run, and a listener would hang the process;
 * the tree's record stays for a sweep), SIGPIPE (Node ignores it: nothing is orphaned) and the real-time
 * signals (Node cannot listen to them).
 */
const FATAL_SIGNALS = [
  'SIGHUP',
  'SIGINT',
  'SIGQUIT',
  'SIGTRAP',
  'SIGABRT',
  'SIGUSR1',
  'SIGUSR2',
  'SIGALRM',
  'SIGTERM',
  'SIGSTKFLT',
  'SIGXCPU',
  'SIGXFSZ',
  'SIGVTALRM',
  'SIGPROF',
  'SIGIO',
  'SIGPWR',
  'SIGSYS',
] as const;

const SIGNAL_WHY: Partial<Record<NodeJS.Signals, string>> = { SIGINT: 'interrupted', SIGTERM: 'terminated', SIGHUP: 'hung up' };

/** A fatal signal as `run` answers it: the code it exits with and the reason it logs. */
interface FatalSignal {
  code: number;
  why: string;
}

/**
 * Calls `onSignal` on each of FATAL_SIGNALS this platform lets Node listen to; returns the function that unhooks it.
 * A hang-up ignored where this command started (nohup) is only logged: Node resets an inherited SIG_IGN, so the
 * listener stands in for it.
 */
function onFatalSignals(onSignal: (signal: FatalSignal) => void, log: Logger): () => void {
  const unhooks: (() => void)[] = [];
  for (const signal of FATAL_SIGNALS) {
    const number = os.constants.signals[signal as keyof typeof os.constants.signals];
    if (number === undefined) continue; // not on this platform
    const listener =
      signal === 'SIGHUP' && HUP_IGNORED
        ? () => log.info('hung up: ignored, as SIGHUP was where this command started (nohup)')
        : () => onSignal({ code: 128 + number, why: SIGNAL_WHY[signal] ?? `received ${signal}` });
    try {
      process.on(signal, listener);
    } catch {
      continue; // this platform cannot listen to it (Windows)
    }
    unhooks.push(() => process.off(signal, listener));
  }
  return () => unhooks.forEach((unhook) => unhook());
}

/**
 * The first fatal signal that comes while `run` starts CMD, held until the run is supervised: unheld, its default
 * action would end this process between the spawn and `superviseRun`, leaving the tree to the watchdog.
 */
interface HeldSignals {
  first?: FatalSignal;
  release(): void;
}

function holdFatalSignals(log: Logger): HeldSignals {
  const held: HeldSignals = { release: () => {} };
  held.release = onFatalSignals((signal) => (held.first ??= signal), log);
  return held;
}

/** setTimeout's limit: a longer delay fires at once (TimeoutOverflowWarning). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A timeout of any length: re-armed in steps setTimeout can hold. Returns the function that cancels it. */
function setLongTimeout(fire: () => void, ms: number): () => void {
  const deadline = Date.now() + ms;
  let timer: NodeJS.Timeout;
  const arm = () => {
    const left = deadline - Date.now();
    timer = left > 0 ? setTimeout(arm, Math.min(left, MAX_TIMER_MS)) : setTimeout(fire, 0);
  };
  arm();
  return () => clearTimeout(timer);
}

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
  if (args.command === 'help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (args.command === 'notify') return notify(args);
  const given = args.records ?? defaultRecordsDir();
  const problem = recordsDirProblem(given, args.command === 'run');
  if (problem) {
    process.stderr.write(`agent-trees: ${problem}\n`);
    return EXIT.usage;
  }
  const records = realRecordsDir(given);
  switch (args.command) {
    case 'run':
      return run(args, records);
    case 'sweep':
      return sweep(args, records);
    case 'ps':
      return ps(args, records);
    case 'kill':
      return kill(args, records);
  }
  return 2;
}

type RunArgs = ParsedArgs & { command: 'run' };

/** `run`: owns CMD's tree until something ends it (see `superviseRun`), then ends what is left and exits. */
async function run(args: RunArgs, records: string): Promise<number> {
  // Never blocked by a terminal that stopped reading (see terminalOutput.ts): the timeout and signals must act.
  const stderr = openTerminalOutput(2, process.stderr);
  const say = (text: string) => (stderr ?? process.stderr).write(text);
  const log = stderrLogger(args.verbose, say);
  const held = holdFatalSignals(log);
  const owner = new TreeOwner({
    core: processCore(),
    recordsDir: records,
    log,
    cgroups: args.cgroups ? 'auto' : 'off',
    // If this command is killed outright (SIGKILL, OOM), its watchdog ends the tree within ~2 s.
    watchdog: args.watchdog ? { cliPath: __filename, graceMs: Math.min(args.graceMs, WATCHDOG_GRACE_MS) } : undefined,
  });
  await owner.prepare();
  if (held.first) {
    held.release();
    log.warn(`${held.first.why} before ${args.cmd[0]} started: not started`);
    return held.first.code;
  }
  let started: StartedRun;
  try {
    started = startRun(owner, args, log, records);
  } catch (e) {
    held.release();
    if (e instanceof SpawnError) {
      say(`agent-trees: ${e.message}\n`);
      await stderr?.flush(FLUSH_MS);
      return EXIT.usage;
    }
    throw e;
  }
  const code = await superviseRun({ owner, args, log, say, held, ...started });
  // What is still queued for a terminal that reads again soon; one that stays stalled does not hold the exit.
  await Promise.all([stderr?.flush(FLUSH_MS), started.relay?.flush(FLUSH_MS)]);
  return code;
}

/** How long `run` waits at its end for a stalled terminal to take its last output (ms). */
const FLUSH_MS = 1000;

/** A run's tree, and how it is connected: a terminal relayed to ours, or (--mcp) a stdin passed on. */
interface StartedRun {
  tree: OwnedTree;
  relay?: TtyRelay;
  mcpStdin?: NodeJS.WritableStream;
  /** In a window's terminal: the tree's attention state, told to the window (runAttention.ts). */
  attention?: RunAttention;
}

/** A tree started from inside a hooked tree is not that tree: it never posts with the other's key. */
const NO_NOTIFY = { [NOTIFY_VARIABLE]: undefined };

/**
 * Spawns CMD. Typed in a terminal (in its foreground), the agent gets a terminal of its own, relayed (relay.ts);
 * otherwise stdio is passed on. --mcp keeps its stdio: that is the server's protocol. Throws SpawnError.
 */
function startRun(owner: TreeOwner, args: RunArgs, log: Logger, records: string): StartedRun {
  const wanted = !args.mcp && relayWanted();
  const noPty = wanted ? ptyProblem() : undefined;
  if (noPty) log.warn(`${noPty}: ${args.cmd[0]} gets this terminal without being its controlling terminal`);
  const spawn = {
    command: args.cmd[0],
    args: args.cmd.slice(1),
    label: args.label,
    deadline: args.timeoutMs > 0 ? Date.now() + args.timeoutMs : undefined,
    limits: limitsOf(args.limits),
  };
  if (wanted && !noPty) return startRelayed(owner, { args, log, records, spawn });
  // --mcp: stdin passes through us, so its end (the client let go of the server) ends the tree.
  const tree = owner.spawn({ ...spawn, env: NO_NOTIFY, stdio: args.mcp ? ['pipe', 'inherit', 'inherit'] : 'inherit' });
  return { tree, mcpStdin: tree.child.stdin ?? undefined };
}

/** A run on a terminal of its own, relayed to ours; in a window's terminal, with its attention state. */
function startRelayed(
  owner: TreeOwner,
  {
    args,
    log,
    records,
    spawn,
  }: { args: RunArgs; log: Logger; records: string; spawn: { command: string; args: string[]; label?: string; deadline?: number } },
): StartedRun {
  const attention = RunAttention.inWindowTerminal(records, log);
  const plan = attention?.plan(args.cmd, args.attention);
  const size = processTerminal().size();
  let tree: OwnedTree<PtyRoot>;
  try {
    tree = owner.spawnTerminal({
      ...spawn,
      id: plan?.id,
      args: plan?.args ?? spawn.args,
      env: plan?.env ?? NO_NOTIFY,
      cols: size?.cols,
      rows: size?.rows,
      encoding: null,
    });
  } catch (e) {
    attention?.dispose();
    throw e;
  }
  const relay = new TtyRelay(tree.child, processTerminal(), attention?.watch);
  relay.start();
  return { tree, relay, attention };
}

interface SupervisedRun extends StartedRun {
  owner: TreeOwner;
  args: RunArgs;
  log: Logger;
  held: HeldSignals;
  /** Writes to stderr (without blocking, when it is a terminal). */
  say: (text: string) => unknown;
}

/**
 * Waits for the first thing that ends the run: CMD's exit (or error), the end of --mcp's stdin, the timeout, a
 * fatal signal, the death of our parent. Then ends the tree (or, with --keep-descendants after CMD's own exit,
 * releases it) and resolves with the exit code.
 */
function superviseRun(run: SupervisedRun): Promise<number> {
  return new Promise<number>((resolve) => {
    const cancels: (() => void)[] = [];
    let finishing = false;
    const finish: Finish = async (code, why, keep = false, ended) => {
      if (finishing) return;
      finishing = true;
      for (const cancel of cancels) cancel();
      // A fatal signal now would end this command with its tree half ended: held (ignored) until the end.
      const held = holdFatalSignals(run.log);
      await endRun(run, why, keep, ended);
      held.release();
      resolve(code);
    };
    cancels.push(...watchRunEnds(run, finish));
    run.held.release();
    if (run.held.first) void finish(run.held.first.code, run.held.first.why);
    // Said once every way the run ends is watched: whoever reads it may signal the run at once.
    run.log.info(`tree ${run.tree.record.id}: tier ${run.tree.tier}`);
  });
}

/** Ends a run: `why` (empty for CMD's own exit) is logged; `ended`, how CMD ended when something else ended it. */
type Finish = (code: number, why: string, keep?: boolean, ended?: string) => Promise<void>;

async function endRun(
  { owner, args, log, tree, relay, say, attention }: SupervisedRun,
  why: string,
  keep: boolean,
  ended: string | undefined,
): Promise<void> {
  const id = tree.record.id;
  // The agent's output may stop mid-line: ours starts on a line of its own.
  const sayEnded = () => ended && say(`${relay ? '\n' : ''}agent-trees: ${ended}\n`);
  if (keep) {
    attention?.dispose();
    relay?.restore();
    sayEnded();
    owner.release(id);
  } else {
    const report: KillReport = await owner.kill(id, args.graceMs);
    // After the agent's last output and before ours (raw mode prints no carriage returns).
    if (relay) await relay.drainAndRestore();
    sayEnded();
    attention?.dispose();
    // What the kernel's OOM killer ended counts: it ended them for the limit.
    const byKernel = tree.breach?.kind === 'memory' ? (tree.breach.kernelEnded ?? 0) : 0;
    if (why)
      log.warn(`${why}: ended ${processCount(report.signalled + byKernel)}` + (report.survivors ? `, ${report.survivors} survived` : ''));
    else if (report.signalled > 0 || report.survivors > 0) {
      log.info(
        `ended ${processCount(report.signalled)} ${args.cmd[0]} left running` + (report.survivors ? `; ${report.survivors} survived` : ''),
      );
    }
  }
  await owner.dispose(args.graceMs);
}

/** Hooks every way a run can end to `finish`; returns the functions that unhook them. */
function watchRunEnds(run: SupervisedRun, finish: Finish): (() => void)[] {
  const { args, tree, mcpStdin, say, log } = run;
  const cancels: (() => void)[] = [];
  tree.child.on('exit', (code, signal) => {
    const exitCode = code ?? 128 + (signal ? (os.constants.signals[signal] ?? 0) : 0);
    // A signal this command did not send (Kill Agent Tree in the view, `agent-trees kill`, kill(1)): say so on
    // a line of its own, as a shell says "Terminated"; otherwise the prompt lands on the agent's last line.
    void finish(exitCode, '', args.keepDescendants, signal ? `${args.cmd[0]} was ended by ${signal}` : undefined);
  });
  tree.child.on('error', (e) => {
    say(`agent-trees: ${args.cmd[0]}: ${e.message}\n`);
    void finish(EXIT.usage, '');
  });
  if (args.mcp && mcpStdin) cancels.push(passStdin(mcpStdin, () => void finish(0, 'stdin closed')));
  if (args.timeoutMs > 0) {
    cancels.push(setLongTimeout(() => void finish(EXIT.timeout, `timed out after ${args.timeoutMs / 1000} s`), args.timeoutMs));
  }
  cancels.push(onFatalSignals(({ code, why }) => void finish(code, why), log));
  // After the signals: a signal that comes before those are in place ends this command, not its tree.
  cancels.push(...watchLimits(run, finish));
  // The parent died: nobody is left to wait for the tree, so it goes too (unless a hang-up is to be ignored: the
  // parent then is the shell that the hang-up ended).
  if (HUP_IGNORED) return cancels;
  const parent = process.ppid;
  const poll = setInterval(() => {
    if (process.ppid !== parent) void finish(128 + os.constants.signals.SIGHUP, `parent process ${parent} exited`);
  }, 500);
  cancels.push(() => clearInterval(poll));
  return cancels;
}

/** The run's limits (its owner's budget watch) end it with EXIT.limit; bytes through this command keep it from idle. */
function watchLimits({ owner, tree, relay, mcpStdin }: SupervisedRun, finish: Finish): (() => void)[] {
  const onLimit = (t: OwnedTree, breach: Breach) => t === tree && void finish(EXIT.limit, breachText(breach));
  owner.on('limit', onLimit);
  const cancels: (() => void)[] = [() => owner.off('limit', onLimit)];
  // Bytes through its terminal or stdin (where they pass through this command): the tree is not idle.
  if (relay || mcpStdin) {
    const active = () => owner.noteActivity(tree.record.id);
    if (tree.child instanceof PtyRoot) tree.child.on('data', active);
    process.stdin.on('data', active);
    cancels.push(() => process.stdin.off('data', active));
  }
  return cancels;
}

/**
 * --mcp: how much of stdin the server may leave unread before reading pauses (and the client is held back, as by
 * a pipe). Up to it, stdin is read whatever the server does, so its end is seen even when the server has stopped
 * reading.
 */
const MCP_UNREAD_LIMIT = 16 * 1024 * 1024;

/**
 * Passes this process's stdin on to the server's, and calls `onEnd` when stdin ends. Unlike `pipe()`, it keeps
 * reading while the server does not (up to MCP_UNREAD_LIMIT held for it): `pipe()` would pause stdin and never
 * see its end. Returns the function that stops it.
 */
function passStdin(to: NodeJS.WritableStream & { writableLength?: number }, onEnd: () => void): () => void {
  const input = process.stdin;
  to.on('error', () => {}); // CMD exited: its exit ends the run
  const onData = (chunk: Buffer) => {
    to.write(chunk);
    if ((to.writableLength ?? 0) > MCP_UNREAD_LIMIT) {
      input.pause();
      to.once('drain', () => input.resume());
    }
  };
  const onInputEnd = () => {
    to.end();
    onEnd();
  };
  input.on('data', onData).on('end', onInputEnd);
  return () => input.off('data', onData).off('end', onInputEnd);
}

async function sweep(args: ParsedArgs & { command: 'sweep' }, records: string): Promise<number> {
  const parts = localSweepParts(processCore());
  if (args.owner) {
    // An owner's watchdog never outlives its job: every wait below is bounded, and this bounds the whole of it.
    setTimeout(() => {
      process.stderr.write(
        `agent-trees: sweep of owner ${args.owner!.pid} still running after ${WATCHDOG_RUN_LIMIT_MS / 1000} s: giving up\n`,
      );
      process.exit(1);
    }, WATCHDOG_RUN_LIMIT_MS).unref();
    // Only once that very process is proven gone.
    const state = await awaitOwnerExit(args.owner, parts.table);
    if (state !== 'dead') {
      process.stderr.write(
        `agent-trees: owner ${args.owner.pid} is ${state === 'alive' ? 'still running' : 'not provably gone'}: nothing swept\n`,
      );
      return 0;
    }
  }
  const result = await sweepOrphans(new RecordStore(records), {
    ...parts,
    self: selfIdentity(parts.table),
    graceMs: args.graceMs,
    cgroups: args.cgroups ? 'auto' : 'off',
    log: stderrLogger(args.verbose),
    onlyOwner: args.owner ? ownerInfoOf(args.owner) : undefined,
  });
  if (args.json) {
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } else {
    for (const t of result.trees) {
      process.stdout.write(
        `${t.treeId}\t${t.label}\towner ${t.ownerPid}\t${t.outcome}\tkilled ${t.killed}` +
          (t.survivors ? `\tsurvivors ${t.survivors}` : '') +
          (t.note ? `\t(${t.note})` : '') +
          '\n',
      );
    }
    for (const h of result.hostProcesses) {
      process.stdout.write(
        `extension host ${h.ownerPid}\tother extensions' processes\tkilled ${h.killed}` +
          (h.kept ? `\tkept ${h.kept}` : '') +
          (h.survivors ? `\tsurvivors ${h.survivors}` : '') +
          (h.note ? `\t(${h.note})` : '') +
          '\n',
      );
    }
    for (const s of result.skipped) process.stdout.write(`left alone\t${s.file}\t${s.reason}\n`);
    for (const p of result.problems)
      process.stdout.write(`problem\t${p.file}\t${p.problem}${p.setAsideTo ? `; moved to ${p.setAsideTo}` : ''}\n`);
    process.stdout.write(
      `swept ${counted(result.trees.length, 'tree')} of dead owners, ended ${processCount(result.killed)}; ` +
        `${counted(result.liveOwners, 'live owner')} left alone\n`,
    );
  }
  return result.trees.some((t) => t.outcome === 'survivors' || t.outcome === 'refused') ? 1 : 0;
}

/** Read-only: lists records and their live members; renames, deletes and signals nothing. */
async function ps(args: ParsedArgs & { command: 'ps' }, records: string): Promise<number> {
  const core = processCore();
  const store = new RecordStore(records);
  const mode = args.cgroups ? 'auto' : 'off';
  const { owners, problems, claims } = await listOwnedTrees(store, core, mode);
  if (args.json) {
    // Where tree cgroups of this user live; read from mountinfo: `ps` never probes (no systemd-run).
    const cgroupLocation = mode === 'off' ? null : (core.cgroupProber.location() ?? null);
    process.stdout.write(JSON.stringify({ recordsDir: store.dir, cgroupLocation, owners, problems, claims }, null, 2) + '\n');
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
    if (o.hostProcesses) {
      process.stdout.write(
        `  an extension host: ${processCount(o.hostProcesses.seen.length)} of other extensions recorded, and what carries its mark ` +
          `AGENT_TREES_HOST=${o.hostProcesses.mark}: ended once it is gone\n`,
      );
    }
    for (const t of o.trees) {
      process.stdout.write(`  tree ${t.id}  ${t.label}  tier ${t.tier}  root ${t.rootPid}  ${counted(t.members.length, 'live member')}\n`);
      if (t.limits && t.use) {
        const use = t.use;
        const parts = LIMIT_FIELDS.flatMap((f) => usePart(f, use, t.limits!) ?? []);
        process.stdout.write(`    limits: ${parts.join(', ')}${t.limits.maxMemoryMB ? ` (memory: ${use.memory.measure})` : ''}\n`);
      }
      for (const m of t.members) process.stdout.write(`    ${String(m.pid).padStart(7)}  ${m.command}\n`);
    }
  }
  const claimState: Record<OwnerState, string> = {
    alive: 'alive: in progress',
    dead: 'gone: the next sweep takes it over',
    replaced: 'gone, its pid reused: the next sweep takes it over',
    'earlier-boot': 'gone with an earlier boot: the next sweep takes it over',
    unknown: 'cannot be judged: left alone',
  };
  for (const c of claims) {
    process.stdout.write(
      `claim ${c.file}: ` +
        (c.problem
          ? `${c.problem}: left in place\n`
          : `owner ${c.ownerPid}'s record, claimed by sweeper ${c.claimant.pid} (${claimState[c.claimant.state]})\n`),
    );
  }
  for (const p of problems) process.stdout.write(`problem: ${p.file}: ${p.problem}\n`);
  return 0;
}

async function kill(args: ParsedArgs & { command: 'kill' }, records: string): Promise<number> {
  const store = new RecordStore(records);
  const result = await killTreeById(store, args.treeId, { graceMs: args.graceMs, log: stderrLogger(args.verbose) }, processCore());
  if (result.outcome === 'not-found') {
    for (const p of result.problems) process.stderr.write(`agent-trees: warning: ${p.file}: ${p.problem}\n`);
    process.stderr.write(`agent-trees: no recorded tree has the id ${args.treeId} (in ${store.dir})\n`);
    return 1;
  }
  if (result.outcome === 'refused') {
    process.stderr.write(`agent-trees: tree ${args.treeId}: ${result.why}; not killed\n`);
    return 1;
  }
  const report = result.report;
  // Run from inside the tree, this command never signals itself, its ancestors or its own group. Sparing itself
  // and its ancestors is what it was asked for; other members of its group it leaves running, and says so.
  const guarded = report.refused.map(guardedPidOf);
  const spared = (why: string) => [...new Set(guarded.filter((g) => g?.why === why).map((g) => g!.pid))];
  const [ancestors, inGroup] = [spared('self-or-ancestor'), spared('own-group')];
  process.stdout.write(
    `tree ${report.treeId}: ended ${processCount(report.signalled)}` +
      (report.survivors ? `, ${report.survivors} survived (${report.survivorPids.join(', ')})` : '') +
      (ancestors.length ? `; spared this command and its ancestors (${ancestors.join(', ')})` : '') +
      (inGroup.length ? `; ${inGroup.length} left running: in this command's own process group (${inGroup.join(', ')})` : '') +
      '\n',
  );
  return report.survivors > 0 || inGroup.length > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`agent-trees: ${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
