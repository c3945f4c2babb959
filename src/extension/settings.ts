/** The `agentTrees.*` settings, read with their defaults; a bad value is reported and its default used. */
import * as vscode from 'vscode';
import { AgentDefinition, DefinitionError, validateDefinitions } from '../agents/definition';
import { chooseDefinitions, DefinitionSource } from '../agents/definitionSource';
import { GivenLimits, LIMIT_FIELDS, limitProblem } from '../proc';

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
  /** Between periodic sweeps; 0 = none. */
  sweepIntervalSeconds: number;
  /** Between refreshes of the view while it is visible. */
  refreshIntervalSeconds: number;
  killDescendantsOnExit: boolean;
  cgroups: 'auto' | 'off';
  /** What happens to the processes a terminal's shell leaves running when the terminal closes. */
  terminalsOnClose: 'ask' | 'end' | 'keep';
  /** Other extensions' processes of this extension host: shown and ended when the host goes, shown only, or neither. */
  otherExtensionsMode: 'end' | 'keep' | 'off';
  /** Extensions whose processes are never ended (ids, `publisher.name`; `vscode` for VS Code's own). */
  otherExtensionsKeep: string[];
  /** `agentTrees.limits.*`: the limits of every owned tree whose definition sets none of its own (0 = none). */
  limits: GivenLimits;
  /** Whether Claude Code and Codex get their notification hooks at launch (`agentTrees.attention.hooks`). */
  attentionHooks: boolean;
  /** Settings whose value was unusable, with what was wrong (their defaults are used). */
  problems: string[];
  /** Deprecated settings that are set and count (their new name is not set), with the name to use instead. */
  deprecated: string[];
}

interface NumberSpec {
  default: number;
  min: number;
  /** The setting's deprecated name, and how many seconds one of its units is. */
  alias?: { key: string; secondsPerUnit: number };
}

/** Durations are in seconds; the older names in other units keep working, and count only if the new name is unset. */
const NUMBERS = {
  defaultTimeoutSeconds: { default: 1800, min: 0 },
  killGraceSeconds: { default: 5, min: 0 },
  timeoutWarningSeconds: { default: 60, min: 0 },
  sweepIntervalSeconds: { default: 600, min: 0, alias: { key: 'sweepIntervalMinutes', secondsPerUnit: 60 } },
  refreshIntervalSeconds: { default: 1, min: 0.1, alias: { key: 'refreshIntervalMs', secondsPerUnit: 0.001 } },
} satisfies Record<string, NumberSpec>;

/** Whether any level of the settings (user, workspace, folder, or one of their language sections) sets `key`. */
function isSet(config: vscode.WorkspaceConfiguration, key: string): boolean {
  const i = config.inspect(key);
  if (!i) return false;
  const levels = [
    i.globalValue,
    i.workspaceValue,
    i.workspaceFolderValue,
    i.globalLanguageValue,
    i.workspaceLanguageValue,
    i.workspaceFolderLanguageValue,
  ];
  return levels.some((v) => v !== undefined);
}

export function readSettings(): Settings {
  const config = vscode.workspace.getConfiguration('agentTrees');
  const problems: string[] = [];
  const deprecated: string[] = [];
  const checked = (key: string, spec: { default: number; min: number }): number => {
    const v = config.get<unknown>(key, spec.default);
    if (typeof v !== 'number' || !Number.isFinite(v) || v < spec.min) {
      problems.push(vscode.l10n.t('agentTrees.{0} must be a number of at least {1}; using {2}', key, spec.min, spec.default));
      return spec.default;
    }
    return v;
  };
  const num = (key: keyof typeof NUMBERS): number => {
    const spec: NumberSpec = NUMBERS[key];
    const alias = spec.alias;
    // The old name first: it is rarely set, and each look through the layers costs the host about a millisecond.
    // `get` cannot tell: VS Code gives a setting declared without a default its type's (0 for a number).
    if (!alias || !isSet(config, alias.key) || isSet(config, key)) return checked(key, spec);
    deprecated.push(`agentTrees.${alias.key} (use agentTrees.${key}, in seconds)`);
    const inUnits = checked(alias.key, { default: spec.default / alias.secondsPerUnit, min: spec.min / alias.secondsPerUnit });
    return inUnits * alias.secondsPerUnit;
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
  if (cgroupsValue !== 'auto' && cgroupsValue !== 'off')
    problems.push(vscode.l10n.t('agentTrees.cgroups must be "auto" or "off"; using "auto"'));
  const onClose = config.get<unknown>('terminals.onClose', 'ask');
  if (onClose !== 'ask' && onClose !== 'end' && onClose !== 'keep')
    problems.push(vscode.l10n.t('agentTrees.terminals.onClose must be "ask", "end" or "keep"; using "ask"'));
  const otherMode = config.get<unknown>('otherExtensions.mode', 'end');
  if (otherMode !== 'end' && otherMode !== 'keep' && otherMode !== 'off')
    problems.push(vscode.l10n.t('agentTrees.otherExtensions.mode must be "end", "keep" or "off"; using "end"'));
  const otherKeep = config.get<unknown>('otherExtensions.keep', []);
  const keepOk = Array.isArray(otherKeep) && otherKeep.every((k) => typeof k === 'string');
  if (!keepOk) problems.push(vscode.l10n.t('agentTrees.otherExtensions.keep must be a list of extension ids; using none'));
  const limits: GivenLimits = {};
  for (const field of LIMIT_FIELDS) {
    const v = config.get<unknown>(`limits.${field}`, 0);
    const problem = limitProblem(field, v);
    if (problem) problems.push(vscode.l10n.t('agentTrees.limits.{0} {1}; using 0 (no limit)', field, problem));
    else limits[field] = v as number;
  }
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
    sweepIntervalSeconds: num('sweepIntervalSeconds'),
    refreshIntervalSeconds: num('refreshIntervalSeconds'),
    killDescendantsOnExit: bool('killDescendantsOnExit', true),
    cgroups: cgroupsValue === 'off' ? 'off' : 'auto',
    terminalsOnClose: onClose === 'end' || onClose === 'keep' ? onClose : 'ask',
    otherExtensionsMode: otherMode === 'keep' || otherMode === 'off' ? otherMode : 'end',
    otherExtensionsKeep: keepOk ? (otherKeep as string[]) : [],
    limits,
    attentionHooks: bool('attention.hooks', true),
    problems,
    deprecated,
  };
}
