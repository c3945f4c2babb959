/**
 * Agent definitions (the `agentTrees.agents` setting, or an argument to Launch Agent): validated field by field
 * so a bad entry gets a message naming the entry and the field, and the good entries still work.
 */
import { GivenLimits, LIMIT_FIELDS, limitProblem, limitsOf, TreeLimits } from '../proc';

export type AgentKind = 'agent' | 'mcp';
/** What the agent's stdin, stdout and stderr are: a pseudo-terminal of its own, or pipes. */
export type TerminalMode = 'pty' | 'pipe';

export interface AgentDefinition {
  name: string;
  command: string;
  args?: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** Seconds until the whole tree is killed; 0 = never. Defaults to `agentTrees.defaultTimeoutSeconds`. */
  timeoutSeconds?: number;
  kind?: AgentKind;
  /** Default: 'pty' for agents, 'pipe' for MCP servers (stdio is their protocol) and headless runs. */
  terminal?: TerminalMode;
  /** Whether a terminal opens at launch (default: agents yes, MCP servers no); Show Agent Terminal opens one later. */
  showTerminal?: boolean;
  /** The tree's memory limit in MB (PSS, else RSS); 0 = none. Defaults to `agentTrees.limits.maxMemoryMB`. */
  maxMemoryMB?: number;
  /** The tree's limit of live processes; 0 = none. Defaults to `agentTrees.limits.maxProcesses`. */
  maxProcesses?: number;
  /** Seconds without CPU time or terminal/stdio bytes before the tree ends; 0 = none. Defaults to `agentTrees.limits.idleTimeoutSeconds`. */
  idleTimeoutSeconds?: number;
  /**
   * Which agent CLI this is, for its notification hooks (attentionHooks.ts): "claude" or "codex" where it cannot be
   * proven from the executable (a wrapper, the native installer's claude), "none" for no hooks. Default: proven or none.
   */
  attention?: AttentionChoice;
}

/** A definition's `attention`: the CLI whose hooks it gets, or none. */
export type AttentionChoice = 'claude' | 'codex' | 'none';

/** The agent's stdio: the definition's choice, else a terminal for agents and pipes for MCP servers. */
export function terminalModeOf(def: Pick<AgentDefinition, 'kind' | 'terminal'>): TerminalMode {
  return def.terminal ?? (def.kind === 'mcp' ? 'pipe' : 'pty');
}

/** Seconds until the whole tree is killed: the definition's, else `defaultSeconds`; 0 = never. */
export function timeoutSecondsOf(def: Pick<AgentDefinition, 'timeoutSeconds'>, defaultSeconds: number): number {
  return def.timeoutSeconds ?? defaultSeconds;
}

/** A definition's tree limits: its own fields, else `defaults` (`agentTrees.limits.*`); 0 = none. */
export function limitsOfDefinition(def: GivenLimits, defaults?: GivenLimits): TreeLimits | undefined {
  return limitsOf(Object.fromEntries(LIMIT_FIELDS.map((f) => [f, def[f]]).filter(([, v]) => v !== undefined)), defaults);
}

/** Whether a terminal opens at launch: the definition's choice, else agents yes and MCP servers no. */
export function showsTerminal(def: Pick<AgentDefinition, 'kind' | 'showTerminal'>): boolean {
  return def.showTerminal ?? def.kind !== 'mcp';
}

export class DefinitionError extends Error {
  constructor(
    readonly entry: string,
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${entry}: "${field}" ${problem}`);
  }
}

const FIELDS = new Set([
  'name',
  'command',
  'args',
  'cwd',
  'env',
  'timeoutSeconds',
  'kind',
  'terminal',
  'showTerminal',
  'attention',
  ...LIMIT_FIELDS,
]);

/**
 * Checks one entry. `where` names it in messages (e.g. `agentTrees.agents[2] ("codex")`).
 * Returns a clean copy, or throws a DefinitionError.
 */
export function validateDefinition(value: unknown, where: string): AgentDefinition {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new DefinitionError(where, '(entry)', 'must be an object with at least "name" and "command"');
  }
  const v = value as Record<string, unknown>;
  const name = typeof v.name === 'string' && v.name.trim() ? v.name.trim() : undefined;
  const entry = name ? `${where} ("${name}")` : where;
  if (!name) throw new DefinitionError(entry, 'name', 'must be a non-empty string');
  if (typeof v.command !== 'string' || !v.command.trim()) throw new DefinitionError(entry, 'command', 'must be a non-empty string');
  for (const key of Object.keys(v)) {
    if (!FIELDS.has(key)) throw new DefinitionError(entry, key, `is not a known field (known: ${[...FIELDS].join(', ')})`);
  }
  const def: AgentDefinition = { name, command: v.command.trim() };
  if (v.args !== undefined) {
    if (!Array.isArray(v.args) || !v.args.every((a) => typeof a === 'string'))
      throw new DefinitionError(entry, 'args', 'must be an array of strings');
    def.args = [...v.args];
  }
  if (v.cwd !== undefined) {
    if (typeof v.cwd !== 'string' || !v.cwd) throw new DefinitionError(entry, 'cwd', 'must be a folder path');
    def.cwd = v.cwd;
  }
  if (v.env !== undefined) {
    if (typeof v.env !== 'object' || v.env === null || Array.isArray(v.env))
      throw new DefinitionError(entry, 'env', 'must be an object of strings');
    for (const [k, val] of Object.entries(v.env)) {
      if (typeof val !== 'string') throw new DefinitionError(entry, `env.${k}`, 'must be a string');
    }
    def.env = { ...(v.env as Record<string, string>) };
  }
  if (v.timeoutSeconds !== undefined) {
    if (typeof v.timeoutSeconds !== 'number' || !Number.isFinite(v.timeoutSeconds) || v.timeoutSeconds < 0) {
      throw new DefinitionError(entry, 'timeoutSeconds', 'must be a number of seconds, 0 or more (0 = no timeout)');
    }
    def.timeoutSeconds = v.timeoutSeconds;
  }
  if (v.kind !== undefined) {
    if (v.kind !== 'agent' && v.kind !== 'mcp') throw new DefinitionError(entry, 'kind', 'must be "agent" or "mcp"');
    def.kind = v.kind;
  }
  if (v.terminal !== undefined) {
    if (v.terminal !== 'pty' && v.terminal !== 'pipe') {
      throw new DefinitionError(entry, 'terminal', 'must be "pty" (a terminal of its own) or "pipe" (stdin, stdout and stderr on pipes)');
    }
    def.terminal = v.terminal;
  }
  if (v.showTerminal !== undefined) {
    if (typeof v.showTerminal !== 'boolean') throw new DefinitionError(entry, 'showTerminal', 'must be true or false');
    def.showTerminal = v.showTerminal;
  }
  addLimitsAndAttention(v, entry, def);
  return def;
}

/** The tree's limits and the agent's hooks of an entry, checked, into `def`. */
function addLimitsAndAttention(v: Record<string, unknown>, entry: string, def: AgentDefinition): void {
  for (const field of LIMIT_FIELDS) {
    if (v[field] === undefined) continue;
    const problem = limitProblem(field, v[field]);
    if (problem) throw new DefinitionError(entry, field, problem);
    def[field] = v[field] as number;
  }
  if (v.attention !== undefined) {
    if (v.attention !== 'claude' && v.attention !== 'codex' && v.attention !== 'none')
      throw new DefinitionError(entry, 'attention', 'must be "claude", "codex" (the CLI whose notification hooks it gets) or "none"');
    def.attention = v.attention;
  }
}

/** Validates a whole `agentTrees.agents` value: the good entries, and one message per bad one. */
export function validateDefinitions(
  value: unknown,
  setting = 'agentTrees.agents',
): { agents: AgentDefinition[]; errors: DefinitionError[] } {
  const agents: AgentDefinition[] = [];
  const errors: DefinitionError[] = [];
  if (value === undefined || value === null) return { agents, errors };
  if (!Array.isArray(value)) {
    errors.push(new DefinitionError(setting, '(setting)', 'must be an array of agent definitions'));
    return { agents, errors };
  }
  const seen = new Set<string>();
  value.forEach((item, i) => {
    try {
      const def = validateDefinition(item, `${setting}[${i}]`);
      if (seen.has(def.name)) throw new DefinitionError(`${setting}[${i}] ("${def.name}")`, 'name', 'is used by an earlier entry');
      seen.add(def.name);
      agents.push(def);
    } catch (e) {
      if (e instanceof DefinitionError) errors.push(e);
      else throw e;
    }
  });
  return { agents, errors };
}

/**
 * Expands `${workspaceFolder}`, `${userHome}` and `${env:NAME}` in command, args, cwd and env values, as VS Code
 * settings users expect. An unknown variable is left as it is.
 */
export function expandVariables(
  def: AgentDefinition,
  vars: { workspaceFolder?: string; userHome: string; env: NodeJS.ProcessEnv },
): AgentDefinition {
  const expand = (text: string) =>
    text.replace(/\$\{(workspaceFolder|userHome|env:([A-Za-z_][A-Za-z0-9_]*))\}/g, (whole, name: string, envName?: string) => {
      if (envName) return vars.env[envName] ?? '';
      if (name === 'userHome') return vars.userHome;
      return vars.workspaceFolder ?? whole;
    });
  return {
    ...def,
    command: expand(def.command),
    args: def.args?.map(expand),
    cwd: def.cwd === undefined ? undefined : expand(def.cwd),
    env: def.env === undefined ? undefined : Object.fromEntries(Object.entries(def.env).map(([k, v]) => [k, expand(v)])),
  };
}
