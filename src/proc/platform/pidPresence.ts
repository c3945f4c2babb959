/**
 * Asking the kernel directly whether a pid exists, for when a table had no answer: a table's `read` answers
 * undefined both for "gone" and for "could not look", and under EMFILE a live process must not pass for a dead one.
 */
import * as fs from 'fs';
import { ProcessInfo } from './processTable';
import { parseProcStat } from './procParsers';

/**
 * Whether `pid` exists and what it is: 'gone' (no such process, or only a zombie left), 'unreadable' (it exists,
 * or may, and cannot be read: another platform than Linux, or an error), or the process. The one stat parser reads
 * it; only its start key and state are set (its epoch start time is not).
 */
export function pidPresence(pid: number): ProcessInfo | 'gone' | 'unreadable' {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return 'gone';
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return 'unreadable';
  }
  if (process.platform !== 'linux') return 'unreadable'; // exists (perhaps a zombie): cannot tell which
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ESRCH' ? 'gone' : 'unreadable';
  }
  const p = parseProcStat(text, 0, 0);
  if (!p) return 'unreadable';
  return p.state === 'Z' || p.state === 'X' ? 'gone' : p;
}
