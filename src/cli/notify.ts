/**
 * `agent-trees notify`: an agent's hook (or any program inside a tree launched with hooks) tells the tree's owner
 * that the agent waits for someone, or is idle. It finds the owner through `AGENT_TREES_NOTIFY` (the owner, the
 * tree's key and the records folder's attention folder, given at launch) and `AGENT_TREES_TREE_ID`, writes one
 * small file there and exits: it never waits for the owner, and starts nothing.
 *
 *   --agent claude   the hook's JSON on stdin (Claude Code's hook input)
 *   --agent codex    the JSON as the last argument (Codex's `notify`)
 *   --message TEXT   anything else: waiting, with these words (`--idle`: idle)
 *
 * It prints nothing on stdout (a Claude Code PermissionRequest hook's output would be taken as its answer), exits
 * 0 once the call is posted, and 1 with one line on stderr when it cannot be.
 */
import { hookEventOf, HookMessage, NOTIFY_VARIABLE, parseAddress, postMessage } from '../agents/attentionChannel';
import type { HookEvent } from '../agents/attentionHooks';
import { processCore } from '../proc';
import type { ParsedArgs } from './args';

type NotifyArgs = ParsedArgs & { command: 'notify' };

/** The most of a hook's input read (Claude Code's is a few hundred bytes), and how long to wait for its end. */
const MAX_INPUT = 64 * 1024;
const INPUT_WAIT_MS = 3000;

function readStdin(): Promise<string> {
  return new Promise((resolve) => {
    if (process.stdin.isTTY) return resolve('');
    let text = '';
    const done = () => {
      clearTimeout(timer);
      process.stdin.pause();
      resolve(text);
    };
    const timer = setTimeout(done, INPUT_WAIT_MS);
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (d: string) => {
      text += d;
      if (text.length > MAX_INPUT) done();
    });
    process.stdin.on('end', done);
    process.stdin.on('error', done);
  });
}

function parseJson(text: string | undefined): Record<string, unknown> {
  try {
    const v = JSON.parse(text ?? '') as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** What Claude Code's hook input says, in the channel's fields. */
function claudeEvent(input: Record<string, unknown>): HookEvent {
  const tool = (input.tool_input ?? {}) as Record<string, unknown>;
  const detail = [tool.command, tool.description, tool.file_path, tool.url].find((v) => typeof v === 'string');
  return hookEventOf({
    name: input.hook_event_name,
    type: input.notification_type,
    message: input.message,
    title: input.title,
    tool: input.tool_name,
    toolDetail: detail,
  });
}

async function eventOf(args: NotifyArgs): Promise<HookEvent> {
  if (args.agent === 'claude') return claudeEvent(parseJson((await readStdin()).slice(0, MAX_INPUT)));
  if (args.agent === 'codex') {
    // Its payload is the model's text and the user's messages: only the event's type is passed on.
    return hookEventOf({ name: parseJson(args.payload).type });
  }
  return hookEventOf({ name: args.idle ? 'idle' : 'waiting', message: args.message });
}

export async function notify(args: NotifyArgs): Promise<number> {
  const fail = (why: string) => {
    process.stderr.write(`agent-trees notify: ${why}\n`);
    return 1;
  };
  const address = parseAddress(process.env[NOTIFY_VARIABLE]);
  const tree = process.env.AGENT_TREES_TREE_ID;
  if (!address || !tree)
    return fail(`not inside a tree launched with hooks (no ${address ? 'AGENT_TREES_TREE_ID' : NOTIFY_VARIABLE}): nothing to tell`);
  const message: HookMessage = {
    version: 1,
    tree,
    key: address.key,
    agent: args.agent === 'claude' || args.agent === 'codex' ? args.agent : 'notify',
    event: await eventOf(args),
    sentAt: Date.now(),
  };
  const table = processCore().table;
  try {
    postMessage(address, message, (o) => table.read(o.pid)?.startKey === o.startKey);
  } catch (e) {
    return fail((e as Error).message);
  }
  return 0;
}
