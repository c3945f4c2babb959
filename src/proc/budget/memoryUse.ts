/**
 * A tree's memory: the sum over its members of their PSS (`smaps_rollup`: each shared page divided among the
 * processes that map it) where it can be read, their RSS otherwise. RSS comes with every snapshot; PSS costs a walk
 * of the process's page tables (50 µs for a `sleep`, about 1 ms for a Node process here), and a process's PSS is
 * never above its RSS. So PSS is read only once the members' RSS sum reaches a threshold (the watch: 80 % of the
 * limit; below it the tree is within its limit whatever it shares), and a member's PSS is read again only when its
 * reading is old or the caller asks for a fresh one (before a tree is ended); in between it is the last PSS plus
 * how far the member's RSS moved since.
 */
import { ProcessInfo } from '../platform/processTable';

/** 'PSS' when the sum holds the PSS of any member (those whose PSS cannot be read count their RSS), else 'RSS'. */
export type MemoryMeasure = 'PSS' | 'RSS';

export interface MemoryUse {
  bytes: number;
  measure: MemoryMeasure;
}

/** A process's PSS in bytes, or undefined where it cannot be read. */
export type PssReader = (pid: number) => number | undefined;

/** How long a member's PSS reading stands in for a new one (its RSS moves are added meanwhile). */
const PSS_READING_MS = 10_000;

interface PssReading {
  pss: number;
  rss: number;
  at: number;
}

/** One tree's memory over time: keeps each member's last PSS reading. */
export class MemoryGauge {
  private readings = new Map<string, PssReading>();

  constructor(
    private readonly readPss: PssReader | undefined,
    /** Monotonic ms (tests move it). */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The members' memory: their RSS sum while it is under `pssFrom`, else their PSS (`fresh`: each read now). */
  measure(members: readonly ProcessInfo[], pssFrom: number, fresh = false): MemoryUse {
    const rss = members.reduce((n, p) => n + p.rssBytes, 0);
    if (rss < pssFrom || !this.readPss) {
      this.readings.clear();
      return { bytes: rss, measure: 'RSS' };
    }
    const now = this.now();
    const readings = new Map<string, PssReading>();
    let bytes = 0;
    let pssRead = false;
    for (const p of members) {
      const key = `${p.pid}:${p.startKey}`;
      let reading = this.readings.get(key);
      if (fresh || !reading || now - reading.at >= PSS_READING_MS) {
        const pss = this.readPss(p.pid);
        reading = pss === undefined ? undefined : { pss, rss: p.rssBytes, at: now };
      }
      if (!reading) {
        bytes += p.rssBytes;
        continue;
      }
      readings.set(key, reading);
      pssRead = true;
      bytes += Math.min(p.rssBytes, Math.max(0, reading.pss + p.rssBytes - reading.rss));
    }
    this.readings = readings;
    return { bytes, measure: pssRead ? 'PSS' : 'RSS' };
  }
}
