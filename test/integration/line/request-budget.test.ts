// maxRequests holds where the requests arrive: "a cap on the HTTP requests this acquisition may send": counted where they arrive, at the
// nodes' bridges, not by the library's own tally. A node that does not know a script yet answers NOSCRIPT to the
// EVALSHA, and the library sends the EVAL too: two HTTP requests where the budget counted one. Every acquisition that
// may retry now also ends with a LEAVE on every node, a script it may never have sent before. Real redis-server.
import { describe, expect, it } from "vitest";
import { upstashNode } from "../../../src/index.ts";
import { LockAcquisitionError } from "../../../src/index.ts";
import { loadScripts, settle, useCluster } from "../fixture.ts";
import { client, countedNodes, sleep, wakeChannelOf } from "./helpers.ts";

const fixture = useCluster();
const received = async () =>
  (await Promise.all(fixture.admins.map((a) => a.state()))).reduce((sum, s) => sum + s.counters.received, 0);

describe("maxRequests counts the HTTP requests the nodes receive", () => {
  for (const [fair, maxRequests] of [
    [false, 22],
    [true, 24],
  ] as const)
    it(`fair: ${fair}, maxRequests ${maxRequests}, on nodes that have not seen the scripts yet`, async () => {
      // Held by someone else (a plain SET: the nodes know none of the lock's scripts).
      await Promise.all(fixture.tcp.map((t) => t.set("res", "other", "PX", 3_000)));
      await Promise.all(fixture.admins.map((a) => a.resetCounters()));
      // Nodes of its own: what they know of the scripts is what this test's requests taught them.
      const fresh = fixture.cluster.nodes.map((n) => upstashNode({ url: n.url, token: n.token }));
      const error = await client(fresh, { fair, retryDelay: 20, retryJitter: 0 })
        .acquire("res", 5_000, { maxWait: 2_000, maxRequests })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockAcquisitionError);
      await sleep(600); // its LEAVE
      await settle(fixture);
      const states = await Promise.all(fixture.admins.map((a) => a.state()));
      const commands = JSON.stringify(states.map((s) => s.counters.commands));
      expect(await received(), `${commands}; the library says: ${(error as Error).message}`).toBeLessThanOrEqual(
        maxRequests,
      );
    });

  it("forged wakeups naming the waiter as claimer, every 5 ms: the cap still holds", async () => {
    await loadScripts(fixture);
    const holder = await client(fixture.nodes).acquire("res", 3_000);
    const counted = countedNodes(fixture.nodes);
    let stop = false;
    const forge = (async () => {
      while (!stop) {
        const tickets = await fixture.tcp[0].zrange("edge-redlock:line:res", 0, -1);
        await Promise.all(
          fixture.tcp.map((t) =>
            t.publish(wakeChannelOf("edge-redlock:line:res"), `${tickets.length} ${tickets.join(" ")}`),
          ),
        );
        await sleep(5);
      }
    })();
    const error = await client(counted.nodes)
      .acquire("res", 5_000, { maxWait: 2_000, maxRequests: 40 })
      .catch((e: unknown) => e);
    stop = true;
    await forge;
    await sleep(600);
    expect(error).toBeInstanceOf(LockAcquisitionError);
    expect((error as LockAcquisitionError).reason).toBe("budget");
    expect(counted.sent.length).toBeLessThanOrEqual(40);
    await holder.release();
  });
});
