// A fair semaphore waiter tries several slots within one attempt, and a failed try's undo runs alongside the next
// try (RELEASE: only an attempt's last try is undone with REQUEUE, which puts the ticket back). When that undo lands on a node after the next try was granted there, the waiter is already the permit's
// holder: it must not be put back in the semaphore's line (a live waiter "ahead" of everyone who came later, waiting
// for nothing): once everything landed it leaves nothing in line, whether it releases or dies holding its permit.
//
// The randomness is pinned (randomUnit → 0) so the first try takes slot 0; nothing else depends on it here.
import { describe, expect, it, vi } from "vitest";
import { Redlock } from "../../../src/index.ts";
import { simCluster } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

vi.mock("../../../src/support/random.ts", async (importOriginal) => {
  const original = await importOriginal<typeof import("../../../src/support/random.ts")>();
  return { ...original, randomUnit: () => 0 };
});

const QUEUE = "edge-redlock:semaphore-line:jobs";
const SLOT0 = "edge-redlock:semaphore:jobs:0";

/**
 * Limit 2. Slot 0 is held by someone else on nodes 2-4 (for 50 ms), free on 0 and 1; slot 1 is free everywhere.
 * A's first try (slot 0) is granted on 0 and 1 and refused on 2-4, which report slot 1 free on a quorum, so A tries
 * slot 1 at once and wins it on all five nodes. The undo of the first try (on 0 and 1) takes 5 ms to land, so it
 * lands after the second try's grant there: the normal race of a cleanup and the next try.
 */
async function holderAfterTwoTries() {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  for (const node of nodes)
    node.latency = (request) => (request.script === "requeue" || request.script === "release" ? 5 : 1);
  for (const node of nodes.slice(2)) node.set(SLOT0, "someone-else", 50);
  const redlock = new Redlock(nodes, { clock, nodeTimeout: 100 });
  const semaphore = redlock.semaphore("jobs", 2);
  const permit = await clock.run(semaphore.acquire(1_000, { maxWait: 2_000 }));
  return { clock, nodes, redlock, semaphore, permit };
}

describe("a semaphore waiter that wins a later try of the same attempt", () => {
  it("the scenario: one attempt, two tries; the first is undone on nodes 0 and 1 only, never touching the permit's slot", async () => {
    const { nodes, permit } = await holderAfterTwoTries();
    expect(permit.slot).toBe(1);
    expect(permit.attempts).toBe(1);
    const undo = (name: string) => name === "requeue" || name === "release";
    expect(nodes.map((n) => n.requests.filter((r) => undo(r.script)).length)).toEqual([1, 1, 0, 0, 0]);
    // Not the attempt's last try: undone with RELEASE, which puts no ticket back (only a last try keeps the place).
    expect(nodes.slice(0, 2).map((n) => n.requests.find((r) => undo(r.script))?.script)).toEqual([
      "release",
      "release",
    ]);
    for (const n of nodes.slice(0, 2)) {
      const [, second] = n.requests.filter((r) => r.script === "fair-semaphore-acquire");
      expect(n.requests.find((r) => undo(r.script))!.ranAt, "the undo lands after the next try").toBeGreaterThan(
        second.ranAt!,
      );
    }
    // Safety held: the REQUEUE deleted only the failed try's own slot-0 value, never the permit's slot 1.
    expect(nodes.map((n) => n.get("edge-redlock:semaphore:jobs:1"))).toEqual(Array(5).fill(permit.value));
  });

  it("once acquire resolved, the holder is not waiting in the semaphore's line on any node", async () => {
    const { nodes } = await holderAfterTwoTries();
    expect(nodes.map((n) => n.liveWaiters(QUEUE).length)).toEqual([0, 0, 0, 0, 0]);
  });

  it("with one node down, a later waiter gets a free slot at once: no entry of the holder keeps it out", async () => {
    const { clock, nodes, semaphore, permit } = await holderAfterTwoTries();
    const heldAt = clock.now();
    // Someone else's slot 0 expires at 50 ms; node 4 goes down (a minority: the semaphore must still serve).
    await clock.advance(60 - clock.now());
    nodes[4].mode = "down";
    expect(nodes.slice(0, 4).map((n) => n.get(SLOT0))).toEqual([undefined, undefined, undefined, undefined]);
    // Slot 0 is free on all four live nodes and A holds one permit of two: B should be admitted at once.
    const started = clock.now();
    const b = await clock.run(semaphore.acquire(1_000, { maxWait: 2_000 }));
    const waited = clock.now() - started;
    expect(b.slot).toBe(0);
    // Were the holder's ticket back in line on nodes 0 and 1, it would count as a waiter ahead of B there (1 ahead,
    // 1 slot free: refused); with node 4 down, B would reach only 2 grants until that entry lapsed (A's maxWait + 2 s,
    // or its claim window once it is first where a slot is free).
    expect(waited, `B waited ${waited} ms; A held since ${heldAt} ms`).toBeLessThan(50);
    await clock.run(permit.release());
    await clock.run(b.release());
  });

  it("once everything landed the holder leaves nothing in line, whether it releases or dies holding its permit", async () => {
    const first = await holderAfterTwoTries();
    await first.clock.run(first.permit.release()); // LEAVE: deletes the slot and takes the ticket out
    await first.clock.drain();
    expect(first.nodes.map((n) => n.liveWaiters(QUEUE).length)).toEqual([0, 0, 0, 0, 0]);
    // A holder that dies (never releases): once its late undos landed, no entry of it waits, its permit still held.
    const second = await holderAfterTwoTries();
    await second.clock.advance(20);
    const undone = (r: { script: string; ranAt?: number }) =>
      (r.script === "requeue" || r.script === "release") && r.ranAt !== undefined;
    const landed = second.nodes.flatMap((n) => n.requests.filter(undone));
    expect(landed.length, "the first try's undo landed on nodes 0 and 1").toBe(2);
    expect(second.nodes.map((n) => n.liveWaiters(QUEUE).length)).toEqual([0, 0, 0, 0, 0]);
    expect(second.nodes.map((n) => n.get("edge-redlock:semaphore:jobs:1"))).toEqual(Array(5).fill(second.permit.value));
  });
});
