// Shared by the integration tests: fixture trees (test/fixtures/tree.sh), their pids, and the extension's API.
import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';
import type { AgentTreesApi } from '../../src/extension/controller';
import { EXTENSION_ID, processes, REPO, waitFor } from './harness';

export { REPO };
export const FIXTURE = path.join(REPO, 'test', 'fixtures', 'tree.sh');

export function pidFile(): string {
  return path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-it-')), 'pids');
}

/** "role pid" lines of a fixture, once it wrote `ready`. */
export async function fixturePids(file: string): Promise<Map<string, number[]>> {
  assert.ok(
    await waitFor(() => fs.existsSync(file) && /^ready /m.test(fs.readFileSync(file, 'utf8')), 10_000),
    `fixture ${file} not ready`,
  );
  const roles = new Map<string, number[]>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const [role, pid] = line.split(' ');
    if (role && pid && role !== 'ready') roles.set(role, [...(roles.get(role) ?? []), Number(pid)]);
  }
  return roles;
}

export const allPids = (roles: Map<string, number[]>) => [...roles.values()].flat();
export const anyAlive = (pids: number[]) => pids.filter((p) => processes.isAlive(p));

export async function api(): Promise<AgentTreesApi> {
  return vscode.extensions.getExtension<AgentTreesApi>(EXTENSION_ID)!.activate();
}

/** What a phase leaves for the next one to check: this host, its record file, and its processes. */
export interface HostHandover {
  hostPid: number;
  recordFile: string;
  helpers: { pid: number; startTicks: number }[];
}

function handoverFile(trees: AgentTreesApi, name: string): string {
  return path.join(path.dirname(trees.recordsDir), `${name}-handover.json`);
}

/** Writes the handover for `pids` (processes of this host's trees) into the extension's global storage. */
export async function writeHandover(name: string, pids: number[]): Promise<HostHandover> {
  const trees = await api();
  const handover: HostHandover = {
    hostPid: process.pid,
    recordFile: path.join(trees.recordsDir, `${process.pid}.json`),
    helpers: pids.map((pid) => ({ pid, startTicks: processes.readStat(pid)!.startTicks })),
  };
  assert.ok(fs.existsSync(handover.recordFile), 'this host records its trees');
  fs.writeFileSync(handoverFile(trees, name), JSON.stringify(handover));
  return handover;
}

export async function readHandover(name: string): Promise<HostHandover & { alive(): number[] }> {
  const handover: HostHandover = JSON.parse(fs.readFileSync(handoverFile(await api(), name), 'utf8'));
  assert.notStrictEqual(process.pid, handover.hostPid, 'a new extension host');
  return { ...handover, alive: () => handover.helpers.filter((h) => processes.isAlive(h.pid, h.startTicks)).map((h) => h.pid) };
}
