// Fencing tokens: the per-resource counter keys on the lock nodes, and exact comparison of tokens.
import { RESERVED_PREFIX } from "../options.ts";

/** Prefix of the per-resource counter keys on the lock nodes (they never expire); resources may not use it. */
export const FENCE_PREFIX = `${RESERVED_PREFIX}fence:`;

/**
 * The counter key of a resource on the lock nodes.
 * @example
 * ```ts
 * fenceKey("orders:42"); // "edge-redlock:fence:orders:42"
 * ```
 */
export function fenceKey(resource: string): string {
  return FENCE_PREFIX + resource;
}

/**
 * Compares two fencing tokens (canonical decimal strings) exactly: negative, 0 or positive.
 * @example
 * ```ts
 * compareFences("10", "9"); // 1
 * ```
 */
export function compareFences(a: string, b: string): number {
  const x = BigInt(a);
  const y = BigInt(b);
  return x === y ? 0 : x > y ? 1 : -1;
}

/**
 * The largest of some fencing tokens.
 * @example
 * ```ts
 * maxFence(["3", "12", "7"]); // "12"
 * ```
 */
export function maxFence(fences: string[]): string {
  return fences.reduce((max, fence) => (compareFences(fence, max) > 0 ? fence : max));
}
