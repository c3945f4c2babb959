/** Short texts for the view, the pickers and the notifications: durations, command lines (sizes: `formatBytes`, in the core). Pure. */

/** `m:ss`, or `h:mm:ss` from an hour on; never negative. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}` : `${m}:${String(sec).padStart(2, '0')}`;
}

/** The program's name (no folder) and its first arguments, at most `max` characters. */
export function commandLabel(command: string, max = 80): string {
  const [exe, ...rest] = command.split(' ');
  const name = exe.split('/').pop() || exe;
  const label = [name, ...rest].join(' ');
  return label.length > max ? label.slice(0, max - 1) + '…' : label;
}

/** Escapes text for a Markdown tooltip. */
export function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, '\\$&');
}
