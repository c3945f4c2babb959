/**
 * The clock identities are compared in: clock ticks since boot, on one boot, in one pid namespace.
 *
 * A process's start time in `/proc/<pid>/stat` is an exact count of ticks since boot (`ProcessInfo.startKey`),
 * and `/proc/uptime` says where "now" is on the same scale. Neither moves when the wall clock steps (NTP, a
 * resumed VM, WSL2, `faketime`), which every epoch-millisecond comparison does. Ticks mean something only on
 * the boot that counted them (`/proc/sys/kernel/random/boot_id`), and a pid only in the pid namespace that
 * issued it (the inode of `/proc/self/ns/pid`): a record carries both, and one from another boot or namespace
 * is never compared with ours.
 *
 * Linux only: elsewhere `hostClock()` is undefined and callers keep their epoch rules.
 */
import * as fs from 'fs';
import * as os from 'os';
import { OpenProcFiles, readSmall } from './procFiles';

/** USER_HZ: the unit of `/proc/<pid>/stat` start times; 100 on every architecture Node runs on. */
export const TICKS_PER_SECOND = 100;

export interface HostClock {
  /**
   * This installation (`/etc/machine-id`, else the host name): tells an earlier boot of this machine from
   * another machine sharing the records folder (a home folder on NFS), whose owners may well be alive.
   */
  machineId: string;
  /** This boot's id, as `/proc/sys/kernel/random/boot_id` prints it. */
  bootId: string;
  /** Inode of our pid namespace (`/proc/self/ns/pid`). */
  pidNs: number;
  /**
   * Whether the `/proc` we read belongs to our own pid namespace (`/proc/self` is our pid). When it does not
   * (`unshare -p` without `--mount-proc`), every pid read from it names some other process than ours.
   */
  procIsOurs: boolean;
  /** Ticks since boot now, from `/proc/uptime`; throws when it cannot be read. */
  nowTicks(): number;
}

/** Where start keys are boot ticks, and a host clock can be read. */
export const START_KEYS_ARE_BOOT_TICKS = process.platform === 'linux';

let cached: HostClock | undefined;

/**
 * This machine's clock. Cached once read (boot id, namespace and /proc do not change under a running
 * process); a failed read (EMFILE, say) is not cached, so a passing error does not turn into "no boot clock"
 * for the life of an extension host.
 */
export function hostClock(): HostClock | undefined {
  if (!START_KEYS_ARE_BOOT_TICKS) return undefined;
  return (cached ??= readHostClock());
}

/** Reads the host clock from `procRoot`; undefined where there is none (not Linux, or /proc unreadable). */
function readHostClock(procRoot = '/proc'): HostClock | undefined {
  if (!START_KEYS_ARE_BOOT_TICKS) return undefined;
  try {
    const bootId = fs.readFileSync(`${procRoot}/sys/kernel/random/boot_id`, 'latin1').trim();
    const pidNs = fs.statSync(`${procRoot}/self/ns/pid`).ino;
    if (!/^[0-9a-f-]{16,64}$/.test(bootId) || !(pidNs > 0)) return undefined;
    let procIsOurs = false;
    try {
      procIsOurs = fs.readlinkSync(`${procRoot}/self`) === String(process.pid);
    } catch {
      /* no /proc/self: not ours */
    }
    return { machineId: readMachineId(), bootId, pidNs, procIsOurs, nowTicks: () => readUptimeTicks(procRoot) };
  } catch {
    return undefined;
  }
}

function readMachineId(): string {
  for (const file of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
    try {
      const id = fs.readFileSync(file, 'latin1').trim();
      if (/^[0-9a-f]{32}$/.test(id)) return id;
    } catch {
      /* try the next */
    }
  }
  return `host:${os.hostname()}`;
}

/**
 * `/proc/uptime` kept open: the owner reads it each second, and a pread costs a tenth of readFileSync here. The
 * kernel makes it again at each read; a file under another root (a test's) may be replaced, so it is opened each time.
 */
const uptimeFiles = new OpenProcFiles();

/** `/proc/uptime`'s first field ("12345.67", hundredths of a second) as ticks, without floating point. */
export function readUptimeTicks(procRoot = '/proc'): number {
  const path = `${procRoot}/uptime`;
  const text = procRoot === '/proc' ? uptimeFiles.read(path) : readSmall(path);
  if (text === undefined) throw new Error(`cannot read ${path}`);
  return parseUptimeTicks(text);
}

export function parseUptimeTicks(text: string): number {
  const m = /^(\d+)\.(\d{2})\s/.exec(text);
  if (!m) throw new Error(`unexpected /proc/uptime: ${JSON.stringify(text.slice(0, 40))}`);
  // Both this and a process's start tick are floor(boot-time ns / 10 ms): directly comparable.
  return Number(m[1]) * TICKS_PER_SECOND + Number(m[2]) * (TICKS_PER_SECOND / 100);
}
