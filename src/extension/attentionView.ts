/**
 * What the view shows of an agent's attention state (src/agents/attention.ts): a waiting agent's row gets the bell
 * icon, "waiting for you" and the agent's own words before the rest of its description, and goes first; an idle
 * one says "idle" where a running one says "running". Pure: no `vscode`; strings go through the `l10n` passed in.
 */
import type { AttentionState } from '../agents/attention';
import type { Localizer } from '../agents/runs';

/** An agent's attention state as the view reads it. */
export interface AttentionInput {
  state: AttentionState;
  message?: string;
  detail?: string;
  since: number;
}

export interface AttentionShown {
  /** Replaces the row's "running" (or, for `agent-trees run`, comes after its first words). */
  words?: string;
  icon?: { id: string; color?: string };
  /** For the tooltip: what it waits for. */
  tooltip?: string;
  /** While it waits: when it began (rows that wait go first, the longest waiting first). */
  waitingSince?: number;
  signature: string;
}

export function attentionShown(a: AttentionInput | undefined, l10n: Localizer): AttentionShown {
  if (!a || a.state === 'working') return { signature: '' };
  if (a.state === 'idle') return { words: l10n.t('idle'), signature: 'idle' };
  const words = a.message ? l10n.t('waiting for you: {0}', a.message) : l10n.t('waiting for you');
  return {
    words,
    icon: { id: 'bell-dot', color: 'charts.yellow' },
    tooltip: [words, a.detail].filter(Boolean).join('\n\n'),
    waitingSince: a.since,
    signature: `waiting|${a.since}|${a.message ?? ''}|${a.detail ?? ''}`,
  };
}

/** The rows in their order, those that wait first (the longest waiting first); the rest keep their order. */
export function waitingFirst<R>(rows: { row: R; waitingSince?: number }[]): R[] {
  const waiting = rows.filter((r) => r.waitingSince !== undefined).sort((a, b) => a.waitingSince! - b.waitingSince!);
  return [...waiting, ...rows.filter((r) => r.waitingSince === undefined)].map((r) => r.row);
}
