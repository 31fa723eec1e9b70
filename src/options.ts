// The options users set, their defaults, and the limits the checks hold them to.
import type { EventHandler, LockEvent } from "./events/types.ts";
import type { Clock } from "./support/clock.ts";

/**
 * Options of a {@link Redlock}. Every field is optional; the defaults are listed here and in the README.
 * @example
 * ```ts
 * import { Redlock } from "edge-redlock";
 *
 * const redlock = new Redlock(nodes, { retryCount: 3, nodeTimeout: 300 });
 * ```
 */
export interface RedlockOptions {
  /**
   * Attempts after the first one; `-1` retries until the caller's signal aborts. Default 10. A fair
   * acquisition waits `retryCount × retryDelay` ms in all instead, asking when woken or when the nodes' time is up,
   * and once more when that time is spent.
   */
  retryCount?: number;
  /** Mean wait between attempts in ms. Default 200. */
  retryDelay?: number;
  /** The wait is `retryDelay ± retryJitter`, uniformly random. Default 100. */
  retryJitter?: number;
  /** Clock drift allowance as a fraction of the ttl (plus 2 ms). Default 0.01. */
  driftFactor?: number;
  /**
   * Per-request timeout in ms; must be below every ttl used. Default 500: an HTTPS request to a
   * hosted database, new TLS connection included, normally answers in well under that, and a hung
   * node then costs at most 5 % of a 10 s ttl.
   */
  nodeTimeout?: number;
  /**
   * Send the requests to one node that start in the same turn (many locks taken or released together)
   * as one pipeline request. Default true. Applies to the clients built from `{ url, token }`.
   */
  batching?: boolean;
  /**
   * Report a node that fails while the lock still works (a quorum answered): `console.warn` once per node
   * per minute, naming the node and the cause, never a token or a lock value. Default true. Applies to the
   * nodes built from `{ url, token }` and `Redis` instances.
   */
  warnings?: boolean;
  /**
   * How to wait in line. Every acquisition that retries joins a line per resource on every node and is served in
   * order of its call (docs/SAFETY.md, "Fair waiting"); a mutex's waiters of one Redlock take turns to wait on the
   * nodes (docs/guide.md, "Fair waiting"). `true`: it sleeps until woken (Pub/Sub) or until the
   * holder's time is up. `false`: it retries every `retryDelay ± retryJitter`, which also keeps its place.
   * Default true.
   */
  fair?: boolean;
  /** Time source; replace only in tests (see {@link Clock}). */
  clock?: Clock;
  /**
   * Called synchronously with every {@link LockEvent}: acquisitions (held or failed, attempts, elapsed
   * time, validity, the nodes' tally), retries with their wait, extensions, losses and releases. No event
   * carries a token or a lock's value. A handler that throws is reported once through `console.error` and
   * never breaks the lock; keep it fast (it runs on the lock's path). Default: none.
   */
  onEvent?: EventHandler;
}

/** Options of one acquisition; retry settings here override the instance's. */
export interface AcquireOptions {
  /**
   * Aborting stops retrying, cuts the requests in flight, releases what was set and rejects with the signal's
   * reason.
   */
  signal?: AbortSignal;
  /**
   * Attempts after the first one; `-1` retries until `maxWait` or the signal ends it. Bounds the attempts only when
   * no `maxWait` is given: with `maxWait`, the time decides. Default: the instance's.
   */
  retryCount?: number;
  /** Mean wait between attempts in ms. Default: the instance's. */
  retryDelay?: number;
  /** The wait is `retryDelay ± retryJitter`. Default: the instance's. */
  retryJitter?: number;
  /**
   * Give up once the next attempt would start more than this many ms after the call (0 = one attempt). When given,
   * it decides how long to retry (not `retryCount`); the signal and `maxRequests` still end it sooner.
   */
  maxWait?: number;
  /**
   * Cap on the HTTP requests this acquisition may send: attempts, fencing write-backs, the undoing of failed
   * attempts and leaving the line (each request to one node counts one). When the next attempt could pass it, the
   * acquisition fails with a {@link LockAcquisitionError} of reason `budget`, never halfway. Must allow one attempt:
   * at least 2 × nodes (3 × nodes with fencing), plus nodes when it may wait in line. Default: no cap.
   */
  maxRequests?: number;
  /** Wait in line (see {@link RedlockOptions.fair}); `false` retries at random. Default: the instance's. */
  fair?: boolean;
  /**
   * Hand out a fencing token (`lock.fence`): costs one more round trip (the write-back round).
   * Default false.
   */
  fencing?: boolean;
}

/** Options of {@link Redlock.using}: those of acquire, plus how the lock is kept. */
export interface UsingOptions extends AcquireOptions {
  /**
   * Cap on the total holding time in ms; reaching it aborts the routine's signal with {@link MaxHoldError}.
   * Default: none.
   */
  maxHold?: number;
  /**
   * Extend when this many ms of validity are left. Must be below the ttl. Default: half the ttl, and
   * at least nodeTimeout + 50 ms where the ttl allows (see {@link Redlock.defaultThreshold}).
   */
  extendThreshold?: number;
}

/** How one acquisition retries: the call's settings, else the instance's (checked). */
export interface RetryPolicy {
  retryCount: number;
  retryDelay: number;
  retryJitter: number;
  /** Give up once the next attempt would start more than this many ms after the first. */
  maxWait?: number;
  signal?: AbortSignal;
  /** Join the line (an acquisition that may retry: one try respects the line but never joins it). */
  joins: boolean;
  /** Wait woken in line (`fair`, the default), rather than retry at random while keeping its place (`fair: false`). */
  fair: boolean;
  /** Cap on the requests the acquisition sends (see {@link AcquireOptions.maxRequests}). */
  maxRequests?: number;
}

/** Options after defaults and checks (every field set). */
export type ResolvedOptions = Required<Omit<RedlockOptions, "onEvent">> & Pick<RedlockOptions, "onEvent">;

/** The defaults of {@link RedlockOptions}. */
export const DEFAULTS: Readonly<Omit<ResolvedOptions, "clock" | "onEvent">> = Object.freeze({
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 100,
  driftFactor: 0.01,
  nodeTimeout: 500,
  batching: true,
  warnings: true,
  fair: true,
});

/** The longest ttl accepted (2^31 − 1 ms, the largest timer delay runtimes support). */
export const MAX_TTL = 2 ** 31 - 1;

/**
 * The prefix of the keys the library keeps for itself on the lock nodes (fence counters): a resource
 * may not start with it, or locking it would collide with another resource's counter.
 */
export const RESERVED_PREFIX = "edge-redlock:";

/**
 * When auto-extension starts by default: half the ttl left, and never less than nodeTimeout + 50 ms
 * (an extension round may take up to nodeTimeout).
 */
export function defaultThreshold(ttl: number, nodeTimeout: number): number {
  return Math.max(ttl / 2, Math.min(ttl - 1, nodeTimeout + 50));
}
