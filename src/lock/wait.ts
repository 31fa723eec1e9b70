// The wait between two attempts: for a waiter in line, until it is woken or the time the nodes gave is up; for a
// client that retries on its own, retryDelay ± retryJitter at random.
import type { RetryPolicy } from "../options.ts";
import type { NodeVote } from "../scripts/vote.ts";
import { quorumOf } from "../quorum/rules.ts";
import { randomUnit } from "../support/random.ts";

/** Random spread added to every informed wait (ms), so waiters do not ask in lockstep. */
const JITTER_MS = 5;
/** After a split vote (grants, but no quorum): retry at once, within this jitter (ms). */
const SPLIT_JITTER_MS = 10;

/**
 * How long until a quorum of nodes could be free of the holder (ms; Infinity for a key without expiry):
 * known only when at least a quorum of nodes denied and reported the holder's PTTL. Nodes that answered without
 * one count as free now; nodes that did not answer (the round was decided without them, or they failed) count as
 * free no sooner than the reported ones. The holder may release earlier; it cannot be later unless it extends.
 */
export function holderFreeIn(votes: readonly NodeVote[]): number | undefined {
  return quorumFreeIn(votes, (v) =>
    // A semaphore's refusal (it lists free slots) reports the soonest slot expiry, not a holder's: not counted.
    v.outcome === "denied" && v.free === undefined && v.pttl !== undefined && v.pttl !== -2
      ? v.pttl === -1
        ? Number.POSITIVE_INFINITY
        : v.pttl
      : undefined,
  );
}

/**
 * How long until a semaphore's permit could be free on a quorum (ms): from refusals that list no free slot, the
 * quorum-th soonest expiry of a held permit (as for {@link holderFreeIn}). Undefined when a quorum of refusals did
 * not report one (a slot was free there: the line is what stands in the way).
 */
export function slotFreeIn(votes: readonly NodeVote[]): number | undefined {
  return quorumFreeIn(votes, (v) =>
    v.outcome === "denied" && v.free !== undefined && v.free.length === 0 && v.pttl !== undefined && v.pttl >= 0
      ? v.pttl
      : undefined,
  );
}

/**
 * The quorum-th soonest of the nodes' times until free, where `timeOf` reads a node's time from its answer
 * (undefined: free now). Nodes without an answer are counted as late as the latest time, so they never decide.
 */
function quorumFreeIn(votes: readonly NodeVote[], timeOf: (vote: NodeVote) => number | undefined): number | undefined {
  const quorum = quorumOf(votes.length);
  const times: number[] = [];
  let free = 0;
  for (const vote of votes) {
    if (vote.outcome !== "granted" && vote.outcome !== "denied") continue;
    const time = timeOf(vote);
    if (time === undefined) free++;
    else times.push(time);
  }
  if (times.length < quorum) return undefined;
  times.sort((a, b) => a - b);
  return times[quorum - free - 1];
}

/**
 * The asker's place in line as a quorum sees it: the smallest place at least a quorum of the denying
 * nodes agree it has reached (0: first), or undefined when no node reported one.
 */
export function queuePosition(votes: readonly NodeVote[]): number | undefined {
  const places = votes
    .flatMap((v) => (v.outcome === "denied" && v.position !== undefined ? [v.position] : []))
    .sort((a, b) => a - b);
  if (places.length === 0) return undefined;
  return places[Math.min(quorumOf(votes.length) - 1, places.length - 1)];
}

/**
 * How long a waiter may wait for a wakeup before it asks again on its own, from its refused round: after a split
 * vote or a ticket out of step, almost at once; behind a holder, until the holder's time is up (a release before
 * that wakes it); behind only the line, until the first in line had its claim window; never past `cap` (its
 * entry's heartbeat, or how often it asks while no subscription is alive).
 */
export function fallbackWait(
  votes: readonly NodeVote[],
  granted: number,
  how: { roundMs: number; claimMs: number; cap: number; random: () => number },
): number {
  const { roundMs, claimMs, cap, random } = how;
  const quorum = quorumOf(votes.length);
  if (granted > 0 && granted < quorum) return random() * SPLIT_JITTER_MS;
  const jitter = random() * JITTER_MS;
  // A release before the holder's (or the soonest permit's) time is up wakes the waiter: it need not ask sooner.
  const holder = holderFreeIn(votes) ?? slotFreeIn(votes);
  const position = queuePosition(votes);
  // First in line yet refused by the line alone: the nodes disagree on who is first; ask again after a round.
  const wait = holder ?? (position === 0 ? Math.max(3, roundMs) : claimMs + roundMs);
  return Math.max(0, Math.min(cap, wait + jitter));
}

/**
 * The wait before the next attempt when the nodes gave none: `retryDelay ± retryJitter`.
 * @example
 * ```ts
 * randomWait({ retryDelay: 200, retryJitter: 100 }); // 100–300
 * ```
 */
export function randomWait(policy: Pick<RetryPolicy, "retryDelay" | "retryJitter">): number {
  return Math.max(0, policy.retryDelay + (2 * randomUnit() - 1) * policy.retryJitter);
}

/**
 * Whether a wait of `delay` ms, `elapsed` ms into an acquisition, would end past its `maxWait`. Compared as
 * `delay > maxWait − elapsed`: a wait cut to end at maxWait is exactly `maxWait − elapsed`, and adding `elapsed`
 * back may round above maxWait, which would give up a waiter that should sleep until then.
 * @example
 * ```ts
 * waitsPast(3037.397738, 556.431515, 3037.397738 - 556.431515); // false
 * ```
 */
export function waitsPast(maxWait: number, elapsed: number, delay: number): boolean {
  return delay > maxWait - elapsed;
}
