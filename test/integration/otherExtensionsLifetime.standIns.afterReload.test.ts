// After the reload of otherExtensionsLifetime.standIns.phased.test.ts (phase 5), in the host the reload started: the old
// host's Claude Code stand-in session is gone (how long after the old host is logged: speed is the benchmark's to
// assert, not a test's), and the window's terminal is kept with its child, and so is a terminal opened with the
// host's environment (it carries the host's mark).
import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import { api, monitorReport } from './fixtures';
import { log } from './harness';
import { processes } from '../support/repo';

interface Handover {
  hostPid: number;
  shell: { pid: number; startTicks: number };
  child: { pid: number; startTicks: number };
  /** A terminal opened with the host's environment (it carries the mark), and its child. */
  hostEnvShell: { pid: number; startTicks: number };
  hostEnvChild: { pid: number; startTicks: number };
  session: { pid: number; startTicks: number }[];
}

describe('other extensions, after the reload', () => {
  it("the old host's session ended once the old host was gone (how long after it: in the log); the terminal and its child are kept", async function () {
    this.timeout(60_000);
    const storage = path.dirname((await api()).recordsDir);
    const handover: Handover = JSON.parse(fs.readFileSync(path.join(storage, 'standins-reload.json'), 'utf8'));
    try {
      const report = await monitorReport(path.join(storage, 'standins-reload-monitor.json'));
      assert.deepStrictEqual(report.survivors, [], 'no survivor');
      assert.ok(report.hostGoneAt !== null && report.processesGoneAt !== null && report.recordGoneAt !== null, JSON.stringify(report));
      const after = Math.max(0, report.processesGoneAt! - report.hostGoneAt!);
      log(
        `[standins-reload] the old host's ${handover.session.length} processes gone ${after} ms after it, its record ${report.recordGoneAt! - report.hostGoneAt!} ms after it`,
      );
      assert.deepStrictEqual(
        handover.session.filter((p) => processes.isAlive(p.pid, p.startTicks)),
        [],
      );
      assert.ok(processes.isAlive(handover.shell.pid, handover.shell.startTicks), "the terminal's shell is kept");
      assert.ok(processes.isAlive(handover.child.pid, handover.child.startTicks), 'its child is kept');
      assert.ok(
        processes.isAlive(handover.hostEnvShell.pid, handover.hostEnvShell.startTicks),
        "a terminal opened with the host's environment is kept",
      );
      assert.ok(processes.isAlive(handover.hostEnvChild.pid, handover.hostEnvChild.startTicks), 'and its child');
    } finally {
      processes.signalIfSame(handover.child.pid, handover.child.startTicks, 'SIGKILL');
      processes.signalIfSame(handover.hostEnvChild.pid, handover.hostEnvChild.startTicks, 'SIGKILL');
    }
  });
});
