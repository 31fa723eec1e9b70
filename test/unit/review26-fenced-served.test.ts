// Review 26 (29b92fa): `Lifecycle.failed` calls an attempt a missed turn when the `round` it is given won a quorum
// (and so, not holding, had no validity left). For a fenced lock that round is the write-back round. A fenced waiter
// whose grant round won a quorum in time (it was served: the grant took its ticket out of line on a quorum) but whose
// write-back round fell short of a quorum (a node's reply cut at nodeTimeout) is not a missed turn: it is undone with
// REQUEUE, back at the head of the line, served first again on its next attempt. If that repeats, it holds everyone
// behind it back until it gives up: the pathology the change fixes, through the other way a served attempt fails.
// (Not a regression of the change: the same happened before it. Not a safety issue.)
// Simulator: the slow waiter S cannot reach nodes 3 and 4; its write-back to node 2 takes 2 × 60 ms (> nodeTimeout
// 100: a stand-in for a link whose round trip straddles nodeTimeout), everything else 2 × 20 ms. A fast client F that
// reaches every node comes when S is already in line.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type RedlockNode } from "../../src/index.ts";
import { simCluster } from "../sim/sim-node.ts";
import { VirtualClock } from "../sim/virtual-clock.ts";

function link(node: RedlockNode, i: number, clock: VirtualClock): RedlockNode {
  return {
    label: `${node.label} (S)`,
    run: async (script, keys, args, signal) => {
      if (i >= 3) throw new TypeError("fetch failed");
      const ms = script.name === "fence" && i === 2 ? 60 : 20;
      await clock.sleep(ms, signal);
      const reply = await node.run(script, keys, args, signal);
      await clock.sleep(ms, signal);
      return reply;
    },
  };
}

async function scenario(fencing: boolean) {
  const clock = new VirtualClock();
  const nodes = simCluster(clock);
  const slow = new Redlock(
    nodes.map((n, i) => link(n, i, clock)),
    { clock, nodeTimeout: 100 },
  );
  const fast = new Redlock(nodes, { clock, nodeTimeout: 100 });
  const slowTry = slow.acquire("report", 1_000, { maxWait: 3_000, fencing }).then(
    (lock) => lock,
    (error: unknown) => (error instanceof LockAcquisitionError ? "gave up" : String(error)),
  );
  await clock.advance(300);
  const began = clock.now();
  const fastTry = await clock.run(
    fast.acquire("report", 1_000, { maxWait: 2_000 }).then(
      (lock) => ({ lock, waited: clock.now() - began }),
      (error: unknown) => ({ lock: undefined, waited: clock.now() - began, error }),
    ),
  );
  return { clock, nodes, slowTry, fastTry };
}

describe("review26: a fenced waiter served by its grant round whose write-back round failed", () => {
  // S's grant round wins nodes 0-2 every attempt, its write-back misses node 2. Before the fix it failed and REQUEUEd at
  // the head, and F (which came later) waited out its whole 2 s and gave up (1951 ms). Now a missed turn is judged on
  // the GRANT round (`grant.round.granted >= rounds.quorum` in `Lifecycle.failed`): the waiter was served either way,
  // whether its validity or its write-back round let it down.
  it("a fast client that came later is served while the fenced waiter still retries", async () => {
    const { clock, slowTry, fastTry } = await scenario(true);
    expect(fastTry.waited).toBeLessThan(1_000);
    await clock.run(fastTry.lock!.release());
    await clock.run(slowTry);
  });

  // Control: without fencing S holds at its first attempt (its grant round alone decides), so the scenario's links
  // are not what keeps F out; F is served once S releases.
  it("control: unfenced, the same links let S hold and F is served after S's release", async () => {
    const clock = new VirtualClock();
    const nodes = simCluster(clock);
    const slow = new Redlock(
      nodes.map((n, i) => link(n, i, clock)),
      { clock, nodeTimeout: 100 },
    );
    const lock = await clock.run(slow.acquire("report", 1_000, { maxWait: 3_000 }));
    expect(lock.attempts).toBe(1);
    await clock.run(lock.release());
    const fast = new Redlock(nodes, { clock, nodeTimeout: 100 });
    const began = clock.now();
    const held = await clock.run(fast.acquire("report", 1_000, { maxWait: 2_000 }));
    expect(clock.now() - began).toBeLessThan(50);
    await clock.run(held.release());
  });
});
