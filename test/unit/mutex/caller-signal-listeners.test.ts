// A long wait leaves nothing on the caller's signal: each attempt's listeners (the round, the sleep between
// attempts, the waker's wait) are removed when it ends, so they never pile up (Node warns at 11) across attempts.
import { getEventListeners } from "node:events";
import { afterEach, expect, it } from "vitest";
import { LockAcquisitionError, Redlock } from "../../../src/index.ts";
import { memoryNodes } from "../../../src/testing/memory.ts";

const warnings: Error[] = [];
const onWarning = (warning: Error) => void warnings.push(warning);
afterEach(() => {
  process.off("warning", onWarning);
  warnings.length = 0;
});

// A fair waiter whose nodes cannot subscribe sleeps through its waker between attempts, every retryDelay ± retryJitter;
// a woken one with streams alive would sleep once, on the holder's time.
it.each([
  ["waiting in line (the waker's sleep, nodes that cannot subscribe)", { retryCount: -1 }, false],
  ["retrying at random", { fair: false }, true],
])(
  "the caller's signal holds at most a few abort listeners through 40 attempts, and none after: %s",
  async (_, extra, subscribe) => {
    process.on("warning", onWarning);
    const memory = memoryNodes(5);
    const nodes = subscribe ? memory : memory.map((n) => ({ label: n.label, run: n.run.bind(n) }));
    const redlock = new Redlock(nodes, { retryCount: 40, retryDelay: 2, retryJitter: 1, warnings: false, ...extra });
    const held = await redlock.acquire(["listeners:k"], 60_000);
    const caller = new AbortController();
    let most = 0;
    const sample = setInterval(() => {
      most = Math.max(most, getEventListeners(caller.signal, "abort").length);
    }, 1);
    try {
      const error = await redlock
        .acquire(["listeners:k"], 5_000, { signal: caller.signal, ...(subscribe ? {} : { maxWait: 1_000 }) })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockAcquisitionError);
      expect((error as LockAcquisitionError).attempts.length).toBeGreaterThanOrEqual(20);
    } finally {
      clearInterval(sample);
      await held.release();
    }
    expect(most).toBeLessThanOrEqual(3);
    expect(getEventListeners(caller.signal, "abort")).toHaveLength(0);
    expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
  },
);
