/**
 * Agent runs: launched agents and MCP servers, each an owned tree with a name, a deadline and a state, and the
 * recent output kept so a terminal can show it. Pure Node (no `vscode`): the extension shows what this holds.
 */
import { EventEmitter } from 'events';
import { KillReport, Logger, OwnedTree, silentLogger, TreeOwner } from '../proc';
import { AgentDefinition, AgentKind } from './definition';

export type RunState = 'running' | 'exited' | 'timed out' | 'killed' | 'failed';

/** The time deadlines are kept in: the system clock, or a test's, which can show that nothing fires early. */
export interface Clock {
  /** ms since the epoch. */
  now(): number;
  /** Calls `fn` after `ms`, without keeping the process alive. */
  schedule(fn: () => void, ms: number): unknown;
  cancel(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  schedule: (fn, ms) => setTimeout(fn, ms).unref(),
  cancel: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface RunSettings {
  defaultTimeoutSeconds: number;
  killGraceSeconds: number;
  killDescendantsOnExit: boolean;
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
  /** Processes the last kill ended. */
  ended = 0;
  /** Whether the tree still has live members (the root may have exited before its helpers). */
  live = true;
  readonly output = new OutputBuffer();
  /** The pending deadline check (a Clock handle). */
  timer: unknown;

  constructor(readonly definition: AgentDefinition, readonly tree: OwnedTree, readonly timeoutSeconds: number) {}

  get id(): string {
    return this.tree.record.id;
  }
  get name(): string {
    return this.definition.name;
  }
  get kind(): AgentKind {
    return this.definition.kind ?? 'agent';
  }

  /** One line saying how the run ended, for its terminal and the log. */
  endingText(): string {
    switch (this.state) {
      case 'timed out':
        return `timed out after ${this.timeoutSeconds} s: ended ${this.ended} processes`;
      case 'killed':
        return `killed: ended ${this.ended} processes`;
      case 'failed':
        return 'failed to start';
      case 'exited': {
        const how = this.exitSignal ? `exited on ${this.exitSignal}` : `exited with code ${this.exitCode}`;
        return this.ended > 0 ? `${how}; ended ${this.ended} processes it left running` : how;
      }
      default:
        return 'running';
    }
  }
}

export interface LaunchOptions {
  /** Where the run's working folder defaults to. */
  defaultCwd?: string;
}

/**
 * Events: `changed` (run) whenever a run's state, deadline or liveness changes; `ended` (run) once its tree is
 * empty; `output` is on each run's OutputBuffer.
 */
export class AgentRuns extends EventEmitter {
  private readonly runs = new Map<string, AgentRun>();
  private readonly log: Logger;

  constructor(readonly owner: TreeOwner, private readonly settings: () => RunSettings, log?: Logger, private readonly clock: Clock = systemClock) {
    super();
    this.log = log ?? silentLogger;
    owner.on('ended', (tree: OwnedTree) => {
      const run = this.runs.get(tree.record.id);
      if (!run) return;
      run.live = false;
      run.endedAt ??= this.clock.now();
      this.clearTimer(run);
      this.emit('changed', run);
      this.emit('ended', run);
    });
  }

  /** Launches a definition. Throws SpawnError (nothing started) when the command cannot run. */
  launch(definition: AgentDefinition, options: LaunchOptions = {}): AgentRun {
    const s = this.settings();
    const tree = this.owner.spawn({
      command: definition.command,
      args: definition.args ?? [],
      label: definition.name,
      cwd: definition.cwd ?? options.defaultCwd,
      env: definition.env,
      stdio: 'pipe',
    });
    const timeout = definition.timeoutSeconds ?? s.defaultTimeoutSeconds;
    const run = new AgentRun(definition, tree, timeout);
    this.runs.set(run.id, run);
    const child = tree.child;
    child.stdout?.setEncoding('utf8').on('data', (d: string) => run.output.push(d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      run.output.push(d);
      if (run.kind === 'mcp') for (const line of d.split('\n')) if (line.trim()) this.log.info(`[${run.name}] ${line}`);
    });
    child.stdin?.on('error', () => {}); // writing to an agent that exited is not an error of ours
    child.on('exit', (code, signal) => {
      run.exitCode = code;
      run.exitSignal = signal;
      if (run.state === 'running') {
        run.state = 'exited';
        this.log.info(`${run.name} (tree ${run.id}): ${run.endingText()}`);
      }
      this.emit('changed', run);
      // What it left running goes too (setting), else the deadline stays while those helpers run.
      if (run.state === 'exited' && this.settings().killDescendantsOnExit) void this.endLeftovers(run);
    });
    if (timeout > 0) this.setDeadline(run, this.clock.now() + timeout * 1000);
    this.log.info(`launched ${run.name} (${run.kind}) as tree ${run.id}, pid ${tree.record.rootPid}, tier ${tree.tier}` +
      (timeout > 0 ? `, timeout ${timeout} s` : ', no timeout'));
    this.emit('changed', run);
    return run;
  }

  /** Ctrl-C: SIGINT to the run's process group, as a terminal would send it. */
  interrupt(id: string): boolean {
    const run = this.runs.get(id);
    return run?.live ? this.owner.interrupt(id) : false;
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
  async kill(id: string, why: 'killed' | 'timed out' = 'killed', graceSeconds = this.settings().killGraceSeconds): Promise<KillReport> {
    const run = this.runs.get(id);
    if (!run) return { treeId: id, signalled: 0, survivors: 0, survivorPids: [], escalated: false, refused: [] };
    if (run.live && (run.state === 'running' || run.state === 'exited')) run.state = why;
    this.clearTimer(run);
    this.emit('changed', run);
    const report = await this.owner.kill(id, graceSeconds * 1000);
    run.ended += report.signalled;
    this.log.info(`${run.name} (tree ${id}): ${why}: ended ${report.signalled} processes` + (report.survivors ? `, ${report.survivors} survived` : ''));
    this.emit('changed', run);
    return report;
  }

  private async endLeftovers(run: AgentRun): Promise<void> {
    const report = await this.owner.kill(run.id, this.settings().killGraceSeconds * 1000);
    run.ended += report.signalled;
    if (report.signalled > 0) this.log.info(`${run.name} (tree ${run.id}): ended ${report.signalled} processes it left running`);
    this.emit('changed', run);
  }

  /** Moves a run's deadline `seconds` later (from now, when it had none). */
  extend(id: string, seconds: number): void {
    const run = this.runs.get(id);
    if (!run || !run.live) return;
    const now = this.clock.now();
    this.setDeadline(run, Math.max(run.deadline ?? now, now) + seconds * 1000);
    this.log.info(`${run.name} (tree ${id}): deadline extended by ${seconds} s`);
  }

  /** Forgets ended runs beyond the most recent `keep`. */
  prune(keep = 20): void {
    const ended = this.list().filter((r) => !r.live).sort((a, b) => (b.endedAt ?? 0) - (a.endedAt ?? 0));
    for (const run of ended.slice(keep)) this.runs.delete(run.id);
  }

  private setDeadline(run: AgentRun, deadline: number): void {
    this.clearTimer(run);
    run.deadline = deadline;
    // setTimeout caps at ~24.8 days; longer deadlines re-arm.
    const arm = () => {
      const left = (run.deadline ?? 0) - this.clock.now();
      run.timer = this.clock.schedule(() => (this.clock.now() >= (run.deadline ?? 0) ? void this.kill(run.id, 'timed out') : arm()), Math.min(Math.max(left, 0), 2 ** 31 - 1));
    };
    arm();
    this.emit('changed', run);
  }

  private clearTimer(run: AgentRun): void {
    if (run.timer !== undefined) this.clock.cancel(run.timer);
    run.timer = undefined;
    if (run.state !== 'running') run.deadline = undefined;
  }

  dispose(): void {
    for (const run of this.runs.values()) this.clearTimer(run);
  }
}
