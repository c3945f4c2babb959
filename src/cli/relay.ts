/**
 * `agent-trees run -- claude` typed in a terminal: the agent gets a pseudo-terminal of its own, relayed to this
 * one the way `script` and tmux do it. `run` starts the agent in a new session (that is how it owns it), so the
 * caller's terminal cannot be the agent's controlling tty; a terminal of its own can. This terminal goes into raw
 * mode, so every byte (Ctrl-C, Ctrl-Z and Ctrl-D too) reaches the agent's tty, which does with it what any
 * terminal does: Ctrl-C interrupts the agent, not `run`. The window size is passed on at start and on every
 * SIGWINCH. The terminal's mode is restored on every way out: the agent's exit, a timeout, a signal to `run`,
 * an uncaught error (the 'exit' event), and it is set raw again after `run` was stopped and continued.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import { clampSize, PtyRoot, RESTORE_TERMINAL_MODES } from '../proc';
import { openTerminalOutput, TerminalOutput } from './terminalOutput';

/** The caller's terminal: a tty input that can be put in raw mode, and where output goes. */
export interface RelayTerminal {
  input: NodeJS.ReadStream & { isRaw?: boolean; setRawMode?(mode: boolean): unknown };
  output: NodeJS.WritableStream;
  /** The window size now (the first tty among stdout and stderr), or undefined. */
  size(): { cols: number; rows: number } | undefined;
  /** After raw mode: turns output processing off too (see `rawOutput`). */
  rawOutput?(): void;
}

/**
 * libuv's raw mode leaves output processing on (\n becomes \r\n), which would change what the agent's own
 * terminal already processed: a full-screen program's bare \n (down one line, same column) would jump to the
 * first column. `stty -opost` on our stdin turns it off as cfmakeraw() does; leaving raw mode restores the
 * whole saved mode, this included.
 */
function rawOutput(): void {
  try {
    execFileSync('stty', ['-opost'], { stdio: ['inherit', 'ignore', 'ignore'], timeout: 2000 });
  } catch {
    /* no stty: output gets an extra \r before each \n, which a terminal shows the same */
  }
}

/** This process's stdout as the relay writes it (opened once). */
let stdoutTerminal: NodeJS.WritableStream | undefined;

/**
 * stdin, stdout (written without blocking where it is a terminal: see terminalOutput.ts) and the window size of
 * whichever of stdout and stderr is a terminal.
 */
export function processTerminal(): RelayTerminal {
  return {
    input: process.stdin,
    output: (stdoutTerminal ??= openTerminalOutput(1, process.stdout) ?? process.stdout),
    rawOutput,
    size: () => {
      for (const s of [process.stdout, process.stderr]) {
        if (s.isTTY) {
          const [cols, rows] = s.getWindowSize();
          return clampSize(cols, rows);
        }
      }
      return undefined;
    },
  };
}

/**
 * Whether `run` relays a terminal of the agent's own: its stdin is a terminal it can put in raw mode, and it is
 * in that terminal's foreground. A background job (`agent-trees run ... &`) must not touch the terminal (the
 * kernel would stop it for reading or setting it): it passes its own stdio on to the agent.
 */
export function relayWanted(input: RelayTerminal['input'] = process.stdin, foreground: () => boolean = inForeground): boolean {
  return input.isTTY === true && typeof input.setRawMode === 'function' && foreground();
}

/** Whether this process's group is the foreground group of its controlling terminal. */
function inForeground(): boolean {
  try {
    if (process.platform === 'linux') {
      const stat = fs.readFileSync('/proc/self/stat', 'latin1');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return f[2] === f[5]; // pgrp, tpgid
    }
    const [tpgid, pgid] = execFileSync('ps', ['-o', 'tpgid=,pgid=', '-p', String(process.pid)], { encoding: 'utf8', timeout: 2000 })
      .trim()
      .split(/\s+/);
    return tpgid === pgid;
  } catch {
    return false;
  }
}

/** What looks at the relayed bytes on their way: the input as latin1 strings (one character per byte), the output as it came. */
export interface RelayWatch {
  input(text: string): void;
  output(data: Buffer | string): void;
}

export class TtyRelay {
  private restored = true;
  private wasRaw = false;
  private readonly subscriptions: (() => void)[] = [];

  constructor(
    private readonly root: PtyRoot,
    private readonly terminal: RelayTerminal = processTerminal(),
    private readonly watch?: RelayWatch,
  ) {}

  private watched(data: Buffer | string, look: (text: string) => void): void {
    look(typeof data === 'string' ? data : data.toString('latin1'));
  }

  start(): void {
    const { input, output } = this.terminal;
    this.wasRaw = input.isRaw === true;
    this.restored = false;
    input.setRawMode?.(true);
    this.terminal.rawOutput?.();
    const watch = this.watch;
    const onInput = (data: Buffer | string) => {
      if (watch) this.watched(data, watch.input);
      this.root.write(data);
    };
    input.on('data', onInput);
    input.resume();
    this.subscriptions.push(() => input.off('data', onInput));

    const onOutput = (data: Buffer | string) => {
      watch?.output(data);
      // A slow reader (stdout on a pipe) holds the agent back instead of filling this process's memory.
      if (!output.write(data)) {
        this.root.pause();
        output.once('drain', () => this.root.resume());
      }
    };
    this.root.on('data', onOutput);
    // A terminal that hung up fails writes with EIO: the kill that follows must not die of it.
    const onOutputError = () => {};
    output.on('error', onOutputError);
    this.subscriptions.push(() => this.root.off('data', onOutput));

    const onWinch = () => {
      const size = this.terminal.size();
      if (size) this.root.resize(size.cols, size.rows);
    };
    const onCont = () => {
      // Whoever ran while we were stopped (a shell) may have reset the terminal.
      if (!this.restored) {
        input.setRawMode?.(true);
        this.terminal.rawOutput?.();
      }
      onWinch();
    };
    const onExit = () => this.restore();
    process.on('SIGWINCH', onWinch);
    process.on('SIGCONT', onCont);
    process.on('exit', onExit);
    this.subscriptions.push(
      () => process.off('SIGWINCH', onWinch),
      () => process.off('SIGCONT', onCont),
      () => process.off('exit', onExit),
    );
    onWinch(); // a resize between spawn and now
  }

  /**
   * Waits (up to `ms`) for the agent's terminal to deliver its last output and for this terminal to take it, then
   * restores this terminal.
   */
  async drainAndRestore(ms = 1000): Promise<void> {
    if (!this.root.hasExited) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        this.root.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    await this.flush(ms);
    this.restore();
  }

  /** Waits (up to `ms`) until this terminal has taken what was written to it; whether it has. */
  async flush(ms: number): Promise<boolean> {
    const output = this.terminal.output;
    return output instanceof TerminalOutput ? output.flush(ms) : true;
  }

  /**
   * Puts the terminal back as it was; safe to call more than once, and synchronous (for the 'exit' event). A
   * terminal that has stopped reading keeps its mode until this process exits: leaving raw mode waits until the
   * terminal has read all output (tcsetattr TCSADRAIN), and Node sets the mode it started with back at exit
   * without waiting.
   */
  restore(): void {
    if (this.restored) return;
    this.restored = true;
    for (const off of this.subscriptions.splice(0)) off();
    const { input, output } = this.terminal;
    const stalled = output instanceof TerminalOutput && output.writableLength > 0;
    try {
      // What a killed full-screen agent left on (kitty's keyboard protocol makes the shell unusable in VS Code 1.139).
      output.write(RESTORE_TERMINAL_MODES);
    } catch {
      /* the terminal is gone (hangup) */
    }
    try {
      if (!stalled) input.setRawMode?.(this.wasRaw);
    } catch {
      /* the terminal is gone (hangup): nothing to restore */
    }
    input.pause();
  }
}
