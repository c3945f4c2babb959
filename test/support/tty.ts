/**
 * For the pseudo-terminal tests: the terminal program (test/fixtures/ttyprobe.py) and its report, and an outer
 * terminal, a real pseudo-terminal in which a command (the CLI, say) runs as it would in a user's terminal.
 */
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { events, ProbeEvent } from './ttyProbe';
import { REPO, tmpDir } from './repo';
import { waitFor } from './wait';
import { register } from './started';

export { events, PROBE, PYTHON } from './ttyProbe';
export type { ProbeEvent } from './ttyProbe';

export function reportFile(): string {
  return path.join(tmpDir('agent-trees-tty-'), 'report');
}

export function probeEvent(file: string, match: (e: ProbeEvent) => boolean, what: string, timeoutMs = 10_000): Promise<ProbeEvent> {
  return waitFor(what, () => events(file).find(match), timeoutMs).catch((e: Error) => {
    throw new Error(`${e.message}; events: ${JSON.stringify(events(file))}`);
  });
}

interface NodePty {
  pid: number;
  onData(l: (d: string) => void): void;
  onExit(l: (e: { exitCode: number; signal?: number }) => void): void;
  write(d: string): void;
  resize(c: number, r: number): void;
}

/** A command in a terminal of its own (the outer terminal a user types in), with its output collected. */
export class OuterTerminal {
  readonly pty: NodePty;
  output = '';
  readonly exited: Promise<{ exitCode: number; signal?: number }>;

  constructor(file: string, args: string[], size = { cols: 100, rows: 30 }, env: NodeJS.ProcessEnv = process.env) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const nodePty = require('@lydell/node-pty') as { spawn(f: string, a: string[], o: object): NodePty };
    this.pty = nodePty.spawn(file, args, { cols: size.cols, rows: size.rows, cwd: REPO, env, name: 'xterm-256color' });
    register(this.pty.pid);
    this.pty.onData((d) => (this.output += d));
    this.exited = new Promise((resolve) => this.pty.onExit(resolve));
  }

  async waitOutput(pattern: RegExp, what: string, timeoutMs = 10_000): Promise<RegExpMatchArray> {
    return waitFor(what, () => this.output.match(pattern) ?? undefined, timeoutMs).catch((e: Error) => {
      throw new Error(`${e.message}; output: ${JSON.stringify(this.output)}`);
    });
  }
}

/** Waits until `pid` is blocked in write(2) (the kernel's terminal buffer is full). */
export async function blockedInWrite(pid: number): Promise<void> {
  const write = process.arch === 'arm64' ? '64' : process.arch === 'x64' ? '1' : undefined;
  if (!write) return;
  await waitFor(`${pid} blocked in write(2)`, () => {
    try {
      return fs.readFileSync(`/proc/${pid}/syscall`, 'utf8').split(' ')[0] === write;
    } catch {
      return false;
    }
  });
}

export function assertSize(e: ProbeEvent, cols: number, rows: number): void {
  assert.deepStrictEqual(e.size, [cols, rows]);
}
