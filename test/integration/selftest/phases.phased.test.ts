// Harness self-test (test/integration/selftest/: counted apart from the product's tests): proves the phased
// runner works. Phase 1 writes a marker into the extension's global storage, starts a child outside the host
// (none of the host's processes, which would end with it) and SIGKILLs its own extension host; phase 2 (a new
// code-server on the same user data folder) sees the marker, a different extension host, the old host dead and
// the child still alive.
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { startOutsideHost } from '../fixtures';
import { EXTENSION_ID, inPhase, killHostAfterResult } from '../harness';
import { processes } from '../../support/repo';
import { waitFor } from '../../support/wait';

interface Marker {
  hostPid: number;
  hostStartTicks: number;
  childPid: number;
  childStartTicks: number;
}

async function markerFile(): Promise<string> {
  const api = await vscode.extensions.getExtension<{ recordsDir: string }>(EXTENSION_ID)!.activate();
  return path.join(path.dirname(api.recordsDir), 'phase-test-marker.json'); // the extension's globalStorage
}

inPhase(1, 'extension host killed at the end of the phase', () => {
  it('records the host and a detached child in global storage, then asks for the host to be killed', async () => {
    const file = await markerFile();
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const child = await startOutsideHost('sleep', ['300']);
    await waitFor('the child to run', () => processes.isAlive(child));
    const marker: Marker = {
      hostPid: process.pid,
      hostStartTicks: processes.readStat(process.pid)!.startTicks,
      childPid: child,
      childStartTicks: processes.readStat(child)!.startTicks,
    };
    fs.writeFileSync(file, JSON.stringify(marker));
    killHostAfterResult();
  });
});

inPhase(2, 'after the previous extension host was killed', () => {
  let marker: Marker;

  before(async () => {
    marker = JSON.parse(fs.readFileSync(await markerFile(), 'utf8'));
  });

  it('runs in a new extension host, and the old one is dead', () => {
    assert.notStrictEqual(process.pid, marker.hostPid);
    assert.ok(!processes.isAlive(marker.hostPid, marker.hostStartTicks), `old host ${marker.hostPid} still runs`);
  });

  it('the child started outside the killed host survived it', async () => {
    assert.ok(processes.isAlive(marker.childPid, marker.childStartTicks), `child ${marker.childPid} is gone`);
    process.kill(marker.childPid, 'SIGKILL');
    await waitFor('the child to be gone', () => !processes.isAlive(marker.childPid, marker.childStartTicks));
  });
});
