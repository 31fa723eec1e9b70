// A fair waiter leaves the line on every node: when it gives up, and when it is served and releases (also where a
// node had refused and queued it). What lands late cannot keep a waiter in line or grant: an enqueue that lands after
// the waiter left never grants, and blocks that node for at most a claim window once the resource there is free; a
// grant that lands after the round was decided is released; and a waiter that crashed first in line holds the line up
// for at most its claim window (200 ms) once the resource is free.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type RedlockNode } from "../../../src/index.ts";
import type { SimNode } from "../../sim/sim-node.ts";
import { LINE_OF_K, holdEverywhere, lineWaiters, simSetup } from "../../sim/sim-redlock.ts";

const Q = LINE_OF_K;

/** `nodes` as a client that can crash: from then on its requests never reach any node. */
function crashable(nodes: SimNode[]): { nodes: RedlockNode[]; crash(): void } {
  let crashed = false;
  return {
    nodes: nodes.map((sim) => ({
      label: sim.label,
      run: (script, keys, args, signal) =>
        crashed
          ? new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason)))
          : sim.run(script, keys, args, signal),
      // A waiter that can be woken (its claim window is CLAIM_MS); a crashed one hears nothing.
      subscribe: (channel: string, onMessage: (payload: string) => void, signal: AbortSignal) =>
        sim.subscribe(channel, (payload) => crashed || onMessage(payload), signal),
    })),
    crash: () => {
      crashed = true;
    },
  };
}

describe("fair acquire: leaving the line, and what lands late", () => {
  it("a waiter that gives up leaves the queue on every node", async () => {
    const { clock, nodes, redlock } = simSetup();
    holdEverywhere(nodes, "k", 5_000);
    const stop = new AbortController();
    const waiting = redlock.acquire(["k"], 1_000, { signal: stop.signal }).catch(() => "gave up");
    await clock.advance(50);
    expect(lineWaiters(nodes)).toEqual([1, 1, 1, 1, 1]);
    stop.abort();
    expect(await clock.run(waiting)).toBe("gave up");
    await clock.drain();
    expect(lineWaiters(nodes)).toEqual([0, 0, 0, 0, 0]);
  });

  it("an enqueue that lands after the waiter left never grants, and blocks that node for at most a claim window once the resource is free", async () => {
    const { clock, nodes, redlock } = simSetup({ nodeTimeout: 100 });
    for (const n of nodes) n.deliverLate = true;
    holdEverywhere(nodes, "k", 500);
    // Node 4 gets the waiter's second attempt (first in line, it asks once when its stream confirms) very late: it
    // lands after the waiter gave up and left.
    nodes[4].latency = (r) =>
      r.script === "fair-acquire" && nodes[4].requests.filter((q) => q.script === "fair-acquire").indexOf(r) === 1
        ? 400
        : 1;
    const stop = new AbortController();
    const waiting = redlock.acquire(["k"], 1_000, { signal: stop.signal }).catch(() => "gave up");
    await clock.advance(30);
    stop.abort();
    expect(await clock.run(waiting)).toBe("gave up");
    await clock.advance(420 - clock.now()); // the late enqueue has landed on node 4 now
    const late = nodes[4].requests.filter((r) => r.script === "fair-acquire")[1];
    expect(late, "the waiter's second attempt").toBeDefined();
    const leftAt = nodes[4].requests.find((r) => r.script === "leave")?.ranAt ?? Infinity;
    expect(late.ranAt).toBeGreaterThan(leftAt);
    expect(lineWaiters(nodes)).toEqual([0, 0, 0, 0, 1]);
    const [dead] = nodes[4].liveWaiters(Q);
    // Its entry carries the dead waiter's own deadline: 12 s without maxWait.
    expect(nodes[4].queue(Q)!.get(dead)! - nodes[4].time()).toBeGreaterThan(10_000);
    // Another client is served by the other four nodes once the holder is gone; node 4 refuses it (the dead ticket is
    // ahead) and, the resource being free there, cuts the dead entry to its claim window.
    const other = new Redlock(nodes, { clock, nodeTimeout: 100 });
    const lock = await clock.run(other.acquire(["k"], 5_000));
    await clock.advance(1);
    expect(nodes.map((n) => n.get("k") === lock.value)).toEqual([true, true, true, true, false]);
    expect(nodes[4].get("k")).toBeUndefined(); // the late enqueue never granted anything
    expect(nodes[4].queue(Q)!.get(dead)! - nodes[4].time()).toBeLessThanOrEqual(200);
    await clock.advance(201);
    expect(nodes[4].liveWaiters(Q)).not.toContain(dead);
    await clock.run(lock.release()); // it leaves node 4's line too, where it had been refused and queued
    await clock.drain();
    expect(lineWaiters(nodes)).toEqual([0, 0, 0, 0, 0]);
  });

  it("a grant that lands after the round was decided is released (fair-acquire stragglers, leave included)", async () => {
    const { clock, nodes, redlock } = simSetup({ nodeTimeout: 100 });
    for (const n of nodes) n.deliverLate = true;
    holdEverywhere(nodes.slice(0, 3), "k", 5_000);
    nodes[4].latency = 300; // its grant lands after the round (decided by three refusals) and after the give-up
    const error = await clock.run(redlock.acquire(["k"], 1_000, { retryCount: 0 })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    await clock.drain();
    expect(nodes[4].get("k")).toBeUndefined();
    expect(nodes[4].requests.map((r) => r.script)).toEqual(["fair-acquire", "release"]);
  });

  it("a crashed first-in-line waiter holds the line up for at most its claim window (200 ms) once the resource is free", async () => {
    const { clock, nodes } = simSetup();
    const holder = await clock.run(new Redlock(nodes, { clock, nodeTimeout: 100 }).acquire(["k"], 5_000));
    const a = crashable(nodes);
    void new Redlock(a.nodes, { clock, nodeTimeout: 100 }).acquire(["k"], 1_000).catch(() => {});
    await clock.advance(20);
    const b = new Redlock(nodes, { clock, nodeTimeout: 100 }).acquire(["k"], 1_000);
    await clock.advance(20);
    a.crash();
    await clock.advance(5); // its last requests (latency 1) have landed: it is a waiter, not a holder
    expect(lineWaiters(nodes), "A (dead, first) and B wait").toEqual([2, 2, 2, 2, 2]);
    // B's first wait (its streams not yet confirmed) is at most retryDelay + retryJitter; then it listens.
    await clock.advance(400 - clock.now());
    const freedAt = clock.now();
    await clock.run(holder.release()); // its LEAVE frees the resource and wakes the line: A's window starts
    const lock = await clock.run(b);
    // B, told it is next, asks once A's window (and a 20 ms margin) is over.
    expect(clock.now() - freedAt).toBeLessThanOrEqual(200 + 20 + 10);
    expect(clock.now() - freedAt).toBeGreaterThan(190); // it did wait for the dead waiter's window: the order held
    await clock.run(lock.release());
  });

  it("a released fair lock leaves its ticket nowhere, even where a node had denied and queued it", async () => {
    const { clock, nodes, redlock } = simSetup();
    nodes[4].set("k", "someone-else", 60);
    const lock = await clock.run(redlock.acquire(["k"], 1_000));
    await clock.advance(0);
    expect(lineWaiters(nodes)).toEqual([0, 0, 0, 0, 1]);
    await clock.run(lock.release());
    await clock.drain();
    expect(lineWaiters(nodes)).toEqual([0, 0, 0, 0, 0]);
  });
});
