/**
 * A launch with the agent's own hooks, for both owners (the extension's agent runs and `agent-trees run`): the tree
 * id chosen before the spawn (the hooks' address names it), the arguments with the hooks added where the program
 * is proven to be an agent CLI that has them, and the key in the tree's environment. Every launch loses an
 * inherited `AGENT_TREES_NOTIFY` (a tree started from inside a hooked tree is not that tree). Pure Node.
 */
import { randomBytes } from 'crypto';
import { resolveExecutable } from '../proc';
import type { AttentionTracker } from './attention';
import { ChannelError, NOTIFY_VARIABLE } from './attentionChannel';
import { AgentCli, cliOfLaunch, CodexConfigSource, NotifyInvocation, withHooks } from './attentionHooks';
import type { AttentionInbox } from './attentionInbox';

export interface HookedLaunchRequest {
  command: string;
  args: string[];
  /** The environment the tree will get (where the executable is looked up, and CODEX_HOME). */
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** The definition's `attention`, or `agent-trees run --attention`. */
  attention?: AgentCli | 'none';
  /** Whether hooks are wanted at all (`agentTrees.attention.hooks`). */
  hooks: boolean;
  notify: NotifyInvocation;
  inbox: AttentionInbox;
  tracker: AttentionTracker;
  codexConfig?: CodexConfigSource['read'];
}

export interface HookedLaunch {
  /** The tree id to spawn with. */
  id: string;
  args: string[];
  /** Added to the tree's environment (undefined removes). */
  env: Record<string, string | undefined>;
  /** The CLI whose hooks were added, if any. */
  cli?: AgentCli;
  /** What was added, or why nothing was: for the log. */
  note: string;
}

/** Plans a launch: hooks where proven and wanted, else the launch as asked (and why, in `note`). */
export function hookedLaunch(r: HookedLaunchRequest): HookedLaunch {
  const id = randomBytes(6).toString('hex');
  const plain = (note: string): HookedLaunch => ({ id, args: r.args, env: { [NOTIFY_VARIABLE]: undefined }, note });
  if (!r.hooks) return plain('hooks are off (agentTrees.attention.hooks)');
  let resolved: string | undefined;
  try {
    resolved = resolveExecutable(r.command, r.env, r.cwd);
  } catch {
    resolved = undefined;
  }
  const proof = cliOfLaunch(r.attention, resolved);
  if (!proof.cli) return plain(`no hooks: ${proof.why}`);
  const added = withHooks(proof.cli, r.args, r.notify, { env: r.env, read: r.codexConfig });
  if ('skipped' in added) return plain(`no ${proof.cli} hooks: ${added.skipped}`);
  try {
    const env = r.inbox.open(id, r.tracker);
    return { id, args: added.args, env, cli: proof.cli, note: `${proof.cli} hooks added (${proof.why})` };
  } catch (e) {
    if (e instanceof ChannelError) return plain(`no ${proof.cli} hooks: ${e.message}`);
    throw e;
  }
}
