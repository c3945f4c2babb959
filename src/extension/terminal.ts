/**
 * Agent terminals: an extension terminal (Pseudoterminal) per agent, backed by its run.
 *
 * A run on a pseudo-terminal (the default for agents) is passed through raw: keystrokes go to its tty as typed
 * (arrows, Tab, Esc, paste; Ctrl-C, Ctrl-Z and Ctrl-D are the tty's business), output comes back unchanged, and
 * every resize of the panel reaches the agent (new size, SIGWINCH). The terminal is opened before the agent
 * starts, so the agent sees the terminal's real size from its first instruction. A run on pipes (MCP servers,
 * headless runs, or where no pseudo-terminal can be had) gets line editing here: input by lines, Ctrl-C
 * interrupts its group, Ctrl-D ends its input.
 *
 * Either way output is flow-controlled (ptyFlow.ts): the extension host never holds more than a bounded amount
 * the terminal has not parsed. Each terminal says how its run ended, the same line as the log and the
 * notification; closing it kills the whole tree. Like tasks, an ended run's terminal is reused by the next run of
 * the same agent, and a run forgotten from the view takes its terminal along unless the user has it in front.
 */
import * as vscode from 'vscode';
import { AgentDefinition, showsTerminal } from '../agents/definition';
import { AgentRun, AgentRuns, LaunchOptions } from '../agents/runs';
import { FlowStats, Logger, RESTORE_TERMINAL_MODES as RESTORE_MODES, TerminalFlow } from '../proc';
import { inBackground } from './background';

const toTerminal = (text: string) => text.replace(/\r?\n/g, '\r\n');

/** How long a launch waits for its terminal to open (and report its size) before starting the agent anyway. */
const OPEN_WAIT_MS = 3000;

const dim = (text: string) => `\x1b[2m[${text}]\x1b[0m`;

class AgentTerminal implements vscode.Pseudoterminal {
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  readonly onDidWrite = this.writeEmitter.event;
  private readonly closeEmitter = new vscode.EventEmitter<number | void>();
  readonly onDidClose = this.closeEmitter.event;
  private current: AgentRun | undefined;
  private dims: { cols: number; rows: number } | undefined;
  private isOpen = false;
  private closed = false;
  private flow: TerminalFlow | undefined;
  /** The flow of the run shown now (kept after its ending, for `state`). */
  private flowStats: FlowStats | undefined;
  private line = '';
  private endingShown = false;
  /** The ending line shown for the current run. */
  private ending: string | undefined;
  private attached: { dispose(): void }[] = [];
  /** Gives the terminal the output waiting for the next turn of the event loop. */
  private flushOutput: () => void = () => {};
  private readonly openWaiters: (() => void)[] = [];

  constructor(
    private readonly runs: AgentRuns,
    readonly agentName: string,
    private readonly onClosed: (t: AgentTerminal) => void,
    private readonly log: Logger,
  ) {}

  /** The run this terminal shows now. */
  get run(): AgentRun | undefined {
    return this.current;
  }

  get size(): { cols: number; rows: number } | undefined {
    return this.dims;
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Characters of the current run's output given to the terminal, and how many it has acknowledged parsing. */
  get stats(): FlowStats | undefined {
    return this.flowStats;
  }

  /** The ending line it shows for the current run, once shown. */
  get endingLine(): string | undefined {
    return this.ending;
  }

  /** Resolves once VS Code has opened the terminal (its size is then known, if the panel is laid out), or after `ms`. */
  whenOpen(ms = OPEN_WAIT_MS): Promise<void> {
    if (this.isOpen || this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.openWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  open(initialDimensions: vscode.TerminalDimensions | undefined): void {
    this.isOpen = true;
    if (initialDimensions) this.dims = { cols: initialDimensions.columns, rows: initialDimensions.rows };
    for (const w of this.openWaiters.splice(0)) w();
    if (this.current) this.attach(this.current, false);
  }

  /** Shows `run` here from now on (a new run, or the next run of the same agent reusing this terminal). */
  bind(run: AgentRun): void {
    const again = this.current !== undefined;
    this.detach();
    this.current = run;
    this.flowStats = undefined;
    if (this.isOpen) this.attach(run, again);
  }

  private attach(run: AgentRun, again: boolean): void {
    this.endingShown = false;
    this.ending = undefined;
    this.line = '';
    const raw = run.pty !== undefined;
    this.flow = new TerminalFlow({
      write: (text) => this.writeEmitter.fire(text),
      pause: () => run.pauseOutput(),
      resume: () => run.resumeOutput(),
    });
    this.flowStats = this.flow.stats;
    // A pseudo-terminal hands over at most 4 KB a read: what comes within one turn of the event loop goes to the
    // terminal as one write, not as a few hundred.
    const give = raw ? (text: string) => this.flow?.write(text) : (text: string) => this.flow?.write(toTerminal(text));
    let pending: string[] = [];
    const flush = () => {
      if (pending.length === 0) return;
      const text = pending.length === 1 ? pending[0] : pending.join('');
      pending = [];
      give(text);
    };
    const deliver = (text: string) => {
      if (pending.push(text) === 1) setImmediate(flush);
    };
    this.flushOutput = flush;
    if (again) this.writeEmitter.fire(`${RESTORE_MODES}\r\n${dim(vscode.l10n.t('Agent Trees: {0} started again', run.name))}\r\n`);
    if (run.ioNote) {
      this.writeEmitter.fire(`${dim(vscode.l10n.t('Agent Trees: no terminal of its own ({0}); input goes by lines', run.ioNote))}\r\n`);
    }
    // Output written before the terminal opened first, then what comes; nothing can come in between.
    const backlog = run.output.text();
    if (backlog) deliver(backlog);
    run.output.on('data', deliver);
    this.attached.push({ dispose: () => run.output.off('data', deliver) });
    const onFinished = (r: AgentRun) => r === run && this.showEnding(run);
    this.runs.on('finished', onFinished);
    this.attached.push({ dispose: () => this.runs.off('finished', onFinished) });
    if (raw && this.dims) run.resize(this.dims.cols, this.dims.rows);
    if (run.finished) this.showEnding(run);
  }

  private detach(): void {
    this.flushOutput();
    this.flushOutput = () => {};
    for (const d of this.attached.splice(0)) d.dispose();
    this.flow?.dispose();
    this.flow = undefined;
  }

  /** Once the run is over (its tree empty, its kills reported), say how: the same line as the log's. */
  private showEnding(run: AgentRun): void {
    if (this.endingShown || run !== this.current || !run.told) return;
    this.endingShown = true;
    this.flushOutput();
    // Its output is over: one last status query, and the flow stays to take late answers out of the input.
    for (const d of this.attached.splice(0)) d.dispose();
    this.flow?.end();
    this.ending = run.endingText(vscode.l10n);
    const restore = run.pty ? RESTORE_MODES : '';
    this.writeEmitter.fire(`${restore}\r\n${dim(vscode.l10n.t('Agent Trees: {0}', this.ending))}\r\n`);
  }

  setDimensions(dimensions: vscode.TerminalDimensions): void {
    this.dims = { cols: dimensions.columns, rows: dimensions.rows };
    this.current?.resize(this.dims.cols, this.dims.rows);
  }

  handleInput(data: string): void {
    if (this.flow) data = this.flow.input(data);
    const run = this.current;
    if (!data || !run?.live || run.state !== 'running') return;
    if (run.pty) {
      run.write(data);
      return;
    }
    for (const ch of data) {
      if (ch === '\x03') {
        this.writeEmitter.fire('^C\r\n');
        this.line = '';
        this.runs.interrupt(run.id);
      } else if (ch === '\r' || ch === '\n') {
        this.writeEmitter.fire('\r\n');
        run.write(this.line + '\n');
        this.line = '';
      } else if (ch === '\x7f' || ch === '\b') {
        if (this.line.length > 0) {
          this.line = this.line.slice(0, -1);
          this.writeEmitter.fire('\b \b');
        }
      } else if (ch === '\x04') {
        run.endInput(); // Ctrl-D: end of input
      } else if (ch >= ' ') {
        this.line += ch;
        this.writeEmitter.fire(ch);
      }
    }
  }

  /** The terminal was closed (by the user, or by us after its run was forgotten): a live tree goes. */
  close(): void {
    this.closed = true;
    for (const w of this.openWaiters.splice(0)) w();
    this.detach();
    const run = this.current;
    if (run?.live) inBackground(this.runs.kill(run.id, 'killed'), this.log, `killing ${run.name} as its terminal closed`);
    this.onClosed(this);
    // The extension host keeps a terminal's pseudoterminal (and all it holds: the run, its output, its pty) until
    // the pseudoterminal says it closed, even after the terminal was disposed.
    this.closeEmitter.fire();
    this.writeEmitter.dispose();
    this.closeEmitter.dispose();
  }
}

export interface TerminalState {
  name: string;
  open: boolean;
  /** The size VS Code last gave the terminal. */
  size: { cols: number; rows: number } | null;
  /** The run's stdio. */
  io: 'pty' | 'pipe';
  /** Characters given to the terminal, and how many of them it has acknowledged parsing (ptyFlow.ts). */
  written: number;
  acked: number;
  /** How often the agent's output was paused because the terminal was behind. */
  pauses: number;
  /** How long the terminal took to acknowledge (ms), mean and longest. */
  answerMs: { mean: number; max: number } | null;
  /** The ending line it shows ("killed: ended 3 processes"), once the run is over. */
  ending: string | null;
}

interface Entry {
  terminal: vscode.Terminal;
  pty: AgentTerminal;
}

/**
 * The agent terminals of this window: created on launch (agents), on demand (MCP servers, runs that asked for
 * none, or after the user closed one), reused by the next run of the same agent once its run has ended, and
 * closed when their run is forgotten.
 */
export class AgentTerminals implements vscode.Disposable {
  private readonly entries = new Set<Entry>();
  private readonly byRun = new Map<string, Entry>();
  private readonly subscriptions: vscode.Disposable[] = [];
  private lastSize: { cols: number; rows: number } | undefined;
  private fallbackTold = false;

  constructor(
    private readonly runs: AgentRuns,
    private readonly log: Logger,
  ) {
    const onPruned = (run: AgentRun) => this.forget(run);
    runs.on('pruned', onPruned);
    this.subscriptions.push({ dispose: () => runs.off('pruned', onPruned) });
  }

  /**
   * Launches a definition with its terminal, if it shows one: the terminal opens first (or an ended run's
   * terminal of the same agent is reused), so a terminal agent starts at the terminal's size. A command that
   * cannot run is reported before any terminal opens. Throws SpawnError.
   */
  async launch(definition: AgentDefinition, options: LaunchOptions & { interactive: boolean }): Promise<AgentRun> {
    if (!showsTerminal(definition))
      return this.tellFallback(this.runs.launch(definition, { ...options, size: options.size ?? this.lastSize }));
    this.runs.check(definition, options);
    const reused = this.reusable(definition.name);
    const entry = reused ?? this.create(definition.name, definition.kind === 'mcp');
    entry.terminal.show(!options.interactive);
    // Started once its terminal is open: a terminal agent sees the real size, and no output waits unshown.
    await entry.pty.whenOpen();
    if (entry.pty.isClosed) throw new Error(vscode.l10n.t('{0} was not started: its terminal was closed first', definition.name));
    let run: AgentRun;
    try {
      run = this.runs.launch(definition, { ...options, size: entry.pty.size ?? this.lastSize });
    } catch (e) {
      // Gone at once, not when VS Code reports the close: the next launch must not reuse a disposed terminal.
      if (!reused) this.discard(entry);
      throw e;
    }
    if (entry.pty.size) this.lastSize = entry.pty.size;
    this.attach(entry, run);
    return this.tellFallback(run);
  }

  /** Once per window: an agent that asked for a terminal runs on pipes here, and why. */
  private tellFallback(run: AgentRun): AgentRun {
    if (run.ioNote && !this.fallbackTold) {
      this.fallbackTold = true;
      void vscode.window.showWarningMessage(
        vscode.l10n.t('Agent Trees: agents run on pipes here, without a terminal of their own: {0}', run.ioNote),
      );
    }
    return run;
  }

  /** Shows a run's terminal, opening one (with the run's recent output) when it has none. */
  show(run: AgentRun, preserveFocus = false): vscode.Terminal {
    let entry = this.byRun.get(run.id);
    if (!entry || entry.pty.isClosed || entry.pty.run !== run) {
      entry = this.create(run.name, run.kind === 'mcp');
      this.attach(entry, run);
    }
    entry.terminal.show(preserveFocus);
    return entry.terminal;
  }

  get(runId: string): vscode.Terminal | undefined {
    return this.byRun.get(runId)?.terminal;
  }

  /** What a run's terminal holds: for tests and tooling (API `terminalState`). */
  state(runId: string): TerminalState | undefined {
    const entry = this.byRun.get(runId);
    if (!entry || entry.pty.run?.id !== runId) return undefined;
    const stats = entry.pty.stats;
    return {
      name: entry.terminal.name,
      open: !entry.pty.isClosed,
      size: entry.pty.size ?? null,
      io: entry.pty.run.io,
      written: stats?.written ?? 0,
      acked: stats?.acked ?? 0,
      pauses: stats?.pauses ?? 0,
      answerMs: stats && stats.answers ? { mean: Math.round(stats.answerMsTotal / stats.answers), max: stats.answerMsMax } : null,
      ending: entry.pty.endingLine ?? null,
    };
  }

  /** How many agent terminals are open (for tests and the benchmark). */
  get openCount(): number {
    return this.entries.size;
  }

  private attach(entry: Entry, run: AgentRun): void {
    const previous = entry.pty.run;
    if (previous && this.byRun.get(previous.id) === entry) this.byRun.delete(previous.id);
    entry.pty.bind(run);
    this.byRun.set(run.id, entry);
  }

  /** A terminal of the agent `name` whose run is over, to reuse. */
  private reusable(name: string): Entry | undefined {
    for (const entry of this.entries) {
      const run = entry.pty.run;
      if (entry.pty.agentName === name && !entry.pty.isClosed && (!run || (run.finished && run.told))) return entry;
    }
    return undefined;
  }

  private create(name: string, mcp: boolean): Entry {
    const entry = {} as Entry;
    const onClosed = () => {
      this.entries.delete(entry);
      const run = entry.pty.run;
      if (run && this.byRun.get(run.id) === entry) this.byRun.delete(run.id);
    };
    entry.pty = new AgentTerminal(this.runs, name, onClosed, this.log);
    entry.terminal = vscode.window.createTerminal({
      name: vscode.l10n.t('Agent: {0}', name),
      pty: entry.pty,
      iconPath: new vscode.ThemeIcon(mcp ? 'server-process' : 'hubot'),
      isTransient: true,
    });
    this.entries.add(entry);
    return entry;
  }

  private discard(entry: Entry): void {
    this.entries.delete(entry);
    entry.terminal.dispose();
  }

  /** A run forgotten from the view takes its terminal along, unless the terminal has moved on or is in front. */
  private forget(run: AgentRun): void {
    const entry = this.byRun.get(run.id);
    this.byRun.delete(run.id);
    if (!entry || entry.pty.run !== run || entry.pty.isClosed) return;
    if (vscode.window.activeTerminal === entry.terminal) return;
    entry.terminal.dispose();
  }

  dispose(): void {
    for (const s of this.subscriptions) s.dispose();
  }
}
