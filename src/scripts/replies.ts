// The rules that turn a reply into a vote: anything but the exact success or refusal shape is an error.
import { DECIMAL } from "./decimal.ts";
import type { Vote } from "./vote.ts";

/**
 * `{1}` grants; `{0, pttl}` refuses; nothing else counts.
 * @example
 * ```ts
 * grantOrRefuse([0, 4200]); // { outcome: "denied", pttl: 4200 }
 * ```
 */
export function grantOrRefuse(reply: unknown): Vote {
  if (Array.isArray(reply) && reply.length === 1 && reply[0] === 1) return { outcome: "granted" };
  return refusal(reply);
}

/**
 * `{1, fence}` grants (fence: a canonical decimal, or a safe integer); `{0, pttl}` refuses; nothing else counts.
 * @example
 * ```ts
 * grantWithFence([1, "1732406400000001"]); // { outcome: "granted", fence: "1732406400000001" }
 * ```
 */
export function grantWithFence(reply: unknown): Vote {
  if (Array.isArray(reply) && reply.length === 2 && reply[0] === 1) {
    const fence = typeof reply[1] === "number" && Number.isSafeInteger(reply[1]) ? String(reply[1]) : reply[1];
    if (typeof fence === "string" && DECIMAL.test(fence)) return { outcome: "granted", fence };
  }
  return refusal(reply);
}

/**
 * A fair script's refusal, `{0, pttl, ahead}`: the holder's PTTL (-2 when only the queue stood in the way)
 * and how many live waiters are ahead of the asker; anything else is an error.
 * @example
 * ```ts
 * fairRefusal([0, 4200, 2]); // { outcome: "denied", pttl: 4200, position: 2 }
 * fairRefusal([0, 4200, -1, 1764165600000]); // { outcome: "denied", pttl: 4200, nodeTime: 1764165600000 }
 * ```
 */
export function fairRefusal(reply: unknown): Vote {
  if (
    Array.isArray(reply) &&
    reply.length === 3 &&
    reply[0] === 0 &&
    isInteger(reply[1]) &&
    reply[1] >= -2 &&
    isInteger(reply[2]) &&
    reply[2] >= 0
  )
    return { outcome: "denied", pttl: reply[1], position: reply[2] };
  // The ticket was out of step with the node's clock: it gives its time, so the waiter takes a ticket in step.
  if (
    Array.isArray(reply) &&
    reply.length === 4 &&
    reply[0] === 0 &&
    isInteger(reply[1]) &&
    reply[1] >= -2 &&
    reply[2] === -1 &&
    isInteger(reply[3]) &&
    reply[3] > 0
  )
    return { outcome: "denied", pttl: reply[1], nodeTime: reply[3] };
  return unexpected(reply);
}

function refusal(reply: unknown): Vote {
  if (Array.isArray(reply) && reply.length === 2 && reply[0] === 0 && isInteger(reply[1]) && reply[1] >= -2)
    return { outcome: "denied", pttl: reply[1] };
  return unexpected(reply);
}

/**
 * A Redis integer reply as it arrives in JSON: a number with no fraction (a decimal string is not one).
 * @example
 * ```ts
 * isInteger(3); // true; isInteger("3") is false
 * ```
 */
export function isInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value);
}

/**
 * An integer reply that a client may have left as text: a JSON integer, or a decimal string of a safe
 * integer (`"-12"`); undefined for anything else.
 * @example
 * ```ts
 * parseInteger("12"); // 12
 * ```
 */
export function parseInteger(value: unknown): number | undefined {
  if (isInteger(value)) return value;
  if (typeof value !== "string" || !/^-?(0|[1-9][0-9]*)$/.test(value)) return undefined;
  const parsed = Number(value);
  return Number.isSafeInteger(parsed) ? parsed : undefined;
}

/**
 * The error vote for a reply of the wrong shape; its cause names the shape, never the content.
 * @example
 * ```ts
 * unexpected("OK"); // { outcome: "error", cause: "unexpected reply (string)" }
 * ```
 */
export function unexpected(reply: unknown): Vote {
  const shape = Array.isArray(reply) ? `array(${reply.length})` : reply === null ? "null" : typeof reply;
  return { outcome: "error", cause: `unexpected reply (${shape})` };
}
