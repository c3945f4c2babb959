/** Running a command to its end without blocking the event loop, bounded in time. */
import { execFile } from 'child_process';

export type ExecAsync = (file: string, args: string[], timeoutMs: number) => Promise<{ code: number; stdout: string }>;

/** Runs `file` with `args`; resolves with its exit code (1 when it could not run or timed out) and its output. */
export const execAsync: ExecAsync = (file, args, timeoutMs) =>
  new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs, windowsHide: true, encoding: 'utf8' }, (error, stdout) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? (error as { code: number }).code : 1) : 0;
      resolve({ code, stdout: stdout ?? '' });
    });
  });
