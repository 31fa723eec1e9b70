// Node clocks that differ do not loop or starve a waiter: a node refuses a new ticket more than 1 s away from its TIME, and a quorum of such
// refusals makes the client learn the nodes' time (their median), leave with the old ticket and retry at once with a
// new one. Node clocks that disagree among themselves by a little over 2 s leave a quorum out of step with any one
// time: every ticket is stale on a quorum, and "retry at once" becomes a loop. Each node runs the real scripts on the
// real redis-server; its TIME, as the line's Lua reads it, is shifted (helpers.ts shiftedNode).
import { describe, expect, it } from "vitest";
import { useCluster } from "../fixture.ts";
import { client, countedNodes, shiftedNode, sleep, tally } from "./helpers.ts";

const fixture = useCluster();
const shifted = (offsets: number[]) => fixture.nodes.map((node, i) => shiftedNode(node, offsets[i]));

describe("nodes whose clocks differ", () => {
  it("a minority of nodes an hour off: a waiter behind a holder sends no more requests than usual", async () => {
    const nodes = shifted([0, 0, 0, 3_600_000, -3_600_000]);
    const holder = await client(nodes).acquire("res", 2_000);
    const counted = countedNodes(nodes);
    const lock = await client(counted.nodes).acquire("res", 5_000, { maxWait: 5_000 });
    await lock.release();
    expect(counted.sent.length, counted.sent.join(" ")).toBeLessThanOrEqual(30);
    await holder.release().catch(() => undefined);
  });

  it("clocks 1.2 s apart: a waiter behind a 2 s holder sends no more requests than usual", async () => {
    // Every time is more than 1 s away from at least three of the nodes.
    const nodes = shifted([-2_400, -1_200, 0, 1_200, 2_400]);
    const holder = await client(nodes).acquire("res", 2_000);
    const counted = countedNodes(nodes);
    const began = Date.now();
    const lock = await client(counted.nodes).acquire("res", 5_000, { maxWait: 5_000 });
    const waited = Date.now() - began;
    await lock.release();
    await sleep(100);
    // Behind a holder of 2 s a waiter asks once, subscribes twice and asks again when woken or at the holder's
    // expiry: about 20 requests (woken-waiting.test.ts), 22 to 42 here (more on an overloaded machine). A waiter that
    // loops with no wait at all sends hundreds.
    expect(counted.sent.length, `${waited} ms, ${tally(counted.sent)}`).toBeLessThanOrEqual(60);
    await holder.release().catch(() => undefined);
  });
});
