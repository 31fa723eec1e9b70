// From the adversarial review of the fair queue (issue 18), on the simulator's virtual clock (deterministic,
// unlike timings on a loaded machine): a live waiter's entry must not lapse between its attempts, whatever
// the round trip, up to the lease. test/integration/fair-review.test.ts shows the same on the real cluster.
import { describe, expect, it } from "vitest";
import { Redlock } from "../../src/index.ts";
import { simCluster } from "../sim/sim-node.ts";
import { VirtualClock } from "../sim/virtual-clock.ts";

const Q = "edge-redlock:queue:k";

describe("fair queue review: slow links (simulator)", () => {
  it("a live waiter's entry never lapses while it waits, also when a round trip takes 160 ms", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    for (const node of nodes) node.latency = 160;
    nodes.forEach((n) => n.set("k", "someone-else", 5_000));
    const stop = new AbortController();
    const waiters = Array.from({ length: 8 }, async (_, i) => {
      await clock.sleep(20 * i);
      await new Redlock(nodes, { clock, retryCount: -1 }).acquire(["k"], 1_000, { signal: stop.signal }).catch(() => undefined);
    });
    await clock.advance(600); // everyone's first attempt has run on every node
    let fewest = 8;
    for (let t = 0; t < 3_000; t += 5) {
      await clock.advance(5);
      fewest = Math.min(fewest, ...nodes.map((n) => n.liveWaiters(Q).length));
    }
    stop.abort();
    await clock.run(Promise.all(waiters));
    expect(fewest).toBe(8);
  });
});
