// Hono middlewares: hold a Redlock lock, or a semaphore permit, while the route's handler runs.
import type { Context, Env, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { InvalidArgumentError, LockAcquisitionError, nameNodes } from "../errors.ts";
import type { Lock } from "../lock/lock.ts";
import { MAX_PERMITS, type Permit } from "../semaphore/semaphore.ts";
import type { Redlock } from "../redlock.ts";
import type { RedlockMutex } from "../redlock-mutex.ts";
import {
  ANY_REDLOCK,
  checkHoldOptions,
  checkStaticKey,
  FULL_REDLOCK,
  holdAndExpose,
  pickRedlock,
  retryAfterSeconds,
} from "./hold.ts";
import { busy, unavailable } from "./refusals.ts";
import { acquireOptions } from "./wait-options.ts";
import { timedAcquire } from "./timing.ts";
import type { BusyInfo, HeldLock, HoldMiddlewareOptions, LockKey } from "./types.ts";

export type { RedlockChoice } from "./hold.ts";
export type { BusyInfo, HeldLock, HoldMiddlewareOptions, LockKey, UnavailableInfo } from "./types.ts";
export {
  readWrite,
  type HeldReadWrite,
  type ReadWriteMiddlewareOptions,
  type ReadWriteVariables,
} from "./read-write.ts";

/** Hono `Variables` the {@link redlock} middleware sets: `c.var.lock`. */
export type RedlockVariables = { lock: HeldLock };

/** What the {@link semaphore} middleware hands on as `c.var.permit`. */
export interface HeldPermit {
  /** The permit held for this request. */
  permit: Permit;
  /** Epoch ms when validity ends; moves with each automatic extension. */
  readonly expiresAt: number;
  /** As {@link HeldLock.signal}. */
  signal: AbortSignal;
}

/** Hono `Variables` the {@link semaphore} middleware sets: `c.var.permit`. */
export type SemaphoreVariables = { permit: HeldPermit };

/** What `onFull` gets. */
export interface FullInfo {
  /** The semaphore's key. */
  key: string;
  /** How many permits it has. */
  limit: number;
  /** When the soonest held permit expires, as the nodes reported it, if known (ms). */
  retryAfterMs: number | undefined;
  /** The error `acquire` threw (reason `held`: every permit is held). */
  error: LockAcquisitionError;
}

/** Options of the {@link redlock} middleware. */
export interface RedlockMiddlewareOptions<E extends Env = Env, R extends RedlockMutex = Redlock>
  extends HoldMiddlewareOptions<E, R> {
  /**
   * Response when another holder has the lock. Default: 423 with `{ error, resource, retryAfterMs }` and
   * `Retry-After`.
   */
  onBusy?: (c: Context<E>, info: BusyInfo) => Response | Promise<Response>;
}

/** Options of the {@link semaphore} middleware. */
export interface SemaphoreMiddlewareOptions<E extends Env = Env> extends HoldMiddlewareOptions<E> {
  /** How many requests may run the route at once, across every isolate (1 to 100). Required. */
  limit: number;
  /**
   * Response when every permit is held. Default: 429 with `{ error, semaphore, limit, retryAfterMs }` and
   * `Retry-After`.
   */
  onFull?: (c: Context<E>, info: FullInfo) => Response | Promise<Response>;
}

const DEFAULT_TTL = 10_000;

/**
 * Guards a route with a Redlock lock: acquires before the handler, extends while it runs and while its
 * response body is still being produced (a streamed body: `stream()`, `streamText()`, `streamSSE()` or
 * `new Response(readable)`), releases once the handler's stream is over, or at once when the handler
 * threw (on Workers through `executionCtx.waitUntil`). A lock lost mid-stream cuts the body.
 * Busy → 423 + `Retry-After`; no quorum → 503; missing configuration → 500 naming what is missing.
 * @param key the resource(s) to lock, or a function of the context returning them
 * @param options see {@link RedlockMiddlewareOptions}
 * @returns a Hono middleware that sets `c.var.lock`
 * @example
 * ```ts
 * import { Hono } from "hono";
 * import { redlock } from "edge-redlock/hono";
 *
 * declare function pay(orderId: string, options: { signal: AbortSignal }): Promise<void>; // your own work
 * const app = new Hono();
 * app.post("/orders/:id/pay", redlock((c) => `order:${c.req.param("id")}`, { ttl: 10_000 }), async (c) => {
 *   await pay(c.req.param("id"), { signal: c.var.lock.signal });
 *   return c.json({ paid: true });
 * });
 * ```
 */
export const redlock = <E extends Env = Env, R extends RedlockMutex = RedlockMutex>(
  key: LockKey<E>,
  options: RedlockMiddlewareOptions<E, R> = {},
): MiddlewareHandler<E & { Variables: RedlockVariables }> => {
  const ttl = options.ttl ?? DEFAULT_TTL;
  const lostHeader = checkHoldOptions({ ...options, ttl }, ANY_REDLOCK, ["onBusy"]);
  if (typeof key !== "string" && typeof key !== "function" && !Array.isArray(key))
    throw new InvalidArgumentError("key", "must be a string, an array of strings or a function");
  checkStaticKey(key);
  return createMiddleware<E & { Variables: RedlockVariables }>(async function redlockMiddleware(c, next) {
    const ctx = c as unknown as Context<E>;
    const resources = [await (typeof key === "function" ? key(ctx) : key)].flat();
    const locker = pickRedlock(ctx, options.redlock, ANY_REDLOCK);
    if (locker instanceof Response) return locker;
    let lock: Lock;
    try {
      const how = acquireOptions(ctx, options, locker.nodes.length);
      lock = await timedAcquire(c, options.serverTiming, locker.options.clock, () =>
        locker.acquire(resources, ttl, how),
      );
    } catch (error) {
      if (!(error instanceof LockAcquisitionError)) throw error;
      if (!busy(error)) return unavailable(ctx, options, resources, error);
      const info = { resources, retryAfterMs: error.retryAfterMs, error };
      if (options.onBusy) return options.onBusy(ctx, info);
      c.header("Retry-After", retryAfterSeconds(info.retryAfterMs ?? ttl));
      return c.json(
        {
          error: "locked",
          resource: resources.length === 1 ? resources[0] : resources,
          retryAfterMs: info.retryAfterMs ?? null,
        },
        423,
      );
    }
    const how = { redlock: locker, ttl, maxHold: options.maxHold, maxRequests: options.maxRequests, lostHeader };
    await holdAndExpose(c as unknown as Context, next, "lock", lock, { lock }, how);
  });
};

/**
 * Lets at most `limit` requests run a route at once, across every isolate and region (a quorum
 * semaphore that never over-admits: see `Redlock.semaphore`). Takes a permit before the handler, extends
 * it while the handler and its response body run, releases it after — exactly as {@link redlock} does
 * with a lock. Full → 429 + `Retry-After` (when the soonest permit expires); no quorum → 503.
 * @param key the semaphore's key, or a function of the context returning it
 * @param options see {@link SemaphoreMiddlewareOptions}; `limit` is required
 * @returns a Hono middleware that sets `c.var.permit`
 * @example
 * ```ts
 * import { semaphore } from "edge-redlock/hono";
 *
 * declare function render(input: unknown, options: { signal: AbortSignal }): Promise<string>; // your own work
 * // At most 2 renders at once, whatever the traffic; the others wait up to 5 s, then get 429.
 * app.post("/render", semaphore("renders", { limit: 2, ttl: 30_000, wait: 5_000 }), async (c) => {
 *   return c.body(await render(await c.req.json(), { signal: c.var.permit.signal }));
 * });
 * ```
 */
export const semaphore = <E extends Env = Env>(
  key: string | ((c: Context<E>) => string | Promise<string>),
  options: SemaphoreMiddlewareOptions<E>,
): MiddlewareHandler<E & { Variables: SemaphoreVariables }> => {
  if (typeof options !== "object" || options === null)
    throw new InvalidArgumentError("options", "must be an object with a limit");
  const ttl = options.ttl ?? DEFAULT_TTL;
  // Its names first: a misspelled limit is named as one, not reported missing.
  const lostHeader = checkHoldOptions({ ...options, ttl }, FULL_REDLOCK, ["limit", "onFull"]);
  const { limit } = options;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PERMITS)
    throw new InvalidArgumentError("options.limit", `must be an integer from 1 to ${MAX_PERMITS}`);
  if (typeof key !== "string" && typeof key !== "function")
    throw new InvalidArgumentError("key", "must be a string or a function");
  checkStaticKey(key);
  return createMiddleware<E & { Variables: SemaphoreVariables }>(async function semaphoreMiddleware(c, next) {
    const ctx = c as unknown as Context<E>;
    const name = await (typeof key === "function" ? key(ctx) : key);
    const locker = pickRedlock(ctx, options.redlock, FULL_REDLOCK);
    if (locker instanceof Response) return locker;
    let permit: Permit;
    try {
      const how = acquireOptions(ctx, options, locker.nodes.length);
      const semaphore = locker.semaphore(name, limit);
      permit = await timedAcquire(c, options.serverTiming, locker.options.clock, () => semaphore.acquire(ttl, how));
    } catch (error) {
      if (!(error instanceof LockAcquisitionError)) throw error;
      nameNodes(
        error,
        locker.nodes.map((node) => node.label),
      ); // the semaphore's message numbers them
      if (!busy(error)) return unavailable(ctx, options, [name], error);
      const info = { key: name, limit, retryAfterMs: error.retryAfterMs, error };
      if (options.onFull) return options.onFull(ctx, info);
      c.header("Retry-After", retryAfterSeconds(info.retryAfterMs ?? ttl));
      return c.json(
        { error: "too many concurrent requests", semaphore: name, limit, retryAfterMs: info.retryAfterMs ?? null },
        429,
      );
    }
    const how = { redlock: locker, ttl, maxHold: options.maxHold, maxRequests: options.maxRequests, lostHeader };
    await holdAndExpose(c as unknown as Context, next, "permit", permit, { permit }, how);
  });
};
