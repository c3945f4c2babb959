/**
 * What every process table gives: one process (`ProcessInfo`), one snapshot of the machine (`Snapshot`), and
 * the table itself (`ProcessTable`), with how exactly its start times identify a process (`StartPrecision`).
 * The tables are one file per platform (linuxProcessTable.ts, macProcessTable.ts, windowsProcessTable.ts);
 * createProcessTable.ts picks one.
 */

/**
 * A command line or an environment read before its process was this old (ms) is read again when next asked for: an
 * exec keeps the pid and the start time, and launchers exec right after they start (the cgroup launcher's `sh -c`,
 * `env`, `env -i`, `nice`).
 */
export const COMMAND_SETTLES_MS = 2000;

export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  /** One-letter state as the OS reports it (R, S, D, T, ...). Z and X never appear in a snapshot. */
  state: string;
  /** Exact start-time key in the platform's own unit (see `StartPrecision.unit`). Equal keys, same process. */
  startKey: number;
  /** Start time in ms since the epoch, within `StartPrecision.errorMs` of the truth. */
  startTime: number;
  /** Real uid of the process; -1 where the listing does not read it (a Linux snapshot: see `Snapshot.uid`). */
  uid: number;
  /** Short executable name (Linux: `comm`, at most 15 chars). */
  name: string;
  rssBytes: number;
  /** User + system CPU time consumed so far, in ms. */
  cpuMs: number;
  /** Threads in the process (Linux): one means a single children list covers all its children. */
  threads?: number;
  /** Full command line, where the platform's listing gives it at no extra cost (macOS, Windows). */
  command?: string;
}

/**
 * How exactly a table's start times identify a process: a pid names a process only together with its start
 * time, so where there is none, nothing but the continuous owner of a process can prove who it is.
 */
export interface StartPrecision {
  /** What `startKey` counts: clock ticks since boot (Linux), whole seconds (macOS `ps lstart`), nothing (Windows). */
  unit: 'ticks' | 'seconds' | 'none';
  /** Error bound of `ProcessInfo.startTime` in ms; Infinity where there is no start time. */
  errorMs: number;
}

/** Whether start times of this precision can tell a process from a later one that got its pid. */
export function provesIdentity(precision: StartPrecision): boolean {
  return precision.unit !== 'none';
}

export interface Snapshot {
  /** When the snapshot was taken (ms since the epoch). */
  takenAt: number;
  processes: Map<number, ProcessInfo>;
  /** The precision of the start times in this snapshot (the table's). */
  startPrecision: StartPrecision;
  /** Command line of a process in the snapshot ('' when unreadable). Cached per pid and start time. */
  commandLine(pid: number): string;
  /**
   * The file a process in the snapshot runs (Linux: `/proc/<pid>/exe`), undefined when unreadable (another
   * user's) or where the platform does not say. Cached per pid and start time.
   */
  executable?(pid: number): string | undefined;
  /**
   * Processes by the value of a tag variable in their initial environment (exact values only), built on first
   * use: `AGENT_TREES_TREE_ID` by default, `AGENT_TREES_WINDOW`, `AGENT_TREES_WATCHDOG` or `AGENT_TREES_HOST`.
   * Processes whose environment cannot be read (other users, platforms without it) are not in it. With `since` (a
   * start key), processes that started before it may be left out, their environments unread: a tree's tag is on
   * nothing older than its root.
   */
  tagged(variable?: TagVariable, since?: number): Map<string, ProcessInfo[]>;
  /** Children by parent pid, built on first use. */
  children(): Map<number, ProcessInfo[]>;
  /** Processes on the machine, where the snapshot listed every one (a full snapshot, a census). */
  listed?: number;
}

export interface CensusOptions {
  /** Read every process, not only the newcomers. */
  everything?: boolean;
  /** Whose census: each channel keeps its own record of what it has seen (default 'default'). */
  channel?: string;
}

export interface ProcessTable {
  /** How exactly this table's start times identify a process. */
  readonly startPrecision: StartPrecision;
  snapshot(): Snapshot;
  /**
   * A snapshot of just these pids (those still alive), where the platform can read processes one by one
   * (Linux): for callers that know every process they care about, such as the members of a cgroup. With
   * `descendantsOf`, those processes and every descendant of theirs as well, walked down through each task's
   * children list (`/proc/<pid>/task/<tid>/children`; only where `listsChildren()`): never the whole table.
   */
  snapshotOf?(pids: Iterable<number>, descendantsOf?: Iterable<number>): Snapshot;
  /** Whether the kernel lists each task's children (CONFIG_PROC_CHILDREN), so `snapshotOf` can walk descendants. */
  listsChildren?(): boolean;
  /**
   * `snapshotOf` plus every process that started since the previous call of the same channel (all of them at
   * the first, or with `everything`), without reading every process (Linux; see LinuxProcessTable).
   */
  snapshotOfNewcomers?(pids: Iterable<number>, descendantsOf?: Iterable<number>, options?: CensusOptions): Snapshot;
  /**
   * The pid handed out last in this process's pid namespace (Linux: /proc/loadavg). While it stands still, no
   * process or thread was born that this process can see, so none became anyone's descendant (short of pid
   * allocation going all the way round in between). Undefined where unknown.
   */
  newestPid?(): number | undefined;
  /**
   * The same processes read again, in order, where the platform reads them one by one (Linux: their stat files,
   * kept open); those gone, zombies, or whose pid another process holds now are left out.
   */
  reread?(processes: readonly ProcessInfo[]): ProcessInfo[];
  /**
   * The parent pid of a pid (a thread's: its process's parent), one stat read and nothing else; undefined when it
   * is gone or a zombie. Where the platform reads processes one by one.
   */
  parentOf?(pid: number): number | undefined;
  /**
   * A text that changes whenever the process's main thread runs or its memory's size changes (Linux:
   * /proc/<pid>/schedstat, its run time to the ns, and /proc/<pid>/statm, through files kept open and first proven
   * the process's by its start key); undefined when it is gone, unreadable, or the kernel keeps no scheduler
   * figures. A process of one thread whose text stands still did not run: it neither forked, exited nor execed,
   * and whatever shares its memory (a CLONE_VM sibling, a write through /proc/<pid>/mem) made none of it resident.
   */
  runStamp?(p: { pid: number; startKey: number }): string | undefined;
  /** Closes the files `runStamp` keeps open for the process (it is no longer looked at). */
  releaseRunStamp?(p: { pid: number; startKey: number }): void;
  /** How long ago the process started, ms, on the boot clock (a wall-clock step moves nothing); Linux. */
  ageMs?(p: { startKey: number }): number;
  /** Reads one process, or undefined when it is gone, a zombie, or unreadable. Cheap: no full scan. */
  read(pid: number): ProcessInfo | undefined;
  /** Brings the table up to date where listing is asynchronous (Windows: ps-list); absent elsewhere. */
  refresh?(): Promise<void>;
}

/** The environment variable that tags every member of an owned tree with the tree's id. */
export const TREE_ID_VARIABLE = 'AGENT_TREES_TREE_ID';
/**
 * The environment variable that tags every process started from a terminal of one VS Code window (set through
 * the window's terminal environment), so what such a process leaves behind is found after its parent died.
 */
export const WINDOW_TAG_VARIABLE = 'AGENT_TREES_WINDOW';
/**
/**
 * The environment variable that marks every process an extension host started after Agent Trees activated in it
 * (`<host pid>:<host start key>`, set in the host's own environment, so every later child inherits it): what such
 * a process leaves behind is found again after its parent died, and after the host died.
 */
export const HOST_MARK_VARIABLE = 'AGENT_TREES_HOST';
/**
 * Set to `ignore` by the `agent-trees` launcher (a shell) when it was started with SIGHUP ignored (`nohup`): Node
 * resets an inherited SIG_IGN at its start, so the command line would not know otherwise.
 */
export const SIGHUP_IGNORED_VARIABLE = 'AGENT_TREES_SIGHUP';
/**
 * The environment variable of an owner's watchdog: `<owner pid>:<owner start key>`. A watchdog is never a tree's
 * member (see members/membership.ts), and the test suites' leak checks look for it.
 */
export const WATCHDOG_VARIABLE = 'AGENT_TREES_WATCHDOG';
/** The variables a snapshot indexes processes by (all read from one pass over the environment). */
export type TagVariable = typeof TREE_ID_VARIABLE | typeof WINDOW_TAG_VARIABLE | typeof WATCHDOG_VARIABLE | typeof HOST_MARK_VARIABLE;

export function childrenOf(processes: Map<number, ProcessInfo>): Map<number, ProcessInfo[]> {
  const map = new Map<number, ProcessInfo[]>();
  for (const p of processes.values()) {
    const list = map.get(p.ppid);
    if (list) list.push(p);
    else map.set(p.ppid, [p]);
  }
  return map;
}

/**
 * A snapshot of a listing that already holds every command line and reads no environments (macOS, Windows):
 * no tag tier, since neither platform shows another process's initial environment in full.
 */
export function listedSnapshot(processes: Map<number, ProcessInfo>, startPrecision: StartPrecision, takenAt: number): Snapshot {
  let childMap: Map<number, ProcessInfo[]> | undefined;
  return {
    takenAt,
    processes,
    startPrecision,
    commandLine: (pid) => processes.get(pid)?.command ?? '',
    tagged: () => new Map(),
    children: () => (childMap ??= childrenOf(processes)),
  };
}
