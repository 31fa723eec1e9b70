// How a middleware waits for its lock: not at all, or until `wait` ms have passed.
import type { Context, Env } from "hono";
import type { HoldMiddlewareOptions } from "./types.ts";

/**
 * Fail fast (0), or retry until `wait` ms have passed; the client leaving stops it. With a request budget, the
 * release is kept out of what the acquisition may send (one request per node).
 */
export function acquireOptions<E extends Env>(
  c: Context<E>,
  options: Pick<HoldMiddlewareOptions<E>, "wait" | "maxRequests">,
  nodes: number,
): { retryCount: number; maxWait: number; signal: AbortSignal; maxRequests?: number } {
  const { wait, maxRequests } = options;
  const ms = typeof wait === "function" ? wait(c) : (wait ?? 0);
  const budget = maxRequests === undefined ? {} : { maxRequests: maxRequests - nodes };
  return { retryCount: ms > 0 ? -1 : 0, maxWait: ms, signal: c.req.raw.signal, ...budget };
}
