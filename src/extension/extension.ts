/**
 * Entry point of the Agent Trees extension: activation wires the controller up; deactivation tears down every
 * owned tree with plain Node calls within the ~5 s VS Code allows.
 */
import * as vscode from 'vscode';
import type { AgentTreesApi } from './api';
import { AgentTreesController } from './controller';
import { AgentTreesTestExports, exposesTestHooks } from './testHooks';

export type { AgentTreesApi } from './api';

let controller: AgentTreesController | undefined;

/** When this module (the last of the bundle) was evaluated: bundle load time = this - the banner's start. */
const bundleEvaluatedAt = performance.now();

/**
 * Called by VS Code on activation (`onStartupFinished`, or a command or the view). Returns the API; a development
 * or test host's exports carry the test hooks besides (`testHooks`), an installed extension's never.
 */
export function activate(context: vscode.ExtensionContext): AgentTreesApi | AgentTreesTestExports {
  const started = performance.now();
  const log = vscode.window.createOutputChannel('Agent Trees', { log: true });
  context.subscriptions.push(log);
  controller = new AgentTreesController(context, log);
  context.subscriptions.push(controller);
  const loadStart = (globalThis as { __agentTreesLoadStart?: number }).__agentTreesLoadStart;
  const timings = { loadMs: loadStart === undefined ? undefined : bundleEvaluatedAt - loadStart, activateMs: performance.now() - started };
  log.info(
    `activated in ${timings.activateMs.toFixed(1)} ms` +
      (timings.loadMs === undefined ? '' : ` (bundle loaded in ${timings.loadMs.toFixed(1)} ms)`),
  );
  const api = controller.api();
  if (!exposesTestHooks(context.extensionMode)) return api;
  log.info(`test hooks in the exports (extension mode ${vscode.ExtensionMode[context.extensionMode]})`);
  return { ...api, testHooks: controller.testHooks(timings) };
}

/** Called by VS Code on reload or close: every owned tree ends (short grace, then SIGKILL), the record goes. */
export async function deactivate(): Promise<void> {
  const c = controller;
  controller = undefined;
  await c?.shutdown();
}
