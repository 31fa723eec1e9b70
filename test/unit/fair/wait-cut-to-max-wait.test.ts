// A wait cut to end at maxWait is not taken for one that ends past it: the sum elapsed + (maxWait − elapsed) may
// round above maxWait in floating point, and a waiter then gave up instead of sleeping until maxWait.
import { describe, expect, it } from "vitest";
import { waitsPast } from "../../../src/lock/wait.ts";

describe("a wait cut to end at maxWait", () => {
  it("does not end past maxWait, even where the sum rounds above it", () => {
    const [maxWait, elapsed] = [3037.397738, 556.431515];
    const cut = maxWait - elapsed;
    expect(elapsed + cut > maxWait).toBe(true); // the rounding the old check fell for
    expect(waitsPast(maxWait, elapsed, cut)).toBe(false);
  });

  it("ends past maxWait when it is longer, and not when shorter", () => {
    expect(waitsPast(3_000, 1_000, 2_000.001)).toBe(true);
    expect(waitsPast(3_000, 1_000, 1_999)).toBe(false);
  });
});
