// The WAN profile's delay source (dev/latency-spread.ts): seeded, bounded, and stalling about as often as asked.
import { describe, expect, it } from "vitest";
import { delays, parseSpread } from "../../../dev/latency-spread.ts";

const WAN = { jitter: 0.2, stallChance: 0.01, stallMs: 200 };
const draw = (seed: number, n: number, latencyMs = 80) => {
  const next = delays({ ...WAN, seed });
  return Array.from({ length: n }, () => next(latencyMs));
};

describe("the latency spread", () => {
  it("gives the same delays for the same seed and different ones for another seed", () => {
    expect(draw(7, 1_000)).toEqual(draw(7, 1_000));
    expect(draw(8, 1_000)).not.toEqual(draw(7, 1_000));
  });

  it("keeps each delay within ±jitter of the latency, plus the stall when one happens", () => {
    const samples = draw(3, 20_000);
    const plain = samples.filter((d) => d < 200);
    const stalled = samples.filter((d) => d >= 200);
    expect(Math.min(...plain)).toBeGreaterThanOrEqual(64);
    expect(Math.max(...plain)).toBeLessThanOrEqual(96);
    for (const d of stalled) {
      expect(d).toBeGreaterThanOrEqual(264);
      expect(d).toBeLessThanOrEqual(296);
    }
    // Both sides of the latency are reached (uniform jitter, not a one-sided one).
    expect(plain.some((d) => d < 68)).toBe(true);
    expect(plain.some((d) => d > 92)).toBe(true);
    // 1 % of 20 000 = 200 expected; a fair PRNG stays well inside 120..280.
    expect(stalled.length).toBeGreaterThan(120);
    expect(stalled.length).toBeLessThan(280);
  });

  it("leaves the latency exactly as it is without a spread", () => {
    const next = delays(null);
    expect([next(0), next(5), next(250)]).toEqual([0, 5, 250]);
  });

  it("accepts a spread from the admin API and refuses nonsense", () => {
    expect(parseSpread({ jitter: 0.2, stallChance: 0.01, stallMs: 200, seed: 4 })).toEqual({
      jitter: 0.2,
      stallChance: 0.01,
      stallMs: 200,
      seed: 4,
    });
    expect(parseSpread(null)).toBeNull();
    expect(() => parseSpread({ jitter: 2 })).toThrow(/jitter/);
    expect(() => parseSpread({ stallChance: -1 })).toThrow(/stallChance/);
    expect(() => parseSpread({ seed: 1.5 })).toThrow(/seed/);
  });
});
