// Hono middleware: hold a Redlock lock while the route's handler runs.
import type { Context, Env, MiddlewareHandler } from "hono";
import { env as runtimeEnv } from "hono/adapter";
import { createMiddleware } from "hono/factory";
import { MissingConfigurationError } from "./env.ts";
import { anySignal } from "./clock.ts";
import { InvalidArgumentError, LockAcquisitionError, ResponseAbandonedError, type FailureReason } from "./errors.ts";
import { watchBody, type WatchOptions } from "./body.ts";
import { DEFAULTS, checkDuration, checkTtl } from "./options.ts";
import { keepLock } from "./keeper.ts";
import type { Lock } from "./lock.ts";
import { Redlock } from "./redlock.ts";

/** What the middleware hands on as `c.var.lock`. */
export interface HeldLock {
  lock: Lock;
  /** Epoch ms when validity ends; moves with each automatic extension. */
  readonly expiresAt: number;
  /**
   * Aborts when the lock is lost (reason: `LockExtensionError`), held for `maxHold` (reason:
   * `MaxHoldError`), or about to be released because the client cancelled the streamed body or the
   * request was a HEAD (reason: `LockExtensionError` with reason `released`). Check it before each
   * step of a streamed body: a stream callback keeps running after the client left.
   */
  signal: AbortSignal;
}

/** Hono `Variables` the middleware sets: `c.var.lock`. */
export type RedlockVariables = { lock: HeldLock };

/** What `onBusy` gets. */
export interface BusyInfo {
  resources: string[];
  /** The holder's remaining time as the nodes reported it, if known (ms). */
  retryAfterMs: number | undefined;
  error: LockAcquisitionError;
}

/** What `onUnavailable` gets. */
export interface UnavailableInfo {
  resources: string[];
  reason: FailureReason;
  error: LockAcquisitionError;
}

/** One key, several keys, or a function of the request that returns them. */
export type LockKey<E extends Env> = string | string[] | ((c: Context<E>) => string | string[] | Promise<string | string[]>);

/** Options of the {@link redlock} middleware. */
export interface RedlockMiddlewareOptions<E extends Env = Env> {
  /** Lock ttl in ms; extended automatically while the handler runs. Default 10 000. */
  ttl?: number;
  /** How long to keep retrying while the lock is busy, in ms (0 = fail fast). Default 0. */
  wait?: number | ((c: Context<E>) => number);
  /** The Redlock to use: an instance, or a factory. Default: built once per isolate by `Redlock.fromEnv` from the runtime's environment. */
  redlock?: Redlock | ((c: Context<E>) => Redlock);
  /** Response when another holder has the lock. Default: 423 with `{ error, resource, retryAfterMs }` and `Retry-After`. */
  onBusy?: (c: Context<E>, info: BusyInfo) => Response | Promise<Response>;
  /** Response when no quorum could be reached. Default: 503 with `{ error, reason }`. */
  onUnavailable?: (c: Context<E>, info: UnavailableInfo) => Response | Promise<Response>;
  /** Cap on holding time in ms: the signal aborts when reached. Default: none. */
  maxHold?: number;
  /** Response header set to `"true"` when the lock was lost while the handler ran. Default `"Lock-Lost"`. */
  lostHeader?: string;
}

const DEFAULT_TTL = 10_000;
const DEFAULT_LOST_HEADER = "Lock-Lost";

const fromEnvCache = new Map<string, Redlock>();
let reportedMissing = false;

/**
 * Guards a route with a Redlock lock: acquires before the handler, extends while it runs and while its
 * response body is still being produced (a streamed body: `stream()`, `streamText()`, `streamSSE()` or
 * `new Response(readable)`), releases once the body has ended or the client cancelled it, or at once
 * when the handler threw (on Workers through `executionCtx.waitUntil`). A lock lost mid-stream cuts the body.
 * Busy → 423 + `Retry-After`; no quorum → 503; missing configuration → 500 naming what is missing.
 * @param key the resource(s) to lock, or a function of the context returning them
 * @param options see {@link RedlockMiddlewareOptions}
 * @returns a Hono middleware that sets `c.var.lock`
 * @example
 * import { Hono } from "hono";
 * import { redlock } from "edge-redlock/hono";
 *
 * const app = new Hono();
 * app.post("/orders/:id/pay", redlock((c) => `order:${c.req.param("id")}`, { ttl: 10_000 }), async (c) => {
 *   await pay(c.req.param("id"), { signal: c.var.lock.signal });
 *   return c.json({ paid: true });
 * });
 */
export const redlock = <E extends Env = Env>(
  key: LockKey<E>,
  options: RedlockMiddlewareOptions<E> = {},
): MiddlewareHandler<E & { Variables: RedlockVariables }> => {
  const ttl = options.ttl ?? DEFAULT_TTL;
  const lostHeader = options.lostHeader ?? DEFAULT_LOST_HEADER;
  // Bad options fail when the route is defined, not on the first request. The ttl must exceed the
  // nodeTimeout of the Redlock used: the given one's, or the default's (a factory's is checked per request).
  checkTtl(ttl, options.redlock instanceof Redlock ? options.redlock.options.nodeTimeout : typeof options.redlock === "function" ? 0 : DEFAULTS.nodeTimeout);
  if (typeof options.wait === "number") checkDuration("options.wait", options.wait);
  checkDuration("options.maxHold", options.maxHold, 1);
  if (typeof lostHeader !== "string" || !/^[A-Za-z0-9-]+$/.test(lostHeader)) throw new InvalidArgumentError("options.lostHeader", "must be a header name");
  if (typeof key !== "string" && typeof key !== "function" && !Array.isArray(key)) throw new InvalidArgumentError("key", "must be a string, an array of strings or a function");
  return createMiddleware<E & { Variables: RedlockVariables }>(async function redlockMiddleware(c, next) {
    const ctx = c as unknown as Context<E>;
    const resources = [await (typeof key === "function" ? key(ctx) : key)].flat();
    let locker: Redlock;
    try {
      locker = pickRedlock(ctx, options.redlock);
    } catch (error) {
      if (!(error instanceof MissingConfigurationError)) throw error;
      if (!reportedMissing) console.error(`edge-redlock: ${error.message}`);
      reportedMissing = true;
      return c.json({ error: "lock not configured", missing: error.missing }, 500);
    }

    const wait = typeof options.wait === "function" ? options.wait(ctx) : (options.wait ?? 0);
    let lock: Lock;
    try {
      lock = await locker.acquire(resources, ttl, { retryCount: wait > 0 ? -1 : 0, maxWait: wait, signal: c.req.raw.signal });
    } catch (error) {
      if (!(error instanceof LockAcquisitionError)) throw error;
      if (error.reason === "held") {
        const info = { resources, retryAfterMs: error.retryAfterMs, error };
        return options.onBusy ? options.onBusy(ctx, info) : busy(c, info, ttl);
      }
      const info = { resources, reason: error.reason, error };
      return options.onUnavailable ? options.onUnavailable(ctx, info) : c.json({ error: "lock unavailable", reason: error.reason }, 503);
    }

    const keeper = keepLock(lock, { clock: locker.options.clock, ttl, threshold: locker.defaultThreshold(ttl), maxHold: options.maxHold });
    // Aborts when the client no longer reads the body (cancel, HEAD): the handler should stop producing it.
    const abandoned = new AbortController();
    const abandon = () => abandoned.abort(new ResponseAbandonedError());
    c.set("lock", {
      lock,
      signal: anySignal([keeper.signal, abandoned.signal]),
      get expiresAt() {
        return lock.expiresAt;
      },
    });
    let answered = false;
    try {
      await next();
      answered = true;
    } finally {
      let ended: Promise<void> = Promise.resolve();
      try {
        ended = untilProduced(c, { answered, lostHeader, lost: keeper.signal, onAbandon: abandon, graceMs: ttl, sleep: (ms, signal) => locker.options.clock.sleep(ms, signal) });
      } catch {
        // The response could not be rewrapped: it goes out as it is, and the lock is released now.
      }
      const released = ended.then(() => keeper.stop()).then(() => lock.release());
      const execution = executionContext(c);
      // On Workers everything, the release's pending requests too, goes to waitUntil.
      if (execution) execution.waitUntil(released.then((result) => result.pending));
      // Elsewhere a body that ends at once (not streamed) is released before the response goes out;
      // a streamed one in the background once it ends. Neither waits for a hung node (pending).
      else if (await endsAtOnce(ended)) await released;
    }
  });
};

/**
 * How long the critical section lasts after the handler returned: until the handler's response stream
 * is over (see {@link watchBody}). A handler that threw is done; one that returned after the lock was
 * lost answers as it chose, marked with the lost header; a HEAD answer's body is never read, so it is
 * abandoned at once (its stream still runs out under the lock).
 */
function untilProduced(c: Context, how: { answered: boolean; lostHeader: string } & WatchOptions): Promise<void> {
  if (how.lost.aborted) {
    markLost(c, how.lostHeader);
    return Promise.resolve();
  }
  if (!how.answered || c.error) return Promise.resolve();
  const watched = watchBody(c.res, how);
  c.res = watched.response;
  if (c.req.raw.method === "HEAD") void watched.response.body?.cancel("HEAD: the body is not sent").catch(() => {});
  return watched.ended;
}

/** Whether the body ended before the next macrotask (it was not streamed). */
function endsAtOnce(ended: Promise<void>): Promise<boolean> {
  return Promise.race([ended.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 0))]);
}

function markLost(c: Context, header: string): void {
  try {
    c.res.headers.set(header, "true");
  } catch {
    c.res = new Response(c.res.body, c.res); // immutable headers (a fetched response): copy it
    c.res.headers.set(header, "true");
  }
}

function busy(c: Context, info: BusyInfo, ttl: number): Response {
  const retryAfterMs = info.retryAfterMs;
  const seconds = Math.max(1, Math.ceil((retryAfterMs ?? ttl) / 1000));
  c.header("Retry-After", String(seconds));
  return c.json({ error: "locked", resource: info.resources.length === 1 ? info.resources[0] : info.resources, retryAfterMs: retryAfterMs ?? null }, 423);
}

function pickRedlock<E extends Env>(c: Context<E>, given: Redlock | ((c: Context<E>) => Redlock) | undefined): Redlock {
  if (given instanceof Redlock) return given;
  if (typeof given === "function") return given(c);
  const vars = (runtimeEnv(c as Context) ?? {}) as Record<string, unknown>;
  const id = Object.keys(vars)
    .filter((name) => name.startsWith("UPSTASH_REDIS_REST_"))
    .sort()
    .map((name) => `${name}=${String(vars[name])}`)
    .join("\n");
  let cached = fromEnvCache.get(id);
  if (!cached) {
    cached = Redlock.fromEnv(vars);
    fromEnvCache.set(id, cached);
  }
  return cached;
}

function executionContext(c: Context): { waitUntil(p: Promise<unknown>): void } | undefined {
  try {
    return c.executionCtx;
  } catch {
    return undefined;
  }
}
