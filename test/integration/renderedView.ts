// The Process Trees view as the workbench renders it, read from the page's DOM (workbenchPage.ts), shown or hidden
// as a user does (a click on the Agent Trees icon, or on the Explorer's) and scrolled with the mouse wheel. Nothing
// here goes through the extension's API: what these return is what is on the screen.
import { waitFor } from '../support/wait';
import { click, evaluate, PageElement, wheel } from './workbenchPage';

/** A row of the view on the screen. */
export interface RenderedRow {
  /** Its place in the view's whole list (the list renders only the rows in sight). */
  index: number;
  /** 1 for a top row, 2 for a process beneath it, ... */
  level: number;
  label: string;
  description: string;
  /** The row's icon: its classes (`codicon codicon-warning`) and its style (its colour). */
  icon: string;
}

/** The view on the screen: not shown at all, or shown with its rows (none) and its welcome text (if any). */
export type RenderedView = { shown: false; everRendered: boolean } | { shown: true; rows: RenderedRow[]; welcome: string };

/** The view's name, which its tree carries as its aria-label (package.nls.json). */
const VIEW_NAME = 'Process Trees';
const TREE = `.monaco-list[role="tree"][aria-label="${VIEW_NAME}"]`;
const AGENT_TREES_ICON = '.part.activitybar .action-item a.action-label[aria-label^="Agent Trees"]';
const EXPLORER_ICON = '.part.activitybar .action-item a.action-label[aria-label^="Explorer"]';

declare const document: PageElement;

/** Runs in the page: the view's tree (by its aria-label), its rendered rows in order, and the pane's welcome text. */
function readView(name: string): RenderedView {
  const trees = Array.from(document.querySelectorAll('.monaco-list[role="tree"]')).filter((t) => t.getAttribute('aria-label') === name);
  const pane = trees.map((t) => t.closest('.pane')).find((p) => p !== null) ?? null;
  if (!pane || pane.getClientRects().length === 0) return { shown: false, everRendered: trees.length > 0 };
  const text = (e: PageElement | null) => (e?.textContent ?? '').trim();
  const tree = trees.find((t) => t.getClientRects().length > 0);
  const rows = tree
    ? Array.from(tree.querySelectorAll('.monaco-list-row'))
        .map((r) => ({
          index: Number(r.getAttribute('data-index')),
          level: Number(r.getAttribute('aria-level')),
          label: text(r.querySelector('.label-name')),
          description: text(r.querySelector('.label-description')),
          icon: ['class', 'style'].map((a) => r.querySelector('.custom-view-tree-node-item-icon')?.getAttribute(a) ?? '').join(' '),
        }))
        .sort((a, b) => a.index - b.index)
    : [];
  const welcome = Array.from(pane.querySelectorAll('.welcome-view-content'))
    .filter((w) => w.getClientRects().length > 0)
    .map(text)
    .join('\n');
  return { shown: true, rows, welcome };
}

/** The view as it is on the screen now. */
export function renderedView(): Promise<RenderedView> {
  return evaluate(readView, VIEW_NAME);
}

/**
 * Every row of the view, as a user sees them scrolling through it with the mouse wheel from the top to the end
 * (the list renders only the rows in sight); none while the view is not shown. Leaves it scrolled to the top.
 */
export async function renderedRows(): Promise<RenderedRow[]> {
  const first = await renderedView();
  if (!first.shown || first.rows.length === 0) return [];
  const seen = new Map<number, RenderedRow>();
  const scroll = async (deltaY: number) => {
    await wheel(TREE, deltaY);
    await new Promise((r) => setTimeout(r, 100)); // the list renders the rows in sight on the next frame
  };
  await scroll(-1e6);
  for (let i = 0; i < 100; i++) {
    const view = await renderedView();
    if (!view.shown) break;
    const before = seen.size;
    for (const row of view.rows) seen.set(row.index, row);
    if (i > 0 && seen.size === before) break;
    await scroll(400);
  }
  await scroll(-1e6);
  return [...seen.values()].sort((a, b) => a.index - b.index);
}

/** Shows the view as a user does, by a click on the Agent Trees icon of the activity bar (unless it is shown). */
export async function openView(): Promise<void> {
  if ((await renderedView()).shown) return;
  await click(AGENT_TREES_ICON);
  await until('the view to be shown', async () => (await renderedView()).shown);
}

/** Hides the view as a user does, by a click on the Explorer's icon. */
export async function hideView(): Promise<void> {
  if (!(await renderedView()).shown) return;
  await click(EXPLORER_ICON);
  await until('the view to be hidden', async () => !(await renderedView()).shown);
}

/**
 * Polls `probe` (every 200 ms) until it returns a truthy value, and returns it; fails after `timeoutMs` saying what
 * it waited for and what the view showed then.
 */
export async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  return waitFor(what, probe, { timeoutMs, everyMs: 200 }).catch(async (e: Error) => {
    throw new Error(`${e.message}; on the screen: ${JSON.stringify(await renderedView())}`);
  });
}
