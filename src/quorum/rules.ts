// The arithmetic of Redlock, each rule written once: how many nodes make a quorum, and the drift allowance.

/** Added to the drift allowance, as the Redlock page does (ms). */
const DRIFT_FLOOR_MS = 2;

/**
 * How many of `nodes` must agree: a majority, floor(N/2) + 1. Two majorities always share a node.
 * @example
 * ```ts
 * quorumOf(5); // 3
 * ```
 */
export function quorumOf(nodes: number): number {
  return Math.floor(nodes / 2) + 1;
}

/**
 * How much a lock's validity is cut for clock drift between the nodes and this process:
 * ttl × driftFactor + 2 ms.
 * @example
 * ```ts
 * driftAllowance(10_000, 0.01); // 102
 * ```
 */
export function driftAllowance(ttl: number, driftFactor: number): number {
  return ttl * driftFactor + DRIFT_FLOOR_MS;
}
