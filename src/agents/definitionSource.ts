/**
 * Which level of the settings the `agentTrees.agents` value comes from, and which levels may count. A definition
 * runs any command, and a cloned repository's `.vscode/settings.json` can set one: in a workspace that is not
 * trusted only the user's own settings count. VS Code already leaves restricted workspace values out there
 * (`capabilities.untrustedWorkspaces.restrictedConfigurations`); this check does not depend on it. Pure (no `vscode`).
 */

/** `user`: the user's settings (local or remote); `workspace`: the workspace or a folder of it; `default`: neither. */
export type DefinitionSource = 'user' | 'workspace' | 'default';

/** The levels of `WorkspaceConfiguration.inspect()` that matter here. */
export interface InspectedValue {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

export interface ChosenValue {
  value: unknown;
  source: DefinitionSource;
  /** A workspace level set a value that was left out because the workspace is not trusted. */
  ignoredWorkspaceValue: boolean;
}

/**
 * The value VS Code's precedence gives (folder, then workspace, then user, then default: arrays replace, they do
 * not merge), with the workspace levels left out when the workspace is not trusted.
 */
export function chooseDefinitions(inspected: InspectedValue | undefined, workspaceTrusted: boolean): ChosenValue {
  const i = inspected ?? {};
  const workspaceValue = i.workspaceFolderValue !== undefined ? i.workspaceFolderValue : i.workspaceValue;
  if (workspaceValue !== undefined) {
    if (workspaceTrusted) return { value: workspaceValue, source: 'workspace', ignoredWorkspaceValue: false };
  }
  const ignoredWorkspaceValue = workspaceValue !== undefined;
  if (i.globalValue !== undefined) return { value: i.globalValue, source: 'user', ignoredWorkspaceValue };
  return { value: i.defaultValue, source: 'default', ignoredWorkspaceValue };
}
