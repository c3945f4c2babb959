/** Command-line parsing for `agent-trees`: every mistake becomes a one-line UsageError. */
import { GivenLimits, LimitField, limitProblem, parseOwnerSpec, ProcessIdentity } from '../proc';

export class UsageError extends Error {
  constructor(
    message: string,
    readonly showUsage = false,
  ) {
    super(message);
  }
}

interface Common {
  records?: string;
  graceMs: number;
  json: boolean;
  verbose: boolean;
}

export type ParsedArgs =
  | ({ command: 'help' } & Common)
  | ({
      command: 'run';
      cmd: string[];
      timeoutMs: number;
      label?: string;
      keepDescendants: boolean;
      cgroups: boolean;
      mcp: boolean;
      watchdog: boolean;
      /** `--max-memory`, `--max-processes`, `--idle-timeout` as given (0 = none). */
      limits: GivenLimits;
      /** `--attention claude|codex|none`: the CLI whose hooks it gets, where the executable cannot prove it. */
      attention?: 'claude' | 'codex' | 'none';
    } & Common)
  | ({ command: 'notify'; agent?: string; message?: string; idle: boolean; payload?: string } & Common)
  | ({ command: 'sweep'; cgroups: boolean; owner?: ProcessIdentity } & Common)
  | ({ command: 'ps'; cgroups: boolean } & Common)
  | ({ command: 'kill'; treeId: string } & Common);

const OPTIONS: Record<string, { value: boolean; commands: string[] }> = {
  '--timeout': { value: true, commands: ['run'] },
  '--grace': { value: true, commands: ['run', 'sweep', 'kill'] },
  '--records': { value: true, commands: ['run', 'sweep', 'ps', 'kill'] },
  '--label': { value: true, commands: ['run'] },
  '--keep-descendants': { value: false, commands: ['run'] },
  '--no-cgroup': { value: false, commands: ['run', 'sweep', 'ps'] },
  '--mcp': { value: false, commands: ['run'] },
  '--no-watchdog': { value: false, commands: ['run'] },
  '--max-memory': { value: true, commands: ['run'] },
  '--max-processes': { value: true, commands: ['run'] },
  '--idle-timeout': { value: true, commands: ['run'] },
  '--json': { value: false, commands: ['sweep', 'ps'] },
  '--owner': { value: true, commands: ['sweep'] },
  '--verbose': { value: false, commands: ['run', 'sweep', 'kill'] },
  '--attention': { value: true, commands: ['run'] },
  '--agent': { value: true, commands: ['notify'] },
  '--message': { value: true, commands: ['notify'] },
  '--idle': { value: false, commands: ['notify'] },
};

/** The longest timeout or grace period, in ms: what a ms count can hold exactly (some 285,000 years). */
const MAX_DURATION_MS = Number.MAX_SAFE_INTEGER;

function seconds(option: string, text: string, allowZero: boolean): number {
  if (!/^\d+(\.\d+)?$/.test(text)) throw new UsageError(`${option} takes a number of seconds, not "${text}"`);
  const n = Number(text);
  if (!allowZero && n === 0) throw new UsageError(`${option} must be more than 0`);
  const ms = Math.round(n * 1000);
  if (!(ms <= MAX_DURATION_MS))
    throw new UsageError(
      `${option} must be at most ${Math.floor(MAX_DURATION_MS / 1000)} seconds, not ${text.length > 24 ? `${text.slice(0, 20)}... (${text.length} digits)` : text}`,
    );
  return ms;
}

/** The limit options of `run`, by the field each sets. */
const LIMIT_OPTIONS: Record<string, LimitField> = {
  '--max-memory': 'maxMemoryMB',
  '--max-processes': 'maxProcesses',
  '--idle-timeout': 'idleTimeoutSeconds',
};

function limitsOfOptions(values: Record<string, string | true>): GivenLimits {
  const limits: GivenLimits = {};
  for (const [option, field] of Object.entries(LIMIT_OPTIONS)) {
    const text = values[option];
    if (text === undefined) continue;
    const n = /^\d+$/.test(text as string) ? Number(text) : NaN;
    const problem = limitProblem(field, n);
    if (problem) throw new UsageError(`${option} ${problem}, not "${String(text).slice(0, 24)}"`);
    limits[field] = n;
  }
  return limits;
}

function attentionOf(value: string | true | undefined): 'claude' | 'codex' | 'none' | undefined {
  if (value === undefined) return undefined;
  if (value === 'claude' || value === 'codex' || value === 'none') return value;
  throw new UsageError(`--attention takes claude, codex or none, not "${String(value)}"`);
}

export function parseArgs(argv: string[]): ParsedArgs {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    return { command: 'help', graceMs: 5000, json: false, verbose: false };
  }
  if (!['run', 'sweep', 'ps', 'kill', 'notify'].includes(command)) throw new UsageError(`unknown command "${command}"`, true);
  return commandArgs(command, splitArgs(command, rest));
}

/** A command's words, sorted: its options (by name), its positional arguments, and `run`'s command line. */
interface SplitArgs {
  values: Record<string, string | true>;
  positional: string[];
  cmd?: string[];
}

function splitArgs(command: string, rest: string[]): SplitArgs {
  const values: Record<string, string | true> = {};
  const positional: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a === '--') return { values, positional, cmd: rest.slice(i + 1) };
    if (a.startsWith('--')) {
      const [name, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
      const spec = OPTIONS[name];
      if (!spec) throw new UsageError(`unknown option ${name}`);
      if (!spec.commands.includes(command)) throw new UsageError(`${name} does not apply to '${command}'`);
      if (spec.value) {
        const v = inline ?? rest[++i];
        if (v === undefined) throw new UsageError(`${name} needs a value`);
        values[name] = v;
      } else {
        if (inline !== undefined) throw new UsageError(`${name} takes no value`);
        values[name] = true;
      }
      continue;
    }
    // `run`'s command starts at the first word that is not an option.
    if (command === 'run') return { values, positional, cmd: rest.slice(i) };
    positional.push(a);
  }
  return { values, positional };
}

function commandArgs(command: string, { values, positional, cmd }: SplitArgs): ParsedArgs {
  const common: Common = {
    records: typeof values['--records'] === 'string' ? (values['--records'] as string) : undefined,
    graceMs: values['--grace'] !== undefined ? seconds('--grace', values['--grace'] as string, true) : 5000,
    json: values['--json'] === true,
    verbose: values['--verbose'] === true,
  };
  if (common.records === '') throw new UsageError('--records needs a folder');
  switch (command) {
    case 'run':
      if (!cmd || cmd.length === 0) throw new UsageError("'run' needs a command: agent-trees run [options] -- CMD [ARGS...]");
      if (cmd[0] === '') throw new UsageError('the command is an empty string');
      return {
        command,
        cmd,
        timeoutMs: values['--timeout'] !== undefined ? seconds('--timeout', values['--timeout'] as string, true) : 0,
        label: values['--label'] as string | undefined,
        keepDescendants: values['--keep-descendants'] === true,
        cgroups: values['--no-cgroup'] !== true,
        mcp: values['--mcp'] === true,
        watchdog: values['--no-watchdog'] !== true,
        limits: limitsOfOptions(values),
        attention: attentionOf(values['--attention']),
        ...common,
      };
    case 'notify':
      // Codex passes its event as one JSON argument; a person or a script passes --message.
      if (positional.length > 1) throw new UsageError("'notify' takes at most one argument (the agent's JSON)");
      return {
        command,
        agent: values['--agent'] as string | undefined,
        message: values['--message'] as string | undefined,
        idle: values['--idle'] === true,
        payload: positional[0],
        ...common,
      };
    case 'sweep': {
      if (positional.length > 0) throw new UsageError(`'sweep' takes no argument "${positional[0]}"`);
      const cgroups = values['--no-cgroup'] !== true;
      if (values['--owner'] === undefined) return { command, cgroups, ...common };
      const owner = parseOwnerSpec(values['--owner'] as string);
      if (!owner)
        throw new UsageError(
          `--owner takes PID:START_KEY (the owner's pid and its start time in clock ticks since boot), not "${values['--owner']}"`,
        );
      return { command, cgroups, owner, ...common };
    }
    case 'kill':
      if (positional.length !== 1) throw new UsageError("'kill' takes one tree id: agent-trees kill TREE_ID");
      return { command, treeId: positional[0], ...common };
    default:
      if (positional.length > 0) throw new UsageError(`'${command}' takes no argument "${positional[0]}"`);
      return { command: command as 'ps', cgroups: values['--no-cgroup'] !== true, ...common };
  }
}
