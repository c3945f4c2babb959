/**
 * The window's terminals: each one's shell and the tree beneath it (the core's terminal trees), what a shell
 * leaves running when its terminal closes or it exits (ended, kept or asked about, by
 * `agentTrees.terminals.onClose`), and the environment every terminal of the window gets: `agent-trees` on the
 * PATH, this window's records folder, and the window's tag.
 *
 * Terminals that VS Code keeps over a reload (persistent sessions) are not closed: their close event says
 * "shutdown", and a shell still running after its terminal closed is left alone. After the reload they are
 * found again by their shell's pid and start time.
 */
import * as crypto from 'crypto';
import * as path from 'path';
import * as vscode from 'vscode';
import {
  deferredLeftoversNow,
  endLeftovers,
  endTerminalTree,
  KillReport,
  liveOwnership,
  MemberInfo,
  processCore,
  processCount,
  processKey,
  readShell,
  RecordFile,
  settleLeftovers,
  terminalLeftovers,
  TerminalMembers,
  TerminalQuery,
  TerminalShell,
  WINDOW_TAG_VARIABLE,
} from '../proc';
import { inBackground } from './background';
import { writeCliLauncher } from './cliLauncher';
import { commandLabel } from './viewFormat';

export type OnClose = 'ask' | 'end' | 'keep';
export type CloseAnswer = 'end' | 'keep' | 'always';

/** Where the records of `agent-trees run` in the window's terminals go (the CLI reads it for its default). */
const RECORDS_VARIABLE = 'AGENT_TREES_RECORDS';

export interface WindowTerminal {
  terminal: vscode.Terminal;
  shell: TerminalShell;
}

interface Entry extends WindowTerminal {
  /** Keys of the processes seen as members at the last look (pid + start time), the shell excluded. */
  seen: string[];
  ending: boolean;
}

/** What happened when a terminal closed or its shell exited (the last 50, for the API and tests). */
export interface TerminalClosing {
  name: string;
  shellPid: number;
  why: 'closed' | 'shell exited';
  left: { pid: number; command: string }[];
  outcome: 'nothing left' | 'ended' | 'kept' | 'asked' | 'shell still runs';
  /** For 'asked': the answer, once given. */
  answer?: CloseAnswer | 'dismissed';
  report?: { signalled: number; survivors: number };
}

/** The "ask" notification, as the API shows it to tests (answer it with `answer()`). */
export interface TerminalQuestion {
  id: string;
  terminalName: string;
  shellPid: number;
  message: string;
  processes: { pid: number; command: string }[];
}

export interface WindowTerminalsDeps {
  log: vscode.LogOutputChannel;
  onClose: () => OnClose;
  graceMs: () => number;
  /** Records of other live owners (an `agent-trees run` in a terminal ends its own tree when the terminal closes). */
  liveRecords: () => RecordFile[];
}

const WINDOW_ID_KEY = 'agentTrees.windowId';
const KEPT_KEY = 'agentTrees.keptProcesses';
const HISTORY = 50;

export class WindowTerminals implements vscode.Disposable {
  /** This window's tag value: `AGENT_TREES_WINDOW` in each of its terminals. Kept over reloads. */
  readonly windowId: string;
  private readonly entries = new Map<vscode.Terminal, Entry>();
  private readonly kept: Set<string>;
  private readonly questions = new Map<
    string,
    { question: TerminalQuestion; answer: (a: CloseAnswer | 'dismissed') => void; done: Promise<TerminalClosing> }
  >();
  readonly closings: TerminalClosing[] = [];
  private readonly changed = new vscode.EventEmitter<void>();
  /** Something shown changed: a terminal opened, or one closed or its shell exited. */
  readonly onDidChange = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [this.changed];
  private shuttingDown = false;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly deps: WindowTerminalsDeps,
  ) {
    let id = context.workspaceState.get<string>(WINDOW_ID_KEY);
    if (!id || !/^[0-9a-f]{16}$/.test(id)) {
      id = crypto.randomBytes(8).toString('hex');
      inBackground(context.workspaceState.update(WINDOW_ID_KEY, id), deps.log, "keeping the window's id");
    }
    this.windowId = id;
    this.kept = new Set(context.workspaceState.get<string[]>(KEPT_KEY) ?? []);
    // This host inherited a tag if it was started from another window's terminal: what it starts is not that
    // window's terminals' (and must not be found as theirs).
    delete process.env[WINDOW_TAG_VARIABLE];

    this.disposables.push(
      vscode.window.onDidOpenTerminal((t) => this.addInBackground(t)),
      vscode.window.onDidCloseTerminal((t) => this.closed(t)),
    );
    for (const t of vscode.window.terminals) this.addInBackground(t);
  }

  /**
   * Gives every terminal of the window `agent-trees` on its PATH (a launcher that runs the bundled CLI with the
   * editor's own Node), this window's records folder as the CLI's default, and the window's tag.
   */
  applyEnvironment(recordsDir: string): void {
    const collection = this.context.environmentVariableCollection;
    collection.description = vscode.l10n.t(
      "Puts agent-trees on the PATH, with this window's records folder, and tags what the terminal starts with this window",
    );
    collection.replace(WINDOW_TAG_VARIABLE, this.windowId);
    collection.replace(RECORDS_VARIABLE, recordsDir);
    try {
      const bin = writeCliLauncher(path.join(this.context.globalStorageUri.fsPath, 'bin'), {
        execPath: process.execPath,
        cliScript: path.join(this.context.extensionPath, 'dist', 'cli.js'),
      });
      collection.prepend('PATH', bin + path.delimiter);
    } catch (e) {
      this.deps.log.warn(`cannot write the agent-trees launcher for terminals: ${(e as Error).message}`);
    }
  }

  private addInBackground(terminal: vscode.Terminal): void {
    inBackground(this.add(terminal), this.deps.log, `looking at terminal '${terminal.name}'`);
  }

  private async add(terminal: vscode.Terminal): Promise<void> {
    let pid: number | undefined;
    try {
      pid = await terminal.processId;
    } catch {
      return;
    }
    if (pid === undefined || this.entries.has(terminal) || this.shuttingDown) return; // an extension terminal: no shell of its own
    const shell = readShell(pid, processCore().table);
    if (!shell) return;
    this.entries.set(terminal, { terminal, shell, seen: [], ending: false });
    this.deps.log.info(`terminal '${terminal.name}': shell ${shell.pid}, session ${shell.sid}`);
    this.changed.fire();
  }

  /** The open terminals with a shell, in the order VS Code lists them. */
  list(): WindowTerminal[] {
    const order = vscode.window.terminals;
    return [...this.entries.values()].filter((e) => !e.ending).sort((a, b) => order.indexOf(a.terminal) - order.indexOf(b.terminal));
  }

  byShellKey(key: string): WindowTerminal | undefined {
    return [...this.entries.values()].find((e) => e.shell.key === key);
  }

  /** What the core needs to resolve every terminal tree of the window (closing ones included). */
  query(): TerminalQuery {
    const entries = [...this.entries.values()];
    return {
      windowTags: [this.windowId],
      shells: entries.map((e) => e.shell),
      seen: Object.fromEntries(entries.map((e) => [e.shell.key, e.seen])),
      kept: [...this.kept],
      editorRoot: process.ppid,
    };
  }

  /** Takes in a look at the terminals' members: what was seen in each, and shells that exited. */
  observe(terminals: TerminalMembers[]): void {
    for (const m of terminals) {
      const entry = [...this.entries.values()].find((e) => e.shell.key === m.shellKey);
      if (!entry) continue;
      // Unclaimed tagged processes are only shown here, not seen as this terminal's: a close judges them again.
      const unclaimed = new Set(m.unclaimed);
      if (!entry.ending) entry.seen = m.members.filter((p) => p.pid !== entry.shell.pid && !unclaimed.has(p.pid)).map(processKey);
      if (!m.shellAlive && !entry.ending) this.endInBackground(entry, 'shell exited');
    }
    this.pruneKept();
  }

  private closed(terminal: vscode.Terminal): void {
    const entry = this.entries.get(terminal);
    if (!entry) return;
    // A window that reloads or closes detaches its terminals; VS Code keeps their processes (persistent sessions).
    if (this.shuttingDown || terminal.exitStatus?.reason === vscode.TerminalExitReason.Shutdown) {
      this.entries.delete(terminal);
      return;
    }
    this.endInBackground(entry, 'closed');
  }

  private endInBackground(entry: Entry, why: TerminalClosing['why']): void {
    inBackground(this.end(entry, why), this.deps.log, `terminal '${entry.terminal.name}' ${why}: ending what it left`);
  }

  /** The terminal closed or its shell exited: find what it left once things settled, then end, keep or ask. */
  private async end(entry: Entry, why: TerminalClosing['why']): Promise<TerminalClosing> {
    entry.ending = true;
    this.changed.fire();
    const name = entry.terminal.name;
    const { shell } = entry;
    const owners = liveOwnership(this.deps.liveRecords());
    let left: MemberInfo[];
    try {
      const core = processCore();
      left = await settleLeftovers(
        shell,
        (snap) =>
          terminalLeftovers(snap, this.query(), shell.key, { owners, deps: core }).map((p) => ({ ...p, command: snap.commandLine(p.pid) })),
        { table: core.table },
      );
    } catch (e) {
      this.deps.log.error(`terminal '${name}': cannot read what it left: ${(e as Error).message}`);
      left = [];
    }
    this.entries.delete(entry.terminal);
    const closing: TerminalClosing = {
      name,
      shellPid: shell.pid,
      why,
      left: left.map((p) => ({ pid: p.pid, command: p.command })),
      outcome: 'nothing left',
    };
    const record = (c: TerminalClosing) => {
      this.closings.push(c);
      if (this.closings.length > HISTORY) this.closings.shift();
      return c;
    };
    if (readShell(shell.pid, processCore().table)?.key === shell.key) {
      this.deps.log.info(`terminal '${name}' ${why}, but its shell ${shell.pid} still runs: nothing of it is ended`);
      return record({ ...closing, outcome: 'shell still runs' });
    }
    const what = `terminal '${name}' (shell ${shell.pid}) ${why}`;
    this.logDeferred(what, shell.key);
    if (left.length === 0) {
      this.deps.log.info(`${what}: it left nothing running`);
      return record(closing);
    }
    this.deps.log.info(`${what}: it left ${left.length} process(es) running: ${left.map((p) => `${p.pid} ${p.command}`).join('; ')}`);
    const policy = this.deps.onClose();
    if (policy === 'keep') {
      this.keep(left);
      this.deps.log.info(`${what}: kept (agentTrees.terminals.onClose is "keep")`);
      return record({ ...closing, outcome: 'kept' });
    }
    if (policy === 'end') return record(await this.endLeft(what, shell, left, closing));
    return record(await this.ask(what, shell, left, closing));
  }

  /** Names the tagged processes another open terminal could also have started: they stay, for the last of those. */
  private logDeferred(what: string, shellKey: string): void {
    try {
      const deferred = deferredLeftoversNow(this.query(), shellKey, processCore());
      if (deferred.length === 0) return;
      this.deps.log.info(
        `${what}: ${deferred.length} process(es) of the window that another open terminal could also have started stay ` +
          `(counted to the last such terminal that closes): ${deferred.map((p) => `${p.pid} ${p.command}`).join('; ')}`,
      );
    } catch (e) {
      this.deps.log.error(`${what}: cannot read what it leaves to other terminals: ${(e as Error).message}`);
    }
  }

  private async endLeft(what: string, shell: TerminalShell, left: MemberInfo[], closing: TerminalClosing): Promise<TerminalClosing> {
    const report = await endLeftovers(processCore().killer, { shell, left, graceMs: this.deps.graceMs(), log: this.deps.log });
    this.deps.log.info(
      `${what}: ended ${processCount(report.signalled)}` +
        (report.survivors ? `; ${report.survivors} survived: ${report.survivorPids.join(', ')}` : ''),
    );
    vscode.window.setStatusBarMessage(
      report.signalled === 1
        ? vscode.l10n.t("Agent Trees: ended 1 process terminal '{0}' left running", closing.name)
        : vscode.l10n.t("Agent Trees: ended {0} processes terminal '{1}' left running", report.signalled, closing.name),
      5000,
    );
    return { ...closing, outcome: 'ended', report: { signalled: report.signalled, survivors: report.survivors } };
  }

  private keep(left: MemberInfo[]): void {
    for (const p of left) this.kept.add(processKey(p));
    this.saveKept();
  }

  private async ask(what: string, shell: TerminalShell, left: MemberInfo[], closing: TerminalClosing): Promise<TerminalClosing> {
    const pids = new Set(left.map((p) => p.pid));
    const tops = left.filter((p) => !pids.has(p.ppid));
    const names = [...new Set(tops.map((p) => commandLabel(p.command, 40)))];
    const shown = names.length > 5 ? [...names.slice(0, 5), vscode.l10n.t('and {0} more', names.length - 5)] : names;
    const message =
      left.length === 1
        ? vscode.l10n.t("Terminal '{0}' left 1 process running: {1}", closing.name, shown.join(', '))
        : vscode.l10n.t("Terminal '{0}' left {1} processes running: {2}", closing.name, left.length, shown.join(', '));
    const id = crypto.randomBytes(6).toString('hex');
    let answer!: (a: CloseAnswer | 'dismissed') => void;
    const answered = new Promise<CloseAnswer | 'dismissed'>((resolve) => (answer = resolve));
    const done = (async (): Promise<TerminalClosing> => {
      const choice = await answered;
      this.questions.delete(id);
      this.deps.log.info(`${what}: answer: ${choice}`);
      if (choice === 'always') {
        await vscode.workspace.getConfiguration('agentTrees').update('terminals.onClose', 'end', vscode.ConfigurationTarget.Global);
      }
      if (choice === 'end' || choice === 'always') {
        const ended = await this.endLeft(what, shell, left, closing);
        return { ...ended, outcome: 'asked', answer: choice };
      }
      this.keep(left);
      return { ...closing, outcome: 'asked', answer: choice };
    })();
    this.questions.set(id, {
      question: { id, terminalName: closing.name, shellPid: shell.pid, message, processes: closing.left },
      answer,
      done,
    });
    const END = vscode.l10n.t('End Them');
    const KEEP = vscode.l10n.t('Keep');
    const ALWAYS = vscode.l10n.t('Always End');
    void vscode.window
      .showInformationMessage(message, END, KEEP, ALWAYS)
      .then((c) => answer(c === END ? 'end' : c === KEEP ? 'keep' : c === ALWAYS ? 'always' : 'dismissed'));
    return done;
  }

  /** The "ask" notifications waiting for an answer. */
  pendingQuestions(): TerminalQuestion[] {
    return [...this.questions.values()].map((q) => q.question);
  }

  /** Answers a pending question as its button would; resolves once that answer has been carried out. */
  answer(id: string, answer: CloseAnswer): Promise<TerminalClosing | undefined> {
    const q = this.questions.get(id);
    if (!q) return Promise.resolve(undefined);
    q.answer(answer);
    return q.done;
  }

  /** "End Everything Under This Terminal": every member of its tree but the shell. */
  endEverything(shellKey: string): Promise<KillReport> {
    const entry = this.byShellKey(shellKey);
    const name = entry?.terminal.name ?? shellKey;
    this.deps.log.info(`terminal '${name}': ending everything under it but its shell`);
    return endTerminalTree(processCore().killer, { query: this.query(), shellKey, graceMs: this.deps.graceMs(), log: this.deps.log });
  }

  /** Forgets kept processes that are gone (their keys can never come back: start keys grow). */
  private pruneKept(): void {
    if (this.kept.size === 0) return;
    let changed = false;
    for (const key of this.kept) {
      const pid = Number(key.split(':')[0]);
      const now = readShell(pid, processCore().table);
      if (!now || now.key !== key) {
        this.kept.delete(key);
        changed = true;
      }
    }
    if (changed) this.saveKept();
  }

  private saveKept(): void {
    inBackground(this.context.workspaceState.update(KEPT_KEY, [...this.kept]), this.deps.log, 'keeping the list of kept processes');
  }

  /** The window reloads or closes: nothing of the terminals is ended from here on (VS Code may keep them). */
  shutdown(): void {
    this.shuttingDown = true;
  }

  dispose(): void {
    this.shuttingDown = true;
    for (const d of this.disposables) d.dispose();
  }
}
