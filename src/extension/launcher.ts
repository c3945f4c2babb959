/**
 * Launch Agent: from an agent's name, a definition or the user's pick (a configured agent or a typed command line)
 * to a running agent in its terminal. What a launch runs is decided in src/agents/resolveDefinition.ts; this adds
 * what VS Code knows, the pick, and messages that name what is wrong.
 */
import * as vscode from 'vscode';
import { AgentDefinition, timeoutSecondsOf, validateDefinition } from '../agents/definition';
import { commandLineDefinition, findAgent, LaunchableAgent, launchableAgents, resolveDefinition } from '../agents/resolveDefinition';
import { AgentRun } from '../agents/runs';
import { SpawnError, TreeOwner } from '../proc';
import { recordsFolderProblem } from './recordsFolder';
import { Settings } from './settings';
import { AgentTerminals } from './terminal';
import { formatDuration } from './viewFormat';
import { launchContext } from './workspace';

export class Launcher {
  constructor(
    private readonly owner: TreeOwner,
    private readonly terminals: AgentTerminals,
    private readonly settings: () => Settings,
    /** Tells the user what is wrong in the settings, even if told before (the pick lists only the good entries). */
    private readonly reportSettingProblems: () => void,
  ) {}

  /** Resolves a definition or an agent's name and launches it. Throws with a message that names what is wrong. */
  async launch(arg: AgentDefinition | string, options: { interactive: boolean }): Promise<AgentRun> {
    let definition: AgentDefinition;
    if (typeof arg === 'string') {
      const lookup = findAgent(arg, this.settings());
      if ('invalid' in lookup) throw new Error(lookup.invalid.message);
      if ('missing' in lookup) {
        throw new Error(
          lookup.missing.restricted
            ? vscode.l10n.t(
                'No agent named "{0}" in the agentTrees.agents of your user settings; in Restricted Mode the workspace\'s definitions do not launch',
                arg,
              )
            : vscode.l10n.t('No agent named "{0}" in agentTrees.agents', arg),
        );
      }
      definition = lookup.found;
    } else {
      definition = validateDefinition(arg, vscode.l10n.t('agent definition'));
    }
    const resolved = resolveDefinition(definition, launchContext());
    // No tree starts without a record (the core refuses): said before a terminal opens for it.
    const recordsProblem = recordsFolderProblem(this.owner.store);
    if (recordsProblem) throw new Error(vscode.l10n.t('Cannot launch {0}: {1}', definition.name, recordsProblem));
    await this.owner.prepare(); // the cgroup probe, if it is still running (never blocking the host)
    try {
      return await this.terminals.launch(resolved.definition, { defaultCwd: resolved.defaultCwd, interactive: options.interactive });
    } catch (e) {
      if (e instanceof SpawnError) throw new Error(vscode.l10n.t('Cannot launch {0}: {1}', definition.name, e.message), { cause: e });
      throw e;
    }
  }

  /** The configured definitions that may launch now, with the settings level each comes from. */
  launchable(): LaunchableAgent[] {
    return launchableAgents(this.settings());
  }

  /** Launch Agent without an argument: the user picks an agent or types a command line. Returns the tree id. */
  async pickAndLaunch(): Promise<string | undefined> {
    this.reportSettingProblems();
    const settings = this.settings();
    type Item = vscode.QuickPickItem & { definition?: AgentDefinition; commandLine?: true; manageTrust?: true };
    const items: Item[] = this.launchable().map(({ definition: a, from }) => {
      const timeout = timeoutSecondsOf(a, settings.defaultTimeoutSeconds);
      return {
        label: `$(${a.kind === 'mcp' ? 'server-process' : 'hubot'}) ${a.name}`,
        description: [a.command, ...(a.args ?? [])].join(' '),
        detail: [
          // A definition from the workspace runs a command a repository chose: say so.
          ...(from === 'workspace' ? [`$(folder) ${vscode.l10n.t('defined by this workspace')}`] : []),
          timeout === 0 ? vscode.l10n.t('no timeout') : vscode.l10n.t('timeout {0}', formatDuration(timeout * 1000)),
        ].join(' · '),
        definition: a,
      };
    });
    items.push({ label: `$(terminal) ${vscode.l10n.t('Run a command line...')}`, commandLine: true });
    if (!settings.workspaceTrusted) {
      items.push({
        label: `$(workspace-untrusted) ${vscode.l10n.t('Restricted Mode: agents defined by this workspace are not offered')}`,
        detail: vscode.l10n.t(
          "Only your user settings' agentTrees.agents launch until you trust this workspace. Manage Workspace Trust...",
        ),
        manageTrust: true,
      });
    }
    const picked = await vscode.window.showQuickPick(items, {
      title: vscode.l10n.t('Launch Agent'),
      placeHolder: vscode.l10n.t('Choose an agent from agentTrees.agents, or run a command line'),
    });
    if (!picked) return undefined;
    if (picked.manageTrust) {
      await vscode.commands.executeCommand('workbench.trust.manage');
      return undefined;
    }
    let definition = picked.definition;
    if (picked.commandLine) {
      const line = await vscode.window.showInputBox({
        title: vscode.l10n.t('Run a command line as an owned tree'),
        prompt: vscode.l10n.t('Runs in a shell; everything it starts is owned'),
        placeHolder: 'claude --print "fix the tests"',
      });
      if (!line?.trim()) return undefined;
      definition = commandLineDefinition(line);
    }
    const run = await this.launch(definition!, { interactive: true });
    return run.id;
  }
}
