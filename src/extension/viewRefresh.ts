/**
 * When the Process Trees view refreshes: every `refreshIntervalSeconds` while it is visible, never while it is hidden.
 * While hidden, the window's terminals (if any) are still looked at every few seconds and soon after each command
 * (what a terminal leaves when it closes includes what was seen in it while open), and in the same look the
 * processes of other extensions of this host (what the host's record names of them must stay true); nothing else
 * is read.
 */
import * as vscode from 'vscode';
import { TreeMembersSource } from '../proc';
import { inBackground } from './background';
import type { OtherExtensions } from './otherExtensions';
import { WindowTerminals } from './terminalTrees';
import { ProcessTreeProvider, Row } from './treeView';

/**
 * While the view is hidden, how often the window's terminals (what they hold, shells that exited) and the host's
 * other processes (what its record names) are looked at.
 */
const HIDDEN_LOOK_MS = 5000;
/** A command started or ended in a terminal: look at it this much later (what it started has started by then). */
const AFTER_COMMAND_LOOK_MS = 1000;

export interface ViewRefreshDeps {
  view: vscode.TreeView<Row>;
  provider: ProcessTreeProvider;
  source: TreeMembersSource;
  windowTerminals: WindowTerminals;
  otherExtensions: OtherExtensions;
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
      this.timer = setInterval(() => this.lookInBackground(), HIDDEN_LOOK_MS);
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
    const { windowTerminals, source, otherExtensions } = this.deps;
    const host = otherExtensions.query();
    if (windowTerminals.list().length === 0 && !host) return;
    try {
      const result = await source.query([], { terminals: windowTerminals.query(), host }, 'hidden terminals');
      windowTerminals.observe(result.terminals);
      otherExtensions.observe(result.host, result.takenAt);
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
