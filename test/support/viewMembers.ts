/** Plain data for the pure view tests (viewModel, viewInput): a member as a snapshot would list it. */
import type { MemberInfo } from '../../src/proc';
import { proc } from './synthetic';

/** A fixed "now" for the view tests, ms since the epoch. */
export const NOW = 1_800_000_000_000;

/** A member `pid` under `ppid`, in a group and session of its own, 10 MB and 1 s of CPU, started a minute ago. */
export function member(pid: number, ppid: number, command: string, extra: Partial<MemberInfo> = {}): MemberInfo {
  const p = proc(pid, {
    ppid,
    startKey: pid * 10,
    startTime: NOW - 60_000 + pid,
    uid: -1,
    name: command.split(' ')[0],
    rssBytes: 10 * 1048576,
    cpuMs: 1000,
  });
  return { ...p, command, ...extra };
}
