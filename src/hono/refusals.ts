// What a middleware answers when no quorum could be reached.
import type { Context, Env } from "hono";
import { failureReason, type LockAcquisitionError } from "../errors.ts";
import type { HoldMiddlewareOptions } from "./types.ts";

/**
 * Whether a refusal means the resource is busy (423, 429: someone holds it), not that the nodes failed (503): held,
 * or a request budget spent while the last attempt was refused by a holder. A budget spent on failing nodes is an
 * outage, and answering it as busy would hide it from whoever watches the 503s.
 */
export function busy(error: LockAcquisitionError): boolean {
  if (error.reason === "held") return true;
  const last = error.attempts[error.attempts.length - 1];
  return error.reason === "budget" && last !== undefined && failureReason(last) === "held";
}

/** The answer when no quorum could be reached: 503 with `Retry-After`, or the app's `onUnavailable`. */
export function unavailable<E extends Env>(
  c: Context<E>,
  options: Pick<HoldMiddlewareOptions<E>, "onUnavailable">,
  resources: string[],
  error: LockAcquisitionError,
): Response | Promise<Response> {
  const info = { resources, reason: error.reason, error };
  if (options.onUnavailable) return options.onUnavailable(c, info);
  reportUnavailable(error);
  c.header("Retry-After", String(UNAVAILABLE_RETRY_AFTER_S));
  return c.json({ error: "lock unavailable", reason: error.reason }, 503);
}

/** What a 503 tells the client: try again in a second (nodes down rarely come back sooner). */
const UNAVAILABLE_RETRY_AFTER_S = 1;
const reportedUnavailable = new Set<string>();

/** Logs why the middleware answered 503, once per distinct cause (the message holds no token or lock value). */
function reportUnavailable(error: LockAcquisitionError): void {
  const cause = error.message.replace(/after \d+ attempt\(s\)/, "").replace(/\d+(?:\.\d+)? ?ms/g, "N ms");
  if (reportedUnavailable.has(cause) || reportedUnavailable.size >= 32) return;
  reportedUnavailable.add(cause);
  console.error(`edge-redlock: answering 503 (logged once per cause): ${error.message}${reserveNote(error)}`);
}

/**
 * For a spent budget: the acquisition's `maxRequests` is the middleware's less one request per node, kept for the
 * release, so the message's count is not the number the app set.
 */
function reserveNote(error: LockAcquisitionError): string {
  const nodes = error.attempts[error.attempts.length - 1]?.votes.length;
  if (error.reason !== "budget" || !nodes) return "";
  return ` (the middleware's maxRequests less ${nodes}, one request per node kept for the release)`;
}
