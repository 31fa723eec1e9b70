// What one node answered in one round.

/**
 * One node's answer. `granted`: the script did what was asked on this node. `denied`: the node
 * answered and refused (another value holds a key; `pttl` is its remaining time in ms, -1 when it
 * has no expiry, -2 when the key is absent). A grant from a fencing acquire carries the node's
 * counter as `fence` (a decimal string). A semaphore's refusal lists the slots that look `free` on that
 * node (0-based) and its `pttl` is the soonest expiry of a held slot. A fair script's refusal says how many
 * live waiters are ahead of the asker in the node's line (`position`, 0: first in line), or, when the asker's ticket
 * was out of step with the node's clock, the node's time (`nodeTime`, epoch ms). `error`: no usable
 * answer (timeout, network, HTTP status, unparsable or unexpected reply) — never a vote for.
 * @example
 * ```ts
 * const vote: Vote = { outcome: "denied", pttl: 4200 };
 * ```
 */
export type Vote =
  | { outcome: "granted"; fence?: string }
  | { outcome: "denied"; pttl?: number; free?: number[]; position?: number; nodeTime?: number }
  | { outcome: "error"; cause: string };

/**
 * A vote in a tally, with the index of its node in the `nodes` given to `Redlock`.
 * `unanswered`: the round was decided before this node replied.
 * @example
 * ```ts
 * import { LockAcquisitionError } from "edge-redlock";
 *
 * try {
 *   await redlock.acquire(["k"], 5_000);
 * } catch (error) {
 *   if (!(error instanceof LockAcquisitionError)) throw error;
 *   for (const v of error.attempts[0].votes) if (v.outcome === "error") console.log(v.node, v.cause);
 * }
 * ```
 */
export type NodeVote = (Vote | { outcome: "unanswered" }) & { node: number };
