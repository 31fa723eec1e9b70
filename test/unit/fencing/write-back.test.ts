// Fencing on the simulator: the write-back round runs after the grant and the lock's token is the largest counter of
// the granting nodes; an attempt whose caller lost the key on a majority before the write-back fails and releases; a
// write-back that completes after the validity does not count.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type RedlockOptions } from "../../../src/index.ts";
import { simCluster, type SimNode } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

function setup(options: RedlockOptions = {}) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const redlock = new Redlock(nodes, { clock, nodeTimeout: 100, fair: false, ...options });
  return { clock, nodes, redlock };
}

const holders = (nodes: SimNode[], key: string) => nodes.map((n) => n.get(key));

describe("fencing", () => {
  it("runs the write-back round after the grant and returns the largest counter of the granting nodes", async () => {
    const { clock, nodes, redlock } = setup();
    await clock.advance(5);
    // The acquire runs at 6 ms: the nodes' TIME then reads epoch 6 ms, in µs; a fresh counter starts there.
    const ranAtUs = BigInt(clock.epochBase + 6) * 1_000n;
    nodes[2].counters.set("edge-redlock:fence:k", ranAtUs + 3_041n); // ahead of TIME: it rises by one
    const lock = await clock.run(redlock.acquire(["k"], 1_000, { fencing: true }));
    expect(lock.fence).toBe(String(ranAtUs + 3_042n));
    await clock.drain();
    expect(nodes.map((n) => n.requests.map((r) => r.script))).toEqual(Array(5).fill(["fair-acquire", "fence"]));
    // The write-back round is decided at a quorum; the two stragglers are cut before they land here.
    const top = ranAtUs + 3_042n;
    expect(nodes.map((n) => n.counters.get("edge-redlock:fence:k"))).toEqual([top, top, top, ranAtUs, ranAtUs]);
  });

  it("fails the attempt, and releases, when the caller lost the key on a majority before the write-back", async () => {
    const { clock, nodes, redlock } = setup({ retryCount: 0 });
    for (const n of nodes) n.latency = (r) => (r.script === "fence" ? 50 : 1);
    clock.schedule(20, () => {
      for (const n of nodes.slice(0, 3)) n.set("k", "thief", 5_000);
    });
    const error = (await clock
      .run(redlock.acquire(["k"], 1_000, { fencing: true }))
      .catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect(error.reason).toBe("held");
    await clock.drain();
    expect(holders(nodes, "k")).toEqual(["thief", "thief", "thief", undefined, undefined]);
  });

  it("does not count a write-back that completes after the validity", async () => {
    const { clock, nodes, redlock } = setup({ retryCount: 0, nodeTimeout: 999 });
    for (const n of nodes) n.latency = (r) => (r.script === "fence" ? 990 : 1);
    const error = (await clock
      .run(redlock.acquire(["k"], 1_000, { fencing: true }))
      .catch((e: unknown) => e)) as LockAcquisitionError;
    expect(error.reason).toBe("expired");
  });
});
