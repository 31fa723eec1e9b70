// Waiting costs about a request per handover, for every kind of lock: a waiter behind a holder should ask about once per handover (woken over Pub/Sub, or
// at the holder's expiry), whatever it waits for. A semaphore's refusal carries no holder's PTTL the waiter may sleep
// on, and a read-write lock's line is shared by two kinds. Real redis-server behind the bridge, real @upstash/redis.
import { describe, expect, it } from "vitest";
import { useCluster } from "../fixture.ts";
import { client, countedNodes, sleep, tally } from "./helpers.ts";

const fixture = useCluster();

describe("a waiter behind a holder of 3 s asks about once per handover", () => {
  it("a mutex waiter (the reference)", async () => {
    const holder = await client(fixture.nodes).acquire("res", 3_000);
    const counted = countedNodes(fixture.nodes);
    const lock = await client(counted.nodes).acquire("res", 5_000, { maxWait: 5_000 });
    await lock.release();
    expect(counted.sent.length, tally(counted.sent)).toBeLessThanOrEqual(30);
    await holder.release().catch(() => undefined);
  });

  it("a semaphore waiter, first in line, while every permit is held", async () => {
    const holder = await client(fixture.nodes).semaphore("sem", 1).acquire(3_000);
    const counted = countedNodes(fixture.nodes);
    const permit = await client(counted.nodes).semaphore("sem", 1).acquire(5_000, { maxWait: 5_000 });
    await permit.release();
    expect(counted.sent.length, tally(counted.sent)).toBeLessThanOrEqual(30);
    await holder.release().catch(() => undefined);
  });

  it("a semaphore waiter second in line", async () => {
    const holder = await client(fixture.nodes).semaphore("sem", 1).acquire(3_000);
    const first = client(fixture.nodes).semaphore("sem", 1).acquire(1_000, { maxWait: 5_000 });
    await sleep(100);
    const counted = countedNodes(fixture.nodes);
    const began = Date.now();
    const permit = await client(counted.nodes).semaphore("sem", 1).acquire(5_000, { maxWait: 8_000 });
    const waited = Date.now() - began;
    await permit.release();
    await (await first).release().catch(() => undefined);
    expect(counted.sent.length, `${waited} ms: ${tally(counted.sent)}`).toBeLessThanOrEqual(40);
    await holder.release().catch(() => undefined);
  });

  it("a writer behind readers", async () => {
    const reader = await client(fixture.nodes).readWriteLock("doc").acquireRead(3_000);
    const counted = countedNodes(fixture.nodes);
    const writer = await client(counted.nodes).readWriteLock("doc").acquireWrite(5_000, { maxWait: 5_000 });
    await writer.release();
    expect(counted.sent.length, tally(counted.sent)).toBeLessThanOrEqual(30);
    await reader.release().catch(() => undefined);
  });

  it("a reader behind a writer", async () => {
    const writer = await client(fixture.nodes).readWriteLock("doc").acquireWrite(3_000);
    const counted = countedNodes(fixture.nodes);
    const reader = await client(counted.nodes).readWriteLock("doc").acquireRead(5_000, { maxWait: 5_000 });
    await reader.release();
    expect(counted.sent.length, tally(counted.sent)).toBeLessThanOrEqual(30);
    await writer.release().catch(() => undefined);
  });
});
