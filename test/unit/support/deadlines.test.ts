// Deadlines made in one synchronous run share one timer, yet each aborts on its own with a TimeoutError; a cleared
// deadline never aborts; a deadline made after a microtask, or with another length, gets a timer of its own; clearing
// every deadline of a group stops its timer.
import { afterEach, describe, expect, it, vi } from "vitest";
import { systemClock } from "../../../src/support/clock.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

afterEach(() => {
  vi.restoreAllMocks();
  vi.unstubAllGlobals();
});

describe("deadlines: one timer per synchronous run, an abort per deadline", () => {
  it("deadlines made together share one setTimeout; each aborts with a TimeoutError; a cleared one never aborts", async () => {
    const timers = vi.spyOn(globalThis, "setTimeout");
    const deadlines = Array.from({ length: 5 }, () => systemClock.timeout(30));
    expect(timers).toHaveBeenCalledTimes(1);
    deadlines[2].clear();
    await sleep(60);
    deadlines.forEach((d, i) => {
      expect(d.signal.aborted, `deadline ${i}`).toBe(i !== 2);
    });
    expect((deadlines[0].signal.reason as DOMException).name).toBe("TimeoutError");
  });

  it("a deadline made after a microtask, or with another length, gets a timer of its own", async () => {
    const timers = vi.spyOn(globalThis, "setTimeout");
    const first = systemClock.timeout(1_000);
    const other = systemClock.timeout(2_000);
    await Promise.resolve();
    const later = systemClock.timeout(1_000);
    expect(timers).toHaveBeenCalledTimes(3);
    for (const d of [first, other, later]) d.clear();
  });

  it("clearing every deadline of a group stops its timer", () => {
    const stops = vi.spyOn(globalThis, "clearTimeout");
    const deadlines = Array.from({ length: 3 }, () => systemClock.timeout(1_000));
    deadlines[0].clear();
    deadlines[1].clear();
    expect(stops).not.toHaveBeenCalled();
    deadlines[2].clear();
    deadlines[2].clear(); // twice is harmless
    expect(stops).toHaveBeenCalledTimes(1);
  });
});
