/**
 * The view's section of other extensions' processes, as plain data: from one look's processes of the extension
 * host and whose each is (the core's placeHostProcesses), one entry per extension, with the processes that still
 * hang from the host and those an exited process left. Pure: no `vscode`, unit-tested as it is.
 */
import { HostProcessPlace, LONG_LIVED_MS, MemberInfo, OTHER_ID, processKey } from '../proc';

/** One extension's processes, as the view shows them. */
export interface OtherExtensionInput {
  /** The extension's id, `vscode` (VS Code's own) or `other`. */
  id: string;
  name: string;
  /** Its processes that still descend from the host (its children first among them). */
  members: MemberInfo[];
  /** What its processes left when they exited: processes whose chain no longer reaches the host. */
  left: MemberInfo[];
}

/**
 * Groups the host's processes by extension: never `skip`'s (Agent Trees' own), and never a chain whose topmost
 * process has run for less than LONG_LIVED_MS (a `git status` of a moment would only flicker). Extensions come in
 * the order of their names, `other` last.
 */
export function otherExtensionsInput(
  members: MemberInfo[],
  places: ReadonlyMap<string, HostProcessPlace>,
  options: { takenAt: number; skip: string; nameOf: (id: string) => string },
): OtherExtensionInput[] {
  const byKey = new Map(members.map((p) => [processKey(p), p]));
  const entries = new Map<string, OtherExtensionInput>();
  for (const p of members) {
    const place = places.get(processKey(p));
    if (!place || place.extensionId === options.skip) continue;
    const top = byKey.get(place.topKey);
    if (!top || options.takenAt - top.startTime < LONG_LIVED_MS) continue;
    let entry = entries.get(place.extensionId);
    if (!entry)
      entries.set(place.extensionId, (entry = { id: place.extensionId, name: options.nameOf(place.extensionId), members: [], left: [] }));
    (place.left ? entry.left : entry.members).push(p);
  }
  const rank = (e: OtherExtensionInput) => (e.id === OTHER_ID ? 1 : 0);
  return [...entries.values()].sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
}
