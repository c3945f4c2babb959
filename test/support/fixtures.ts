/**
 * The fixture trees' pid files (test/fixtures/tree.sh and the scripts of the tests): `ROLE PID` lines, written as
 * each process starts, and `ready` once the tree stands (`unsupported` when it cannot be built here).
 */
import * as fs from 'fs';
import { register as registerStarted } from './started';
import { waitFor } from './wait';

export interface FixturePids {
  /** role -> pids, in the order the fixture wrote them. */
  roles: Map<string, number[]>;
  /** Every pid but the `unsupported` line's. */
  all: number[];
}

/** What `file` holds so far ('' before it exists). */
export function fileText(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** The `ROLE PID` lines of `file` so far, as role -> pids. */
export function rolesIn(file: string): Map<string, number[]> {
  const roles = new Map<string, number[]>();
  for (const line of fileText(file).split('\n')) {
    const [role, pid] = line.split(' ');
    if (role && pid !== undefined) roles.set(role, [...(roles.get(role) ?? []), Number(pid)]);
  }
  return roles;
}

/** The first pid of `role` in `file`, once there. */
export function roleIn(file: string, role: string): number | undefined {
  return rolesIn(file).get(role)?.[0];
}

/** Waits until `file` names `role`; resolves with every role so far. */
export function rolesOnce(file: string, role: string, timeoutMs = 10_000): Promise<Map<string, number[]>> {
  return waitFor(`"${role}" in ${file}`, () => (rolesIn(file).has(role) ? rolesIn(file) : undefined), timeoutMs);
}

/**
 * Waits until a fixture's pid file says `ready` (or `unsupported`), then reads it, registering every pid with
 * `register` (the test run's registry unless given: the benchmark has its own).
 */
export async function fixturePids(
  pidfile: string,
  options: { timeoutMs?: number; register?: (pid: number) => void } = {},
): Promise<FixturePids> {
  const { timeoutMs = 10_000, register = registerStarted } = options;
  await waitFor(`fixture ${pidfile} to be ready`, () => /^(ready|unsupported) /m.test(fileText(pidfile)), timeoutMs);
  const roles = rolesIn(pidfile);
  roles.delete('ready');
  for (const [role, pids] of roles) if (role !== 'unsupported') for (const pid of pids) if (pid > 0) register(pid);
  const all = [...roles.entries()].filter(([role]) => role !== 'unsupported').flatMap(([, pids]) => pids);
  return { roles, all };
}
