// The Redlock algorithm: acquire on a quorum within validity, release everywhere, retry at random.
import { anySignal, type Clock } from "./clock.ts";
import { nodesFromEnv, type EnvOptions } from "./env.ts";
import { InvalidArgumentError, LockAcquisitionError, LockExtensionError, type AttemptTally } from "./errors.ts";
import { Lock, lockState, type ReleaseResult } from "./lock.ts";
import { castVote, upstashNode, type NodeConfig, type RedlockNode, type ScriptClient } from "./node.ts";
import {
  checkDuration, checkResources, checkRetry, checkSignal, checkToken, checkTtl, checkUrl, resolveOptions,
  type AcquireOptions, type RedlockOptions, type ResolvedOptions, type UsingOptions,
} from "./options.ts";
import { keepLock } from "./keeper.ts";
import { fanOut, type Round, type RoundOptions } from "./quorum.ts";
import { ACQUIRE, EXTEND, FENCE, FENCED_ACQUIRE, RELEASE, type Script } from "./scripts.ts";
import { fenceKey, maxFence } from "./fencing.ts";
import { randomUnit, randomValue } from "./token.ts";
import type { Vote } from "./vote.ts";

/** One database: `{ url, token }`, an `@upstash/redis` `Redis` instance, or a custom {@link RedlockNode}. */
export type NodeInput = NodeConfig | ScriptClient | RedlockNode;

/** Added to the drift allowance, as the Redlock page does (ms). */
const DRIFT_FLOOR_MS = 2;

/**
 * The Redlock distributed lock over N independent Redis databases (5 recommended), spoken to over HTTP.
 * @example
 * const redlock = new Redlock([{ url, token }, ...fourMore]);
 * const lock = await redlock.acquire(["orders:42"], 10_000);
 * try { await pay(42); } finally { await lock.release(); }
 */
export class Redlock {
  readonly nodes: readonly RedlockNode[];
  /** floor(N/2) + 1. */
  readonly quorum: number;
  readonly options: Readonly<ResolvedOptions>;
  /** The nodes' tokens: taken out of every failure text. */
  readonly #secrets: readonly string[];
  readonly #owner = {
    extend: (lock: Lock, ttl: number) => this.extend(lock, ttl),
    release: (lock: Lock) => this.release(lock),
    now: () => this.#clock.now(),
  };

  constructor(nodes: readonly NodeInput[], options?: RedlockOptions) {
    this.options = Object.freeze(resolveOptions(options));
    const { built, secrets } = toNodes(nodes, this.options.batching);
    this.nodes = Object.freeze(built);
    this.#secrets = Object.freeze(secrets);
    this.quorum = Math.floor(this.nodes.length / 2) + 1;
  }

  /**
   * A Redlock over the databases named in environment variables or Worker bindings:
   * `UPSTASH_REDIS_REST_URL_1` … `_N` and `UPSTASH_REDIS_REST_TOKEN_1` … `_N` (N = `options.nodes`, default 5).
   * `env` is any object (a Worker's `interface Env` included); those variables must be non-empty strings.
   * Throws {@link MissingConfigurationError} naming every missing variable.
   * @example
   * export default { fetch: (req, env) => Redlock.fromEnv(env).using(...) };
   */
  static fromEnv(env: object, options?: RedlockOptions & EnvOptions): Redlock {
    const { nodes, ...rest } = options ?? {};
    return new Redlock(nodesFromEnv(env, { nodes }), rest);
  }

  get #clock(): Clock {
    return this.options.clock;
  }

  /**
   * Takes a lock on all `resources` for `ttl` ms. Each attempt: a fresh random value, the acquire
   * script to every node at once, a decision as soon as the quorum is reached or impossible, and
   * validity = ttl − elapsed − drift. A failed attempt is released on every node that may hold it,
   * then retried after `retryDelay ± retryJitter`.
   * @throws {InvalidArgumentError} before any request, for bad arguments.
   * @throws {LockAcquisitionError} when every attempt failed; `reason` tells `held` from `unreachable`.
   * @example
   * const lock = await redlock.acquire(["user:7", "wallet:7"], 5_000, { signal: AbortSignal.timeout(2_000) });
   */
  async acquire(resources: string | readonly string[], ttl: number, options: AcquireOptions = {}): Promise<Lock> {
    const keys = checkResources(resources);
    checkTtl(ttl, this.options.nodeTimeout);
    if (typeof options !== "object" || options === null) throw new InvalidArgumentError("options", "must be an object");
    const signal = checkSignal(options.signal, "options.signal");
    if (options.fencing !== undefined && typeof options.fencing !== "boolean") throw new InvalidArgumentError("options.fencing", "must be a boolean");
    const retry = {
      retryCount: options.retryCount ?? this.options.retryCount,
      retryDelay: options.retryDelay ?? this.options.retryDelay,
      retryJitter: options.retryJitter ?? this.options.retryJitter,
    };
    checkRetry(retry, "options");
    const maxWait = checkDuration("options.maxWait", options.maxWait);
    const roundKeys = options.fencing ? [...keys, ...keys.map(fenceKey)] : keys;
    const began = this.#clock.now();

    const tallies: AttemptTally[] = [];
    const cleanups: Promise<void>[] = [];
    try {
      for (let attempt = 1; ; attempt++) {
        signal?.throwIfAborted();
        const value = randomValue();
        const start = this.#clock.now();
        const grant = await this.#round(options.fencing ? FENCED_ACQUIRE : ACQUIRE, roundKeys, [value, String(ttl), String(keys.length)], { signal, decide: "outcome", cancelStragglers: false });
        let round = grant;
        let fence: string | undefined;
        if (options.fencing && grant.granted >= this.quorum && this.#validity(ttl, start) > 0) {
          // Fencing: raise the counters to the token on a quorum that still holds the lock (DESIGN §4).
          // Every grant of FENCED_ACQUIRE carries a counter (a bare grant is an error vote).
          fence = maxFence(grant.votes.flatMap((v) => (v.outcome === "granted" && v.fence ? [v.fence] : [])));
          round = await this.#round(FENCE, roundKeys, [value, fence], { signal, decide: "outcome", cancelStragglers: true });
        }
        const validity = this.#validity(ttl, start);
        if (round.granted >= this.quorum && validity > 0) {
          return new Lock(keys, value, attempt, fence, {
            owner: this.#owner,
            deadline: start + ttl - this.#drift(ttl),
            expiresAt: this.#clock.epoch() + validity,
            stragglers: stragglers(grant),
          });
        }
        tallies.push(tally(attempt, round, start, this.#clock.now(), validity));
        cleanups.push(this.#releaseAfter(new Map(grant.settled.entries()), keys, value));
        signal?.throwIfAborted();
        if (retry.retryCount !== -1 && attempt > retry.retryCount) break;
        const delay = retryDelay(retry.retryDelay, retry.retryJitter);
        if (maxWait !== undefined && this.#clock.now() + delay - began > maxWait) break;
        await this.#clock.sleep(delay, signal);
      }
    } finally {
      await Promise.all(cleanups);
    }
    throw new LockAcquisitionError(keys, tallies);
  }

  /**
   * Runs `routine` while holding a lock on `resources`: acquires, extends automatically when
   * `extendThreshold` ms of validity are left, and releases when the routine ends — also when it
   * throws. Returns once a quorum answered the release ({@link ReleaseResult.pending} runs on).
   * The routine's `signal` aborts the moment the lock is lost (reason: {@link LockExtensionError}),
   * when `maxHold` is reached (reason: {@link MaxHoldError}) or when the caller's signal aborts.
   * Resolves with the routine's value or rejects with its error.
   * @example
   * const summary = await redlock.using(["report:daily"], 5_000, async (signal) => {
   *   for (const chunk of work) {
   *     signal.throwIfAborted(); // the lock was lost
   *     await process(chunk, { signal });
   *   }
   *   return "done";
   * }, { maxHold: 60_000 });
   */
  async using<T>(
    resources: string | readonly string[],
    ttl: number,
    routine: (signal: AbortSignal, lock: Lock) => Promise<T> | T,
    options: UsingOptions = {},
  ): Promise<T> {
    checkTtl(ttl, this.options.nodeTimeout);
    if (typeof routine !== "function") throw new InvalidArgumentError("routine", "must be a function");
    const maxHold = checkDuration("options.maxHold", options?.maxHold, 1);
    const threshold = checkDuration("options.extendThreshold", options?.extendThreshold, 1) ?? this.defaultThreshold(ttl);
    if (threshold >= ttl) throw new InvalidArgumentError("options.extendThreshold", `must be below the ttl (${ttl} ms)`);
    const lock = await this.acquire(resources, ttl, options);
    const keeper = keepLock(lock, { clock: this.#clock, ttl, threshold, maxHold });
    try {
      return await routine(anySignal([keeper.signal, options.signal]), lock);
    } finally {
      await keeper.stop();
      await lock.release();
    }
  }

  /**
   * When auto-extension starts by default: half the ttl left, and never less than nodeTimeout + 50 ms
   * (an extension round may take up to nodeTimeout).
   * @example
   * redlock.defaultThreshold(10_000); // 5000
   */
  defaultThreshold(ttl: number): number {
    return Math.max(ttl / 2, Math.min(ttl - 1, this.options.nodeTimeout + 50));
  }

  /**
   * Releases `lock` on every node, each request bounded by nodeTimeout. Deletes only keys that
   * still hold the lock's value: releasing an expired or foreign lock deletes nothing and is not an error.
   * Resolves as soon as a quorum of nodes answered (a hung node does not hold it up); the requests still
   * running, and the follow-up releases for acquire replies still on their way, are in `pending`.
   * From the call on the lock is dead: {@link Redlock.extend} refuses it, and an extension still in
   * flight reports failure (and cannot set a key again: the extend script never creates one).
   * @example
   * const { released, pending } = await redlock.release(lock);
   * ctx.waitUntil(pending);
   */
  async release(lock: Lock): Promise<ReleaseResult> {
    const state = lockState(lock);
    state.released = true;
    state.expiresAt = Math.min(state.expiresAt, this.#clock.epoch());
    const keys = [...lock.resources];
    // Acquire replies still out now may land after this release.
    const late = new Map(state.stragglers);
    state.stragglers.clear();
    const round = await this.#round(RELEASE, keys, [state.value], { decide: "answered", cancelStragglers: false });
    const running = round.votes.filter((vote) => vote.outcome === "unanswered").map((vote) => round.settled[vote.node]);
    const followUps = [...late].map(async ([node, acquired]) => {
      // Where this release deleted the keys, the acquire had run before it: nothing can land after.
      if ((await round.settled[node]).outcome === "granted") return;
      if ((await acquired).outcome !== "denied") await this.#ask(node, RELEASE, keys, [state.value]);
    });
    const pending = Promise.all([...running, ...followUps]).then(() => undefined);
    return { released: round.granted, errors: round.errors, votes: round.votes, pending };
  }

  /**
   * Extends `lock` to `ttl` ms from now on a quorum, with the same validity rule as acquire. A node
   * moves the key's expiry only where it still holds the lock's value, and never shortens it.
   * @throws {LockExtensionError} when the lock was released (reason `released`, nothing sent), was
   * already past its validity (`lost`, nothing sent), or no quorum extended it in time: the lock must
   * be treated as lost.
   * @example
   * await redlock.extend(lock, 10_000);
   */
  async extend(lock: Lock, ttl: number): Promise<Lock> {
    const state = lockState(lock);
    checkTtl(ttl, this.options.nodeTimeout);
    const keys = [...lock.resources];
    if (state.released) throw new LockExtensionError(keys, undefined, "released");
    const start = this.#clock.now();
    if (start >= state.deadline) throw new LockExtensionError(keys);
    // Stragglers run on (they move the expiry on the other nodes too). None can outlive a release:
    // the script only lengthens a key that still holds the value.
    const round = await this.#round(EXTEND, keys, [state.value, String(ttl)], { decide: "outcome", cancelStragglers: false });
    if (state.released) throw new LockExtensionError(keys, undefined, "released");
    const validity = this.#validity(ttl, start);
    if (round.granted < this.quorum || validity <= 0) {
      throw new LockExtensionError(keys, tally(1, round, start, this.#clock.now(), validity));
    }
    state.deadline = start + ttl - this.#drift(ttl);
    state.expiresAt = this.#clock.epoch() + validity;
    return lock;
  }

  #drift(ttl: number): number {
    return ttl * this.options.driftFactor + DRIFT_FLOOR_MS;
  }

  #validity(ttl: number, start: number): number {
    return ttl - (this.#clock.now() - start) - this.#drift(ttl);
  }

  #round(script: Script, keys: string[], args: string[], how: Pick<RoundOptions, "signal" | "decide" | "cancelStragglers">): Promise<Round> {
    return fanOut(this.nodes.length, (node, signal) => castVote(this.nodes[node], script, keys, args, signal, this.#secrets), {
      quorum: this.quorum,
      nodeTimeout: this.options.nodeTimeout,
      clock: this.#clock,
      ...how,
    });
  }

  #ask(node: number, script: Script, keys: string[], args: string[]): Promise<Vote> {
    const deadline = this.#clock.timeout(this.options.nodeTimeout);
    return castVote(this.nodes[node], script, keys, args, deadline.signal, this.#secrets).finally(deadline.clear);
  }

  /** Releases each node once its outstanding acquire reply is in, except nodes that denied (they set nothing). */
  #releaseAfter(acquired: Map<number, Promise<Vote>>, keys: string[], value: string): Promise<void> {
    return Promise.all(
      [...acquired].map(async ([node, vote]) => {
        if ((await vote).outcome !== "denied") await this.#ask(node, RELEASE, keys, [value]);
      }),
    ).then(() => undefined);
  }
}

/** The nodes as the lock uses them, and the tokens of those it builds (to keep out of failure texts). */
function toNodes(nodes: readonly NodeInput[], batching: boolean): { built: RedlockNode[]; secrets: string[] } {
  if (!Array.isArray(nodes) || nodes.length === 0) throw new InvalidArgumentError("nodes", "must hold at least one node");
  const identities = new Set<string>();
  const secrets: string[] = [];
  const built = Array.from({ length: nodes.length }, (_, i) => {
    const node: unknown = nodes[i];
    if (typeof node !== "object" || node === null) throw new InvalidArgumentError(`nodes[${i}]`, "must be { url, token }, a Redis instance or a RedlockNode");
    if (typeof (node as RedlockNode).run === "function") return node as RedlockNode;
    if (typeof (node as ScriptClient).evalsha === "function") return upstashNode(node as ScriptClient, `node${i}`);
    const identity = checkUrl((node as NodeConfig).url, `nodes[${i}].url`);
    const token = checkToken((node as NodeConfig).token, `nodes[${i}].token`);
    if (identities.has(identity)) throw new InvalidArgumentError(`nodes[${i}].url`, "repeats another node: the databases must be independent");
    identities.add(identity);
    secrets.push(token);
    return upstashNode({ url: (node as NodeConfig).url, token }, { batching });
  });
  return { built, secrets };
}

function retryDelay(delay: number, jitter: number): number {
  return Math.max(0, delay + (2 * randomUnit() - 1) * jitter);
}

function tally(attempt: number, round: Round, start: number, end: number, validity: number): AttemptTally {
  const { granted, denied, errors, votes } = round;
  return { attempt, granted, denied, errors, elapsedMs: end - start, validityMs: validity, votes };
}

/**
 * Per node, the acquire reply still out when the round was decided; an entry leaves once its reply is
 * in (the acquire ran before any later release was sent). Release undoes the entries left at its call.
 */
function stragglers(round: Round): Map<number, Promise<Vote>> {
  const late = new Map<number, Promise<Vote>>();
  for (const vote of round.votes) {
    if (vote.outcome !== "unanswered") continue;
    const reply = round.settled[vote.node];
    late.set(vote.node, reply);
    void reply.then(() => late.delete(vote.node));
  }
  return late;
}
