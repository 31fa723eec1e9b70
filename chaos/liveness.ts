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
  /**
   * Per mutex, the most time within one stretch with no section during which at least one of its clients was free to
   * contend (not held back by a targeted scenario, not crashed): the idle time the lock itself answers for (ms).
   */
  longestFreeIdleMs: number | undefined;
  /** Where it was, and the acquisitions given up on that resource during it, by reason. */
  longestFreeIdleAt: string | undefined;
  /** The bed's own stalls: threads whose event loop could not run for over a second (see `StallRecord`). */
  stalls: { main: number; clients: number; longestMs: number | undefined; longestAt: string | undefined };
  /** The longest stall of each thread that fell within the longest free stretch, main thread first (ms). */
  stallsInFreeIdle: string | undefined;
}

/** A stall counts in the report from this long (ms): shorter ones are within a round's timeout. */
const STALL_COUNTED_MS = 1_000;

/** When each client was free to contend: from `client-state` records (running / paused) and crashes. */
function runningSpans(records: ChaosRecord[], end: number): Map<number, [number, number][]> {
  const spans = new Map<number, [number, number][]>();
  const since = new Map<number, number>();
  const stop = (client: number, at: number) => {
    const from = since.get(client);
    if (from === undefined) return;
    since.delete(client);
    const mine = spans.get(client) ?? [];
    mine.push([from, at]);
    spans.set(client, mine);
  };
  for (const r of records) {
    if (r.type === "client-state") {
      if (r.state === "running") {
        if (!since.has(r.client)) since.set(r.client, r.at);
      } else stop(r.client, r.at);
    } else if (r.type === "crash") stop(r.client, r.at);
  }
  for (const client of [...since.keys()]) stop(client, end);
  return spans;
}

/** How much of [from, to] is covered by at least one of the spans. */
function covered(spans: [number, number][], from: number, to: number): number {
  const cut = spans
    .map(([a, b]) => [Math.max(a, from), Math.min(b, to)] as [number, number])
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0]);
  let total = 0;
  let reach = from;
  for (const [a, b] of cut) {
    if (b <= reach) continue;
    total += b - Math.max(a, reach);
    reach = b;
  }
  return total;
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
  const first = entered.reduce((min, r) => Math.min(min, r.start), Infinity);
  const logEnd = records.reduce((end, r) => Math.max(end, "at" in r ? r.at : r.type === "cs" ? r.end : 0), 0);
  const running = runningSpans(records, logEnd);
  // Without client-state records (older logs) every client counts as free all along.
  const always = running.size === 0;
  const clock = (t: number) => new Date(t).toISOString().slice(11, 23);
  let longestIdleMs: number | undefined;
  let longestIdleAt: string | undefined;
  let longestFreeIdleMs: number | undefined;
  let longestFreeIdleAt: string | undefined;
  let freeIdleSpan: [number, number] | undefined;
  for (const name of mutexes) {
    const mine = sections.filter((s) => s.resource === name).sort((a, b) => a.start - b.start);
    const clients = new Set(mine.map((s) => s.client));
    const spans = [...clients].flatMap((c) => running.get(c) ?? []);
    let lastEnd = mine[0]?.end;
    for (const s of mine.slice(1)) {
      if (stop?.type === "stop" && s.start > stop.at) break;
      const idle = s.start - lastEnd;
      if (longestIdleMs === undefined || idle > longestIdleMs) {
        longestIdleMs = idle;
        longestIdleAt = `${name} before ${clock(s.start)}`;
      }
      const free = idle <= 0 ? 0 : always ? idle : covered(spans, lastEnd, s.start);
      if (longestFreeIdleMs === undefined || free > longestFreeIdleMs) {
        const from = lastEnd;
        const reasons = new Map<string, number>();
        for (const r of records)
          if (r.type === "miss" && r.resource === name && r.at > from && r.at <= s.start) {
            const why = r.detail?.split(",")[0] ?? r.reason;
            reasons.set(why, (reasons.get(why) ?? 0) + 1);
          }
        const given = [...reasons].map(([why, n]) => `${why} ${n}`).join(", ") || "none";
        longestFreeIdleMs = free;
        longestFreeIdleAt = `${name}, ${clock(from)}–${clock(s.start)}; given up in it: ${given}`;
        freeIdleSpan = [from, s.start];
      }
      lastEnd = Math.max(lastEnd, s.end);
    }
  }
  const stalls = records.flatMap((r) => (r.type === "stall" && r.maxMs >= STALL_COUNTED_MS ? [r] : []));
  const longestStall = stalls.reduce<(typeof stalls)[number] | undefined>(
    (max, r) => (max === undefined || r.maxMs > max.maxMs ? r : max),
    undefined,
  );
  const thread = (r: { client?: number }) => (r.client === undefined ? "main" : `client ${r.client}`);
  // A stall record closes the second it measured: it overlaps a stretch that began before it was written.
  const inFreeIdle = freeIdleSpan
    ? records.flatMap((r) =>
        r.type === "stall" && r.at > freeIdleSpan[0] && r.at - 1_000 < freeIdleSpan[1] ? [r] : [],
      )
    : [];
  const worst = new Map<string, number>();
  for (const r of inFreeIdle) worst.set(thread(r), Math.max(worst.get(thread(r)) ?? 0, r.maxMs));
  const ordered = [...worst].sort(([a], [b]) => (a === "main" ? -1 : b === "main" ? 1 : 0));
  return {
    stalls: {
      main: stalls.filter((r) => r.client === undefined).length,
      clients: stalls.filter((r) => r.client !== undefined).length,
      longestMs: longestStall?.maxMs,
      longestAt: longestStall ? `${thread(longestStall)}, second before ${clock(longestStall.at)}` : undefined,
    },
    stallsInFreeIdle: freeIdleSpan
      ? ordered.map(([who, ms]) => `${who} ${ms} ms`).join(", ") || "none over 250 ms"
      : undefined,
    herdToFirstSectionMs: Number.isFinite(first)
      ? first - entered.reduce((min, r) => Math.min(min, r.acquireCalled), Infinity)
      : undefined,
    giveUps: records.filter((r) => r.type === "miss").length,
    longestIdleMs: longestIdleMs === undefined ? undefined : Math.max(0, longestIdleMs),
    longestIdleAt,
    longestFreeIdleMs,
    longestFreeIdleAt,
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
    `    the same, counting only time a client of the mutex was free to contend: ${ms(l.longestFreeIdleMs)}` +
      (l.longestFreeIdleAt ? ` (${l.longestFreeIdleAt})` : ""),
    ...(l.stallsInFreeIdle === undefined ? [] : [`      the bed's threads stalled in it: ${l.stallsInFreeIdle}`]),
    `    the bed's stalls over 1 s (event loop): main thread (the bridges) ${l.stalls.main}, ` +
      `client threads ${l.stalls.clients}` +
      (l.stalls.longestMs === undefined ? "" : `; longest ${l.stalls.longestMs} ms (${l.stalls.longestAt})`),
  ].join("\n");
}
