/**
 * Activation time inside the real extension host (code-server + headless Chromium, see scripts/host/):
 * a few fresh hosts, each reporting what loading the bundle and activate() took. Skipped, with the reason,
 * where the host is not installed.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { hostMissing, log, REPO, runInHost } from './lib';

export interface ActivationRuns {
  /** activate() alone, ms, one per host start. */
  activateMs: number[];
  /** Loading the bundle (module evaluation) before activate(), ms. */
  loadMs: number[];
  error?: string;
}

export function measureActivation(runs = 3): ActivationRuns {
  const result: ActivationRuns = { activateMs: [], loadMs: [] };
  const missing = hostMissing();
  if (missing) {
    result.error = missing;
    return result;
  }
  const suite = path.join(REPO, 'out', 'bench', 'activationSuite.js');
  for (let i = 0; i < runs; i++) {
    const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agent-trees-bench-act-')), 'timings.json');
    const r = runInHost({ suite, env: { AGENT_TREES_ACTIVATION_OUT: out }, timeoutS: 120 });
    if (r.status !== 0 || !fs.existsSync(out)) {
      result.error = `host run ${i + 1} failed (exit ${r.status}): ${r.tail(5)}`;
      return result;
    }
    const t = JSON.parse(fs.readFileSync(out, 'utf8')) as { loadMs?: number; activateMs: number };
    fs.rmSync(path.dirname(out), { recursive: true, force: true });
    result.activateMs.push(t.activateMs);
    if (typeof t.loadMs === 'number') result.loadMs.push(t.loadMs);
    log(
      `extension: activation in the real host, run ${i + 1}: activate() ${t.activateMs.toFixed(1)} ms, bundle load ${t.loadMs?.toFixed(1)} ms`,
    );
  }
  return result;
}
