// Randomness from Web Crypto only: lock values and retry jitter.

/** Bytes in a lock value: 20 bytes = 160 bits, as the Redlock page asks. */
const VALUE_BYTES = 20;

/** Lock values drawn per call to `crypto.getRandomValues` by {@link pooledValue} (one call costs ~2 µs in Node). */
const VALUES_PER_BLOCK = 200;

/** Hex of every byte, so a value is 20 lookups instead of 20 `toString(16)` calls. */
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, "0"));

/**
 * A fresh lock value: 160 random bits from `crypto.getRandomValues`, as 40 hex characters, drawn on
 * its own. It is the proof of ownership of one attempt; it is never logged. The lock's own attempts use
 * {@link pooledValue}, which draws the same bits in blocks.
 * @example
 * ```ts
 * const value = randomValue(); // "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"
 * ```
 */
export function randomValue(): string {
  return toHex(crypto.getRandomValues(new Uint8Array(VALUE_BYTES)));
}

let block = new Uint8Array(0);
let used = 0;

/**
 * Where in `block` the next `count` bytes start: bytes no other caller got, from the current block or a
 * freshly drawn one. The caller reads them at once and zeroes them.
 */
function reserve(count: number): number {
  if (used + count > block.length) {
    block = crypto.getRandomValues(new Uint8Array(VALUE_BYTES * VALUES_PER_BLOCK));
    used = 0;
  }
  used += count;
  return used - count;
}

/**
 * A fresh lock value as {@link randomValue} makes it (160 bits from `crypto.getRandomValues`, 40 hex
 * characters), cut from a block of random bytes drawn at once. Every value has bytes of its own: none
 * is ever handed out twice, and a value says nothing about any other (the bytes are independent), so
 * values neither repeat nor can be predicted from one another. A taken value's bytes are zeroed in the
 * block; the values not yet handed out stay in memory until they are.
 * @example
 * ```ts
 * const value = pooledValue(); // "0c1f9a…" (40 hex characters)
 * ```
 */
export function pooledValue(): string {
  const at = reserve(VALUE_BYTES);
  let hex = "";
  for (let i = at; i < at + VALUE_BYTES; i++) hex += HEX[block[i]];
  block.fill(0, at, at + VALUE_BYTES);
  return hex;
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
  for (const byte of bytes) hex += HEX[byte];
  return hex;
}

/**
 * A uniform random number in [0, 1) from `crypto.getRandomValues` (32 bits, from the same blocks as
 * {@link pooledValue}).
 */
export function randomUnit(): number {
  const at = reserve(4);
  const unit = (block[at] * 2 ** 24 + block[at + 1] * 2 ** 16 + block[at + 2] * 2 ** 8 + block[at + 3]) / 2 ** 32;
  block.fill(0, at, at + 4);
  return unit;
}

/**
 * A waiter's ticket: its first attempt's wall-clock time in ms (16 digits) and 64 random bits (16 hex
 * digits, from the same blocks as {@link pooledValue}).
 * Fixed width and only `[0-9a-f]`, so every node orders tickets the same way as strings; the
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
  const at = reserve(8);
  let hex = ms;
  for (let i = at; i < at + 8; i++) hex += HEX[block[i]];
  block.fill(0, at, at + 8);
  return hex;
}
