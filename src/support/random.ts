// Randomness from Web Crypto only: lock values and retry jitter.

/** Bytes in a lock value: 20 bytes = 160 bits, as the Redlock page asks. */
const VALUE_BYTES = 20;

/**
 * A fresh lock value: 160 random bits from `crypto.getRandomValues`, as 40 hex characters.
 * It is the proof of ownership of one attempt; it is never logged.
 * @example
 * ```ts
 * const value = randomValue(); // "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"
 * ```
 */
export function randomValue(): string {
  return toHex(crypto.getRandomValues(new Uint8Array(VALUE_BYTES)));
}

/**
 * Lower-case hex of some bytes.
 * @example
 * ```ts
 * toHex(new Uint8Array([1, 255])); // "01ff"
 * ```
 */
export function toHex(bytes: Uint8Array): string {
  let hex = "";
  for (const byte of bytes) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/**
 * A uniform random number in [0, 1) from `crypto.getRandomValues`.
 * @example
 * ```ts
 * const delay = base + (randomUnit() * 2 - 1) * jitter;
 * ```
 */
export function randomUnit(): number {
  return crypto.getRandomValues(new Uint32Array(1))[0] / 2 ** 32;
}

/**
 * A waiter's ticket: its first attempt's wall-clock time in ms (16 digits) and 64 random bits (16 hex
 * digits). Fixed width and only `[0-9a-f]`, so every node orders tickets the same way as strings; the
 * random part breaks ties between waiters of the same millisecond.
 * @example
 * ```ts
 * const ticket = waiterTicket(Date.now()); // "0001732406400000" + "9f86d081884c7d65"
 * ```
 */
export function waiterTicket(epochMs: number): string {
  const ms = String(Math.max(0, Math.floor(epochMs)))
    .padStart(16, "0")
    .slice(-16);
  return ms + toHex(crypto.getRandomValues(new Uint8Array(8)));
}
