import { describe, expect, it } from "vitest";
import { nextFault, prng } from "../../chaos/faults.ts";

const plan = (seed: number, unsafeRestart: boolean, count = 2_000) => {
  const random = prng(seed);
  return Array.from({ length: count }, () => nextFault(random, { ttl: 1_000, nodes: 5, clients: 16, unsafeRestart }));
};

describe("chaos fault scheduler", () => {
  it("is reproducible from its seed", () => {
    expect(plan(42, false, 200)).toEqual(plan(42, false, 200));
    expect(plan(42, false, 200)).not.toEqual(plan(43, false, 200));
  });

  it("crashes one or two distinct nodes, restarting after more than the ttl unless unsafe", () => {
    for (const unsafe of [false, true]) {
      const crashes = plan(7, unsafe).filter((f) => f.kind === "kill-restart");
      const doubles = crashes.filter((f) => f.also !== undefined);
      expect(doubles.length).toBeGreaterThan(crashes.length * 0.3);
      expect(doubles.length).toBeLessThan(crashes.length * 0.5);
      for (const f of crashes) {
        expect(f.target).toBeGreaterThanOrEqual(0);
        expect(f.target).toBeLessThan(5);
        if (f.also !== undefined) {
          expect(f.also).not.toBe(f.target);
          expect(f.also).toBeGreaterThanOrEqual(0);
          expect(f.also).toBeLessThan(5);
        }
        if (unsafe) expect(f.duration).toBe(0);
        else expect(f.duration).toBeGreaterThan(1_000);
      }
    }
  });
});
