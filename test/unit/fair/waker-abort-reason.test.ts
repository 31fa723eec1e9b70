// A waiting acquisition rejects with its caller's own abort reason, also when a wakeup that names it lands in the same
// task as the caller's abort: the waker's own reason for ending a sleep never reaches the caller.
import { describe, expect, it } from "vitest";
import { Waker } from "../../../src/lock/waker.ts";
import type { RedlockNode } from "../../../src/node/node.ts";
import { systemClock } from "../../../src/support/clock.ts";

describe("a woken sleep's rejection", () => {
  it("is the caller's reason when a wakeup and the caller's abort come in one task", async () => {
    let hear: ((payload: string) => void) | undefined;
    const node: RedlockNode = {
      label: "fake",
      run: () => Promise.reject(new Error("not asked")),
      subscribe: async (_channel, onMessage) => {
        hear = onMessage;
        return { closed: new Promise<void>(() => {}) };
      },
    };
    const caller = new AbortController();
    const waker = new Waker({
      nodes: [node],
      clock: systemClock,
      lineKey: "edge-redlock:line:k",
      ticket: () => "T",
      confirmWithin: 1_000,
      signal: caller.signal,
    });
    waker.listen([{ node: 0, outcome: "denied", position: 1 }], () => true, { position: 1 });
    await new Promise((resolve) => setTimeout(resolve, 10)); // the stream confirms
    expect(hear).toBeDefined();
    const sleeping = waker.sleep(5_000);
    await new Promise((resolve) => setTimeout(resolve, 10)); // the sleep has begun
    hear?.("1 T"); // names it: its sleep ends with the waker's own reason…
    const mine = new Error("the caller's own reason");
    caller.abort(mine); // …and in the same task the caller gives up
    await expect(sleeping).rejects.toBe(mine);
    waker.close();
  });
});
