/**
 * The process table for a platform: one file per platform (`/proc` on Linux, one `ps` call on macOS, ps-list on
 * Windows), picked here. The contract they share is in processTable.ts.
 */
import { LinuxProcessTable } from './linuxProcessTable';
import { MacProcessTable } from './macProcessTable';
import { ProcessTable } from './processTable';
import { WindowsProcessTable } from './windowsProcessTable';

/** A new table for `platform`. Keep it: its caches (command lines, environments) serve every later snapshot. */
export function createProcessTable(platform: NodeJS.Platform = process.platform): ProcessTable {
  if (platform === 'linux') return new LinuxProcessTable();
  if (platform === 'darwin') return new MacProcessTable();
  if (platform === 'win32') return new WindowsProcessTable();
  throw new Error(`Agent Trees does not support ${platform}`);
}

/** The table, brought up to date first where listing is asynchronous (Windows: ps-list). */
export async function freshProcessTable(table: ProcessTable): Promise<ProcessTable> {
  await table.refresh?.();
  return table;
}
