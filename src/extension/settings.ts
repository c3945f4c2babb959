/** The `agentTrees.*` settings, read with their defaults; a bad value is reported and its default used. */
import * as vscode from 'vscode';
import { AgentDefinition, DefinitionError, validateDefinitions } from '../agents/definition';
import { chooseDefinitions, DefinitionSource } from '../agents/definitionSource';

export interface Settings {
  /** The definitions that may launch: in a workspace that is not trusted, only those of the user's settings. */
  agents: AgentDefinition[];
  agentErrors: DefinitionError[];
  /** The settings level `agents` comes from. */
  agentsFrom: DefinitionSource;
  /** Whether the workspace is trusted (`vscode.workspace.isTrusted`) when these settings were read. */
  workspaceTrusted: boolean;
  /** The workspace set `agentTrees.agents`, and it was left out because the workspace is not trusted. */
  workspaceAgentsIgnored: boolean;
  defaultTimeoutSeconds: number;
  killGraceSeconds: number;
  timeoutWarningSeconds: number;
  sweepOnActivation: boolean;
  sweepIntervalMinutes: number;
  refreshIntervalMs: number;
  killDescendantsOnExit: boolean;
  cgroups: 'auto' | 'off';
  /** What happens to the processes a terminal's shell leaves running when the terminal closes. */
  terminalsOnClose: 'ask' | 'end' | 'keep';
  /** Settings whose value was unusable, with what was wrong (their defaults are used). */
  problems: string[];
}

const NUMBERS = {
  defaultTimeoutSeconds: { default: 1800, min: 0 },
  killGraceSeconds: { default: 5, min: 0 },
  timeoutWarningSeconds: { default: 60, min: 0 },
  sweepIntervalMinutes: { default: 10, min: 0 },
  refreshIntervalMs: { default: 1000, min: 100 },
} as const;

export function readSettings(): Settings {
  const config = vscode.workspace.getConfiguration('agentTrees');
  const problems: string[] = [];
  const num = (key: keyof typeof NUMBERS): number => {
    const spec = NUMBERS[key];
    const v = config.get<unknown>(key, spec.default);
    if (typeof v !== 'number' || !Number.isFinite(v) || v < spec.min) {
      problems.push(vscode.l10n.t('agentTrees.{0} must be a number of at least {1}; using {2}', key, spec.min, spec.default));
      return spec.default;
    }
    return v;
  };
  const bool = (key: string, def: boolean): boolean => {
    const v = config.get<unknown>(key, def);
    if (typeof v !== 'boolean') {
      problems.push(vscode.l10n.t('agentTrees.{0} must be true or false; using {1}', key, String(def)));
      return def;
    }
    return v;
  };
  const cgroupsValue = config.get<unknown>('cgroups', 'auto');
  if (cgroupsValue !== 'auto' && cgroupsValue !== 'off') problems.push(vscode.l10n.t('agentTrees.cgroups must be "auto" or "off"; using "auto"'));
  const onClose = config.get<unknown>('terminals.onClose', 'ask');
  if (onClose !== 'ask' && onClose !== 'end' && onClose !== 'keep') problems.push(vscode.l10n.t('agentTrees.terminals.onClose must be "ask", "end" or "keep"; using "ask"'));
  const workspaceTrusted = vscode.workspace.isTrusted;
  const chosen = chooseDefinitions(config.inspect<unknown>('agents'), workspaceTrusted);
  const { agents, errors } = validateDefinitions(chosen.value ?? []);
  return {
    agents,
    agentErrors: errors,
    agentsFrom: chosen.source,
    workspaceTrusted,
    workspaceAgentsIgnored: chosen.ignoredWorkspaceValue,
    defaultTimeoutSeconds: num('defaultTimeoutSeconds'),
    killGraceSeconds: num('killGraceSeconds'),
    timeoutWarningSeconds: num('timeoutWarningSeconds'),
    sweepOnActivation: bool('sweepOnActivation', true),
    sweepIntervalMinutes: num('sweepIntervalMinutes'),
    refreshIntervalMs: num('refreshIntervalMs'),
    killDescendantsOnExit: bool('killDescendantsOnExit', true),
    cgroups: cgroupsValue === 'off' ? 'off' : 'auto',
    terminalsOnClose: onClose === 'end' || onClose === 'keep' ? onClose : 'ask',
    problems,
  };
}
