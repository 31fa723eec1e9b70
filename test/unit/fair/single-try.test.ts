// A single try (retryCount 0) never joins the line, fair or not: it sends the fair script with join "0", so it
// respects the line (refused where a live waiter is ahead, also on a free resource) but never enqueues; a failed one
// is undone with RELEASE (never REQUEUE); a granted one, as every lock, releases with LEAVE (resources and lines), and
// that release wakes the line.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock } from "../../../src/index.ts";
import { simCluster } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";
import { watchRequeues } from "../../sim/watch-requeue.ts";
import { LINE_OF_K, holdEverywhere, lineWaiters, simSetup } from "../../sim/sim-redlock.ts";

const Q = LINE_OF_K;

function watchedSetup(queue: string, isRequeue?: Parameters<typeof watchRequeues>[2]) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const { own, afterRequeue } = watchRequeues(nodes, queue, isRequeue);
  return { clock, nodes, redlock: new Redlock(own, { clock, nodeTimeout: 100 }), afterRequeue };
}

describe("fair acquire: a single try", () => {
  it('one try (retryCount 0) never enqueues, fair or not: both send the fair script with join "0"', async () => {
    const { clock, nodes, redlock } = simSetup();
    holdEverywhere(nodes, "k", 5_000);
    await expect(clock.run(redlock.acquire(["k"], 1_000, { retryCount: 0 }))).rejects.toBeInstanceOf(
      LockAcquisitionError,
    );
    await expect(clock.run(redlock.acquire(["k"], 1_000, { retryCount: 0, fair: false }))).rejects.toBeInstanceOf(
      LockAcquisitionError,
    );
    await clock.drain();
    expect(lineWaiters(nodes)).toEqual([0, 0, 0, 0, 0]);
    expect(nodes[0].requests.map((r) => r.script)).toEqual(["fair-acquire", "fair-acquire"]);
    // ARGV: value, ttl, n, ticket, life, join, age.
    expect(nodes[0].requests.map((r) => nodes[0].argsOf(r)?.[5])).toEqual(["0", "0"]);
  });

  it("a single try, fair or not, is refused where a live waiter is ahead, even on a free resource", async () => {
    const { clock, nodes, redlock } = simSetup();
    const holder = await clock.run(redlock.acquire(["k"], 5_000));
    const waiter = new Redlock(nodes, { clock, nodeTimeout: 100 }).acquire(["k"], 1_000, { maxWait: 10_000 });
    await clock.advance(20);
    expect(lineWaiters(nodes)).toEqual([1, 1, 1, 1, 1]);
    // The holder's key goes without a release (it expires): nobody is woken, the waiter still sleeps.
    for (const n of nodes) n.delete("k");
    for (const fair of [true, false]) {
      const once = await clock.run(redlock.acquire(["k"], 1_000, { retryCount: 0, fair }).catch((e: unknown) => e));
      expect(once, `fair: ${fair}`).toBeInstanceOf(LockAcquisitionError);
    }
    expect(lineWaiters(nodes), "the single tries did not join").toEqual([1, 1, 1, 1, 1]);
    // Refused by the line alone, the single try woke its head: the waiter claims at once.
    const lock = await clock.run(waiter);
    expect(clock.now()).toBeLessThan(60);
    await clock.run(lock.release());
    await clock.run(holder.release());
  });

  it("a single try that was granted releases with LEAVE, as a lock that could wait does", async () => {
    const { clock, nodes, redlock } = simSetup();
    const once = await clock.run(redlock.acquire(["k"], 1_000, { retryCount: 0 }));
    await clock.run(once.release());
    const waited = await clock.run(redlock.acquire(["k"], 1_000));
    await clock.run(waited.release());
    await clock.drain();
    for (const node of nodes) {
      const releases = node.requests.filter((r) => r.script !== "fair-acquire");
      expect(releases.map((r) => [r.script, r.keys])).toEqual([
        ["leave", ["k", Q]],
        ["leave", ["k", Q]],
      ]);
    }
    expect(nodes.map((n) => n.get("k"))).toEqual(Array(5).fill(undefined));
  });

  it("a single try's release wakes the line: a waiter is served at once, not at the holder's expiry", async () => {
    const { clock, nodes, redlock } = simSetup();
    const once = await clock.run(redlock.acquire(["k"], 10_000, { retryCount: 0 }));
    const waiting = new Redlock(nodes, { clock, nodeTimeout: 100 }).acquire(["k"], 1_000, { maxWait: 20_000 });
    await clock.advance(1_000); // the waiter listens, and sleeps until the holder's PTTL (about 9 s)
    expect(lineWaiters(nodes)).toEqual([1, 1, 1, 1, 1]);
    const releasedAt = clock.now();
    await clock.run(once.release());
    const lock = await clock.run(waiting);
    expect(clock.now() - releasedAt).toBeLessThan(20);
    await clock.run(lock.release());
    await clock.drain();
    expect(lineWaiters(nodes)).toEqual([0, 0, 0, 0, 0]);
  });

  it("a single try (no retries) never requeues: it undoes with RELEASE and never joins the line", async () => {
    const queue = "edge-redlock:rw:line:doc";
    const { clock, nodes, redlock, afterRequeue } = watchedSetup(queue);
    for (const n of nodes.slice(2)) n.set("edge-redlock:rw:writer:doc", "someone-else", 300);
    await expect(clock.run(redlock.readWriteLock("doc").acquireWrite(1_000, { retryCount: 0 }))).rejects.toThrow();
    await clock.drain();
    expect(afterRequeue.flat()).toEqual([]);
    expect(nodes.map((n) => n.liveWaiters(queue).length)).toEqual([0, 0, 0, 0, 0]);
    expect(nodes.slice(0, 2).map((n) => n.get("edge-redlock:rw:writer:doc"))).toEqual([undefined, undefined]);
  });
});
