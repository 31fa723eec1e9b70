// The round machinery the lock and the semaphore share: one fan-out per attempt, validity, the retry
// loop, release everywhere an attempt may have landed (stragglers included), and extension.
import type { Clock } from "./clock.ts";
import { LockAcquisitionError, LockExtensionError, type AttemptTally } from "./errors.ts";
import { lockState, type Lock, type LockOwner, type LockState, type ReleaseResult } from "./lock.ts";
import { InvalidArgumentError } from "./errors.ts";
import { castVote, landed, runScript, type RedlockNode } from "./node.ts";
import { checkDuration, checkRetry, checkSignal, checkTtl, type AcquireOptions, type ResolvedOptions } from "./options.ts";
import { fanOut, type Round, type RoundOptions } from "./quorum.ts";
import { EXTEND, RELEASE, type Script } from "./scripts.ts";
import { randomUnit, randomValue } from "./token.ts";
import type { Vote } from "./vote.ts";

/** Added to the drift allowance, as the Redlock page does (ms). */
const DRIFT_FLOOR_MS = 2;

/** How an acquisition retries. */
export interface RetryPolicy {
  retryCount: number;
  retryDelay: number;
  retryJitter: number;
  /** Give up once the next attempt would start more than this many ms after the first. */
  maxWait?: number;
  signal?: AbortSignal;
}

/** One grant round: the attempt's fresh value, when it started, and how the nodes voted. */
export interface Grant {
  value: string;
  start: number;
  round: Round;
}

/**
 * What an attempt came to: held (with the cleanup of any earlier try of the same attempt), or failed with
 * its tally and the cleanup of what it may have set.
 */
export type Attempt<T> = { held: T; cleanup?: Promise<void> } | { failed: AttemptTally; cleanup: Promise<void> };

/**
 * The rounds of one {@link Redlock} over its nodes. Every operation of a lock or a semaphore permit goes
 * through {@link Rounds.round}: all nodes at once, each request under its own nodeTimeout.
 * @example
 * const grant = await rounds.grant(ACQUIRE, ["k"], (value) => [value, "10000", "1"]);
 * if (rounds.holds(grant.round, 10_000, grant.start)) return new Lock(["k"], grant.value, 1, undefined, rounds.held(grant, 10_000));
 */
export class Rounds {
  readonly nodes: readonly RedlockNode[];
  /** floor(N/2) + 1. */
  readonly quorum: number;
  readonly options: Readonly<ResolvedOptions>;
  /** The nodes' tokens: taken out of every failure text. */
  readonly #secrets: readonly string[];
  /** What a held lock calls back into. */
  readonly owner: LockOwner = {
    extend: (lock, ttl) => this.extend(lock, ttl),
    release: (lock) => this.release(lock),
    now: () => this.clock.now(),
  };

  constructor(nodes: readonly RedlockNode[], options: Readonly<ResolvedOptions>, secrets: readonly string[]) {
    this.nodes = nodes;
    this.options = options;
    this.#secrets = secrets;
    this.quorum = Math.floor(nodes.length / 2) + 1;
  }

  get clock(): Clock {
    return this.options.clock;
  }

  /** ttl × driftFactor + 2 ms. */
  drift(ttl: number): number {
    return ttl * this.options.driftFactor + DRIFT_FLOOR_MS;
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
  round(script: Script, keys: string[], args: string[], how: Pick<RoundOptions, "signal" | "decide" | "cancelStragglers">): Promise<Round> {
    return fanOut(this.nodes.length, (node, signal) => castVote(this.nodes[node], script, keys, args, signal, this.#secrets), {
      quorum: this.quorum,
      nodeTimeout: this.options.nodeTimeout,
      clock: this.clock,
      ...how,
    });
  }

  /** A read-only `script` on every node at once, each bounded by nodeTimeout: per node its reply or why there is none. */
  read(script: Script, keys: string[]): Promise<({ ok: true; reply: unknown } | { ok: false; cause: string })[]> {
    return Promise.all(
      this.nodes.map((node) => {
        const deadline = this.clock.timeout(this.options.nodeTimeout);
        return runScript(node, script, keys, [], deadline.signal, this.#secrets).finally(deadline.clear);
      }),
    );
  }

  /** The retry settings of one acquisition: the call's, else the instance's (checked). */
  retryPolicy(options: AcquireOptions): RetryPolicy {
    if (typeof options !== "object" || options === null) throw new InvalidArgumentError("options", "must be an object");
    const signal = checkSignal(options.signal, "options.signal");
    const policy = {
      retryCount: options.retryCount ?? this.options.retryCount,
      retryDelay: options.retryDelay ?? this.options.retryDelay,
      retryJitter: options.retryJitter ?? this.options.retryJitter,
    };
    checkRetry(policy, "options");
    return { ...policy, maxWait: checkDuration("options.maxWait", options.maxWait), signal };
  }

  /** `script` to one node, bounded by nodeTimeout. */
  ask(node: number, script: Script, keys: string[], args: string[]): Promise<Vote> {
    const deadline = this.clock.timeout(this.options.nodeTimeout);
    return castVote(this.nodes[node], script, keys, args, deadline.signal, this.#secrets).finally(deadline.clear);
  }

  /** One grant round: a fresh random value, `script` to every node, decided as soon as the outcome is known. */
  async grant(script: Script, keys: string[], args: (value: string) => string[], signal?: AbortSignal): Promise<Grant> {
    const value = randomValue();
    const start = this.clock.now();
    const round = await this.round(script, keys, args(value), { signal, decide: "outcome", cancelStragglers: false });
    return { value, start, round };
  }

  /** The state of a lock (or permit) that `grant` won: its validity, and its acquire replies still out. */
  held(grant: Grant, ttl: number): Omit<LockState, "value" | "released" | "keys"> {
    return {
      owner: this.owner,
      deadline: grant.start + ttl - this.drift(ttl),
      expiresAt: this.clock.epoch() + this.validity(ttl, grant.start),
      stragglers: this.#stragglers(grant.round),
    };
  }

  /** A failed attempt: its tally, and the release of `keys` on every node where `grant` may have set them. */
  failed(attempt: number, round: Round, grant: Grant, ttl: number, keys: string[]): { failed: AttemptTally; cleanup: Promise<void> } {
    const validity = this.validity(ttl, grant.start);
    return {
      failed: tally(attempt, round, grant.start, this.clock.now(), validity),
      cleanup: this.#releaseAfter(new Map(grant.round.settled.entries()), keys, grant.value),
    };
  }

  /**
   * Runs `attempt` until it holds; after each failure waits `retryDelay ± retryJitter` (random), until
   * the retries, `maxWait` or the signal run out. Every failed attempt's cleanup has run before this
   * settles.
   * @throws {LockAcquisitionError} with every attempt's tally when none held.
   */
  async retrying<T>(resources: readonly string[], policy: RetryPolicy, attempt: (n: number) => Promise<Attempt<T>>, what: "lock" | "permit" = "lock"): Promise<T> {
    const { signal, maxWait } = policy;
    const began = this.clock.now();
    const tallies: AttemptTally[] = [];
    const cleanups: Promise<void>[] = [];
    try {
      for (let n = 1; ; n++) {
        signal?.throwIfAborted();
        const outcome = await attempt(n);
        if (outcome.cleanup) cleanups.push(outcome.cleanup);
        if ("held" in outcome) return outcome.held;
        tallies.push(outcome.failed);
        signal?.throwIfAborted();
        if (policy.retryCount !== -1 && n > policy.retryCount) break;
        const delay = Math.max(0, policy.retryDelay + (2 * randomUnit() - 1) * policy.retryJitter);
        if (maxWait !== undefined && this.clock.now() + delay - began > maxWait) break;
        await this.clock.sleep(delay, signal);
      }
    } finally {
      await Promise.all(cleanups);
    }
    throw new LockAcquisitionError(resources, tallies, what);
  }

  /** See {@link Redlock.release}. */
  async release(lock: Lock): Promise<ReleaseResult> {
    const state = lockState(lock);
    state.released = true;
    state.expiresAt = Math.min(state.expiresAt, this.clock.epoch());
    const keys = [...state.keys];
    // Acquire replies still out now may land after this release.
    const late = new Map(state.stragglers);
    state.stragglers.clear();
    const round = await this.round(RELEASE, keys, [state.value], { decide: "answered", cancelStragglers: false });
    const running = round.votes.filter((vote) => vote.outcome === "unanswered").map((vote) => round.settled[vote.node]);
    const followUps = [...late].map(async ([node, acquired]) => {
      // Where this release deleted the keys, the acquire had run before it: nothing can land after.
      if ((await round.settled[node]).outcome === "granted") return;
      if ((await acquired).outcome !== "denied") await this.ask(node, RELEASE, keys, [state.value]);
    });
    const pending = Promise.all([...running, ...followUps]).then(() => undefined);
    return { released: round.granted, errors: round.errors, votes: round.votes, pending };
  }

  /** See {@link Redlock.extend}. */
  async extend(lock: Lock, ttl: number): Promise<Lock> {
    const state = lockState(lock);
    checkTtl(ttl, this.options.nodeTimeout);
    const keys = [...state.keys];
    if (state.released) throw new LockExtensionError(lock.resources, undefined, "released");
    const start = this.clock.now();
    if (start >= state.deadline) throw new LockExtensionError(lock.resources);
    // Stragglers run on (they move the expiry on the other nodes too). None can outlive a release:
    // the script only lengthens a key that still holds the value.
    const round = await this.round(EXTEND, keys, [state.value, String(ttl)], { decide: "outcome", cancelStragglers: false });
    if (state.released) throw new LockExtensionError(lock.resources, undefined, "released");
    const validity = this.validity(ttl, start);
    if (round.granted < this.quorum || validity <= 0) {
      throw new LockExtensionError(lock.resources, tally(1, round, start, this.clock.now(), validity));
    }
    state.deadline = start + ttl - this.drift(ttl);
    state.expiresAt = this.clock.epoch() + validity;
    return lock;
  }

  /**
   * Per node, the acquire reply still out when the round was decided; an entry leaves once its reply is
   * in and its request can no longer land (the acquire ran before any later release was sent). Release
   * undoes the entries left at its call.
   */
  #stragglers(round: Round): Map<number, Promise<Vote>> {
    const late = new Map<number, Promise<Vote>>();
    for (const vote of round.votes) {
      if (vote.outcome !== "unanswered") continue;
      const reply = round.settled[vote.node].then(async (settled) => (await this.#landed(settled), settled));
      late.set(vote.node, reply);
      void reply.then(() => late.delete(vote.node));
    }
    return late;
  }

  /**
   * Until the request behind `vote` can no longer land (see {@link landed}), at most one more
   * nodeTimeout: a request a client cannot cancel (a user's `Redis` instance) may never end.
   */
  async #landed(vote: Vote): Promise<void> {
    const bound = this.clock.timeout(this.options.nodeTimeout);
    await Promise.race([landed(vote), new Promise((resolve) => bound.signal.addEventListener("abort", resolve, { once: true }))]);
    bound.clear();
  }

  /** Releases each node once its outstanding acquire reply is in, except nodes that denied (they set nothing). */
  #releaseAfter(acquired: Map<number, Promise<Vote>>, keys: string[], value: string): Promise<void> {
    return Promise.all(
      [...acquired].map(async ([node, reply]) => {
        const vote = await reply;
        await this.#landed(vote); // a release must not overtake the request it undoes
        if (vote.outcome !== "denied") await this.ask(node, RELEASE, keys, [value]);
      }),
    ).then(() => undefined);
  }
}

function tally(attempt: number, round: Round, start: number, end: number, validity: number): AttemptTally {
  const { granted, denied, errors, votes } = round;
  return { attempt, granted, denied, errors, elapsedMs: end - start, validityMs: validity, votes };
}


