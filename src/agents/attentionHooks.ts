/**
 * The agents' own notification hooks: which program is which CLI (proven, never guessed from a name), what is
 * added to its command line at launch so it calls `agent-trees notify` (nothing is written to its settings files),
 * and what each of its hook events means. Pure Node (file reads only).
 *
 * A program is one of these CLIs when its definition says so (`"attention": "claude"`), or when its resolved
 * executable (symlinks followed) is a file of the CLI's npm package: the package's own `bin`, or the native binary
 * of its platform package. A `claude` on the PATH that is something else (a wrapper script, another program of
 * that name, the native installer's binary) gets nothing added: adding a flag to an unknown program is a guess.
 *
 * What is passed (the README lists it too):
 *   - Claude Code: `--settings '{"hooks":{"Notification":[...],"PermissionRequest":[...],"Stop":[...]}}'`, each a
 *     command hook running `agent-trees notify --agent claude`. Claude Code merges these hooks with the user's own
 *     (measured: the user's hooks still fire). PermissionRequest fires as the permission prompt shows; Notification
 *     brings Claude's own words 6 s later (its `permission_prompt`, `elicitation_dialog`, `idle_prompt`); Stop ends
 *     the turn. None of them fires while the agent works. Not added when the definition passes its own
 *     `--settings`: Claude Code reads only the last one.
 *   - Codex: `-c notify=["…","notify","--agent","codex"]`: Codex runs it with a JSON argument when a turn
 *     completes (`agent-turn-complete`, the only event 0.171 sends). Not added when Codex's config or the command
 *     line sets `notify` already: `-c` would replace the user's own. Codex asks for approval with a bell when its
 *     terminal is not focused, which the terminal scanner reads.
 *   - Gemini CLI: it has hooks, but takes them only from its settings files (no launch flag): nothing is added.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import type { AttentionSignal } from './attention';

export type AgentCli = 'claude' | 'codex' | 'gemini';

/** npm packages whose files are these CLIs. */
const PACKAGES: { name: RegExp; cli: AgentCli; native?: string }[] = [
  { name: /^@anthropic-ai\/claude-code$/, cli: 'claude' },
  { name: /^@anthropic-ai\/claude-(code|agent-sdk)-(linux|darwin|win32)-[a-z0-9-]+$/, cli: 'claude', native: 'claude' },
  { name: /^@openai\/codex$/, cli: 'codex' },
  { name: /^@openai\/codex-(linux|darwin|win32)-[a-z0-9-]+$/, cli: 'codex', native: 'codex' },
  { name: /^@google\/gemini-cli$/, cli: 'gemini' },
];

export interface CliProof {
  cli?: AgentCli;
  /** Why (or why not), for the log. */
  why: string;
}

function readPackage(dir: string): { name?: unknown; bin?: unknown } | undefined {
  try {
    const text = fs.readFileSync(path.join(dir, 'package.json'), 'utf8');
    return JSON.parse(text) as { name?: unknown; bin?: unknown };
  } catch {
    return undefined;
  }
}

function realpath(file: string): string | undefined {
  try {
    return fs.realpathSync(file);
  } catch {
    return undefined;
  }
}

/** Whether `file` (a real path) is one of the package's `bin` entries. */
function isBinOf(dir: string, bin: unknown, file: string): boolean {
  const entries = typeof bin === 'string' ? [bin] : bin && typeof bin === 'object' ? Object.values(bin as Record<string, unknown>) : [];
  return entries.some((e) => typeof e === 'string' && realpath(path.resolve(dir, e)) === file);
}

/** Which CLI the executable `file` is, by the npm package it belongs to; none when that cannot be proven. */
export function cliOfExecutable(file: string): CliProof {
  const real = realpath(file);
  if (!real) return { why: `${file} cannot be resolved` };
  // The nearest package.json above it, within a few folders (a platform package keeps its binary at vendor/<triple>/bin/).
  for (let dir = path.dirname(real), up = 0; up < 5; dir = path.dirname(dir), up++) {
    const pkg = readPackage(dir);
    if (!pkg) {
      if (path.basename(dir) === 'node_modules' || path.dirname(dir) === dir) break;
      continue;
    }
    const name = typeof pkg.name === 'string' ? pkg.name : '';
    const known = PACKAGES.find((p) => p.name.test(name));
    if (!known) return { why: `${real} belongs to the npm package ${name || '(unnamed)'}, not to an agent CLI Agent Trees knows` };
    const ok = known.native ? path.basename(real).replace(/\.exe$/, '') === known.native : isBinOf(dir, pkg.bin, real);
    return ok
      ? { cli: known.cli, why: `${real} is ${name}'s ${known.native ? 'native binary' : 'bin'}` }
      : { why: `${real} is in ${name}, but not its binary` };
  }
  return { why: `${real} is not a file of an npm package Agent Trees knows` };
}

/**
 * The CLI a launch is: the definition's word (`attention`), else the proof from its executable. `resolved` is the
 * executable as the spawn will find it (undefined when it cannot be found: the spawn reports that).
 */
export function cliOfLaunch(attention: AgentCli | 'none' | undefined, resolved: string | undefined): CliProof {
  if (attention === 'none') return { why: 'its definition says "attention": "none"' };
  if (attention) return { cli: attention, why: `its definition says "attention": "${attention}"` };
  return resolved ? cliOfExecutable(resolved) : { why: 'its executable was not found' };
}

/** How `agent-trees notify` is run: the bundled CLI with this Node (Electron's runs as Node only when told so). */
export interface NotifyInvocation {
  execPath: string;
  cliScript: string;
  electron: boolean;
}

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** The command a hook runs, for a shell (Claude Code runs hook commands through one). */
function notifyShellCommand(n: NotifyInvocation, cli: AgentCli): string {
  return `${n.electron ? 'ELECTRON_RUN_AS_NODE=1 ' : ''}${[n.execPath, n.cliScript, 'notify', '--agent', cli].map(shellQuote).join(' ')}`;
}

/** The command a hook runs, as an argument vector (Codex executes `notify` without a shell). */
function notifyArgv(n: NotifyInvocation, cli: AgentCli): string[] {
  return [...(n.electron ? ['/usr/bin/env', 'ELECTRON_RUN_AS_NODE=1'] : []), n.execPath, n.cliScript, 'notify', '--agent', cli];
}

/** Seconds a hook may take before the agent gives up on it (notify writes one small file and exits). */
const HOOK_TIMEOUT_S = 10;

/** Claude Code's `--settings` value: our hooks only. */
export function claudeHookSettings(n: NotifyInvocation): string {
  const hook = [{ hooks: [{ type: 'command', command: notifyShellCommand(n, 'claude'), timeout: HOOK_TIMEOUT_S }] }];
  return JSON.stringify({ hooks: { Notification: hook, PermissionRequest: hook, Stop: hook } });
}

/** What to read to know whether Codex has a `notify` of its own: its config file (CODEX_HOME or ~/.codex). */
export interface CodexConfigSource {
  env: Record<string, string | undefined>;
  read?: (file: string) => string | undefined;
}

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

/** A string of a TOML document at `i` (basic, literal, or their multi-line forms): where it ends, or -1 if none starts. */
function tomlStringEnd(toml: string, i: number): number {
  const quote = toml[i];
  if (quote !== '"' && quote !== "'") return -1;
  const fence = toml.startsWith(quote.repeat(3), i) ? quote.repeat(3) : quote;
  for (let j = i + fence.length; j < toml.length; j++) {
    if (quote === '"' && toml[j] === '\\')
      j++; // an escape: the next character is the string's
    else if (toml.startsWith(fence, j)) {
      let end = j + fence.length;
      // A multi-line string may end with one or two of its quotes before its closing three.
      while (fence.length === 3 && end < j + 5 && toml[end] === quote) end++;
      return end;
    }
  }
  return toml.length;
}

/**
 * Whether a Codex `config.toml` sets `notify` at its top level (before any `[table]`), as codex reads it: strings
 * (multi-line ones hold any line), comments, and arrays or inline tables over several lines are not keys or headers.
 */
export function codexConfigHasNotify(toml: string): boolean {
  const KEY = /(?:notify|"notify"|'notify')[ \t]*=/y;
  let depth = 0;
  let lineStart = true;
  for (let i = 0; i < toml.length; i++) {
    const c = toml[i];
    if (c === '\n') lineStart = depth === 0;
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n') continue;
    if (lineStart && depth === 0) {
      if (c === '[') return false; // the first table: what follows is not the top level
      KEY.lastIndex = i;
      if (KEY.test(toml)) return true;
    }
    lineStart = false;
    const end = tomlStringEnd(toml, i);
    if (end >= 0) i = end - 1;
    else if (c === '#') i = toml.indexOf('\n', i) < 0 ? toml.length : toml.indexOf('\n', i) - 1;
    else if (c === '[' || c === '{') depth++;
    else if (c === ']' || c === '}') depth = Math.max(0, depth - 1);
  }
  return false;
}

/** The launch's arguments with the hooks added, or why none were. */
export function withHooks(
  cli: AgentCli,
  args: string[],
  notify: NotifyInvocation,
  codexConfig: CodexConfigSource = { env: process.env },
): { args: string[] } | { skipped: string } {
  if (process.platform === 'win32') return { skipped: 'hooks are not wired on Windows yet' };
  if (cli === 'gemini') return { skipped: 'Gemini CLI takes hooks from its settings files only, and those are not touched' };
  if (cli === 'claude') {
    if (args.some((a) => a === '--settings' || a.startsWith('--settings=')))
      return { skipped: 'the command passes its own --settings, and Claude Code reads only the last one' };
    return { args: ['--settings', claudeHookSettings(notify), ...args] };
  }
  if (
    args.some((a, i) => /^notify\s*=/.test(a) && ['-c', '--config'].includes(args[i - 1] ?? '')) ||
    args.some((a) => /^--config=notify\s*=/.test(a))
  )
    return { skipped: 'the command sets its own notify' };
  const home = codexConfig.env.CODEX_HOME || path.join(codexConfig.env.HOME || os.homedir(), '.codex');
  const configFile = path.join(home, 'config.toml');
  const toml = (codexConfig.read ?? readText)(configFile);
  if (toml !== undefined && codexConfigHasNotify(toml)) return { skipped: `${configFile} sets notify, which -c would replace` };
  // A TOML array of basic strings: JSON's escapes are TOML's, but DEL must be escaped in TOML (codex refuses it raw).
  const value = JSON.stringify(notifyArgv(notify, 'codex')).replace(/\x7f/g, '\\u007f');
  return { args: ['-c', `notify=${value}`, ...args] };
}

/** What a hook call carries from the agent (bounded by `agent-trees notify`). */
export interface HookEvent {
  /** The hook's event: Claude's `hook_event_name`, Codex's `type`. */
  name?: string;
  /** Claude's `notification_type`. */
  type?: string;
  message?: string;
  title?: string;
  /** The tool a permission is asked for, and its command or description. */
  tool?: string;
  toolDetail?: string;
}

/** What a hook event means for the agent's state; undefined for events that say nothing about it. */
export function hookSignal(cli: string, e: HookEvent): AttentionSignal | undefined {
  if (cli === 'claude') return claudeSignal(e);
  if (cli === 'codex') {
    if (e.name === 'agent-turn-complete') return { state: 'idle', source: 'hook' };
    if (e.name === 'approval-requested') return { state: 'waiting', source: 'hook', message: e.message ?? 'Codex needs your approval' };
    return undefined;
  }
  // `agent-trees notify --message ...` from anything else (a script, a hook of the user's).
  if (e.name === 'idle') return { state: 'idle', source: 'hook', message: e.message };
  if (e.name === 'waiting') return { state: 'waiting', source: 'hook', message: e.message, detail: e.title };
  return undefined;
}

function claudeSignal(e: HookEvent): AttentionSignal | undefined {
  const detail = e.tool ? (e.toolDetail ? `${e.tool}: ${e.toolDetail}` : e.tool) : undefined;
  switch (e.name) {
    case 'PermissionRequest':
      // Claude's own words for its permission prompt, which its Notification brings 6 s later.
      return { state: 'waiting', source: 'hook', message: 'Claude needs your permission', detail };
    case 'Stop':
      return { state: 'idle', source: 'hook' };
    case 'Notification':
      // Claude's words for the prompt its PermissionRequest began (6 s on): the key that answered it may be first.
      if (e.type === 'permission_prompt') return { state: 'waiting', source: 'hook', message: e.message, detail, wordsOnly: true };
      if (e.type === 'elicitation_dialog') return { state: 'waiting', source: 'hook', message: e.message, detail };
      if (e.type === 'idle_prompt') return { state: 'idle', source: 'hook', message: e.message };
      return undefined;
    default:
      return undefined;
  }
}
