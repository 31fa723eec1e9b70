// The readWrite() middleware: safe methods hold a read lock, the others the write lock, through the handler and
// its response body.
import type { Context, Env, MiddlewareHandler } from "hono";
import { createMiddleware } from "hono/factory";
import { InvalidArgumentError, LockAcquisitionError } from "../errors.ts";
import type { Lock } from "../lock/lock.ts";
import {
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
import type { BusyInfo, HeldLock, HoldMiddlewareOptions } from "./types.ts";

/** What the {@link readWrite} middleware hands on as `c.var.lock`: the lock, and whether it reads or writes. */
export interface HeldReadWrite extends HeldLock {
  /** `read` for GET, HEAD and OPTIONS (shared with other readers), `write` for the other methods (alone). */
  readonly mode: "read" | "write";
}

/** Hono `Variables` the {@link readWrite} middleware sets: `c.var.lock`. */
export type ReadWriteVariables = { lock: HeldReadWrite };

/** Options of the {@link readWrite} middleware. */
export interface ReadWriteMiddlewareOptions<E extends Env = Env> extends HoldMiddlewareOptions<E> {
  /**
   * Response when the lock is taken the other way (a writer holds it, or readers do while this request writes).
   * Default: 423 with `{ error, resource, mode, retryAfterMs }` and `Retry-After`.
   */
  onBusy?: (c: Context<E>, info: BusyInfo & { mode: "read" | "write" }) => Response | Promise<Response>;
}

/** The methods that only read: they share the lock. */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);
const DEFAULT_TTL = 10_000;

/**
 * Guards a route with a read-write lock (`Redlock.readWriteLock`): GET, HEAD and OPTIONS requests take a read lock
 * and run side by side; every other method takes the write lock and runs alone, with no reader inside. Readers and
 * writers wait in one line (`wait`), so a stream of reads never keeps a write out. As {@link redlock}: the lock is
 * extended while the handler and its streamed body run, released after; busy → 423 + `Retry-After`; no quorum → 503.
 * @param key the read-write lock's name, or a function of the context returning it
 * @param options see {@link ReadWriteMiddlewareOptions}
 * @returns a Hono middleware that sets `c.var.lock` (with `mode`)
 * @example
 * ```ts
 * import { readWrite } from "edge-redlock/hono";
 *
 * const guard = readWrite((c) => `doc:${c.req.param("id")}`, { ttl: 10_000, wait: 5_000 });
 * app.get("/docs/:id", guard, async (c) => c.json(await redis.get(`doc:${c.req.param("id")}`)));
 * app.put("/docs/:id", guard, async (c) => c.json(await redis.set(`doc:${c.req.param("id")}`, await c.req.json())));
 * ```
 */
export const readWrite = <E extends Env = Env>(
  key: string | ((c: Context<E>) => string | Promise<string>),
  options: ReadWriteMiddlewareOptions<E> = {},
): MiddlewareHandler<E & { Variables: ReadWriteVariables }> => {
  const ttl = options.ttl ?? DEFAULT_TTL;
  const lostHeader = checkHoldOptions({ ...options, ttl }, FULL_REDLOCK, ["onBusy"]);
  if (typeof key !== "string" && typeof key !== "function")
    throw new InvalidArgumentError("key", "must be a string or a function");
  checkStaticKey(key);
  return createMiddleware<E & { Variables: ReadWriteVariables }>(async function readWriteMiddleware(c, next) {
    const ctx = c as unknown as Context<E>;
    const name = await (typeof key === "function" ? key(ctx) : key);
    const mode: "read" | "write" = SAFE_METHODS.has(c.req.method) ? "read" : "write";
    const locker = pickRedlock(ctx, options.redlock, FULL_REDLOCK);
    if (locker instanceof Response) return locker;
    let lock: Lock;
    try {
      const how = acquireOptions(ctx, options, locker.nodes.length);
      const rw = locker.readWriteLock(name);
      lock = await timedAcquire(c, options.serverTiming, locker.options.clock, () =>
        mode === "read" ? rw.acquireRead(ttl, how) : rw.acquireWrite(ttl, how),
      );
    } catch (error) {
      if (!(error instanceof LockAcquisitionError)) throw error;
      if (!busy(error)) return unavailable(ctx, options, [name], error);
      const info = { resources: [name], retryAfterMs: error.retryAfterMs, error, mode };
      if (options.onBusy) return options.onBusy(ctx, info);
      c.header("Retry-After", retryAfterSeconds(info.retryAfterMs ?? ttl));
      return c.json({ error: "locked", resource: name, mode, retryAfterMs: info.retryAfterMs ?? null }, 423);
    }
    const how = { redlock: locker, ttl, maxHold: options.maxHold, maxRequests: options.maxRequests, lostHeader };
    await holdAndExpose(c as unknown as Context, next, "lock", lock, { lock, mode }, how);
  });
};
