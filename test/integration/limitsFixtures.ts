// Shared by runLimits.phased.test.ts (before a reload) and runLimits.afterReload.test.ts (after it).
import * as path from 'path';
import { api } from './fixtures';

/** What the host after the reload looks for: the run's tree, its limits, and the terminal it runs in. */
export interface LimitsHandover {
  treeId: string;
  shellPid: number;
  limits: Record<string, number>;
}

export async function limitsHandoverFile(): Promise<string> {
  return path.join(path.dirname((await api()).recordsDir), 'limits-handover.json');
}

/** Asks `probe` every 200 ms until it answers, for up to `timeoutMs`; its answer, or undefined. */
export async function eventually<T>(probe: () => Promise<T | undefined | false>, timeoutMs: number): Promise<T | undefined> {
  for (const end = Date.now() + timeoutMs; Date.now() < end; await new Promise((r) => setTimeout(r, 200))) {
    const answer = await probe();
    if (answer) return answer;
  }
  return undefined;
}
