/**
 * When the Process Trees view refreshes: every `refreshIntervalSeconds` while it is visible, never while it is hidden.
 * While hidden, the window's terminals (if any) are still looked at every few seconds and soon after each command
 * (what a terminal leaves when it closes includes what was seen in it while open); nothing else is read.
 */
import * as vscode from 'vscode';
import { TreeMembersSource } from '../proc';
import { inBackground } from './background';
import { WindowTerminals } from './terminalTrees';
import { ProcessTreeProvider, Row } from './treeView';

/** While the view is hidden, how often the window's terminals are looked at (what they hold, shells that exited). */
const HIDDEN_TERMINAL_LOOK_MS = 5000;
/** A command started or ended in a terminal: look at it this much later (what it started has started by then). */
const AFTER_COMMAND_LOOK_MS = 1000;

export interface ViewRefreshDeps {
  view: vscode.TreeView<Row>;
  provider: ProcessTreeProvider;
  source: TreeMembersSource;
  windowTerminals: WindowTerminals;
  /** `agentTrees.refreshIntervalSeconds` in ms, read at each (re)schedule. */
  intervalMs: () => number;
  log: vscode.LogOutputChannel;
}

export class ViewRefresh implements vscode.Disposable {
  private timer: NodeJS.Timeout | undefined;
  private commandLook: NodeJS.Timeout | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly deps: ViewRefreshDeps) {
    this.disposables.push(deps.view.onDidChangeVisibility(() => this.schedule()));
    // Shell integration says when a command starts and ends: a good moment to see what it started.
    const lookSoon = () => {
      if (this.deps.view.visible || this.commandLook) return;
      this.commandLook = setTimeout(() => {
        this.commandLook = undefined;
        this.lookInBackground();
      }, AFTER_COMMAND_LOOK_MS);
    };
    this.disposables.push(vscode.window.onDidStartTerminalShellExecution(lookSoon), vscode.window.onDidEndTerminalShellExecution(lookSoon));
  }

  /** (Re)starts: a refresh now and every interval while visible, the terminals' look while hidden. */
  schedule(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const { view } = this.deps;
    if (view.visible) {
      this.refreshInBackground();
      this.timer = setInterval(() => this.refreshInBackground(), this.deps.intervalMs());
    } else {
      this.timer = setInterval(() => this.lookInBackground(), HIDDEN_TERMINAL_LOOK_MS);
    }
  }

  /** A refresh now, if the view is visible (something it shows changed). */
  refreshIfVisible(): void {
    if (this.deps.view.visible) this.refreshInBackground();
  }

  private refreshInBackground(): void {
    inBackground(this.deps.provider.refresh(), this.deps.log, 'refreshing the view');
  }

  private lookInBackground(): void {
    inBackground(this.lookAtTerminals(), this.deps.log, 'looking at the terminals');
  }

  private async lookAtTerminals(): Promise<void> {
    const { windowTerminals, source } = this.deps;
    if (windowTerminals.list().length === 0) return;
    try {
      const result = await source.query([], { terminals: windowTerminals.query() }, 'hidden terminals');
      windowTerminals.observe(result.terminals);
    } catch (e) {
      this.deps.log.warn(`looking at the terminals failed: ${(e as Error).message}`);
    }
  }

  dispose(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.commandLook) clearTimeout(this.commandLook);
    for (const d of this.disposables) d.dispose();
  }
}
