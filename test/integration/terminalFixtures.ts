// Shared by terminals.phased.test.ts (before a reload) and terminals.afterReload.test.ts (after it).
import * as path from 'path';
import { api } from './fixtures';

/** The terminal's shell and the processes it runs, by pid and start time, for the host after the reload. */
export interface Handover {
  shell: { pid: number; startTicks: number };
  children: { pid: number; startTicks: number }[];
}

export async function handoverFile(): Promise<string> {
  return path.join(path.dirname((await api()).recordsDir), 'terminals-handover.json');
}
