/**
 * A tree's budget as the view and the status bar show it: its use against each limit in the row's description
 * ("612 MB of 1.0 GB · 41 of 200 processes"), the warning colour from 80 % of a limit on, a line in the tooltip
 * saying what memory is counted and which lines the kernel holds, and the tree nearest a limit. Pure (no `vscode`):
 * strings go through the `l10n` passed in.
 */
import { BudgetUse, LIMIT_FIELDS, Localizer, NEAR_LIMIT, nearestLimit, TreeLimits, usePart } from '../proc';

/** A limited tree's limits and its use as last seen. */
export interface BudgetInput {
  limits: TreeLimits;
  use: BudgetUse;
}

/** What a row shows of a tree's size: its process count, CPU and memory. */
export interface SizeParts {
  count: string;
  cpu: string;
  memory: string;
}

/** The row's size parts, each limited one told against its limit, the idle time last. */
export function budgetSizeParts(size: SizeParts, budget: BudgetInput | undefined, l10n: Localizer): string[] {
  if (!budget) return [size.count, size.cpu, size.memory];
  const part = (field: (typeof LIMIT_FIELDS)[number]) => usePart(field, budget.use, budget.limits, l10n);
  const idle = part('idleTimeoutSeconds');
  return [part('maxProcesses') ?? size.count, size.cpu, part('maxMemoryMB') ?? size.memory, ...(idle ? [idle] : [])];
}

/** Whether the tree is near one of its limits (80 % or more): shown in the warning colour. */
export function nearLimit(budget: BudgetInput | undefined): boolean {
  return budget !== undefined && nearestLimit(budget.use, budget.limits) >= NEAR_LIMIT;
}

/** The warning icon of a tree near a limit. */
export const NEAR_LIMIT_ICON = { id: 'warning', color: 'list.warningForeground' };

/** The tooltip's line: every limit with its use, what the memory counts, and which lines the kernel holds. */
export function budgetTooltip(budget: BudgetInput, l10n: Localizer): string {
  const parts = LIMIT_FIELDS.flatMap((f) => usePart(f, budget.use, budget.limits, l10n) ?? []);
  const notes = [
    budget.limits.maxMemoryMB
      ? budget.use.memory.measure === 'PSS'
        ? l10n.t('memory: PSS, shared pages divided among the processes that map them')
        : l10n.t('memory: RSS (PSS is read from 80 % of the limit on, where it can be)')
      : '',
    budget.use.kernel?.memory ? l10n.t('the kernel holds the memory limit') : '',
    budget.use.kernel?.processes ? l10n.t('the kernel stops a fork loop at twice the process limit') : '',
  ].filter(Boolean);
  return `${l10n.t('Limits: {0}', parts.join(' · '))}${notes.length ? ` (${notes.join('; ')})` : ''}`;
}

/** The tree nearest one of its limits, among those given: its name, how near (1 = at the limit) and its figures. */
export function nearestTree(
  trees: { name: string; budget: BudgetInput }[],
  l10n: Localizer,
): { name: string; share: number; text: string } | undefined {
  let best: { name: string; share: number; text: string } | undefined;
  for (const { name, budget } of trees) {
    const share = nearestLimit(budget.use, budget.limits);
    if (best && share <= best.share) continue;
    const text = LIMIT_FIELDS.flatMap((f) => usePart(f, budget.use, budget.limits, l10n) ?? []).join(' · ');
    best = { name, share, text };
  }
  return best;
}
