/**
 * The Linux process table: `/proc`, read synchronously (async reads measured ~10x slower): `stat` for every pid,
 * the command line only for pids not seen before or that may have exec'd since, the environment only when a
 * caller asks. Zombies (state Z) and dead (X) processes are left out: they count as gone.
 */
import * as fs from 'fs';
import { censusFilter, parseLoadavg, PidCounters, readPidCounters } from './pidCensus';
import {
  CensusOptions,
  childrenOf,
  COMMAND_SETTLES_MS,
  ProcessInfo,
  ProcessTable,
  Snapshot,
  StartPrecision,
  HOST_MARK_VARIABLE,
  TagVariable,
  TREE_ID_VARIABLE,
  WATCHDOG_VARIABLE,
  WINDOW_TAG_VARIABLE,
} from './processTable';
import { readUptimeTicks, TICKS_PER_SECOND } from './bootClock';
import { OpenProcFiles, readSmall, readWhole } from './procFiles';
import { envValue, parseProcStat, parseStatusUid, START_PRECISION_MS } from './procParsers';

/**
 * Boot time in ms since the epoch, to ~10 ms: now minus `/proc/uptime`. (`btime` in `/proc/stat` is whole
 * seconds, which would make start times up to 1 s off and let a fresh process look older than it is.)
 */
function readBootTimeMs(): number {
  const now = Date.now();
  try {
    const uptime = parseFloat(fs.readFileSync('/proc/uptime', 'latin1'));
    if (Number.isFinite(uptime)) return now - uptime * 1000;
  } catch {
    /* fall through */
  }
  const stat = fs.readFileSync('/proc/stat', 'latin1');
  const m = /^btime (\d+)$/m.exec(stat);
  return m ? Number(m[1]) * 1000 : 0;
}

const PAGE_SIZE = 4096;

/** A stat file's process, or undefined where it is a zombie or dead (those count as gone) or unparsable. */
function liveStat(text: string, bootTimeMs: number): ProcessInfo | undefined {
  const p = parseProcStat(text, bootTimeMs, PAGE_SIZE);
  return p && p.state !== 'Z' && p.state !== 'X' ? p : undefined;
}

interface CacheEntry {
  startKey: number;
  command?: string;
  /** `comm` when the command line was read: a new one means the process exec'd another program. */
  commandName?: string;
  /** Whether the command line was read while the process was young (COMMAND_SETTLES_MS): read again then. */
  commandYoung?: boolean;
  /** Values of the tag variables (undefined until read; null when absent or unreadable). */
  tags?: Record<TagVariable, string | null>;
  /** `/proc/<pid>/exe` (undefined until read; null when unreadable). */
  executable?: string | null;
  /** `comm` when the executable was read: a new one means the process exec'd another program. */
  executableName?: string;
  /** `comm` when the environment was read, and whether the process was young then (as for the command line). */
  tagsName?: string;
  tagsYoung?: boolean;
}

/**
 * Linux `/proc` table. Keep one instance alive to reuse its caches: command lines and environments are read once
 * per process (pid + start time) and program (an exec may bring others), so the repeat snapshot reads only `stat`
 * files. What one table says a process carries is then what any other table reading it now would say, whenever
 * each read it first.
 */
export class LinuxProcessTable implements ProcessTable {
  readonly startPrecision: StartPrecision = { unit: 'ticks', errorMs: START_PRECISION_MS };
  private cache = new Map<number, CacheEntry>();
  private bootTimeMs = readBootTimeMs();
  private bootReadAt = Date.now();
  private childrenListed: boolean | undefined;
  private lastFullCount = 0;
  /** What the last census (snapshotOfNewcomers) of each channel saw: pid -> start key, and where pid allocation stood. */
  private censuses = new Map<string, PidCounters & { seen: Map<number, number> }>();
  /** Files under /proc opened and directories listed so far: what reading processes cost (tests, benchmark). */
  reads = 0;
  /** The stat and children files of processes `snapshotOf` reads again and again (tracked members), kept open. */
  private readonly open = new OpenProcFiles();

  constructor(private readonly procRoot = '/proc') {}

  private bootTime(): number {
    // Re-read now and then: a wall-clock step moves the boot time as seen in epoch ms (a step back too: waiting for
    // the clock to pass the last read again would keep start times on the old clock for as long as the step).
    if (Math.abs(Date.now() - this.bootReadAt) > 10_000) {
      this.bootTimeMs = readBootTimeMs();
      this.bootReadAt = Date.now();
    }
    return this.bootTimeMs;
  }

  read(pid: number): ProcessInfo | undefined {
    this.reads++;
    const text = readSmall(`${this.procRoot}/${pid}/stat`);
    if (!text) return undefined;
    const p = liveStat(text, this.bootTime());
    if (!p) return undefined;
    this.reads++;
    const status = readSmall(`${this.procRoot}/${pid}/status`);
    p.uid = (status ? parseStatusUid(status) : undefined) ?? -1;
    return p;
  }

  snapshot(): Snapshot {
    const takenAt = Date.now();
    const boot = this.bootTime();
    const processes = new Map<number, ProcessInfo>();
    let names: string[];
    this.reads++;
    try {
      names = fs.readdirSync(this.procRoot);
    } catch (e) {
      throw new Error(`cannot list ${this.procRoot}: ${(e as Error).message}`, { cause: e });
    }
    for (const name of names) {
      const c = name.charCodeAt(0);
      if (c < 48 || c > 57) continue;
      this.reads++;
      const text = readSmall(`${this.procRoot}/${name}/stat`);
      if (!text) continue; // exited between readdir and read, or unreadable: not a live process we can see
      const p = liveStat(text, boot);
      if (!p) continue;
      processes.set(p.pid, p);
    }
    // Drop cache entries of processes that are gone or replaced.
    for (const [pid, entry] of this.cache) {
      const p = processes.get(pid);
      if (!p || p.startKey !== entry.startKey) this.cache.delete(pid);
    }
    this.lastFullCount = processes.size;
    return { ...this.makeSnapshot(takenAt, processes), listed: processes.size };
  }

  listsChildren(): boolean {
    return (this.childrenListed ??= fs.existsSync(`${this.procRoot}/${process.pid}/task/${process.pid}/children`));
  }

  newestPid(): number | undefined {
    this.reads++;
    // Kept open: one pread (/proc/stat's fork count would do as well, at thirty times the cost here).
    const text = this.open.read(`${this.procRoot}/loadavg`);
    return text === undefined ? undefined : parseLoadavg(text)?.newestPid;
  }

  reread(processes: readonly ProcessInfo[]): ProcessInfo[] {
    const boot = this.bootTime();
    const out: ProcessInfo[] = [];
    for (const p of processes) {
      const now = this.readKept(p.pid, boot);
      if (now && now.startKey === p.startKey) out.push(now);
    }
    return out;
  }

  parentOf(pid: number): number | undefined {
    this.reads++;
    const text = readSmall(`${this.procRoot}/${pid}/stat`);
    return text ? liveStat(text, 0)?.ppid : undefined;
  }

  runStamp(p: { pid: number; startKey: number }): string | undefined {
    const held = (file: string) => {
      this.reads++;
      return this.open.readHeld(`${this.procRoot}/${p.pid}/${file}`, `${p.pid}:${p.startKey}:${file}`, () => {
        this.reads++;
        const stat = readSmall(`${this.procRoot}/${p.pid}/stat`);
        return stat !== undefined && liveStat(stat, this.bootTime())?.startKey === p.startKey;
      });
    };
    const run = held('schedstat');
    // "0 0 0": the kernel keeps no scheduler statistics (a process that ever ran has run time), so it never moves.
    if (run === undefined || run.startsWith('0 ')) return undefined;
    const memory = held('statm');
    return memory === undefined ? undefined : run + memory;
  }

  releaseRunStamp(p: { pid: number; startKey: number }): void {
    for (const file of ['schedstat', 'statm']) this.open.closeFile(`${p.pid}:${p.startKey}:${file}`);
  }

  ageMs(p: { startKey: number }): number {
    return ((readUptimeTicks(this.procRoot) - p.startKey) * 1000) / TICKS_PER_SECOND;
  }

  /** One process through its kept-open stat file; undefined when gone, a zombie or unreadable. */
  private readKept(pid: number, boot: number): ProcessInfo | undefined {
    this.reads++;
    return this.open.readParsed(`${this.procRoot}/${pid}/stat`, liveStat, boot);
  }

  snapshotOf(pids: Iterable<number>, descendantsOf: Iterable<number> = []): Snapshot {
    const takenAt = Date.now();
    const processes = new Map<number, ProcessInfo>();
    this.readAround(processes, this.bootTime(), pids, descendantsOf);
    // Without full scans the cache would keep every process ever seen: bound it by what this snapshot holds.
    if (this.cache.size > Math.max(4096, 2 * this.lastFullCount)) {
      for (const pid of this.cache.keys()) if (!processes.has(pid)) this.cache.delete(pid);
    }
    return this.makeSnapshot(takenAt, processes);
  }

  /**
   * `snapshotOf(pids, descendantsOf)` plus every process on the machine that started since this channel's previous
   * census (every process at the first, or with `everything`): a census lists /proc, and reads the stat of a listed
   * pid only when the channel has not seen it before, or when pid allocation since its previous census may have
   * come round to it (its holder may then be a new process: the kernel hands out pids in turn, ns_last_pid says
   * where it is, the fork count in /proc/stat how far it went).
   */
  snapshotOfNewcomers(pids: Iterable<number>, descendantsOf: Iterable<number> = [], options: CensusOptions = {}): Snapshot {
    const takenAt = Date.now();
    const boot = this.bootTime();
    const processes = new Map<number, ProcessInfo>();
    const channel = options.channel ?? 'default';
    const before = this.censuses.get(channel);
    const now = readPidCounters(this.procRoot);
    let names: string[];
    this.reads += 5; // the counters and the listing
    try {
      names = fs.readdirSync(this.procRoot);
    } catch (e) {
      throw new Error(`cannot list ${this.procRoot}: ${(e as Error).message}`, { cause: e });
    }
    const mayBeNew = censusFilter(before, now, options.everything ?? false);
    const seen = new Map<number, number>();
    for (const name of names) {
      const c = name.charCodeAt(0);
      if (c < 48 || c > 57) continue;
      const pid = Number(name);
      const known = before?.seen.get(pid);
      if (known !== undefined && !mayBeNew(pid)) {
        seen.set(pid, known);
        continue;
      }
      this.reads++;
      const text = readSmall(`${this.procRoot}/${pid}/stat`);
      const p = text && parseProcStat(text, boot, PAGE_SIZE);
      if (!p) continue;
      seen.set(pid, p.startKey);
      if (p.state !== 'Z' && p.state !== 'X') processes.set(pid, p);
    }
    if (now) this.censuses.set(channel, { ...now, seen });
    else this.censuses.delete(channel);
    this.readAround(processes, boot, pids, descendantsOf);
    for (const pid of this.cache.keys()) if (!seen.has(pid)) this.cache.delete(pid);
    this.lastFullCount = seen.size;
    return { ...this.makeSnapshot(takenAt, processes), listed: seen.size };
  }

  /** Adds `pids` and every descendant of `descendantsOf` (and those themselves) to `processes`. */
  private readAround(processes: Map<number, ProcessInfo>, boot: number, pids: Iterable<number>, descendantsOf: Iterable<number>): void {
    this.open.closeUnused();
    const readOne = (pid: number): ProcessInfo | undefined => {
      if (processes.has(pid)) return processes.get(pid);
      if (!(pid > 0)) return undefined;
      const p = this.readKept(pid, boot);
      if (p) processes.set(p.pid, p);
      return p;
    };
    for (const pid of pids) readOne(pid);
    const queue = [...descendantsOf];
    if (queue.length > 0 && !this.listsChildren())
      throw new Error('this kernel does not list children (/proc/<pid>/task/<tid>/children, CONFIG_PROC_CHILDREN)');
    const walked = new Set<number>();
    while (queue.length > 0) {
      const pid = queue.pop()!;
      if (walked.has(pid)) continue;
      walked.add(pid);
      const p = readOne(pid);
      if (p) for (const child of this.childPids(p)) if (!walked.has(child)) queue.push(child);
    }
  }

  /** Children of `p` from its threads' children lists: one file when it has one thread, else one per thread. */
  private childPids(p: ProcessInfo): number[] {
    let tids: (string | number)[] = [p.pid];
    if (p.threads !== 1) {
      this.reads++;
      try {
        tids = fs.readdirSync(`${this.procRoot}/${p.pid}/task`);
      } catch {
        return []; // gone
      }
    }
    const out: number[] = [];
    for (const tid of tids) {
      this.reads++;
      // One open file per process with one thread (its threads come and go otherwise).
      const file = `${this.procRoot}/${p.pid}/task/${tid}/children`;
      const text = (tids.length === 1 ? this.open.read(file, `${file}@${p.startKey}`) : undefined) ?? readWhole(file)?.toString('latin1');
      if (!text) continue;
      for (const field of text.split(' ')) {
        const child = parseInt(field, 10);
        if (child > 0) out.push(child);
      }
    }
    return out;
  }

  private entry(p: ProcessInfo): CacheEntry {
    let e = this.cache.get(p.pid);
    if (!e || e.startKey !== p.startKey) {
      e = { startKey: p.startKey };
      this.cache.set(p.pid, e);
    }
    return e;
  }

  /**
   * The tag variables of a process's initial environment (all of them in one read), read again after an exec
   * (`env -i`, say, replaces the environment: a read before it says nothing of the process now), at most once per
   * snapshot (`environRead`).
   */
  private tagsOf(p: ProcessInfo, takenAt: number, environRead: Set<number>): Record<TagVariable, string | null> {
    const e = this.entry(p);
    if (e.tags === undefined || ((e.tagsYoung || e.tagsName !== p.name) && !environRead.has(p.pid))) {
      environRead.add(p.pid);
      this.reads++;
      const env = readWhole(`${this.procRoot}/${p.pid}/environ`);
      e.tags = {
        [TREE_ID_VARIABLE]: env ? envValue(env, TREE_ID_VARIABLE) : null,
        [WINDOW_TAG_VARIABLE]: env ? envValue(env, WINDOW_TAG_VARIABLE) : null,
        [WATCHDOG_VARIABLE]: env ? envValue(env, WATCHDOG_VARIABLE) : null,
        [HOST_MARK_VARIABLE]: env ? envValue(env, HOST_MARK_VARIABLE) : null,
      };
      e.tagsName = p.name;
      e.tagsYoung = takenAt - p.startTime < COMMAND_SETTLES_MS;
    }
    return e.tags;
  }

  /** The file a process runs, read once per process, and again after it exec'd (its `comm` changed). */
  private executableOf(p: ProcessInfo): string | undefined {
    const e = this.entry(p);
    if (e.executable === undefined || e.executableName !== p.name) {
      this.reads++;
      e.executable = readExecutable(`${this.procRoot}/${p.pid}/exe`);
      e.executableName = p.name;
    }
    return e.executable ?? undefined;
  }

  private makeSnapshot(takenAt: number, processes: Map<number, ProcessInfo>): Snapshot {
    let childMap: Map<number, ProcessInfo[]> | undefined;
    const tagMaps = new Map<string, Map<string, ProcessInfo[]>>();
    /** Processes whose environment this snapshot has read: once per snapshot is enough for every tag variable. */
    const environRead = new Set<number>();
    return {
      takenAt,
      processes,
      startPrecision: this.startPrecision,
      commandLine: (pid) => {
        const p = processes.get(pid);
        if (!p) return '';
        const e = this.entry(p);
        if (e.command === undefined || e.commandYoung || e.commandName !== p.name) {
          this.reads++;
          const buf = readWhole(`${this.procRoot}/${pid}/cmdline`);
          let cmd = buf ? buf.toString('utf8').replace(/\0+$/, '').split('\0').join(' ') : '';
          if (!cmd) cmd = `[${p.name}]`; // kernel threads and processes that cleared their argv
          e.command = cmd;
          e.commandName = p.name;
          e.commandYoung = takenAt - p.startTime < COMMAND_SETTLES_MS;
        }
        return e.command;
      },
      tagged: (variable = TREE_ID_VARIABLE, since = 0) => {
        const key = `${variable}@${since}`;
        let tagMap = tagMaps.get(key);
        if (tagMap) return tagMap;
        tagMap = new Map();
        tagMaps.set(key, tagMap);
        for (const p of processes.values()) {
          if (p.ppid === 2 || p.pid === 2) continue; // kernel threads have no environment
          if (p.startKey < since) continue; // older than what is asked for: its environment is not read
          const tag = this.tagsOf(p, takenAt, environRead)[variable];
          if (tag === null) continue;
          const list = tagMap.get(tag);
          if (list) list.push(p);
          else tagMap.set(tag, [p]);
        }
        return tagMap;
      },
      executable: (pid) => {
        const p = processes.get(pid);
        return p && this.executableOf(p);
      },
      children: () => (childMap ??= childrenOf(processes)),
    };
  }
}

/** The target of `/proc/<pid>/exe`, without the kernel's " (deleted)" for a file replaced since; null when unreadable. */
function readExecutable(link: string): string | null {
  try {
    return fs.readlinkSync(link).replace(/ \(deleted\)$/, '');
  } catch {
    return null;
  }
}
