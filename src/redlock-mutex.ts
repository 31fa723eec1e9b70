// The Redlock mutex: acquire on a quorum within validity, release everywhere, retry at random. `Redlock`
// (redlock.ts) adds the semaphore, the read-write lock and inspection on top; this class alone is the
// `edge-redlock/mutex` entry, so a bundle that only locks carries none of them.
import {
  FROM_ENV_OPTION_NAMES,
  checkOptionNames,
  checkResources,
  checkRetryPolicy,
  checkTtl,
  checkUsing,
  resolveOptions,
} from "./check.ts";
import { InvalidArgumentError, type LockExtensionError, type MaxHoldError } from "./errors.ts";
import { fenceKey } from "./fencing/tokens.ts";
import { holdWhile } from "./lock/keeper.ts";
import { Lifecycle } from "./lock/lifecycle.ts";
import { Lock, type ReleaseResult } from "./lock/lock.ts";
import { acquire, type LockStrategy, type Machinery, type Try } from "./lock/acquire.ts";
import { Line, lineKey, lineOptions } from "./lock/line.ts";
import { LocalLine, turnsAllowed } from "./lock/local-line.ts";
import { nodesFromEnv, type EnvOptions } from "./node/env.ts";
import { toNodes, type NodeInput } from "./node/input.ts";
import type { RedlockNode } from "./node/node.ts";
import {
  defaultThreshold,
  type AcquireOptions,
  type RedlockOptions,
  type ResolvedOptions,
  type UsingOptions,
} from "./options.ts";
import { Rounds } from "./quorum/rounds.ts";
import { FAIR_ACQUIRE, FENCED_FAIR_ACQUIRE } from "./scripts/fair-mutex.ts";

let machinery: (redlock: RedlockMutex) => Machinery;

/**
 * The rounds and lifecycle of `redlock`, for the locks `Redlock` builds over them. Not exported by any entry:
 * they hold the nodes' clients, so they stay out of every public property (and of `console.log`).
 */
export function machineryOf(redlock: RedlockMutex): Machinery {
  return machinery(redlock);
}

/**
 * The Redlock mutex alone, as `Redlock` from `edge-redlock/mutex`: acquire, `using`, extend, release,
 * fencing, fair waiting and events, over N independent Redis databases (5 recommended), spoken to over
 * HTTP. It is the `Redlock` of `edge-redlock` without `semaphore()`, `readWriteLock()` and `inspect()`, so a
 * Worker that only locks does not bundle them (`npm run bench:bundle`). `Redlock` extends it: anything that
 * takes a `RedlockMutex` (the `redlock()` middleware's `redlock` option) takes a `Redlock` too.
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock/mutex";
 *
 * declare function pay(orderId: number): Promise<void>; // your own work
 * const redlock = new Redlock(nodes); // [{ url, token }, …]: five independent databases
 * const lock = await redlock.acquire(["orders:42"], 10_000);
 * try { await pay(42); } finally { await lock.release(); }
 * ```
 */
export class RedlockMutex {
  readonly #rounds: Rounds;
  readonly #lifecycle: Lifecycle;
  readonly #machinery: Machinery;
  readonly #turns: LocalLine | undefined;

  static {
    machinery = (redlock) => redlock.#machinery;
  }

  /**
   * A Redlock over `nodes`, each request to them bounded by `options.nodeTimeout`.
   * @param nodes the databases, 5 recommended: `{ url, token }`, `@upstash/redis` instances, or your own {@link
   *   RedlockNode}s
   * @param options see {@link RedlockOptions}
   * @throws {InvalidArgumentError} for a bad node or option (the message never repeats a URL or token)
   */
  constructor(nodes: readonly NodeInput[], options?: RedlockOptions) {
    const resolved = Object.freeze(resolveOptions(options));
    const { built, secrets } = toNodes(nodes, resolved.batching, resolved.warnings);
    this.#rounds = new Rounds(Object.freeze(built), resolved, Object.freeze(secrets));
    this.#turns = turnsAllowed() ? new LocalLine() : undefined;
    this.#lifecycle = new Lifecycle(this.#rounds, this.#turns);
    this.#machinery = { rounds: this.#rounds, lifecycle: this.#lifecycle, turns: this.#turns };
  }

  /** The nodes, in the order given (tallies number them from 0 in this order). */
  get nodes(): readonly RedlockNode[] {
    return this.#rounds.nodes;
  }

  /** How many nodes must grant: floor(N/2) + 1. */
  get quorum(): number {
    return this.#rounds.quorum;
  }

  /** The options in force, defaults filled in. */
  get options(): Readonly<ResolvedOptions> {
    return this.#rounds.options;
  }

  /**
   * A mutex over the databases named in environment variables or Worker bindings:
   * `UPSTASH_REDIS_REST_URL_1` … `_N` and `UPSTASH_REDIS_REST_TOKEN_1` … `_N` (N = `options.nodes`, default 5).
   * `env` is any object (a Worker's `interface Env` included); those variables must be non-empty strings.
   * Throws {@link MissingConfigurationError} naming every missing variable.
   * @example
   * ```ts
   * import { Redlock } from "edge-redlock/mutex";
   *
   * export default {
   *   fetch: (request: Request, env: Record<string, string>) =>
   *     Redlock.fromEnv(env).using(["report"], 5_000, async () => new Response("done")),
   * };
   * ```
   */
  static fromEnv(env: object, options?: RedlockOptions & EnvOptions): RedlockMutex {
    if (options) checkOptionNames(options, FROM_ENV_OPTION_NAMES, "options");
    const { nodes, ...rest } = options ?? {};
    return new RedlockMutex(nodesFromEnv(env, { nodes }), rest);
  }

  /**
   * Takes a lock on all `resources` for `ttl` ms. Each attempt: a fresh random value, the acquire
   * script to every node at once, a decision as soon as the quorum is reached or impossible, and
   * validity = ttl − elapsed − drift. A failed attempt is released on every node that may hold it,
   * then retried after `retryDelay ± retryJitter`.
   * @throws {InvalidArgumentError} before any request, for bad arguments.
   * @throws {LockAcquisitionError} when every attempt failed; `reason` tells `held` from `unreachable`.
   * @example
   * ```ts
   * const lock = await redlock.acquire(["user:7", "wallet:7"], 5_000, { signal: AbortSignal.timeout(2_000) });
   * ```
   */
  async acquire(resources: string | readonly string[], ttl: number, options: AcquireOptions = {}): Promise<Lock> {
    const keys = checkResources(resources);
    checkTtl(ttl, this.options.nodeTimeout);
    const policy = checkRetryPolicy(options, this.options);
    if (options.fencing !== undefined && typeof options.fencing !== "boolean")
      throw new InvalidArgumentError("options.fencing", "must be a boolean");
    const fencing = options.fencing === true;
    const fenceKeys = fencing ? keys.map(fenceKey) : [];
    // One ticket for the whole acquisition; the line keys ride in the same request.
    const rounds = this.#rounds;
    const line = new Line(
      rounds.clock,
      rounds.nodeClock,
      keys.map(lineKey),
      lineOptions(policy, this.options.nodeTimeout, { slowRoundMs: rounds.slowRoundMs, woken: rounds.wakeable }),
    );
    const script = fencing ? FENCED_FAIR_ACQUIRE : FAIR_ACQUIRE;
    const roundKeys = [...keys, ...line.queues, ...fenceKeys];
    const attempt: Try = {
      script,
      keys: roundKeys,
      args: (value) => [value, String(ttl), String(keys.length)],
      holds: keys,
    };
    const mutex: LockStrategy<Lock> = {
      kind: "lock",
      resources: keys,
      ttl,
      line,
      leaveKeys: keys,
      fenced: fencing ? { keys, fenceKeys } : undefined,
      next: () => attempt,
      build: (grant, attempts, state, fence) => new Lock(keys, grant.value, attempts, fence, state),
    };
    return acquire(this.#machinery, mutex, policy, "lock");
  }

  /**
   * Runs `routine` while holding a lock on `resources`: acquires, extends automatically when
   * `extendThreshold` ms of validity are left, and releases when the routine ends — also when it
   * throws. Returns once a quorum answered the release ({@link ReleaseResult.pending} runs on).
   * The routine's `signal` aborts the moment the lock is lost (reason: {@link LockExtensionError}),
   * when `maxHold` is reached (reason: {@link MaxHoldError}) or when the caller's signal aborts.
   * Resolves with the routine's value or rejects with its error.
   * @example
   * ```ts
   * declare function summarize(day: string, options: { signal: AbortSignal }): Promise<void>; // your own work
   * const summary = await redlock.using(["report:daily"], 5_000, async (signal) => {
   *   for (const day of ["mon", "tue", "wed"]) {
   *     signal.throwIfAborted(); // the lock was lost
   *     await summarize(day, { signal });
   *   }
   *   return "done";
   * }, { maxHold: 60_000 });
   * ```
   */
  async using<T>(
    resources: string | readonly string[],
    ttl: number,
    routine: (signal: AbortSignal, lock: Lock) => Promise<T> | T,
    options: UsingOptions = {},
  ): Promise<T> {
    const { acquire, ...keep } = checkUsing(ttl, routine, options, this.options.nodeTimeout);
    const lock = await this.acquire(resources, ttl, acquire);
    return holdWhile(lock, routine, { clock: this.options.clock, ttl, ...keep, signal: options?.signal });
  }

  /**
   * When auto-extension starts by default: half the ttl left, and never less than nodeTimeout + 50 ms
   * (an extension round may take up to nodeTimeout).
   * @example
   * ```ts
   * redlock.defaultThreshold(10_000); // 5000
   * ```
   */
  defaultThreshold(ttl: number): number {
    return defaultThreshold(ttl, this.options.nodeTimeout);
  }

  /**
   * Releases `lock` on every node, each request bounded by nodeTimeout. Deletes only keys that
   * still hold the lock's value: releasing an expired or foreign lock deletes nothing and is not an error.
   * Resolves as soon as a quorum of nodes answered (a hung node does not hold it up); the requests still
   * running, and the follow-up releases for acquire replies still on their way, are in `pending`.
   * From the call on the lock is dead: {@link RedlockMutex.extend} refuses it, and an extension still in
   * flight reports failure (and cannot set a key again: the extend script never creates one).
   * @example
   * ```ts
   * const { released, pending } = await redlock.release(lock);
   * ctx.waitUntil(pending);
   * ```
   */
  release(lock: Lock): Promise<ReleaseResult> {
    return this.#lifecycle.release(lock);
  }

  /**
   * Extends `lock` to `ttl` ms from now on a quorum, with the same validity rule as acquire. A node
   * moves the key's expiry only where it still holds the lock's value, and never shortens it.
   * @throws {LockExtensionError} when the lock was released (reason `released`, nothing sent), was
   * already past its validity (`lost`, nothing sent), or no quorum extended it in time: the lock must
   * be treated as lost.
   * @example
   * ```ts
   * await redlock.extend(lock, 10_000);
   * ```
   */
  extend(lock: Lock, ttl: number): Promise<Lock> {
    return this.#lifecycle.extend(lock, ttl);
  }
}
