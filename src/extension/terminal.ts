/**
 * Agent terminals: an extension terminal backed by the agent's process. Output appears as it comes; typed
 * input is echoed and sent to the agent's stdin line by line; Ctrl-C interrupts; the terminal says how the
 * run ended; closing it kills the whole tree.
 */
import * as vscode from 'vscode';
import { AgentRun, AgentRuns } from '../agents/runs';

const toTerminal = (text: string) => text.replace(/\r?\n/g, '\r\n');

export class AgentTerminal implements vscode.Pseudoterminal {
  private readonly writeEmitter = new vscode.EventEmitter<string>();
  readonly onDidWrite = this.writeEmitter.event;
  private readonly closeEmitter = new vscode.EventEmitter<number | void>();
  readonly onDidClose = this.closeEmitter.event;
  private line = '';
  private endingShown = false;
  private readonly disposables: { dispose(): void }[] = [];

  constructor(private readonly run: AgentRun, private readonly runs: AgentRuns) {}

  open(): void {
    const backlog = this.run.output.text();
    if (backlog) this.writeEmitter.fire(toTerminal(backlog));
    const onData = (text: string) => this.writeEmitter.fire(toTerminal(text));
    this.run.output.on('data', onData);
    this.disposables.push({ dispose: () => this.run.output.off('data', onData) });
    const onChanged = (run: AgentRun) => run === this.run && this.showEnding();
    this.runs.on('changed', onChanged);
    this.disposables.push({ dispose: () => this.runs.off('changed', onChanged) });
    this.showEnding();
  }

  /** Once the run has ended (root gone and, for a kill, the kill done), say how. */
  private showEnding(): void {
    if (this.endingShown || this.run.state === 'running') return;
    if (this.run.state === 'exited' && this.run.live) return; // helpers it left are still being ended
    if ((this.run.state === 'killed' || this.run.state === 'timed out') && this.run.live) return;
    this.endingShown = true;
    this.writeEmitter.fire(`\r\n\x1b[2m[${vscode.l10n.t('Agent Trees: {0}', this.run.endingText())}]\x1b[0m\r\n`);
  }

  handleInput(data: string): void {
    if (!this.run.live || this.run.state !== 'running') return;
    const stdin = this.run.tree.child.stdin;
    for (const ch of data) {
      if (ch === '\x03') {
        this.writeEmitter.fire('^C\r\n');
        this.line = '';
        this.runs.interrupt(this.run.id);
      } else if (ch === '\r' || ch === '\n') {
        this.writeEmitter.fire('\r\n');
        stdin?.write(this.line + '\n');
        this.line = '';
      } else if (ch === '\x7f' || ch === '\b') {
        if (this.line.length > 0) {
          this.line = this.line.slice(0, -1);
          this.writeEmitter.fire('\b \b');
        }
      } else if (ch === '\x04') {
        stdin?.end(); // Ctrl-D: end of input
      } else if (ch >= ' ') {
        this.line += ch;
        this.writeEmitter.fire(ch);
      }
    }
  }

  /** The user closed the terminal: the whole tree goes. */
  close(): void {
    for (const d of this.disposables) d.dispose();
    if (this.run.live) void this.runs.kill(this.run.id, 'killed');
  }
}

/** One terminal per run, created on launch (agents) or on demand (MCP servers, or after it was closed). */
export class AgentTerminals implements vscode.Disposable {
  private readonly terminals = new Map<string, vscode.Terminal>();
  private readonly subscription: vscode.Disposable;

  constructor(private readonly runs: AgentRuns) {
    this.subscription = vscode.window.onDidCloseTerminal((t) => {
      for (const [id, term] of this.terminals) if (term === t) this.terminals.delete(id);
    });
  }

  show(run: AgentRun, preserveFocus = false): vscode.Terminal {
    let terminal = this.terminals.get(run.id);
    if (!terminal) {
      terminal = vscode.window.createTerminal({
        name: vscode.l10n.t('Agent: {0}', run.name),
        pty: new AgentTerminal(run, this.runs),
        iconPath: new vscode.ThemeIcon(run.kind === 'mcp' ? 'server-process' : 'hubot'),
        isTransient: true,
      });
      this.terminals.set(run.id, terminal);
    }
    terminal.show(preserveFocus);
    return terminal;
  }

  get(runId: string): vscode.Terminal | undefined {
    return this.terminals.get(runId);
  }

  dispose(): void {
    this.subscription.dispose();
  }
}
