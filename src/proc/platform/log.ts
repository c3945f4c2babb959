/** The logging surface the core writes to. A VS Code `LogOutputChannel` fits it as it is. */
export interface Logger {
  trace(message: string): void;
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const silentLogger: Logger = { trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/** A logger that writes `[level] message` lines to stderr, for the command line. */
export function stderrLogger(verbose: boolean): Logger {
  const write = (level: string) => (message: string) => process.stderr.write(`agent-trees: ${level}${message}\n`);
  const off = () => {};
  return {
    trace: off,
    debug: verbose ? write('') : off,
    info: verbose ? write('') : off,
    warn: write('warning: '),
    error: write('error: '),
  };
}
