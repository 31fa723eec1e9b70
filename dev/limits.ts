// Upstash's size limits, with its error texts (docs: Troubleshooting, "ERR max request size exceeded"
// and "ERR max key size exceeded"). Where the docs give a size as "10MB" or "32Kb", the bridge takes the
// smaller reading (decimal), so that whatever passes here passes on Upstash.
import { commandKeys } from "./key-specs.ts";

/** Largest request body Upstash accepts on its Free and Pay-as-you-go plans ("10MB"). */
export const MAX_REQUEST_BYTES = 10_000_000;
/** Largest key Upstash accepts ("32Kb", a hard-coded limit). */
export const MAX_KEY_BYTES = 32_000;

export const REQUEST_TOO_LARGE = "ERR max request size exceeded";

/**
 * Upstash's error text for the first key in `command` over {@link MAX_KEY_BYTES}, or undefined.
 * Knows the commands in `dev/key-specs.ts`, EVAL/EVALSHA's KEYS included.
 * @example
 * keySizeError(["get", "x".repeat(40_000)]); // "ERR max key size exceeded. Limit: 32000 bytes, Actual: 40000 bytes"
 */
export function keySizeError(command: readonly string[]): string | undefined {
  for (const key of commandKeys(command) ?? []) {
    const bytes = Buffer.byteLength(key, "utf8");
    if (bytes > MAX_KEY_BYTES)
      return `ERR max key size exceeded. Limit: ${MAX_KEY_BYTES} bytes, Actual: ${bytes} bytes`;
  }
  return undefined;
}
