/**
 * What a launch runs: the definition an agent's name, an entry given inline or a typed command line stands for,
 * with its variables expanded and its folder resolved against the workspace. Pure (no `vscode`): the extension
 * passes in what VS Code knows (the workspace folders, the environment, the user's home).
 */
import * as path from 'path';
import { AgentDefinition, DefinitionError, expandVariables } from './definition';
import type { DefinitionSource } from './definitionSource';

/** What a definition's variables and relative folder refer to. */
export interface LaunchContext {
  /** The workspace folders' paths: the first is `${workspaceFolder}`, and what a relative `cwd` is relative to. */
  workspaceFolders: readonly string[];
  userHome: string;
  env: NodeJS.ProcessEnv;
}

/** The `agentTrees.agents` setting as read: the good entries, the bad ones' errors, and where it came from. */
export interface ConfiguredAgents {
  agents: AgentDefinition[];
  agentErrors: DefinitionError[];
  agentsFrom: DefinitionSource;
  workspaceTrusted: boolean;
}

/** What an agent's name finds among the configured agents. */
export type AgentLookup =
  | { found: AgentDefinition }
  /** An entry of that name is there but is wrong: its error names the field. */
  | { invalid: DefinitionError }
  /** No entry of that name; `restricted`: only the user's settings were looked in (the workspace is not trusted). */
  | { missing: { restricted: boolean } };

/** The configured agent named `name`, or why there is none to launch. */
export function findAgent(name: string, configured: ConfiguredAgents): AgentLookup {
  const found = configured.agents.find((a) => a.name === name);
  if (found) return { found };
  const invalid = configured.agentErrors.find((e) => e.entry.endsWith(`("${name}")`));
  if (invalid) return { invalid };
  return { missing: { restricted: !configured.workspaceTrusted } };
}

/** A configured agent that may launch now, and the settings level that defines it. */
export interface LaunchableAgent {
  definition: AgentDefinition;
  from: 'user' | 'workspace';
}

/** The configured agents that may launch now (in Restricted Mode the settings hold only the user's). */
export function launchableAgents(configured: Pick<ConfiguredAgents, 'agents' | 'agentsFrom'>): LaunchableAgent[] {
  const from = configured.agentsFrom === 'workspace' ? 'workspace' : 'user';
  return configured.agents.map((definition) => ({ definition, from }));
}

/** A definition ready to launch. */
export interface ResolvedDefinition {
  /** Variables expanded; a relative `cwd` made absolute against the first workspace folder, when there is one. */
  definition: AgentDefinition;
  /** Where it runs when the definition names no folder: the first workspace folder, if any. */
  defaultCwd: string | undefined;
}

/**
 * Expands the variables of `def` and resolves its folder. Without a workspace folder, `${workspaceFolder}` stays as
 * written and a relative `cwd` stays relative (to the process that spawns it).
 */
export function resolveDefinition(def: AgentDefinition, context: LaunchContext): ResolvedDefinition {
  const workspaceFolder = context.workspaceFolders[0];
  const expanded = expandVariables(def, { workspaceFolder, userHome: context.userHome, env: context.env });
  const cwd = expanded.cwd;
  const definition = cwd && workspaceFolder && !path.isAbsolute(cwd) ? { ...expanded, cwd: path.join(workspaceFolder, cwd) } : expanded;
  return { definition, defaultCwd: workspaceFolder };
}

/**
 * A command line the user typed, run by the platform's shell (`/bin/sh -c`; on Windows `%ComSpec%`, else cmd.exe,
 * with `/d /s /c`). Its name is the first word's file name (a quoted first word is one word).
 */
export function commandLineDefinition(
  line: string,
  platform: NodeJS.Platform = process.platform,
  env: NodeJS.ProcessEnv = process.env,
): AgentDefinition {
  const text = line.trim();
  // A quoted first word is one word ("C:\Program Files\x.exe", '/opt/my tool/x'); cmd.exe quotes only with ".
  const quoted = (platform === 'win32' ? /^"([^"]+)"/ : /^(?:"([^"]+)"|'([^']+)')/).exec(text);
  const first = quoted ? (quoted[1] ?? quoted[2]) : text.split(/\s+/)[0];
  const name = first.split(/[\\/]/).pop() || text;
  return platform === 'win32'
    ? { name, command: env.ComSpec ?? 'cmd.exe', args: ['/d', '/s', '/c', text] }
    : { name, command: '/bin/sh', args: ['-c', text] };
}
