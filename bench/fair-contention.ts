// The `contention` scenario's herd and steady rows (fair waiting): 16 clients, each with its own instance of the
// implementation, on one key. herd: all start at once, hold 20 ms, once each. steady: all loop
// acquire (maxWait 3 s) → hold 50 ms → release. Figures against the handover limit, one grant per
// (hold + two round trips): a release round, then the next holder's acquire round.
import type { Held, Impl } from "./impl-kit.ts";
import { percentile } from "./stats.ts";

export const CLIENTS = 16;
export const HERD_HOLD_MS = 20;
export const STEADY_HOLD_MS = 50;
export const STEADY_MAX_WAIT_MS = 3_000;
/**
 * The ttl of these rows. Short on purpose: an acquisition gives up at once when a quorum reports the
 * holder's ttl past its maxWait, so a 10 s ttl with maxWait 3 s would measure that rule instead.
 */
export const FAIR_TTL = 2_000;

export interface Counters {
  /** Starts counting; `stop` returns HTTP requests (undefined for TCP implementations) and Redis commands. */
  start(impl: Impl): Promise<{ stop(): Promise<{ http?: number; commands: number }> }>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Jain's fairness index over per-client grants: 1 when equal, 1/n when one client got everything. */
export function jain(xs: number[]): number {
  const sum = xs.reduce((a, b) => a + b, 0);
  const squares = xs.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? 0 : (sum * sum) / (xs.length * squares);
}

/** 16 at once, hold 20 ms each: makespan, the attempt that made the first grant, give-ups, waits. */
export async function herd(make: () => Impl, key: string, rttMs: number, counters: Counters) {
  const clients = Array.from({ length: CLIENTS }, make);
  const counting = await counters.start(clients[0]);
  const began = performance.now();
  const waits: number[] = [];
  let giveUps = 0;
  let firstGrant: { at: number; attempts?: number } | undefined;
  let end = began;
  let inside = 0;
  let overlaps = 0;
  await Promise.all(
    clients.map(async (impl) => {
      try {
        const held = await impl.acquire(key, FAIR_TTL, { wait: 10_000 });
        const at = performance.now();
        if (!firstGrant || at < firstGrant.at) firstGrant = { at, attempts: held.attempts };
        waits.push(at - began);
        if (++inside > 1) overlaps++;
        await sleep(HERD_HOLD_MS);
        inside--;
        await held.release();
        end = Math.max(end, performance.now());
      } catch {
        giveUps++;
      }
    }),
  );
  const { http, commands } = await counting.stop();
  await Promise.all(clients.map((impl) => impl.close()));
  const grants = CLIENTS - giveUps;
  const makespanMs = end - began;
  const idealMs = CLIENTS * (HERD_HOLD_MS + 2 * rttMs);
  return {
    makespanMs,
    idealMs,
    vsIdeal: makespanMs / idealMs,
    firstGrantMs: firstGrant ? firstGrant.at - began : undefined,
    firstGrantAttempt: firstGrant?.attempts,
    giveUps,
    overlaps,
    waitP99Ms: percentile(waits, 99),
    ...(http === undefined ? {} : { httpRequestsPerGrant: http / Math.max(1, grants) }),
    commandsPerGrant: commands / Math.max(1, grants),
  };
}

/** 16 loop for `durationMs`: grants/s against the handover limit, give-ups, Jain's index, p99 wait. */
export async function steady(make: () => Impl, key: string, rttMs: number, durationMs: number, counters: Counters) {
  const clients = Array.from({ length: CLIENTS }, make);
  const counting = await counters.start(clients[0]);
  const deadline = performance.now() + durationMs;
  const perClient = new Array<number>(CLIENTS).fill(0);
  const waits: number[] = [];
  let giveUps = 0;
  let inside = 0;
  let overlaps = 0;
  await Promise.all(
    clients.map(async (impl, client) => {
      while (performance.now() < deadline) {
        const asked = performance.now();
        let held: Held;
        try {
          held = await impl.acquire(key, FAIR_TTL, { wait: STEADY_MAX_WAIT_MS });
        } catch {
          giveUps++;
          continue;
        }
        waits.push(performance.now() - asked);
        perClient[client]++;
        if (++inside > 1) overlaps++;
        await sleep(STEADY_HOLD_MS);
        inside--;
        await held.release();
      }
    }),
  );
  const { http, commands } = await counting.stop();
  await Promise.all(clients.map((impl) => impl.close()));
  const grants = perClient.reduce((a, b) => a + b, 0);
  const grantsPerSec = grants / (durationMs / 1000);
  const handoverLimitPerSec = 1000 / (STEADY_HOLD_MS + 2 * rttMs);
  const waitP99Ms = percentile(waits, 99);
  const waitBoundMs = 1.3 * (CLIENTS - 1) * (STEADY_HOLD_MS + 2 * rttMs);
  return {
    grantsPerSec,
    handoverLimitPerSec,
    vsHandover: grantsPerSec / handoverLimitPerSec,
    giveUps,
    overlaps,
    jain: jain(perClient),
    minGrants: Math.min(...perClient),
    maxGrants: Math.max(...perClient),
    waitP99Ms,
    waitP99VsBound: waitP99Ms / waitBoundMs,
    ...(http === undefined ? {} : { httpRequestsPerGrant: http / Math.max(1, grants) }),
    commandsPerGrant: commands / Math.max(1, grants),
  };
}
