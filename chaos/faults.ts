// The seeded fault scheduler: what goes wrong, where, and for how long — reproducible from --seed.
import type { FaultKind } from "./records.ts";

/** mulberry32: a small seeded PRNG, so a run is reproducible from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A fault to apply: `target` is a lock node index or a client index. */
export interface PlannedFault {
  kind: FaultKind;
  target: number;
  /** ms the fault lasts (for kill-restart: how long the node stays down before its empty restart). */
  duration: number;
  /** kill-restart only: a second node that crashes at the same moment (a correlated crash, e.g. one zone). */
  also?: number;
}

const KINDS: [FaultKind, number][] = [
  ["kill-restart", 4],
  ["pause", 2],
  ["latency", 2],
  ["hang", 2],
  ["http-500", 1],
  ["http-503", 1],
  ["garbage", 1],
  ["client-stall", 2],
];

/**
 * Picks the next fault. `ttl` bounds the delayed restart: a killed node stays down for longer than the
 * maximum ttl (the Redlock page's delayed-restart rule) unless `unsafeRestart`, which brings it back
 * empty at once (the negative control).
 */
export function nextFault(random: () => number, options: { ttl: number; nodes: number; clients: number; unsafeRestart: boolean }): PlannedFault {
  const total = KINDS.reduce((sum, [, weight]) => sum + weight, 0);
  let pick = random() * total;
  const kind = KINDS.find(([, weight]) => (pick -= weight) < 0)?.[0] ?? "latency";
  const between = (lo: number, hi: number) => Math.round(lo + random() * (hi - lo));
  switch (kind) {
    case "kill-restart": {
      const target = between(0, options.nodes - 1);
      const duration = options.unsafeRestart ? 0 : between(1.5 * options.ttl, 2 * options.ttl);
      // Two in five crashes take a second node down with the first (never a majority: at most two).
      if (random() >= 0.4) return { kind, target, duration };
      return { kind, target, duration, also: (target + between(1, options.nodes - 1)) % options.nodes };
    }
    case "client-stall":
      return { kind, target: between(0, options.clients - 1), duration: between(1.5 * options.ttl, 2.5 * options.ttl) };
    case "pause":
      return { kind, target: between(0, options.nodes - 1), duration: between(200, 2 * options.ttl) };
    default:
      return { kind, target: between(0, options.nodes - 1), duration: between(200, 1_500) };
  }
}
