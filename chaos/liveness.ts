// Liveness figures of a chaos log (reported, not judged: faults make them vary): the herd at the start (every
// client starts contending at once) from the first acquire call to the first section, acquisitions given up, and the
// longest time with no section on a mutex between the first section and the stop.
import type { ChaosRecord } from "./records.ts";

export interface Liveness {
  /**
   * From the first acquire call of the run (the clients start together, once their threads are up) to the first section
   * entered (ms).
   */
  herdToFirstSectionMs: number | undefined;
  giveUps: number;
  /** Per mutex, the longest time between the end of one section (or the latest end so far) and the next start (ms). */
  longestIdleMs: number | undefined;
  /** Where that longest idle time was, for the log. */
  longestIdleAt: string | undefined;
}

/**
 * Reads the liveness figures of a chaos log.
 * @example
 * ```ts
 * const { herdToFirstSectionMs, longestIdleMs } = liveness(readLog(path));
 * ```
 */
export function liveness(records: ChaosRecord[]): Liveness {
  const start = records.find((r) => r.type === "start");
  const stop = records.find((r) => r.type === "stop");
  const entered = records.flatMap((r) => (r.type === "enter" ? [r] : []));
  const sections = records.flatMap((r) => (r.type === "cs" ? [r] : []));
  const mutexes = new Set(
    (start?.type === "start" ? (start.resources ?? []) : []).filter((r) => r.limit === 1).map((r) => r.name),
  );
  const first = Math.min(...entered.map((r) => r.start));
  let longestIdleMs: number | undefined;
  let longestIdleAt: string | undefined;
  for (const name of mutexes) {
    const mine = sections.filter((s) => s.resource === name).sort((a, b) => a.start - b.start);
    let lastEnd = mine[0]?.end;
    for (const s of mine.slice(1)) {
      if (stop?.type === "stop" && s.start > stop.at) break;
      const idle = s.start - lastEnd;
      if (longestIdleMs === undefined || idle > longestIdleMs) {
        longestIdleMs = idle;
        longestIdleAt = `${name} before ${new Date(s.start).toISOString().slice(11, 23)}`;
      }
      lastEnd = Math.max(lastEnd, s.end);
    }
  }
  return {
    herdToFirstSectionMs: Number.isFinite(first) ? first - Math.min(...entered.map((r) => r.acquireCalled)) : undefined,
    giveUps: records.filter((r) => r.type === "miss").length,
    longestIdleMs: longestIdleMs === undefined ? undefined : Math.max(0, longestIdleMs),
    longestIdleAt,
  };
}

/** The liveness lines of the chaos report. */
export function formatLiveness(l: Liveness): string {
  const ms = (v: number | undefined) => (v === undefined ? "-" : `${Math.round(v)} ms`);
  return [
    "  liveness (reported, not judged):",
    `    herd at the start to its first section: ${ms(l.herdToFirstSectionMs)}`,
    `    acquisitions given up:                  ${l.giveUps}`,
    `    longest time with no section (mutex):   ${ms(l.longestIdleMs)}` +
      (l.longestIdleAt ? ` (${l.longestIdleAt}; faults included)` : ""),
  ].join("\n");
}
