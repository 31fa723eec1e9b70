// One fan-out round over N nodes: every request at once, each with its own timeout, decided early.
import type { NodeVote, Vote } from "../scripts/vote.ts";
import { anySignal, type Clock } from "../support/clock.ts";

/** How a round asks one node; must resolve (not reject) with the node's vote. */
export type Ask = (node: number, signal: AbortSignal) => Promise<Vote>;

/** How a round is run. */
export interface RoundOptions {
  /** Votes needed for success: floor(N/2) + 1 for a lock; N for "wait for everyone". */
  quorum: number;
  /** Each request is cut after this many ms. */
  nodeTimeout: number;
  clock: Clock;
  /**
   * The caller's signal: aborting it before the round is decided cuts every request of the round (after, they run
   * on).
   */
  signal?: AbortSignal;
  /**
   * When the round is decided, at the latest once every node finished: `outcome` — as soon as a quorum
   * granted or a quorum can no longer grant (acquire, extend); `answered` — as soon as a quorum gave a
   * definite answer, granted or denied (release); `all` — only then.
   */
  decide: "outcome" | "answered" | "all";
  /** Cut the requests still running once the round is decided (their answer no longer matters). */
  cancelStragglers: boolean;
}

/** The outcome of one round, as it stood when it was decided. */
export interface Round {
  granted: number;
  denied: number;
  errors: number;
  /** Per node, in node order; `unanswered` when the round was decided first. */
  votes: NodeVote[];
  /** Per node, the vote whenever it arrives (stragglers included). */
  settled: Promise<Vote>[];
}

/**
 * Sends `ask` to all `count` nodes at once and resolves when the round is decided (see
 * {@link RoundOptions.decide}); the requests still out run on unless `cancelStragglers`.
 * @example
 * ```ts
 * const ask = (i: number, signal: AbortSignal) => castVote(nodes[i], ACQUIRE, keys, args, signal);
 * const round = await fanOut(5, ask, { ...options, decide: "outcome" });
 * const held = round.granted >= options.quorum;
 * ```
 */
export function fanOut(count: number, ask: Ask, options: RoundOptions): Promise<Round> {
  const { quorum, nodeTimeout, clock, decide: rule, cancelStragglers } = options;
  // Cut by the caller's signal until the round is decided, or by the decision itself (cancelStragglers).
  // Without either, each request has its deadline alone: no combined signal (AbortSignal.any) per request.
  const cut = options.signal || cancelStragglers ? new AbortController() : undefined;
  const onCallerAbort = () => cut?.abort(options.signal?.reason);
  if (options.signal?.aborted) onCallerAbort();
  else options.signal?.addEventListener("abort", onCallerAbort, { once: true });
  const votes: (Vote | undefined)[] = new Array(count).fill(undefined);
  let granted = 0;
  let denied = 0;
  let errors = 0;
  let decided = false;

  return new Promise((resolve) => {
    const decide = () => {
      decided = true;
      options.signal?.removeEventListener("abort", onCallerAbort);
      if (cancelStragglers) cut?.abort(new DOMException("round decided", "AbortError"));
      resolve({
        granted,
        denied,
        errors,
        votes: votes.map((vote, node) => ({ ...(vote ?? { outcome: "unanswered" as const }), node })),
        settled,
      });
    };
    const tally = (vote: Vote) => {
      if (vote.outcome === "granted") granted++;
      else if (vote.outcome === "denied") denied++;
      else errors++;
    };
    const settled = Array.from({ length: count }, (_, node) => {
      const deadline = clock.timeout(nodeTimeout);
      const signal = cut ? anySignal([deadline.signal, cut.signal]) : deadline.signal;
      return Promise.resolve()
        .then(() => ask(node, signal))
        .catch((error: unknown): Vote => ({ outcome: "error", cause: String((error as Error)?.name ?? "error") }))
        .then((vote) => {
          deadline.clear();
          if (decided) return vote;
          votes[node] = vote;
          tally(vote);
          const finished = granted + denied + errors === count;
          const known =
            rule === "outcome"
              ? granted >= quorum || denied + errors > count - quorum
              : rule === "answered" && granted + denied >= quorum;
          if (finished || known) decide();
          return vote;
        });
    });
  });
}
