// The rounds of one Redlock over its nodes: a script to every node at once, the quorum, and validity.
import type { AttemptTally } from "../errors.ts";
import { castVote, landingOf, runScript } from "../node/outcome.ts";
import type { RedlockNode } from "../node/node.ts";
import type { ResolvedOptions } from "../options.ts";
import type { Script } from "../scripts/script.ts";
import type { Vote } from "../scripts/vote.ts";
import { NodeClock, type Clock } from "../support/clock.ts";
import { pooledValue } from "../support/random.ts";
import { fanOut, type Round, type RoundOptions } from "./fan-out.ts";
import { driftAllowance, quorumOf } from "./rules.ts";

/** One grant round: the attempt's fresh value, when it started, and how the nodes voted. */
export interface Grant {
  value: string;
  start: number;
  round: Round;
}

/**
 * The nodes of one `Redlock` and the rounds over them. Every operation of a lock or a semaphore permit
 * goes through {@link Rounds.round}: all nodes at once, each request under its own nodeTimeout, decided
 * as soon as the outcome is known. The validity rule is here and nowhere else:
 * validity = ttl − (now − start) − drift, and a round holds iff a quorum granted with validity left.
 */
export class Rounds {
  readonly nodes: readonly RedlockNode[];
  /** floor(N/2) + 1. */
  readonly quorum: number;
  readonly options: Readonly<ResolvedOptions>;
  /** The nodes' tokens: taken out of every failure text. */
  readonly #secrets: readonly string[];
  /** The nodes' clock as the acquisitions learned it (a line's tickets are timed by it). */
  readonly nodeClock: NodeClock;
  /** The slowest recent refused round (ms), decaying: a waiter's claim window must fit about two of them. */
  slowRoundMs = 0;
  /** Whether a waiter can be woken: some node can subscribe. */
  readonly wakeable: boolean;

  constructor(nodes: readonly RedlockNode[], options: Readonly<ResolvedOptions>, secrets: readonly string[]) {
    this.nodes = nodes;
    this.options = options;
    this.#secrets = secrets;
    this.quorum = quorumOf(nodes.length);
    this.nodeClock = new NodeClock(options.clock);
    this.wakeable = nodes.some((node) => node.subscribe !== undefined);
  }

  get clock(): Clock {
    return this.options.clock;
  }

  /** ttl × driftFactor + 2 ms. */
  drift(ttl: number): number {
    return driftAllowance(ttl, this.options.driftFactor);
  }

  /** ttl − (now − start) − drift. */
  validity(ttl: number, start: number): number {
    return ttl - (this.clock.now() - start) - this.drift(ttl);
  }

  /** Whether a round started at `start` holds: a quorum granted, and validity is left. */
  holds(round: Round, ttl: number, start: number): boolean {
    return round.granted >= this.quorum && this.validity(ttl, start) > 0;
  }

  /** `script` to every node at once. */
  round(
    script: Script,
    keys: string[],
    args: string[],
    how: Pick<RoundOptions, "signal" | "decide" | "cancelStragglers">,
  ): Promise<Round> {
    return fanOut(
      this.nodes.length,
      (node, signal) => castVote(this.nodes[node], script, keys, args, signal, this.#secrets),
      {
        quorum: this.quorum,
        nodeTimeout: this.options.nodeTimeout,
        clock: this.clock,
        ...how,
      },
    );
  }

  /** One grant round: a fresh random value, `script` to every node, decided as soon as the outcome is known. */
  async grant(script: Script, keys: string[], args: (value: string) => string[], signal?: AbortSignal): Promise<Grant> {
    const value = pooledValue();
    const start = this.clock.now();
    const round = await this.round(script, keys, args(value), { signal, decide: "outcome", cancelStragglers: false });
    return { value, start, round };
  }

  /** `script` to one node, bounded by nodeTimeout. */
  ask(node: number, script: Script, keys: string[], args: string[]): Promise<Vote> {
    const deadline = this.clock.timeout(this.options.nodeTimeout);
    return castVote(this.nodes[node], script, keys, args, deadline.signal, this.#secrets).finally(deadline.clear);
  }

  /**
   * A read-only `script` on every node at once, each bounded by nodeTimeout: per node its reply or why there is
   * none.
   */
  read(script: Script, keys: string[]): Promise<({ ok: true; reply: unknown } | { ok: false; cause: string })[]> {
    return Promise.all(
      this.nodes.map((node) => {
        const deadline = this.clock.timeout(this.options.nodeTimeout);
        return runScript(node, script, keys, [], deadline.signal, this.#secrets).finally(deadline.clear);
      }),
    );
  }

  /**
   * Until the request behind `vote` can no longer land (see {@link landed}), at most one more
   * nodeTimeout: a request a client cannot cancel (a user's `Redis` instance) may never end.
   */
  async landed(vote: Vote): Promise<void> {
    const landing = landingOf(vote);
    if (landing === undefined) return; // its reply is in: nothing of it can land any more
    const bound = this.clock.timeout(this.options.nodeTimeout);
    await Promise.race([
      landing,
      new Promise((resolve) => bound.signal.addEventListener("abort", resolve, { once: true })),
    ]);
    bound.clear();
  }

  /** The tally of a round as it stood when it was decided. */
  tally(attempt: number, round: Round, start: number, validity: number): AttemptTally {
    const { granted, denied, errors, votes } = round;
    return { attempt, granted, denied, errors, elapsedMs: this.clock.now() - start, validityMs: validity, votes };
  }
}
