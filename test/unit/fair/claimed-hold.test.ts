// A waiter that arrives while the resource is free but others are ahead of it in line is refused by the line alone.
// Its fallback is the head's claim window: if the head never claims, it asks then. When the head does claim, the
// grant's wakeup says for how long at most the resource is taken (`+<ttl>`), and a waiter behind the first two sleeps
// until then or until a release wakes it: it sends no attempt that could only meet the new holder. (The next in line
// keeps its fallback: it is the one that skips a claimer that died, whose claim may have landed on one node only.) Under steady contention this is
// every client that asks again right after its own release. Simulated nodes with Pub/Sub, virtual clock.
import { describe, expect, it } from "vitest";
import { Redlock, type RedlockNode } from "../../../src/index.ts";
import { readWakeup } from "../../../src/lock/waker.ts";
import { simSetup } from "../../sim/sim-redlock.ts";

describe("a wakeup that says someone claimed, and for how long", () => {
  it("carries the grant's ttl; a wakeup without one still means held", () => {
    expect(readWakeup("0 B00200 +2000", "C00200")).toEqual({ held: true, holdMs: 2_000 });
    expect(readWakeup("0 B00200", "C00200")).toEqual({ held: true });
    expect(readWakeup("0 B00200 +x", "C00200")).toEqual({ held: true });
  });

  it("reads only the decimal counts the scripts write", () => {
    for (const first of ["", "0x0", "-0", "1e0", " 0", "+0", "0.0"])
      expect(readWakeup(`${first} B00200`, "C00200"), JSON.stringify(first)).toBeUndefined();
    expect(readWakeup("0 B00200 +0x10", "C00200")).toEqual({ held: true });
    expect(readWakeup("0 B00200 +-5", "C00200")).toEqual({ held: true });
    expect(readWakeup("1 C00200", "C00200")).toEqual({ claim: true });
  });

  it("keeps a waiter refused by the line alone, third in line, from asking until a release names it", async () => {
    const { clock, nodes, redlock } = simSetup();
    for (const n of nodes) n.latency = 2;
    // The head reaches the nodes 20 ms late, so the one that comes after it listens before the head claims.
    const slow: RedlockNode[] = nodes.map((n) => ({
      label: n.label,
      run: async (script, keys, args, signal) => {
        await clock.sleep(20);
        return n.run(script, keys, args, signal);
      },
      subscribe: (channel, onMessage, signal) => n.subscribe(channel, onMessage, signal),
    }));
    const holder = await clock.run(redlock.acquire(["k"], 1_000));
    const slowly = () => new Redlock(slow, { clock, nodeTimeout: 100 }).acquire(["k"], 1_000, { maxWait: 5_000 });
    const head = slowly();
    await clock.advance(50);
    const next = slowly();
    await clock.advance(100);
    // Another asks as the holder releases: the key is free, the head has not claimed yet; it is third in line.
    const released = holder.release();
    const late = redlock.acquire(["k"], 1_000, { maxWait: 5_000 });
    await clock.run(released);
    // Each holds 300 ms (well past a claim window), then releases: the next in line is woken and claims.
    for (const turn of [head, next]) {
      const lock = await clock.run(turn);
      await clock.advance(300);
      await clock.run(lock.release());
    }
    const releasedAt = clock.now();
    const third = await clock.run(late);
    expect(clock.now() - releasedAt).toBeLessThan(50);
    // Refused once, granted when woken: no attempt after a claim window.
    expect(third.attempts).toBe(2);
    await clock.run(third.release());
  });
});
