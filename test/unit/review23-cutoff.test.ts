// Review 23: the cut-off rule of REQUEUE (src/redlock-mutex.ts: `grant.round.errors <= nodes − quorum`) is judged
// on the round as it stood when it was decided. A round decided early by a refusal counts only the errors in by
// then, so a waiter that can never reach a quorum is judged "in reach" whenever one of the nodes it does reach
// refuses it, and its REQUEUE then keeps it in line on the node that granted it — keeping out everyone who needs
// that node. Before 743d054 that grant was undone with RELEASE and the others got in between its attempts.
import { describe, expect, it } from "vitest";
import { Redlock, type RedlockNode } from "../../src/index.ts";
import { simCluster, type SimNode } from "../sim/sim-node.ts";
import { VirtualClock } from "../sim/virtual-clock.ts";

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

describe("review 23: REQUEUE's cut-off, decided early", () => {
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
      .then(() => "held", () => "gave up");
    await clock.advance(20);
    // Everyone else reaches 0..3 and needs 0, 2 and 3 while node 1 has the stale key.
    const began = clock.now();
    const other = new Redlock(nodes, { clock, nodeTimeout: 100 })
      .acquire(["k"], 1_000, { maxWait: 2_500 })
      .then((lock) => ({ held: true, waited: clock.now() - began, lock }), () => ({ held: false, waited: clock.now() - began, lock: undefined }));
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
