// A fair waiter's failed attempt keeps its place in line: where the attempt was granted, the grant took its ticket
// out of line, and the undo puts it back there (REQUEUE for a mutex waiter, a semaphore waiter or a writer; a read
// release with an entry life for a reader), so the next contender is not served first on those nodes. Where the attempt
// was refused nothing was set and nothing is undone. A waiter that can never reach a quorum keeps nobody out: judged on
// the round's failures (also when a refusal decided the round early), its grants are undone with RELEASE.
import { describe, expect, it } from "vitest";
import { Redlock, type RedlockNode } from "../../../src/index.ts";
import { simCluster, type SimNode } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";
import { watchRequeues } from "../../sim/watch-requeue.ts";
import { LINE_OF_K, lineWaiters, simSetup } from "../../sim/sim-redlock.ts";

const Q = LINE_OF_K;

function watchedSetup(queue: string, isRequeue?: Parameters<typeof watchRequeues>[2]) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const { own, afterRequeue } = watchRequeues(nodes, queue, isRequeue);
  return { clock, nodes, redlock: new Redlock(own, { clock, nodeTimeout: 100 }), afterRequeue };
}

describe("fair acquire: a failed attempt keeps the waiter's place", () => {
  it("where the attempt was granted, its undoing puts the ticket back in line (a grant took it out)", async () => {
    const { clock, nodes } = simSetup();
    for (const n of nodes.slice(2)) n.set("k", "someone-else", 300); // nodes 0 and 1 free: they grant, 2–4 refuse
    const { own, afterRequeue } = watchRequeues(nodes, Q);
    const lock = await clock.run(
      new Redlock(own, { clock, nodeTimeout: 100 }).acquire(["k"], 1_000, { maxWait: 2_000 }),
    );
    expect(lock.attempts).toBeGreaterThan(1);
    // Each failed attempt was granted on nodes 0 and 1: the REQUEUE that undid it left the ticket in line there.
    expect(afterRequeue[0].length).toBeGreaterThan(0);
    expect([...afterRequeue[0], ...afterRequeue[1]].every((n) => n === 1)).toBe(true);
    expect(afterRequeue.slice(2).flat()).toEqual([]); // where it was refused it was never granted: nothing to undo
    await clock.run(lock.release());
    await clock.drain();
    expect(lineWaiters(nodes)).toEqual([0, 0, 0, 0, 0]);
  });
});

describe("fair waiting: a failed attempt's undoing keeps the waiter's place", () => {
  it("a semaphore waiter: where its try was granted, REQUEUE puts its ticket back in the semaphore's line", async () => {
    const queue = "edge-redlock:semaphore-line:jobs";
    const { clock, nodes, redlock, afterRequeue } = watchedSetup(queue);
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
    const queue = "edge-redlock:rw:line:doc";
    const { clock, nodes, redlock, afterRequeue } = watchedSetup(queue);
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

  it("a reader: where its attempt was granted, its undo (a read release with an entry life) puts its ticket back in line", async () => {
    const queue = "edge-redlock:rw:line:doc";
    const readers = "edge-redlock:rw:readers:doc";
    const requeues = (script: string, args: readonly string[]) => script === "rw-read-release" && args.length === 3;
    const { clock, nodes, redlock, afterRequeue } = watchedSetup(queue, requeues);
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
});

/** `nodes` as one client that reaches only `reach`: its packets to the others are dropped (no answer, the request is cut at nodeTimeout). */
function cutTo(nodes: SimNode[], reach: number[]): RedlockNode[] {
  return nodes.map((sim, i) => ({
    label: sim.label,
    run: (script, keys, args, signal) =>
      reach.includes(i)
        ? sim.run(script, keys, args, signal)
        : new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason), { once: true })),
  }));
}

describe("a waiter that can never reach a quorum is undone with RELEASE, also when a refusal decided its round early", () => {
  it("a waiter that reaches only nodes 0 and 1 keeps nobody out, also while node 1 still has a stale key", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    nodes[4].mode = "down"; // down for everyone: the others reach 0..3, a quorum of live nodes
    // A holder's release was lost on node 1 only: its key lingers there for 3 s. Nodes 0, 2, 3 are free.
    nodes[1].set("k", "stale-holder", 3_000);
    const stop = new AbortController();
    // The early waiter reaches only nodes 0 and 1: it can never win.
    const early = new Redlock(cutTo(nodes, [0, 1]), { clock, nodeTimeout: 100 })
      .acquire(["k"], 1_000, { retryCount: -1, signal: stop.signal })
      .then(
        () => "held",
        () => "gave up",
      );
    await clock.advance(20);
    // Everyone else reaches 0..3 and needs 0, 2 and 3 while node 1 has the stale key.
    const began = clock.now();
    const other = new Redlock(nodes, { clock, nodeTimeout: 100 }).acquire(["k"], 1_000, { maxWait: 2_500 }).then(
      (lock) => ({ held: true, waited: clock.now() - began, lock }),
      () => ({ held: false, waited: clock.now() - began, lock: undefined }),
    );
    const result = await clock.run(other);
    stop.abort();
    expect(await clock.run(early)).toBe("gave up");
    const requeues = nodes[0].requests.filter((r) => r.script === "requeue").length;
    // Every one of the early waiter's rounds was granted on 0, refused on 1, and decided with 2 errors ("in reach").
    expect({ held: result.held, waitedUnder1s: result.waited < 1_000, requeuesOnNode0: requeues }).toEqual({
      held: true,
      waitedUnder1s: true,
      requeuesOnNode0: 0,
    });
  });
});
