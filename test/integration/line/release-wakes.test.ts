// A release wakes the waiters of every kind of lock: a waiter behind a holder that releases early (10 s ttl, released after 1 s, once the
// waiter listens and sleeps on the holder's time) must be served at once, not at the holder's expiry — for the mutex,
// a semaphore permit, a writer behind a reader, a reader behind a writer, a multi-resource lock waiting on its second
// resource. Real redis-server behind the bridge.
import { describe, expect, it } from "vitest";
import type { Lock } from "../../../src/index.ts";
import { useCluster } from "../fixture.ts";
import { client, sleep } from "./helpers.ts";

const fixture = useCluster();

async function servedAfterRelease(hold: () => Promise<Lock>, wait: () => Promise<Lock>): Promise<number> {
  const holder = await hold();
  const waiting = wait();
  await sleep(1_000);
  const released = Date.now();
  await holder.release();
  const lock = await waiting;
  const after = Date.now() - released;
  await lock.release();
  return after;
}

describe("an early release wakes the waiter", () => {
  const redlock = () => client(fixture.nodes);
  it("mutex", async () => {
    const after = await servedAfterRelease(
      () => redlock().acquire("res", 10_000),
      () => redlock().acquire("res", 5_000, { maxWait: 8_000 }),
    );
    expect(after).toBeLessThan(1_000);
  });

  it("semaphore", async () => {
    const after = await servedAfterRelease(
      () => redlock().semaphore("sem", 1).acquire(10_000),
      () => redlock().semaphore("sem", 1).acquire(5_000, { maxWait: 8_000 }),
    );
    expect(after).toBeLessThan(1_000);
  });

  it("writer behind a reader", async () => {
    const after = await servedAfterRelease(
      () => redlock().readWriteLock("doc").acquireRead(10_000),
      () => redlock().readWriteLock("doc").acquireWrite(5_000, { maxWait: 8_000 }),
    );
    expect(after).toBeLessThan(1_000);
  });

  it("reader behind a writer", async () => {
    const after = await servedAfterRelease(
      () => redlock().readWriteLock("doc").acquireWrite(10_000),
      () => redlock().readWriteLock("doc").acquireRead(5_000, { maxWait: 8_000 }),
    );
    expect(after).toBeLessThan(1_000);
  });

  it("a two-resource lock waiting on its second resource (documented: the fallback, the holder's time)", async () => {
    const after = await servedAfterRelease(
      () => redlock().acquire("b", 3_000),
      () => redlock().acquire(["a", "b"], 5_000, { maxWait: 8_000 }),
    );
    expect(after).toBeLessThan(2_000 + 500);
  });
});
