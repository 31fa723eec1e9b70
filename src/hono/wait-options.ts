// How a middleware waits for its lock: not at all, or until `wait` ms have passed.
import type { Context, Env } from "hono";
import type { HoldMiddlewareOptions } from "./types.ts";

/** Fail fast (0), or retry until `wait` ms have passed; the client leaving stops it. */
export function acquireOptions<E extends Env>(c: Context<E>, wait: HoldMiddlewareOptions<E>["wait"]) {
  const ms = typeof wait === "function" ? wait(c) : (wait ?? 0);
  return { retryCount: ms > 0 ? -1 : 0, maxWait: ms, signal: c.req.raw.signal };
}
