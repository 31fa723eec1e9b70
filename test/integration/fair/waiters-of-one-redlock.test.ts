// Waiters of one Redlock on the same lock wait on the nodes one at a time and are served in call order; a release by
// that Redlock wakes its first waiter in process, so a lost wakeup does not leave it to its fallback, and wakes no one
// further back. Real redis-server behind the bridge, real @upstash/redis.
import { describe, expect, it } from "vitest";
import { Redlock } from "../../../src/index.ts";
import { settle, useCluster } from "../fixture.ts";

const fixture = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const redlock = () => new Redlock(fixture.nodes, { warnings: false });
const subscriptions = () => fixture.sent.flat().filter((name) => name === "subscribe").length;

describe("waiters of one Redlock", () => {
  it("wait on the nodes one at a time and are served in call order", async () => {
    const holder = await redlock().acquire("res", 10_000);
    await settle(fixture);
    const attempts = () => fixture.sent.flat().filter((name) => name === "fair-acquire").length;
    const before = attempts();
    const shared = redlock();
    const served: number[] = [];
    const waiters = [1, 2, 3].map(async (n) => {
      await sleep(n * 20);
      const lock = await shared.acquire("res", 10_000, { maxWait: 8_000 });
      served.push(n);
      await sleep(50);
      await lock.release();
    });
    await sleep(600);
    // Only the first joined the nodes' line and listens (two streams); the others wait in process.
    expect(subscriptions()).toBe(2);
    // Its joining attempt, and at most one more once its first stream confirmed; three waiters would send three joins.
    expect(attempts() - before).toBeLessThanOrEqual(10);
    await holder.release();
    await Promise.all(waiters);
    expect(served).toEqual([1, 2, 3]);
  });

  it.each([
    ["the same resource", ["res"]],
    ["more resources", ["res", "other"]],
  ])("are woken by that Redlock's release of a lock on %s even when every wakeup is lost", async (_, held) => {
    await Promise.all(fixture.admins.map((a) => a.faults({ dropMessages: 100 })));
    const shared = redlock();
    const holder = await shared.acquire(held, 10_000);
    const waiting = shared.acquire("res", 10_000, { maxWait: 8_000 });
    await sleep(300);
    const released = Date.now();
    await holder.release();
    const lock = await waiting;
    // Without the in-process wakeup it would ask at its maxWait (8 s) and fail: the holder's time is 10 s.
    expect(Date.now() - released).toBeLessThan(1_000);
    await lock.release();
  });

  it("behind that Redlock's own holder send one join, two streams and the granting attempt", async () => {
    const shared = redlock();
    const holder = await shared.acquire("res", 10_000);
    await settle(fixture);
    const before = fixture.sent.flat().length;
    const waiting = shared.acquire("res", 10_000, { maxWait: 8_000 });
    // Its streams confirm within a few ms; released before it would ask again on its own (100 ms at the earliest).
    await sleep(60);
    await holder.release();
    const lock = await waiting;
    await settle(fixture);
    // The holder's release (5) is not the waiter's. Its streams confirming does not send it asking: the release of a
    // lock of the same Redlock wakes it in process.
    expect(fixture.sent.flat().length - before - 5).toBe(12);
    await lock.release();
  });

  it("are not all sent asking by that Redlock's release: only the first in line is", async () => {
    // Behind another client's holder for 1.5 s, ten waiters have all joined the nodes' line (a turn lasts 1 s at
    // most). A release that woke each of them would cost each a round per release, past its maxRequests.
    const holder = await redlock().acquire("res", 20_000);
    const shared = redlock();
    const outcomes = Array.from({ length: 10 }, () =>
      shared.acquire("res", 2_000, { maxWait: 15_000, maxRequests: 60 }).then(
        async (lock) => {
          await lock.release();
          return "served";
        },
        (error: unknown) => String(error),
      ),
    );
    await sleep(1_500);
    await holder.release();
    expect(await Promise.all(outcomes)).toEqual(Array(10).fill("served"));
  });
});
