// A small seeded PRNG, so fault plans and latency draws repeat from their seed.

/**
 * Mulberry32: uniform numbers in [0, 1) from a 32-bit seed.
 * @example
 * const random = prng(7);
 * random(); // the same first number for seed 7, every run
 */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
