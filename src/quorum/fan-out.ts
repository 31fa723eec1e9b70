// One fan-out round over N nodes: every request at once, each with its own abort, decided early.
import type { NodeVote, Vote } from "../scripts/vote.ts";
import { announceAbort, announcingController, type AbortWatcher, unwatchAbort, watchAbort } from "../support/abort.ts";
import type { Clock, Deadline } from "../support/clock.ts";

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
 *
 * Each request has an abort signal of its own, aborted only while the request is still out: by the
 * round's deadline (nodeTimeout from the start, the same instant for every request of the round, so one
 * timer serves them all), by the caller's signal before the decision, or by the decision itself with
 * `cancelStragglers`. A request that has settled is never aborted afterwards.
 * @example
 * ```ts
 * const ask = (i: number, signal: AbortSignal) => castVote(nodes[i], ACQUIRE, keys, args, signal);
 * const round = await fanOut(5, ask, { ...options, decide: "outcome" });
 * const held = round.granted >= options.quorum;
 * ```
 */
export function fanOut(count: number, ask: Ask, options: RoundOptions): Promise<Round> {
  return new Promise((resolve) => new FanOut(count, ask, options, resolve).start());
}

/**
 * The state of one round: its counters, each request's abort while it is out, and the round's deadline.
 * It follows the deadline and the caller's signal itself (an announced abort, or one listener each).
 */
class FanOut implements AbortWatcher {
  readonly #count: number;
  readonly #ask: Ask;
  readonly #options: RoundOptions;
  readonly #resolve: (round: Round) => void;
  readonly #deadline: Deadline;
  /** Whether the deadline is followed as an announced abort (else by a listener). */
  #watched = false;
  /** Per node, the abort of its request while it is out; undefined once it settled. */
  readonly #out: (AbortController | undefined)[];
  readonly #votes: (Vote | undefined)[];
  readonly #settled: Promise<Vote>[];
  #outstanding: number;
  #granted = 0;
  #denied = 0;
  #errors = 0;
  #decided = false;

  constructor(count: number, ask: Ask, options: RoundOptions, resolve: (round: Round) => void) {
    this.#count = count;
    this.#ask = ask;
    this.#options = options;
    this.#resolve = resolve;
    this.#outstanding = count;
    this.#out = new Array(count);
    this.#votes = new Array(count);
    this.#settled = new Array(count);
    this.#deadline = options.clock.timeout(options.nodeTimeout);
  }

  start(): void {
    const count = this.#count;
    const caller = this.#options.signal;
    for (let node = 0; node < count; node++) this.#out[node] = announcingController();
    this.#watched = watchAbort(this.#deadline.signal, this);
    if (!this.#watched) this.#deadline.signal.addEventListener("abort", this, { once: true });
    if (caller?.aborted) this.#cutAll(caller.reason);
    else caller?.addEventListener("abort", this, { once: true });
    for (let node = 0; node < count; node++) {
      let vote: Promise<Vote>;
      try {
        vote = Promise.resolve(this.#ask(node, (this.#out[node] as AbortController).signal));
      } catch (error) {
        vote = Promise.reject(error);
      }
      this.#settled[node] = vote.then(
        (answer) => this.#counted(node, answer),
        (error: unknown) => this.#counted(node, { outcome: "error", cause: String((error as Error)?.name ?? "error") }),
      );
    }
  }

  /** The deadline passed (announced). */
  aborted(signal: AbortSignal): void {
    this.#cutAll(signal.reason);
  }

  /** The deadline passed (a custom clock's signal), or the caller's signal aborted before the decision. */
  handleEvent(event: Event): void {
    this.#cutAll((event.target as AbortSignal).reason);
  }

  /** Cuts every request still out. */
  #cutAll(reason: unknown): void {
    for (let node = 0; node < this.#count; node++) {
      const request = this.#out[node];
      if (request) announceAbort(request, reason);
    }
  }

  #counted(node: number, vote: Vote): Vote {
    this.#out[node] = undefined;
    if (--this.#outstanding === 0) {
      this.#deadline.clear();
      if (this.#watched) unwatchAbort(this.#deadline.signal, this);
      else this.#deadline.signal.removeEventListener("abort", this);
    }
    if (this.#decided) return vote;
    this.#votes[node] = vote;
    if (vote.outcome === "granted") this.#granted++;
    else if (vote.outcome === "denied") this.#denied++;
    else this.#errors++;
    const { quorum, decide: rule } = this.#options;
    const known =
      rule === "outcome"
        ? this.#granted >= quorum || this.#denied + this.#errors > this.#count - quorum
        : rule === "answered" && this.#granted + this.#denied >= quorum;
    if (this.#outstanding === 0 || known) this.#decide();
    return vote;
  }

  #decide(): void {
    this.#decided = true;
    this.#options.signal?.removeEventListener("abort", this);
    if (this.#options.cancelStragglers) this.#cutAll(new DOMException("round decided", "AbortError"));
    const votes: NodeVote[] = new Array(this.#count);
    for (let node = 0; node < this.#count; node++) {
      const vote = this.#votes[node];
      votes[node] = vote === undefined ? { outcome: "unanswered", node } : { ...vote, node };
    }
    this.#resolve({ granted: this.#granted, denied: this.#denied, errors: this.#errors, votes, settled: this.#settled });
  }
}
