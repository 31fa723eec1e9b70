// The wait between two attempts: as the nodes said (a waiter in line: its place, the holder's time), or
// retryDelay ± retryJitter at random.
import type { NodeVote } from "../scripts/vote.ts";
import type { RetryPolicy } from "../options.ts";
import { quorumOf } from "../quorum/rules.ts";
import { randomUnit } from "../support/random.ts";

/** The first in line asks again after about one round trip, within these bounds (ms). */
const FIRST_POLL_MIN_MS = 3;
const FIRST_POLL_MAX_MS = 20;
/** Random spread added to every informed wait (ms), so waiters do not ask in lockstep. */
const JITTER_MS = 5;
/** After a split vote (grants, but no quorum): retry at once, within this jitter (ms). */
const SPLIT_JITTER_MS = 10;

/**
 * How long until a quorum of nodes could be free of the holder (ms; Infinity for a key without expiry):
 * known only when at least a quorum of nodes denied and reported the holder's PTTL. Nodes that did not
 * report count as free now. The holder may release earlier; it cannot be later unless it extends.
 * @example
 * ```ts
 * holderFreeIn(votes); // 4180: three of five nodes hold the key for at least 4.18 s more
 * ```
 */
export function holderFreeIn(votes: readonly NodeVote[]): number | undefined {
  const quorum = quorumOf(votes.length);
  const pttls = votes
    // A semaphore's refusal (it lists free slots) reports the soonest slot expiry, not a holder's: not counted.
    .flatMap((v) =>
      v.outcome === "denied" && v.free === undefined && v.pttl !== undefined && v.pttl !== -2 ? [v.pttl] : [],
    )
    .map((pttl) => (pttl === -1 ? Number.POSITIVE_INFINITY : pttl))
    .sort((a, b) => a - b);
  if (pttls.length < quorum) return undefined;
  // Free on a quorum once all but (quorum − 1 − nodes not reporting) of the reported keys are gone.
  const mustExpire = quorum - (votes.length - pttls.length);
  return pttls[mustExpire - 1];
}

/**
 * The asker's place in line as a quorum sees it: the smallest place at least a quorum of the denying
 * nodes agree it has reached (0: first), or undefined when no node reported one.
 * @example
 * ```ts
 * queuePosition(votes); // 2
 * ```
 */
export function queuePosition(votes: readonly NodeVote[]): number | undefined {
  const places = votes
    .flatMap((v) => (v.outcome === "denied" && v.position !== undefined ? [v.position] : []))
    .sort((a, b) => a - b);
  if (places.length === 0) return undefined;
  return places[Math.min(quorumOf(votes.length) - 1, places.length - 1)];
}

/** What a waiter remembers between its attempts: how fast the line moves. */
export interface LinePace {
  /** When and where in line it was first seen (monotonic ms, place). */
  first?: { at: number; position: number };
  /** Estimated ms per waiter served. */
  serviceMs?: number;
}

/**
 * The wait before a waiter's next attempt, from the failed round: after a split vote (some grants, no
 * quorum) almost none; first in line (or blocked only by the queue) about one round trip; further back in
 * proportion to its place and the pace the line moves at, never past the holder's expiry plus a jitter,
 * and never past `cap` (its queue entry must be refreshed before its lease ends).
 * @example
 * ```ts
 * const delay = fairWait(round.votes, granted, { now, roundMs, cap: 200, pace, random: randomUnit });
 * ```
 */
export function fairWait(
  votes: readonly NodeVote[],
  granted: number,
  how: { now: number; roundMs: number; cap: number; pace: LinePace; random: () => number },
): number {
  const { now, roundMs, cap, pace, random } = how;
  const quorum = quorumOf(votes.length);
  if (granted > 0 && granted < quorum) return random() * SPLIT_JITTER_MS;
  const jitter = random() * JITTER_MS;
  const position = queuePosition(votes) ?? 0;
  const poll = Math.min(FIRST_POLL_MAX_MS, Math.max(FIRST_POLL_MIN_MS, roundMs));
  if (!pace.first) pace.first = { at: now, position };
  else if (position < pace.first.position) pace.serviceMs = (now - pace.first.at) / (pace.first.position - position);
  const holder = holderFreeIn(votes);
  // The first asks a few times per holder (the pace the line moves at), the next in line half as often; further
  // back, in proportion to the places ahead of the next in line. Only the first two ask faster than the pace:
  // one asking late would slow the whole line down to its own guess.
  const service = pace.serviceMs ?? poll * 2;
  let wait =
    position === 0
      ? Math.max(poll, service / 4)
      : position === 1
        ? Math.max(poll, service / 2)
        : (position - 1) * service;
  if (holder !== undefined && holder < wait) wait = holder;
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
