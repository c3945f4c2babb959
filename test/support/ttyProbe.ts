/**
 * The terminal program of the pseudo-terminal tests (test/fixtures/ttyprobe.py) and its report, one JSON event a
 * line: shared by the system tests (test/support/tty.ts) and the integration tests (ptyAgents.test.ts).
 */
import * as fs from 'fs';
import * as path from 'path';

// Compiled to out/test/support/, three levels below the repository.
const REPO = path.resolve(__dirname, '..', '..', '..');

export const PROBE = path.join(REPO, 'test', 'fixtures', 'ttyprobe.py');
export const PYTHON = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

export interface ProbeEvent {
  event: string;
  [k: string]: unknown;
}

/** The events reported so far in `file` (none before the probe has written it). */
export function events(file: string): ProbeEvent[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ProbeEvent);
}
