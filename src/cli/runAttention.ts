/**
 * Attention for `agent-trees run` typed in a terminal of a VS Code window running Agent Trees (its terminals carry
 * `AGENT_TREES_WINDOW`): the agent gets its hooks as the extension's agents do (attentionLaunch.ts), the relay's
 * output goes through the scanner of notification sequences and its input through the key check, and this
 * process, the tree's owner, keeps the tree's attention state and publishes it in the records folder's attention
 * folder for the window (attentionChannel.ts), which shows it. Outside such a terminal, or with
 * `AGENT_TREES_ATTENTION_HOOKS=off` (the window's `agentTrees.attention.hooks` turned off) for the hooks, nothing
 * of this happens.
 */
import { StringDecoder } from 'string_decoder';
import { AttentionTracker, terminalSignal } from '../agents/attention';
import { AttentionFolder, ChannelOwner, HOOKS_SETTING_VARIABLE } from '../agents/attentionChannel';
import { AttentionInbox } from '../agents/attentionInbox';
import { HookedLaunch, hookedLaunch } from '../agents/attentionLaunch';
import { EscapeScanner, Logger, processCore, WINDOW_TAG_VARIABLE } from '../proc';
import type { RelayWatch } from './relay';

export class RunAttention {
  private readonly tracker: AttentionTracker;
  private readonly inbox: AttentionInbox;
  private readonly scanner: EscapeScanner;
  /** The agent's output is UTF-8 bytes; the scanner reads it as the terminal does, as text (0x9C in "✳" is no ST). */
  private readonly decoder = new StringDecoder('utf8');
  private tree: string | undefined;

  private constructor(
    private readonly folder: AttentionFolder,
    private readonly owner: ChannelOwner,
    private readonly window: string,
    private readonly log: Logger,
  ) {
    this.tracker = new AttentionTracker(() => this.publish());
    this.inbox = new AttentionInbox(folder, owner, log);
    this.scanner = new EscapeScanner((s) => this.tracker.signal(terminalSignal(s)));
  }

  /** For a run relayed in a terminal of a window with Agent Trees; undefined anywhere else. */
  static inWindowTerminal(records: string, log: Logger): RunAttention | undefined {
    const window = process.env[WINDOW_TAG_VARIABLE];
    if (!window) return undefined;
    const self = processCore().table.read(process.pid);
    return new RunAttention(new AttentionFolder(records, log), { pid: process.pid, startKey: self?.startKey ?? 0 }, window, log);
  }

  /** The launch: its tree id, and the hooks where the command is a CLI that has them. */
  plan(cmd: string[], attention: 'claude' | 'codex' | 'none' | undefined): HookedLaunch {
    const plan = hookedLaunch({
      command: cmd[0],
      args: cmd.slice(1),
      env: process.env,
      cwd: process.cwd(),
      attention,
      hooks: process.env[HOOKS_SETTING_VARIABLE] !== 'off',
      notify: { execPath: process.execPath, cliScript: __filename, electron: !!process.versions.electron },
      inbox: this.inbox,
      tracker: this.tracker,
    });
    this.tree = plan.id;
    this.log.info(plan.note);
    return plan;
  }

  /** What the relay passes through: output scanned as text, input checked for keys (bytes as latin1). */
  get watch(): RelayWatch {
    return {
      output: (data) => this.scanner.feed(typeof data === 'string' ? data : this.decoder.write(data)),
      input: (text) => this.tracker.input(text),
    };
  }

  private publish(): void {
    if (!this.tree) return;
    try {
      this.folder.ensure();
      this.folder.writeState({
        version: 1,
        owner: this.owner,
        tree: this.tree,
        window: this.window,
        attention: this.tracker.current,
        focused: this.tracker.focused,
      });
    } catch (e) {
      this.log.warn(`cannot tell the window that tree ${this.tree} is ${this.tracker.current.state}: ${(e as Error).message}`);
    }
  }

  /** The run is over: its state goes, and so does its channel. */
  dispose(): void {
    if (this.tree) {
      this.inbox.close(this.tree);
      this.folder.removeState(this.owner, this.tree);
    }
    this.inbox.dispose();
    this.folder.dispose();
  }
}
