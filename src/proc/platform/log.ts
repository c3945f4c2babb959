/** The logging surface the core writes to. A VS Code `LogOutputChannel` fits it as it is. */
export interface Logger {
  trace(message: string): void;
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

/** Translates a message with `{n}` placeholders: `vscode.l10n` in the extension, `asWritten` elsewhere. */
export interface Localizer {
  t(message: string, ...args: Array<string | number | boolean>): string;
}

/** What `vscode.l10n.t` does with no translation: the English as written, `{n}` replaced by the n-th argument. */
export const asWritten: Localizer = { t: (message, ...args) => message.replace(/\{(\d+)\}/g, (_, i) => String(args[Number(i)])) };

/** "1 tree", "2 trees" (`many` where "s" is not the plural): for the log and the command line, not translated. */
export function counted(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "1 process", "2 processes" (see `counted`). */
export function processCount(n: number): string {
  return counted(n, 'process', 'processes');
}

/** A size as the log, the command line and the view show it: "612 MB", "1.5 GB", "40 KB" (units of 1024). */
export function formatBytes(n: number): string {
  if (n >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(1)} GB`;
  if (n >= 1024 ** 2) return `${(n / 1024 ** 2).toFixed(0)} MB`;
  return `${Math.round(n / 1024)} KB`;
}

/** A moment as the log shows it: local date and time to the second, "2026-12-01 21:41:18". */
export function localTime(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

export const silentLogger: Logger = { trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/** A logger that writes `[level] message` lines to stderr, for the command line. */
export function stderrLogger(verbose: boolean, sink: (text: string) => unknown = (text) => process.stderr.write(text)): Logger {
  const write = (level: string) => (message: string) => sink(`agent-trees: ${level}${message}\n`);
  const off = () => {};
  return {
    trace: off,
    debug: verbose ? write('') : off,
    info: verbose ? write('') : off,
    warn: write('warning: '),
    error: write('error: '),
  };
}
