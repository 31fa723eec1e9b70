// A single try (retryCount 0) never joins the line: it never enqueues, a granted one is released with the classic
// RELEASE and a failed one is undone with RELEASE (never REQUEUE); a lock that could wait leaves its queues with LEAVE;
// fair: false sends the classic acquire script.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type RedlockOptions } from "../../../src/index.ts";
import { simCluster, type SimNode } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";
import { watchRequeues } from "../../sim/watch-requeue.ts";

const Q = "edge-redlock:queue:k";

function setup(options: RedlockOptions = {}) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const redlock = new Redlock(nodes, { clock, nodeTimeout: 100, ...options });
  return { clock, nodes, redlock };
}

const waiters = (nodes: SimNode[], queue = Q) => nodes.map((n) => n.liveWaiters(queue).length);
const hold = (nodes: SimNode[], key: string, ttl: number) => {
  for (const n of nodes) n.set(key, "someone-else", ttl);
};

function watchedSetup(queue: string, isRequeue?: Parameters<typeof watchRequeues>[2]) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const { own, afterRequeue } = watchRequeues(nodes, queue, isRequeue);
  return { clock, nodes, redlock: new Redlock(own, { clock, nodeTimeout: 100 }), afterRequeue };
}

describe("fair acquire: a single try", () => {
  it("one try (retryCount 0) never enqueues, and fair: false sends the classic script", async () => {
    const { clock, nodes, redlock } = setup();
    hold(nodes, "k", 5_000);
    await expect(clock.run(redlock.acquire(["k"], 1_000, { retryCount: 0 }))).rejects.toBeInstanceOf(
      LockAcquisitionError,
    );
    await expect(clock.run(redlock.acquire(["k"], 1_000, { retryCount: 0, fair: false }))).rejects.toBeInstanceOf(
      LockAcquisitionError,
    );
    await clock.drain();
    expect(waiters(nodes)).toEqual([0, 0, 0, 0, 0]);
    expect(nodes[0].requests.map((r) => r.script)).toEqual(["fair-acquire", "acquire"]);
  });

  it("a single try that was granted releases with the classic script; a lock that could wait leaves its queues", async () => {
    const { clock, nodes, redlock } = setup();
    const once = await clock.run(redlock.acquire(["k"], 1_000, { retryCount: 0 }));
    await clock.run(once.release());
    const waited = await clock.run(redlock.acquire(["k"], 1_000));
    await clock.run(waited.release());
    await clock.drain();
    for (const node of nodes) {
      const releases = node.requests.filter((r) => r.script !== "fair-acquire");
      expect(releases.map((r) => [r.script, r.keys])).toEqual([
        ["release", ["k"]],
        ["leave", ["k", Q]],
      ]);
    }
    expect(nodes.map((n) => n.get("k"))).toEqual(Array(5).fill(undefined));
  });

  it("a single try (no retries) never requeues: it undoes with RELEASE and never joins the line", async () => {
    const queue = "edge-redlock:rw:queue:doc";
    const { clock, nodes, redlock, afterRequeue } = watchedSetup(queue);
    for (const n of nodes.slice(2)) n.set("edge-redlock:rw:writer:doc", "someone-else", 300);
    await expect(clock.run(redlock.readWriteLock("doc").acquireWrite(1_000, { retryCount: 0 }))).rejects.toThrow();
    await clock.drain();
    expect(afterRequeue.flat()).toEqual([]);
    expect(nodes.map((n) => n.liveWaiters(queue).length)).toEqual([0, 0, 0, 0, 0]);
    expect(nodes.slice(0, 2).map((n) => n.get("edge-redlock:rw:writer:doc"))).toEqual([undefined, undefined]);
  });
});
