// One fan-out round over N nodes: every request at once, each with its own abort, decided early.
import type { NodeVote, Vote } from "../scripts/vote.ts";
import {
  announceAbort,
  announcingController,
  type AnnouncingController,
  unwatchAbort,
  watchAbort,
} from "../support/abort.ts";
import type { Clock } from "../support/clock.ts";

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
  /** The nodes whose answers decided the round, in the order they came: the fastest first. */
  order?: number[];
  /** Per node, the vote whenever it arrives (stragglers included). */
  settled: Promise<Vote>[];
}

/**
 * Sends `ask` to all `count` nodes at once and resolves when the round is decided (see
 * {@link RoundOptions.decide}); the requests still out run on unless `cancelStragglers`.
 *
 * Each request has an abort signal of its own, aborted only while the request is still out: by the
 * round's deadline (nodeTimeout from the start, the same instant for every request of the round, so one
 * timer serves them all), by the caller's signal before the decision, or by the decision itself with
 * `cancelStragglers`. A request that has settled is never aborted afterwards.
 */
export function fanOut(count: number, ask: Ask, options: RoundOptions): Promise<Round> {
  const { quorum, clock, signal: caller, decide: rule, cancelStragglers } = options;
  const deadline = clock.timeout(options.nodeTimeout);
  /** Per node, the abort of its request while it is out; undefined once it settled. */
  const out: (AnnouncingController | undefined)[] = new Array(count);
  const votes: (Vote | undefined)[] = new Array(count);
  const order: number[] = [];
  const settled: Promise<Vote>[] = new Array(count);
  let outstanding = count;
  let granted = 0;
  let denied = 0;
  let errors = 0;
  let decided = false;
  let resolveRound: (round: Round) => void = () => {};

  /** Cuts every request still out. */
  const cutAll = (reason: unknown) => {
    for (let node = 0; node < count; node++) {
      const request = out[node];
      if (request) announceAbort(request, reason);
    }
  };
  // One object follows the deadline (an announced abort, or a custom clock's event) and the caller's signal.
  const watcher = {
    aborted: (signal: AbortSignal) => cutAll(signal.reason),
    handleEvent: (event: Event) => cutAll((event.target as AbortSignal).reason),
  };
  const watched = watchAbort(deadline.signal, watcher);
  const counted = (node: number, vote: Vote): Vote => {
    out[node] = undefined;
    if (--outstanding === 0) {
      deadline.clear();
      if (watched) unwatchAbort(deadline.signal, watcher);
      else deadline.signal.removeEventListener("abort", watcher);
    }
    if (decided) return vote;
    votes[node] = vote;
    order.push(node);
    if (vote.outcome === "granted") granted++;
    else if (vote.outcome === "denied") denied++;
    else errors++;
    const known =
      rule === "outcome"
        ? granted >= quorum || denied + errors > count - quorum
        : rule === "answered" && granted + denied >= quorum;
    if (outstanding === 0 || known) {
      decided = true;
      caller?.removeEventListener("abort", watcher);
      if (cancelStragglers) cutAll(new DOMException("round decided", "AbortError"));
      const nodeVotes: NodeVote[] = new Array(count);
      for (let i = 0; i < count; i++) {
        const v = votes[i];
        nodeVotes[i] = v === undefined ? { outcome: "unanswered", node: i } : { ...v, node: i };
      }
      resolveRound({ granted, denied, errors, votes: nodeVotes, order, settled });
    }
    return vote;
  };

  const round = new Promise<Round>((resolve) => (resolveRound = resolve));
  for (let node = 0; node < count; node++) out[node] = announcingController();
  if (!watched) deadline.signal.addEventListener("abort", watcher, { once: true });
  if (caller?.aborted) cutAll(caller.reason);
  else caller?.addEventListener("abort", watcher, { once: true });
  for (let node = 0; node < count; node++) {
    let vote: Promise<Vote>;
    try {
      vote = Promise.resolve(ask(node, (out[node] as AnnouncingController).signal));
    } catch (error) {
      vote = Promise.reject(error);
    }
    settled[node] = vote.then(
      (answer) => counted(node, answer),
      (error: unknown) => counted(node, { outcome: "error", cause: String((error as Error)?.name ?? "error") }),
    );
  }
  return round;
}
