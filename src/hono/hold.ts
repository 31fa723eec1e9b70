// What the Hono middlewares share: which Redlock to use, and holding a lock (or a permit) through the
// handler and its response body, released at the end (through waitUntil on Workers).
import type { Context, Env } from "hono";
import { watchBody, type WatchOptions } from "./body.ts";
import { variablesOf } from "./config.ts";
import { checkDuration, checkOptionNames, checkResources, checkTtl } from "../check.ts";
import { InvalidArgumentError, ResponseAbandonedError } from "../errors.ts";
import { keepLock } from "../lock/keeper.ts";
import { lockState } from "../lock/lock.ts";
import type { Lock } from "../lock/lock.ts";
import { MissingConfigurationError } from "../node/env.ts";
import { DEFAULTS } from "../options.ts";
import { Redlock } from "../redlock.ts";
import { RedlockMutex } from "../redlock-mutex.ts";
import { anySignal } from "../support/clock.ts";

/**
 * A Redlock instance, or a factory of the request. `R` is what the middleware needs: the `redlock()` middleware
 * takes a {@link RedlockMutex} (so the `Redlock` of `edge-redlock` or of `edge-redlock/mutex`), the
 * `semaphore()` and `readWrite()` middlewares the `Redlock` of `edge-redlock`.
 */
export type RedlockChoice<E extends Env, R extends RedlockMutex = Redlock> = R | ((c: Context<E>) => R);

/** The class a middleware needs, and how its `redlock` option is named in an error when it is not one. */
export interface RedlockNeed<R extends RedlockMutex> {
  kind: (abstract new (...args: never[]) => R) & { fromEnv(env: object): R };
  what: string;
}

/** The `redlock()` middleware's need: a Redlock of either entry. */
export const ANY_REDLOCK: RedlockNeed<RedlockMutex> = {
  kind: RedlockMutex,
  what: "a Redlock (of edge-redlock or of edge-redlock/mutex)",
};

/** The `semaphore()` and `readWrite()` middlewares' need: the Redlock of `edge-redlock`. */
export const FULL_REDLOCK: RedlockNeed<Redlock> = {
  kind: Redlock,
  what: "a Redlock of edge-redlock (the one of edge-redlock/mutex has no semaphore() or readWriteLock())",
};

const DEFAULT_LOST_HEADER = "Lock-Lost";
const fromEnvCache = new Map<string, RedlockMutex>();
const reportedMissing = new Set<string>();

/** The options every holding middleware takes; each adds its own (see {@link checkHoldOptions}). */
const HOLD_OPTION_NAMES = [
  "ttl",
  "wait",
  "redlock",
  "onUnavailable",
  "maxHold",
  "maxRequests",
  "lostHeader",
  "serverTiming",
] as const;

/**
 * The options every middleware checks when the route is defined (not on the first request), its names first: one
 * that is not an option of {@link HOLD_OPTION_NAMES} or of the middleware's `own` is refused (a misspelling would be
 * ignored).
 */
export function checkHoldOptions<R extends RedlockMutex>(
  options: {
    ttl: number;
    redlock?: unknown;
    wait?: unknown;
    maxHold?: number;
    maxRequests?: number;
    lostHeader?: string;
    serverTiming?: unknown;
  },
  need: RedlockNeed<R>,
  own: readonly string[],
): string {
  checkOptionNames(options, [...HOLD_OPTION_NAMES, ...own], "options");
  const given = options.redlock;
  if (given !== undefined && typeof given !== "function" && !(given instanceof need.kind))
    throw new InvalidArgumentError(
      "options.redlock",
      `must be ${need.what}, or a function of the request returning one`,
    );
  if (typeof given === "function" && (given === RedlockMutex || given.prototype instanceof RedlockMutex))
    throw new InvalidArgumentError(
      "options.redlock",
      "is a class: pass an instance (new Redlock(nodes) or Redlock.fromEnv(env)), or a function returning one",
    );
  // The ttl must exceed the nodeTimeout of the Redlock used: the given one's, or the default's (a factory's is
  // checked per request).
  checkTtl(
    options.ttl,
    given instanceof need.kind ? given.options.nodeTimeout : typeof given === "function" ? 0 : DEFAULTS.nodeTimeout,
  );
  if (typeof options.wait === "number") checkDuration("options.wait", options.wait);
  checkDuration("options.maxHold", options.maxHold, 1);
  if (
    options.maxRequests !== undefined &&
    (!Number.isInteger(options.maxRequests) || options.maxRequests < 1 || options.maxRequests > 1_000_000)
  )
    throw new InvalidArgumentError("options.maxRequests", "must be an integer from 1 to 1000000");
  if (options.serverTiming !== undefined && typeof options.serverTiming !== "boolean") {
    throw new InvalidArgumentError("options.serverTiming", "must be a boolean");
  }
  const lostHeader = options.lostHeader ?? DEFAULT_LOST_HEADER;
  if (typeof lostHeader !== "string" || !/^[A-Za-z0-9-]+$/.test(lostHeader))
    throw new InvalidArgumentError("options.lostHeader", "must be a header name");
  return lostHeader;
}

/**
 * Checks a middleware's key when it is fixed (a string, or strings), as the route is defined: a key the lock would
 * refuse (empty, too long, reserved) is refused there, named `key`, not on every request with a bare 500.
 */
export function checkStaticKey(key: unknown): void {
  if (typeof key !== "string" && !Array.isArray(key)) return;
  try {
    checkResources(key);
  } catch (error) {
    if (!(error instanceof InvalidArgumentError)) throw error;
    // The lock names the keys `resources[i]`: here the argument is `key`, a string one or a list.
    const name = error.argument.replace(typeof key === "string" ? /^resources(\[0\])?/ : /^resources/, "key");
    throw new InvalidArgumentError(name, error.message.slice(error.argument.length + 1));
  }
}

/**
 * The Redlock for this request: the given one, the factory's, or one built once per isolate by
 * `fromEnv` of the class needed from `c.env` when it holds the variables (any runtime), else from the runtime's
 * environment (a `Redlock` built for one middleware serves the `redlock()` middleware too). Missing configuration
 * answers 500 naming the variables and the source read (logged once).
 * @throws {InvalidArgumentError} when the factory returns anything but the class needed.
 */
export function pickRedlock<E extends Env, R extends RedlockMutex>(
  c: Context<E>,
  given: RedlockChoice<E, R> | undefined,
  need: RedlockNeed<R>,
): R | Response {
  let vars: Record<string, unknown> = {};
  let source = "the redlock option's factory";
  try {
    if (given instanceof need.kind) return given;
    if (typeof given === "function") {
      const made: unknown = given(c);
      if (made instanceof need.kind) return made;
      throw new InvalidArgumentError("options.redlock", `must return ${need.what}`);
    }
    ({ vars, source } = variablesOf(c as Context));
    const id = Object.keys(vars)
      .filter((name) => name.startsWith("UPSTASH_REDIS_REST_"))
      .sort()
      .map((name) => `${name}=${String(vars[name])}`)
      .join("\n");
    const cached = fromEnvCache.get(id);
    if (cached instanceof need.kind) return cached;
    const built = need.kind.fromEnv(vars);
    fromEnvCache.set(id, built);
    return built;
  } catch (error) {
    if (!(error instanceof MissingConfigurationError)) throw error;
    const line = `edge-redlock: missing ${error.missing.join(", ")} (read from ${source}). ${whereToSet(source)}`;
    if (!reportedMissing.has(line) && reportedMissing.size < 32) console.error(line);
    reportedMissing.add(line);
    return c.json({ error: "lock not configured", missing: error.missing, source }, 500);
  }
}

/** Where the missing variables are set, for the source they were read from (see `variablesOf`). */
function whereToSet(source: string): string {
  const local = "npx edge-redlock dev runs local nodes and writes them";
  if (source.startsWith("c.env")) return `Locally, ${local} to .dev.vars; deployed, npx wrangler secret put NAME`;
  if (source.startsWith("the redlock option")) return "The redlock option's factory reads them: set them there";
  return `Set them in the environment; locally, ${local} to .env with --out .env (node --env-file=.env)`;
}

/** How a lock is held through a request. */
export interface HoldOptions<L extends Lock> {
  held: L;
  redlock: RedlockMutex;
  ttl: number;
  maxHold?: number;
  /** The route's request budget: the acquisition's requests, the extensions and the release count against it. */
  maxRequests?: number;
  lostHeader: string;
  /**
   * Hands the middleware's view on (`c.set(...)`) with the signal that aborts when the lock is lost, held
   * for `maxHold`, or the client no longer reads the streamed response (reason `ResponseAbandonedError`).
   */
  expose(signal: AbortSignal): void;
}

/**
 * Runs the rest of the chain while keeping `held` extended, and keeps it through the response body
 * (see {@link watchBody}); then releases it — through `executionCtx.waitUntil` on Workers, else before
 * the response goes out when the body is not streamed. Whatever happens, the release runs.
 */
export async function holdThrough<L extends Lock>(
  c: Context,
  next: () => Promise<void>,
  how: HoldOptions<L>,
): Promise<void> {
  const { held, redlock, ttl } = how;
  const keeper = keepLock(held, {
    clock: redlock.options.clock,
    ttl,
    threshold: redlock.defaultThreshold(ttl),
    maxHold: how.maxHold,
    maxExtensions: extensionsLeft(held, redlock.nodes.length, how.maxRequests),
  });
  // Aborts when the client no longer reads the body (cancel, HEAD): the handler should stop producing it.
  const abandoned = new AbortController();
  how.expose(anySignal([keeper.signal, abandoned.signal]));
  let answered = false;
  try {
    await next();
    answered = true;
  } finally {
    let ended: Promise<void> = Promise.resolve();
    try {
      ended = untilProduced(c, {
        answered,
        lostHeader: how.lostHeader,
        lost: keeper.signal,
        onAbandon: () => abandoned.abort(new ResponseAbandonedError()),
        graceMs: ttl,
        sleep: (ms, s) => redlock.options.clock.sleep(ms, s),
      });
    } catch {
      // The response could not be rewrapped: it goes out as it is, and the lock is released now.
    }
    const released = ended.then(() => keeper.stop()).then(() => held.release());
    const execution = executionContext(c);
    // On Workers everything, the release's pending requests too, goes to waitUntil.
    if (execution) execution.waitUntil(released.then((result) => result.pending));
    // Elsewhere a body that ends at once (not streamed) is released before the response goes out;
    // a streamed one in the background once it ends. Neither waits for a hung node (pending).
    else if (await endsAtOnce(ended)) await released;
  }
}

/**
 * {@link holdThrough}, handing on `c.var[name]`: `fields`, the signal, and `expiresAt` as it moves with each
 * extension. What each middleware does once it holds its lock or permit.
 */
export function holdAndExpose<L extends Lock>(
  c: Context,
  next: () => Promise<void>,
  name: string,
  held: L,
  fields: object,
  how: Omit<HoldOptions<L>, "held" | "expose">,
): Promise<void> {
  const expose = (signal: AbortSignal) =>
    c.set(
      name as never,
      {
        ...fields,
        signal,
        get expiresAt() {
          return held.expiresAt;
        },
      } as never,
    );
  return holdThrough(c, next, { ...how, held, expose });
}

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

function executionContext(c: Context): { waitUntil(p: Promise<unknown>): void } | undefined {
  try {
    return c.executionCtx;
  } catch {
    return undefined;
  }
}

/** `Retry-After` in whole seconds (at least 1) from a wait in ms. */
export function retryAfterSeconds(ms: number): string {
  return String(Math.max(1, Math.ceil(ms / 1000)));
}

/**
 * How many extension rounds fit the route's request budget once the acquisition's requests and the release (one
 * request per node each) are counted: unbounded without a budget.
 * @example
 * ```ts
 * extensionsLeft(lock, 5, 40); // 3: 17 sent to acquire, 5 kept for the release
 * ```
 */
export function extensionsLeft(lock: Lock, nodes: number, maxRequests: number | undefined): number {
  if (maxRequests === undefined) return Number.POSITIVE_INFINITY;
  const sent = lockState(lock).requests ?? 0;
  return Math.max(0, Math.floor((maxRequests - sent - nodes) / nodes));
}
