// A WAN's variation on top of a fixed latency: jitter and the odd retransmit, drawn from a seeded PRNG
// so two runs (or two implementations in one run) see the same sequence of delays.
import { prng } from "./prng.ts";

/**
 * How a delay varies from request to request. Each delay is `latencyMs × (1 + jitter × u)` with u
 * uniform in [−1, 1], plus `stallMs` with probability `stallChance` (a retransmit).
 * @example
 * await nodeAdmin(url).faults({ latencyMs: 80, spread: { jitter: 0.2, stallChance: 0.01, stallMs: 200, seed: 7 } });
 */
export interface LatencySpread {
  /** Fraction of the latency each delay may move either way (0.2 = ±20 %). */
  jitter: number;
  /** Probability per request (per chunk on a TCP proxy) of `stallMs` more. */
  stallChance: number;
  stallMs: number;
  /** Setting a spread restarts its PRNG from this seed. */
  seed: number;
}

/** Draws the delay of each request in turn. */
export type DelayDraw = (latencyMs: number) => number;

/**
 * A delay source for `spread` (none: the latency unchanged), restarted from its seed.
 * @example
 * const draw = delays({ jitter: 0.2, stallChance: 0.01, stallMs: 200, seed: 1 });
 * draw(80); // somewhere in 64..96, or 264..296 once in a hundred
 */
export function delays(spread: LatencySpread | null): DelayDraw {
  if (!spread) return (latencyMs) => latencyMs;
  const next = prng(spread.seed);
  return (latencyMs) => {
    const jittered = latencyMs * (1 + spread.jitter * (2 * next() - 1));
    // Both draws happen on every request, so the sequence does not depend on which requests stalled.
    const stalled = next() < spread.stallChance;
    return Math.max(0, jittered) + (stalled ? spread.stallMs : 0);
  };
}

/**
 * Checks a spread sent over the admin API (null clears it).
 * @example
 * parseSpread({ jitter: 0.2, stallChance: 0.01, stallMs: 200, seed: 1 });
 */
export function parseSpread(raw: unknown): LatencySpread | null {
  if (raw === null) return null;
  const r = (raw ?? {}) as Record<string, unknown>;
  const spread = {
    jitter: Number(r.jitter ?? 0),
    stallChance: Number(r.stallChance ?? 0),
    stallMs: Number(r.stallMs ?? 0),
    seed: Number(r.seed ?? 1),
  };
  const ok =
    spread.jitter >= 0 &&
    spread.jitter <= 1 &&
    spread.stallChance >= 0 &&
    spread.stallChance <= 1 &&
    spread.stallMs >= 0 &&
    Number.isInteger(spread.seed);
  if (!ok) throw new Error("spread: jitter and stallChance in [0, 1], stallMs ≥ 0, seed an integer");
  return spread;
}
