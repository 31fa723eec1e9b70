// A failed attempt of a fair semaphore waiter or a fair writer keeps its place in line (on the simulator): where
// the attempt was granted, the grant took the ticket out of line, and the undoing (REQUEUE) puts it back there.
// Without it the next contender was served first on those nodes. A reader's undo is its read release with a lease.
import { describe, expect, it } from "vitest";
import { Redlock } from "../../src/index.ts";
import { simCluster } from "../sim/sim-node.ts";
import { VirtualClock } from "../sim/virtual-clock.ts";
import { watchRequeues } from "../sim/watch-requeue.ts";

function setup(queue: string, isRequeue?: Parameters<typeof watchRequeues>[2]) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const { own, afterRequeue } = watchRequeues(nodes, queue, isRequeue);
  return { clock, nodes, redlock: new Redlock(own, { clock, nodeTimeout: 100 }), afterRequeue };
}

describe("fair waiting: a failed attempt's undoing keeps the waiter's place", () => {
  it("a semaphore waiter: where its try was granted, REQUEUE puts its ticket back in the semaphore's line", async () => {
    const queue = "edge-redlock:semaphore-queue:jobs";
    const { clock, nodes, redlock, afterRequeue } = setup(queue);
    // Limit 1: nodes 0 and 1 have the slot free and grant it, 2-4 refuse; the holder there lets go at 300 ms.
    for (const n of nodes.slice(2)) n.set("edge-redlock:semaphore:jobs:0", "someone-else", 300);
    const permit = await clock.run(redlock.semaphore("jobs", 1).acquire(1_000, { maxWait: 2_000 }));
    expect(permit.attempts).toBeGreaterThan(1);
    expect(afterRequeue[0].length).toBeGreaterThan(0);
    expect([...afterRequeue[0], ...afterRequeue[1]].every((n) => n === 1)).toBe(true);
    expect(afterRequeue.slice(2).flat()).toEqual([]); // refused there: nothing was set, nothing to undo
    await clock.run(permit.release());
    await clock.drain();
    expect(nodes.map((n) => n.liveWaiters(queue).length)).toEqual([0, 0, 0, 0, 0]);
  });

  it("a writer: where its attempt was granted, REQUEUE puts its ticket back in the read-write lock's line", async () => {
    const queue = "edge-redlock:rw:queue:doc";
    const { clock, nodes, redlock, afterRequeue } = setup(queue);
    for (const n of nodes.slice(2)) n.set("edge-redlock:rw:writer:doc", "someone-else", 300);
    const lock = await clock.run(redlock.readWriteLock("doc").acquireWrite(1_000, { maxWait: 2_000 }));
    expect(lock.attempts).toBeGreaterThan(1);
    expect(afterRequeue[0].length).toBeGreaterThan(0);
    expect([...afterRequeue[0], ...afterRequeue[1]].every((n) => n === 1)).toBe(true);
    expect(afterRequeue.slice(2).flat()).toEqual([]);
    // The writer key was deleted by each REQUEUE exactly where the failed attempt had set it: the holder is alone.
    await clock.drain(); // the replies still out when the quorum decided have landed
    for (const n of nodes) expect(n.get("edge-redlock:rw:writer:doc")).toBe(lock.value);
    await clock.run(lock.release());
    await clock.drain();
    expect(nodes.map((n) => n.liveWaiters(queue).length)).toEqual([0, 0, 0, 0, 0]);
  });

  it("a reader: where its attempt was granted, its undo (a read release with a lease) puts its ticket back in line", async () => {
    const queue = "edge-redlock:rw:queue:doc";
    const readers = "edge-redlock:rw:readers:doc";
    const requeues = (script: string, args: readonly string[]) => script === "rw-read-release" && args.length === 3;
    const { clock, nodes, redlock, afterRequeue } = setup(queue, requeues);
    for (const n of nodes.slice(2)) n.set("edge-redlock:rw:writer:doc", "someone-else", 300);
    const lock = await clock.run(redlock.readWriteLock("doc").acquireRead(1_000, { maxWait: 2_000 }));
    expect(lock.attempts).toBeGreaterThan(1);
    expect(afterRequeue[0].length).toBeGreaterThan(0);
    expect([...afterRequeue[0], ...afterRequeue[1]].every((n) => n === 1)).toBe(true);
    expect(afterRequeue.slice(2).flat()).toEqual([]);
    await clock.drain();
    // Each undo took its own reader out: the holder is the one reader on every node.
    for (const n of nodes) expect([...n.readers(readers).keys()]).toEqual([lock.value]);
    await clock.run(lock.release());
    await clock.drain();
    expect(nodes.map((n) => n.liveWaiters(queue).length)).toEqual([0, 0, 0, 0, 0]);
  });

  it("a single try (no retries) never requeues: it undoes with RELEASE and never joins the line", async () => {
    const queue = "edge-redlock:rw:queue:doc";
    const { clock, nodes, redlock, afterRequeue } = setup(queue);
    for (const n of nodes.slice(2)) n.set("edge-redlock:rw:writer:doc", "someone-else", 300);
    await expect(clock.run(redlock.readWriteLock("doc").acquireWrite(1_000, { retryCount: 0 }))).rejects.toThrow();
    await clock.drain();
    expect(afterRequeue.flat()).toEqual([]);
    expect(nodes.map((n) => n.liveWaiters(queue).length)).toEqual([0, 0, 0, 0, 0]);
    expect(nodes.slice(0, 2).map((n) => n.get("edge-redlock:rw:writer:doc"))).toEqual([undefined, undefined]);
  });
});
