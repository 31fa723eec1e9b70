// Lock values are 160 random bits from Web Crypto, as 40 hex characters, and never repeat: drawn one at a time
// (randomValue) or in blocks (pooledValue: one getRandomValues call per 200 values, every value 20 fresh bytes);
// randomUnit stays in [0, 1), drawn from the same blocks; src/ uses crypto.getRandomValues only, never Math.random.
import { afterEach, describe, expect, it, vi } from "vitest";
import { pooledValue, randomUnit, randomValue } from "../../../src/support/random.ts";

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
});

describe("random values drawn in blocks", () => {
  it("never repeat, are 160 bits of hex, and cost one getRandomValues call per 200 values", () => {
    const draws = vi.spyOn(crypto, "getRandomValues");
    const values = Array.from({ length: 10_000 }, pooledValue);
    expect(new Set(values).size).toBe(10_000);
    for (const value of values) expect(value).toMatch(/^[0-9a-f]{40}$/);
    expect(draws.mock.calls.length).toBeGreaterThanOrEqual(50);
    expect(draws.mock.calls.length).toBeLessThanOrEqual(51);
  });

  it("give no two values a byte in common position by construction: every value is 20 fresh bytes", () => {
    // Where a block is shared, values that reused bytes would repeat pairs of hex digits in lockstep.
    const values = Array.from({ length: 2_000 }, pooledValue);
    const collisions = values.slice(1).filter((v, i) => v.slice(0, 16) === values[i].slice(0, 16)).length;
    expect(collisions).toBe(0);
  });

  it("randomUnit stays in [0, 1) and is drawn from the same blocks", () => {
    const units = Array.from({ length: 5_000 }, randomUnit);
    for (const u of units) expect(u >= 0 && u < 1).toBe(true);
    expect(new Set(units).size).toBeGreaterThan(4_990);
  });
});

describe("random values drawn one at a time", () => {
  it("makes lock values of 160 random bits, different every time", () => {
    const values = new Set(Array.from({ length: 1_000 }, randomValue));
    expect(values.size).toBe(1_000);
    for (const value of values) expect(value).toMatch(/^[0-9a-f]{40}$/);
  });
});

describe("randomness in src/", () => {
  it("uses only crypto.getRandomValues: no Math.random anywhere, 20-byte values", async () => {
    const { readdirSync, readFileSync } = await import("node:fs");
    const files = (readdirSync("src", { recursive: true }) as string[]).filter((f) => f.endsWith(".ts"));
    expect(files.length).toBeGreaterThan(5);
    for (const file of files) expect(readFileSync(`src/${file}`, "utf8"), file).not.toMatch(/Math\.random/);
    const token = readFileSync("src/support/random.ts", "utf8");
    expect(token).toMatch(/VALUE_BYTES = 20/);
    expect(token).toMatch(/crypto\.getRandomValues\(new Uint8Array\(VALUE_BYTES\)\)/);
  });
});
