// The real `claude` (npm @anthropic-ai/claude-code, installed by scripts/host/agentPackages.js) for the integration
// tests, against the project's own model endpoint (test/fixtures/agents/modelEndpoint.js) running in this extension
// host: a folder to work in, a HOME that skips the onboarding, the environment that points claude at the endpoint,
// and scripted turns. Gated on the package being installable: without it, the suite that asks is skipped with why.
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { REPO } from '../support/repo';

/* eslint-disable @typescript-eslint/no-require-imports -- the fixtures are plain JavaScript shared with the scripts */
const agentPackages = require(path.join(REPO, 'scripts', 'host', 'agentPackages.js')) as {
  requireAgents(names: string[]): { ok: boolean; why?: string; status: unknown };
  binOf(status: unknown, name: string): string | undefined;
};
const endpointModule = require(path.join(REPO, 'test', 'fixtures', 'agents', 'modelEndpoint.js')) as {
  startModelEndpoint(options: { turns: unknown[] }): Promise<ModelEndpoint>;
  turns: { bash(command: string, description?: string): unknown; text(text: string): unknown };
};
const claudeRunner = require(path.join(REPO, 'test', 'fixtures', 'agents', 'claudeRunner.js')) as {
  makeClaudeHome(o: { cwd: string }): { dir: string; apiKey: string };
  claudeEnv(o: { home: { dir: string; apiKey: string }; baseUrl: string }): Record<string, string>;
};
const { TerminalScreen } = require(path.join(REPO, 'test', 'fixtures', 'agents', 'terminalScreen.js')) as {
  TerminalScreen: new (cols: number, rows: number) => { write(data: string): void; text(): string };
};
/* eslint-enable @typescript-eslint/no-require-imports */

/** What a terminal shows after `output` (claude draws words at columns: its raw output runs them together). */
export function screenOf(output: string | undefined, cols = 200, rows = 60): string {
  const screen = new TerminalScreen(cols, rows);
  screen.write(output ?? '');
  return screen
    .text()
    .split('\n')
    .filter((l) => l.trim())
    .join('\n');
}

export const turns = endpointModule.turns;

export interface ModelEndpoint {
  url: string;
  requests: { at: number; kind: string }[];
  close(): Promise<void>;
}

/** The claude executable (node_modules/.bin/claude of the installed package), or why there is none. */
export function claudeOrWhy(): { claude?: string; why?: string } {
  const got = agentPackages.requireAgents(['@anthropic-ai/claude-code']);
  if (!got.ok) return { why: got.why };
  const claude = agentPackages.binOf(got.status, 'claude');
  return claude ? { claude } : { why: 'node_modules/.bin/claude is missing' };
}

export interface ClaudeSession {
  claude: string;
  endpoint: ModelEndpoint;
  /** The folder claude works in (trusted in its HOME). */
  cwd: string;
  /** What claude's environment needs on top of ours: HOME, the endpoint, the key, no updater or telemetry. */
  env: Record<string, string>;
  /** When the endpoint answered its n-th main-loop request (the turn it took), ms since the epoch. */
  turnAnsweredAt(turn: number): number | undefined;
  close(): Promise<void>;
}

/** An endpoint that answers `scripted` in order, a folder and a HOME for claude. */
export async function claudeSession(claude: string, scripted: unknown[]): Promise<ClaudeSession> {
  const endpoint = await endpointModule.startModelEndpoint({ turns: scripted });
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-claude-'));
  const home = claudeRunner.makeClaudeHome({ cwd });
  const full = claudeRunner.claudeEnv({ home, baseUrl: endpoint.url });
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(full)) if (process.env[k] !== v) env[k] = v;
  return {
    claude,
    endpoint,
    cwd,
    env,
    turnAnsweredAt: (turn) => endpoint.requests.filter((r) => r.kind === 'messages')[turn]?.at,
    close: async () => {
      await endpoint.close();
      // claude may still be writing its session files as its tree goes.
      fs.rmSync(cwd, { recursive: true, force: true, maxRetries: 5 });
      fs.rmSync(home.dir, { recursive: true, force: true, maxRetries: 5 });
    },
  };
}

/** A Bash command that starts helpers that outlive claude (a `setsid` one in a session of its own, a background one), writing their pids. */
export function helpersCommand(dir: string): { command: string; files: string[] } {
  const a = path.join(dir, 'setsid.pid');
  const b = path.join(dir, 'background.pid');
  return {
    command: `setsid sh -c 'echo $$ > ${a}; exec sleep 300' & sh -c 'echo $$ > ${b}; exec sleep 301' & sleep 0.2; echo started`,
    files: [a, b],
  };
}

/** The pids in `files`, once every one holds a pid; undefined until then. */
export function pidsIn(files: string[]): number[] | undefined {
  const pids = files.map((f) => (fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8').trim()) : NaN));
  return pids.every((p) => p > 0) ? pids : undefined;
}
