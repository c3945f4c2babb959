/**
 * Orphan sweeps from the extension: once in the background after activation (an owner still alive is looked
 * at again once a few seconds later, since during a reload the old and new hosts run side by side), then every
 * `sweepIntervalSeconds`. A failing sweep is logged and the next one still runs.
 */
import * as vscode from 'vscode';
import {
  CgroupMode,
  counted,
  localSweepParts,
  Logger,
  processCore,
  processCount,
  RecordStore,
  sweepOrphans,
  SweepResult,
  OwnerInfo,
} from '../proc';

/** What a sweep found, in a user's words: the trees of stopped owners and what was ended, what was left alone. */
function sweepSummary(result: SweepResult): string {
  const n = result.trees.length;
  const found =
    n === 0
      ? 'no agent tree left by a stopped window or agent-trees run'
      : `${counted(n, 'agent tree')} left by a stopped window or agent-trees run ` +
        `(${result.trees.map((t) => t.label).join(', ')}): ended ${processCount(result.trees.reduce((sum, t) => sum + t.killed, 0))}`;
  const hostEnded = result.hostProcesses.reduce((sum, h) => sum + h.killed, 0);
  const hosts = hostEnded
    ? `; ended ${processCount(hostEnded)} other extensions had started in ${counted(result.hostProcesses.length, 'stopped extension host')}`
    : '';
  const cgroups = result.cgroupsRemoved.length ? `; removed ${counted(result.cgroupsRemoved.length, 'empty cgroup')} of such trees` : '';
  const live = result.liveOwners
    ? `; left alone the trees of ${counted(result.liveOwners, 'window or run', 'windows or runs')} still running`
    : '';
  const bad = result.problems.length ? `; ${counted(result.problems.length, 'record file')} could not be read` : '';
  return found + hosts + cgroups + live + bad;
}

const RECHECK_LIVE_OWNERS_MS = 6000;

export interface SweeperOptions {
  store: RecordStore;
  /** This extension host: its own record is never swept. */
  self: OwnerInfo;
  /** `agentTrees.killGraceSeconds`, in ms, read at each sweep. */
  graceMs: () => number;
  log: Logger;
  /** `agentTrees.cgroups`: with "off" a sweep neither probes, reads nor removes cgroups. */
  cgroups: () => CgroupMode;
  /** Whether the user was told already that the records folder itself is unusable (by the activation check). */
  folderProblemTold: boolean;
}

export class Sweeper implements vscode.Disposable {
  private interval: NodeJS.Timeout | undefined;
  private recheck: NodeJS.Timeout | undefined;
  private running: Promise<SweepResult> | undefined;
  private disposed = false;

  private readonly log: Logger;
  private folderProblemTold: boolean;

  constructor(private readonly options: SweeperOptions) {
    this.log = options.log;
    this.folderProblemTold = options.folderProblemTold;
  }

  /** One sweep now (joins one already running). Notifies only when it ended something. */
  sweep(reason: string): Promise<SweepResult> {
    this.running ??= (async () => {
      try {
        const { store, self, graceMs, cgroups, log } = this.options;
        const result = await sweepOrphans(store, { ...localSweepParts(processCore()), self, graceMs: graceMs(), cgroups: cgroups(), log });
        this.log.info(`sweep (${reason}): ${sweepSummary(result)}`);
        if (result.killed > 0 && !this.disposed) {
          void vscode.window.showInformationMessage(
            result.killed === 1
              ? vscode.l10n.t('Agent Trees ended 1 orphaned process left by a previous window')
              : vscode.l10n.t('Agent Trees ended {0} orphaned processes left by a previous window', result.killed),
          );
        }
        for (const p of result.problems) {
          // The folder itself is told once (each sweep logs it); a record in it, each time it is found.
          if (p.file === store.dir && this.folderProblemTold) continue;
          if (p.file === store.dir) this.folderProblemTold = true;
          void vscode.window.showWarningMessage(vscode.l10n.t('Agent Trees: record {0} could not be read ({1})', p.file, p.problem));
        }
        return result;
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /** The activation sweep: in the background, never delaying activation. */
  startup(): void {
    setTimeout(() => {
      this.sweep('activation').then(
        (r) => {
          if (r.liveOwners > 0 && !this.disposed) {
            this.recheck = setTimeout(() => void this.sweep('activation, second look').catch((e) => this.fail(e)), RECHECK_LIVE_OWNERS_MS);
          }
        },
        (e) => this.fail(e),
      );
    }, 0);
  }

  /** Periodic sweeps every `seconds` (0 = off); call again when the setting changes. */
  schedule(seconds: number): void {
    if (this.interval) clearInterval(this.interval);
    this.interval = undefined;
    if (seconds > 0 && !this.disposed) {
      this.interval = setInterval(() => void this.sweep('periodic').catch((e) => this.fail(e)), seconds * 1000);
    }
  }

  private fail(e: unknown): void {
    this.log.error(`sweep failed: ${(e as Error).message ?? e}`);
  }

  dispose(): void {
    this.disposed = true;
    if (this.interval) clearInterval(this.interval);
    if (this.recheck) clearTimeout(this.recheck);
  }
}
