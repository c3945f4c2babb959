/**
 * Agent runs: launched agents and MCP servers, each an owned tree with a name, a deadline and a state, and the
 * recent output kept so a terminal can show it. An agent runs on a pseudo-terminal of its own (src/proc/pty) unless
 * its definition asks for pipes, as MCP servers and headless runs do; where no pseudo-terminal can be had it
 * runs on pipes and says why. Pure Node (no `vscode`): the extension shows what this holds.
 */
import { ChildProcess } from 'child_process';
import { EventEmitter } from 'events';
import {
  asWritten,
  Breach,
  breachText,
  checkSpawn,
  DEFAULT_TERM,
  EscapeScanner,
  GivenLimits,
  KillReport,
  Localizer,
  Logger,
  OwnedTree,
  processCount,
  PtyRoot,
  ptyProblem,
  silentLogger,
  TreeOwner,
} from '../proc';
import { AttentionTracker, terminalSignal } from './attention';
import type { NotifyInvocation } from './attentionHooks';
import type { AttentionInbox } from './attentionInbox';
import { NOTIFY_VARIABLE } from './attentionChannel';
import { HookedLaunch, hookedLaunch } from './attentionLaunch';
import { AgentDefinition, AgentKind, limitsOfDefinition, TerminalMode, terminalModeOf, timeoutSecondsOf } from './definition';

/** `over limit`: ended for going past one of its limits (`AgentRun.breach` says which). */
export type RunState = 'running' | 'exited' | 'timed out' | 'killed' | 'over limit' | 'failed';

/** The time deadlines are kept in: the system clock, or a test's, which can show that nothing fires early. */
export interface Clock {
  /** ms since the epoch. */
  now(): number;
  /** Calls `fn` after `ms`, without keeping the process alive. */
  schedule(fn: () => void, ms: number): unknown;
  cancel(handle: unknown): void;
}

const systemClock: Clock = {
  now: () => Date.now(),
  schedule: (fn, ms) => setTimeout(fn, ms).unref(),
  cancel: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

/** `vscode.l10n`, or `asWritten` where nothing is translated (the log). */
export type { Localizer } from '../proc';

export interface RunSettings {
  defaultTimeoutSeconds: number;
  killGraceSeconds: number;
  killDescendantsOnExit: boolean;
  /** `agentTrees.limits.*`: the limits of a tree whose definition sets none of its own. */
  limits?: GivenLimits;
  /** Whether agents proven to be Claude Code or Codex get their notification hooks at launch (default true). */
  attentionHooks?: boolean;
}

/** Where the hooks of the agents this owner launches call to (see attentionLaunch.ts). */
export interface RunHooks {
  notify: NotifyInvocation;
  inbox: AttentionInbox;
}

/** Recent output of a run (bounded), plus a live feed. */
export class OutputBuffer extends EventEmitter {
  private chunks: string[] = [];
  private size = 0;
  constructor(private readonly limit = 256 * 1024) {
    super();
  }
  push(text: string): void {
    this.chunks.push(text);
    this.size += text.length;
    while (this.size > this.limit && this.chunks.length > 1) this.size -= this.chunks.shift()!.length;
    this.emit('data', text);
  }
  text(): string {
    return this.chunks.join('');
  }
}

export class AgentRun {
  state: RunState = 'running';
  /** ms since the epoch when the tree is killed, or undefined for none. */
  deadline: number | undefined;
  readonly startedAt = Date.now();
  endedAt: number | undefined;
  exitCode: number | null | undefined;
  exitSignal: NodeJS.Signals | null | undefined;
  /** How many processes the kills of this run ended (each kill's report counted once). */
  processesEnded = 0;
  /** Whether the tree still has live members (the root may have exited before its helpers). */
  live = true;
  /** Kills of this run that have not reported yet: how it ended is told only after they have. */
  pendingKills = 0;
  readonly output = new OutputBuffer();
  /** The pending deadline check (a Clock handle). */
  deadlineTimer: unknown;
  /** Set once the ending has been told (the `finished` event). */
  told = false;
  /** The limit it was seen past, when it was. */
  breach: Breach | undefined;
  /** Called for each write to the agent (its input counts against an idle limit). */
  onInput: (() => void) | undefined;

  /** The agent's stdio as it got it. */
  readonly io: TerminalMode;
  /** Why it is on pipes although it asked for a terminal. */
  readonly ioNote?: string;
  /** Whether it waits for someone (see attention.ts). */
  readonly attention: AttentionTracker;

  constructor(
    readonly definition: AgentDefinition,
    readonly tree: OwnedTree,
    readonly timeoutSeconds: number,
    how: { io: TerminalMode; note?: string; attention?: AttentionTracker } = { io: 'pipe' },
  ) {
    this.io = how.io;
    this.ioNote = how.note;
    this.attention = how.attention ?? new AttentionTracker();
  }

  get id(): string {
    return this.tree.record.id;
  }
  get name(): string {
    return this.definition.name;
  }
  get kind(): AgentKind {
    return this.definition.kind ?? 'agent';
  }

  /** Its root's exit is known, its tree is empty and every kill has reported: how it ended will not change. */
  get finished(): boolean {
    return !this.live && this.pendingKills === 0 && this.state !== 'running';
  }

  /** The pseudo-terminal's root, for a run on one. */
  get pty(): PtyRoot | undefined {
    return this.tree.child instanceof PtyRoot ? this.tree.child : undefined;
  }

  private get pipes(): ChildProcess | undefined {
    return this.tree.child instanceof PtyRoot ? undefined : (this.tree.child as unknown as ChildProcess);
  }

  /** Input for the agent: raw into its terminal, or onto its stdin pipe. A key typed ends a wait. */
  write(data: string): void {
    this.onInput?.();
    this.attention.input(data);
    if (this.pty) this.pty.write(data);
    else if (this.pipes?.stdin?.writable) this.pipes.stdin.write(data);
  }

  /** End of input on pipes (on a terminal, Ctrl-D is the tty's business). */
  endInput(): void {
    this.pipes?.stdin?.end();
  }

  /** A new window size (terminal runs only): the agent gets it with SIGWINCH. */
  resize(cols: number, rows: number): void {
    this.pty?.resize(cols, rows);
  }

  /** Stops and restarts reading the agent's output (flow control towards a slow terminal). */
  pauseOutput(): void {
    if (this.pty) this.pty.pause();
    else for (const s of [this.pipes?.stdout, this.pipes?.stderr]) s?.pause();
  }

  resumeOutput(): void {
    if (this.pty) this.pty.resume();
    else for (const s of [this.pipes?.stdout, this.pipes?.stderr]) s?.resume();
  }

  /** One line saying how the run ended, for its terminal, the log and the notification alike (`vscode.l10n` but in the log). */
  endingText(l10n: Localizer = asWritten): string {
    const ended = this.processesEnded;
    switch (this.state) {
      case 'timed out':
        return ended === 1
          ? l10n.t('timed out after {0} s: ended 1 process', this.timeoutSeconds)
          : l10n.t('timed out after {0} s: ended {1} processes', this.timeoutSeconds, ended);
      case 'killed':
        return ended === 1 ? l10n.t('killed: ended 1 process') : l10n.t('killed: ended {0} processes', ended);
      case 'over limit': {
        const why = this.breach ? breachText(this.breach, l10n) : l10n.t('over a limit');
        // What the kernel's OOM killer ended counts: it ended them for the limit.
        const all = ended + (this.breach?.kind === 'memory' ? (this.breach.kernelEnded ?? 0) : 0);
        return all === 1 ? l10n.t('{0}: ended 1 process', why) : l10n.t('{0}: ended {1} processes', why, all);
      }
      case 'failed':
        return l10n.t('failed to start');
      case 'exited': {
        const how = this.exitSignal ? l10n.t('exited on {0}', this.exitSignal) : l10n.t('exited with code {0}', String(this.exitCode));
        if (ended === 0) return how;
        return ended === 1
          ? l10n.t('{0}; ended 1 process it left running', how)
          : l10n.t('{0}; ended {1} processes it left running', how, ended);
      }
      default:
        return l10n.t('running');
    }
  }
}

export interface LaunchOptions {
  /** Where the run's working folder defaults to. */
  defaultCwd?: string;
  /** The terminal's size at start (terminal runs); 80x24 when unknown. */
  size?: { cols: number; rows: number };
}

/**
 * Events: `changed` (run) whenever a run's state, deadline or liveness changes; `attention` (run) whenever its
 * attention state changes (attention.ts); `ended` (run) once its tree is empty; `finished` (run) once, when it is over and its kills have reported (its ending line is final);
 * `pruned` (run) when an ended run is forgotten; `output` is on each run's OutputBuffer.
 */
export class AgentRuns extends EventEmitter {
  private readonly runs = new Map<string, AgentRun>();
  private readonly log: Logger;
  private ptyWarned = false;
  private hooks: RunHooks | undefined;

  constructor(
    readonly owner: TreeOwner,
    private readonly settings: () => RunSettings,
    log?: Logger,
    private readonly clock: Clock = systemClock,
  ) {
    super();
    // One 'finished' listener per agent terminal showing a live run: more than ten agents may run at once.
    this.setMaxListeners(0);
    this.log = log ?? silentLogger;
    owner.on('limit', (tree: OwnedTree, breach: Breach) => {
      const run = this.runs.get(tree.record.id);
      if (!run) return;
      run.breach = breach;
      void this.kill(run.id, 'over limit');
    });
    owner.on('ended', (tree: OwnedTree) => {
      const run = this.runs.get(tree.record.id);
      if (!run) return;
      run.live = false;
      run.endedAt ??= this.clock.now();
      this.hooks?.inbox.close(run.id);
      this.dropDeadline(run);
      this.emit('changed', run);
      this.emit('ended', run);
      this.settle(run);
    });
  }

  /** From now on, agents proven to be Claude Code or Codex get their hooks, calling into `hooks.inbox`. */
  useHooks(hooks: RunHooks): void {
    this.hooks = hooks;
  }

  /** The stdio a definition gets here: a terminal where asked for and available, else pipes (and why). */
  ioFor(definition: AgentDefinition): { io: TerminalMode; note?: string } {
    if (terminalModeOf(definition) === 'pipe') return { io: 'pipe' };
    const problem = ptyProblem();
    return problem ? { io: 'pipe', note: problem } : { io: 'pty' };
  }

  /** What launching would check before starting anything. Throws SpawnError. */
  check(definition: AgentDefinition, options: LaunchOptions = {}): void {
    checkSpawn({ command: definition.command, cwd: definition.cwd ?? options.defaultCwd, env: definition.env });
  }

  /** Launches a definition. Throws SpawnError (nothing started) when the command cannot run. */
  launch(definition: AgentDefinition, options: LaunchOptions = {}): AgentRun {
    const s = this.settings();
    const { io, note } = this.ioFor(definition);
    if (note && !this.ptyWarned) {
      this.ptyWarned = true;
      this.log.warn(`agents run on pipes, without a terminal of their own: ${note}`);
    }
    // The run exists only after the spawn, which the tracker must precede (the hooks' channel holds it).
    const created: { run?: AgentRun } = {};
    const attention = new AttentionTracker(() => created.run && this.emit('attention', created.run));
    const plan = io === 'pty' ? this.planHooks(definition, options, attention) : undefined;
    const tree = this.spawnTree(definition, { io, options, plan });
    const timeout = timeoutSecondsOf(definition, s.defaultTimeoutSeconds);
    const run = new AgentRun(definition, tree, timeout, { io, note, attention });
    created.run = run;
    this.runs.set(run.id, run);
    // Bytes through its terminal or stdio: not idle (the owner's budget watch is told).
    run.onInput = () => this.owner.noteActivity(run.id);
    run.output.on('data', run.onInput);
    this.wireOutput(run);
    tree.child.on('exit', (code, signal) => {
      run.exitCode = code;
      run.exitSignal = signal;
      if (run.state === 'running') run.state = 'exited';
      this.emit('changed', run);
      // What it left running goes too (setting), else the deadline stays while those helpers run.
      if (run.state === 'exited' && this.settings().killDescendantsOnExit) void this.endLeftovers(run);
      else this.settle(run);
    });
    if (timeout > 0) this.setDeadline(run, this.clock.now() + timeout * 1000);
    const pty = run.pty;
    const size = pty ? `, terminal ${pty.cols}x${pty.rows}` : `, pipes${note ? ` (${note})` : ''}`;
    this.log.info(
      `launched ${run.name} (${run.kind}) as tree ${run.id}, pid ${tree.record.rootPid}, tier ${tree.tier}${size}` +
        (timeout > 0 ? `, timeout ${timeout} s` : ', no timeout') +
        (tree.record.limits ? `, limits ${JSON.stringify(tree.record.limits)}` : '') +
        (plan ? `; ${plan.note}` : ''),
    );
    this.emit('changed', run);
    return run;
  }

  /** The agent's own hooks for a terminal run, where this owner has a channel for them (see attentionLaunch.ts). */
  private planHooks(definition: AgentDefinition, options: LaunchOptions, tracker: AttentionTracker): HookedLaunch | undefined {
    if (!this.hooks) return undefined;
    const env: NodeJS.ProcessEnv = { ...process.env, ...definition.env };
    return hookedLaunch({
      command: definition.command,
      args: definition.args ?? [],
      env,
      cwd: definition.cwd ?? options.defaultCwd ?? process.cwd(),
      attention: definition.attention,
      hooks: this.settings().attentionHooks !== false,
      notify: this.hooks.notify,
      inbox: this.hooks.inbox,
      tracker,
    });
  }

  private spawnTree(
    definition: AgentDefinition,
    { io, options, plan }: { io: TerminalMode; options: LaunchOptions; plan?: HookedLaunch },
  ): OwnedTree {
    const common = {
      id: plan?.id,
      command: definition.command,
      args: plan?.args ?? definition.args ?? [],
      label: definition.name,
      cwd: definition.cwd ?? options.defaultCwd,
      limits: limitsOfDefinition(definition, this.settings().limits),
    };
    // A tree started from inside a hooked tree is not that tree: it never posts with the other's key.
    const env = { ...definition.env, ...(plan?.env ?? { [NOTIFY_VARIABLE]: undefined }) };
    if (io !== 'pty') return this.owner.spawn({ ...common, env, stdio: 'pipe' });
    // TERM and COLORTERM as VS Code's own terminals set them; the definition's env may say otherwise.
    return this.owner.spawnTerminal({
      ...common,
      env: { TERM: DEFAULT_TERM, COLORTERM: 'truecolor', ...env },
      cols: options.size?.cols,
      rows: options.size?.rows,
    });
  }

  /** The run's output into its buffer; a terminal's also through the scanner of notification sequences. */
  private wireOutput(run: AgentRun): void {
    const pty = run.pty;
    if (pty) {
      const scanner = new EscapeScanner((signal) => run.attention.signal(terminalSignal(signal)));
      pty.on('data', (d: string) => {
        run.output.push(d);
        scanner.feed(d);
      });
      return;
    }
    const child = run.tree.child as unknown as ChildProcess;
    child.stdout?.setEncoding('utf8').on('data', (d: string) => run.output.push(d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      run.output.push(d);
      if (run.kind === 'mcp') for (const line of d.split('\n')) if (line.trim()) this.log.info(`[${run.name}] ${line}`);
    });
    child.stdin?.on('error', () => {}); // writing to an agent that exited is not an error of ours
  }

  /** Ctrl-C: through the terminal's tty for a terminal run, else SIGINT to the run's process group. */
  interrupt(id: string): boolean {
    const run = this.runs.get(id);
    if (!run?.live) return false;
    if (run.pty) {
      run.pty.write('\x03');
      return true;
    }
    return this.owner.interrupt(id);
  }

  get(id: string): AgentRun | undefined {
    return this.runs.get(id);
  }

  list(): AgentRun[] {
    return [...this.runs.values()];
  }

  /** Runs whose tree still has members. */
  running(): AgentRun[] {
    return this.list().filter((r) => r.live);
  }

  /** Kills a run's whole tree. `why` is what its terminal and state will say. */
  async kill(
    id: string,
    why: 'killed' | 'timed out' | 'over limit' = 'killed',
    graceSeconds = this.settings().killGraceSeconds,
  ): Promise<KillReport> {
    const run = this.runs.get(id);
    if (!run) return { treeId: id, signalled: 0, survivors: 0, survivorPids: [], escalated: false, refused: [] };
    if (run.live && (run.state === 'running' || run.state === 'exited')) run.state = why;
    this.dropDeadline(run);
    this.emit('changed', run);
    const report = await this.ownerKill(run, graceSeconds);
    if (report.survivors)
      this.log.warn(`${run.name} (tree ${id}): ${why}: ${processCount(report.survivors)} survived (${report.survivorPids.join(', ')})`);
    return report;
  }

  private async endLeftovers(run: AgentRun): Promise<void> {
    await this.ownerKill(run, this.settings().killGraceSeconds);
  }

  /**
   * One kill through the owner. A kill joined to one already running returns the same report, which is
   * counted once; how the run ended is told once every kill has reported.
   */
  private async ownerKill(run: AgentRun, graceSeconds: number): Promise<KillReport> {
    run.pendingKills++;
    let report: KillReport | undefined;
    try {
      report = await this.owner.kill(run.id, graceSeconds * 1000);
      if (!this.counted.has(report)) {
        this.counted.add(report);
        run.processesEnded += report.signalled;
      }
      return report;
    } finally {
      run.pendingKills--;
      this.emit('changed', run);
      this.settle(run);
    }
  }

  private readonly counted = new WeakSet<KillReport>();

  /** Tells how a run ended, once, when it is final: the log's line is the terminal's. */
  private settle(run: AgentRun): void {
    if (run.told || !run.finished) return;
    run.told = true;
    this.log.info(`${run.name} (tree ${run.id}): ${run.endingText()}`);
    this.emit('finished', run);
  }

  /** Moves a run's deadline `seconds` later (from now, when it had none). */
  extend(id: string, seconds: number): void {
    const run = this.runs.get(id);
    if (!run || !run.live) return;
    const now = this.clock.now();
    this.setDeadline(run, Math.max(run.deadline ?? now, now) + seconds * 1000);
    this.log.info(`${run.name} (tree ${id}): deadline extended by ${seconds} s`);
  }

  /** Forgets finished runs beyond the most recent `keep` (`pruned` for each). */
  prune(keep = 20): void {
    const ended = this.list()
      .filter((r) => r.finished)
      .sort((a, b) => (b.endedAt ?? 0) - (a.endedAt ?? 0));
    for (const run of ended.slice(keep)) {
      this.runs.delete(run.id);
      this.emit('pruned', run);
    }
  }

  private setDeadline(run: AgentRun, deadline: number): void {
    this.stopDeadlineTimer(run);
    run.deadline = deadline;
    // setTimeout caps at ~24.8 days; longer deadlines re-arm.
    const arm = () => {
      const left = (run.deadline ?? 0) - this.clock.now();
      run.deadlineTimer = this.clock.schedule(
        () => (this.clock.now() >= (run.deadline ?? 0) ? void this.kill(run.id, 'timed out') : arm()),
        Math.min(Math.max(left, 0), 2 ** 31 - 1),
      );
    };
    arm();
    this.emit('changed', run);
  }

  /** Stops the pending deadline check (the deadline itself stays). */
  private stopDeadlineTimer(run: AgentRun): void {
    if (run.deadlineTimer !== undefined) this.clock.cancel(run.deadlineTimer);
    run.deadlineTimer = undefined;
  }

  /**
   * Nothing kills the run at a time any more: its deadline check stops and, once it is no longer running, its
   * deadline goes too.
   */
  private dropDeadline(run: AgentRun): void {
    this.stopDeadlineTimer(run);
    if (run.state !== 'running') run.deadline = undefined;
  }

  dispose(): void {
    for (const run of this.runs.values()) this.stopDeadlineTimer(run);
  }
}
