// What the middlewares share in their options: the key, the wait, the Redlock, and the answers when refused.
import type { Context, Env } from "hono";
import type { FailureReason, LockAcquisitionError } from "../errors.ts";
import type { Lock } from "../lock/lock.ts";
import type { Redlock } from "../redlock.ts";
import type { RedlockMutex } from "../redlock-mutex.ts";
import type { RedlockChoice } from "./hold.ts";

/** What `onBusy` gets. */
export interface BusyInfo {
  /** The resources the route asked for. */
  resources: string[];
  /** The holder's remaining time as the nodes reported it, if known (ms). */
  retryAfterMs: number | undefined;
  /** The error `acquire` threw (reason `held`). */
  error: LockAcquisitionError;
}

/** What `onUnavailable` gets. */
export interface UnavailableInfo {
  /** The resources the route asked for. */
  resources: string[];
  /** Why no quorum answered: `unreachable` or `expired`. */
  reason: FailureReason;
  /** The error `acquire` threw. */
  error: LockAcquisitionError;
}

/** One key, several keys, or a function of the request that returns them. */
export type LockKey<E extends Env> =
  | string
  | string[]
  | ((c: Context<E>) => string | string[] | Promise<string | string[]>);

/**
 * Options every middleware takes; `R` is the class its `redlock` option must be (see {@link RedlockChoice}).
 */
export interface HoldMiddlewareOptions<E extends Env, R extends RedlockMutex = Redlock> {
  /** ttl in ms; extended automatically while the handler runs. Default 10 000. */
  ttl?: number;
  /**
   * How long to wait while busy or full, in ms (0 = fail fast). The request waits in line (the Redlock's
   * `fair` queue, unless it was made with `fair: false`), and a 423/429 carries a `Retry-After` from the
   * holder's remaining time and the waiters that were ahead. Default 0.
   */
  wait?: number | ((c: Context<E>) => number);
  /**
   * The Redlock to use: an instance, or a factory (see {@link RedlockChoice} for which class each middleware takes).
   * Default: built from the runtime's environment by `fromEnv` of the class the middleware needs, once per isolate
   * for each class (a `Redlock` built for `semaphore()` or `readWrite()` then serves `redlock()` too).
   */
  redlock?: RedlockChoice<E, R>;
  /** Response when no quorum could be reached. Default: 503 with `{ error, reason }`. */
  onUnavailable?: (c: Context<E>, info: UnavailableInfo) => Response | Promise<Response>;
  /** Cap on holding time in ms: the signal aborts when reached. Default: none. */
  maxHold?: number;
  /**
   * Cap on the HTTP requests the route's lock sends in one request: the acquisition with its waiting, the automatic
   * extensions, and the release (always kept in reserve). A Worker on the free plan has 50 subrequests per
   * invocation: leave room for the handler's own. When the next attempt could pass it, the answer is 423 (429 for a
   * semaphore) with `Retry-After`, as when busy, if a holder refused the last attempt, and 503 as when unreachable
   * if the nodes failed; when the extensions would, the lock is kept until its validity ends (the signal then
   * aborts). Default: no cap.
   */
  maxRequests?: number;
  /** Response header set to `"true"` when the lock was lost while the handler ran. Default `"Lock-Lost"`. */
  lostHeader?: string;
  /**
   * Add `Server-Timing: lock;dur=<acquire ms>;desc="<attempts> attempt(s)"` to the response (taken or
   * refused), so the wait for the lock shows in the browser's devtools and in tracing tools. Default false.
   */
  serverTiming?: boolean;
}

/** What the {@link redlock} middleware hands on as `c.var.lock`. */
export interface HeldLock {
  /** The lock held for this request. */
  lock: Lock;
  /** Epoch ms when validity ends; moves with each automatic extension. */
  readonly expiresAt: number;
  /**
   * Aborts when the lock is lost (reason: `LockExtensionError`), held for `maxHold` (reason:
   * `MaxHoldError`), or when the client no longer reads the streamed response — it cancelled it, or the
   * request was a HEAD (reason: `ResponseAbandonedError`). Check it before each step of a streamed body:
   * a stream callback keeps running after the client left.
   */
  signal: AbortSignal;
}
