// A lost wakeup costs the first in line at most its turn: "a lost wakeup delays a waiter by at most the holder's remaining time plus one
// round": the release's wakeup is lost for the first in line only (its own link drops one message per stream). The
// release also shrank its entry to the claim window, so the next in line, told it is next, is served first; the first
// in line, asking at the old holder's expiry, then waits out the whole hold of the one that overtook it. Real
// redis-server behind the bridge, per-client links.
import { describe, expect, it } from "vitest";
import { useCluster } from "../fixture.ts";
import { client, linkedNodes, noted, sleep } from "./helpers.ts";

const fixture = useCluster();

describe("one lost wakeup", () => {
  it("costs the first in line at most its turn: it keeps its place, asks at the old holder's expiry, is served next", async () => {
    const own = await linkedNodes(fixture, "first");
    const holder = await client(fixture.nodes).acquire("res", 3_000);
    const order: string[] = [];
    const first = client(own).acquire("res", 5_000, { maxWait: 10_000 }).then(noted(order, "first"));
    await sleep(200);
    const second = client(fixture.nodes).acquire("res", 5_000, { maxWait: 10_000 }).then(noted(order, "second"));
    await sleep(800);
    // The next message on each of the first waiter's streams is lost: the release's wakeup.
    await Promise.all(fixture.admins.map((a) => a.linkFaults("first", { dropMessages: 1 })));
    const remaining = holder.validityMs;
    const released = Date.now();
    await holder.release();
    // Whoever is served holds for 3 s, then releases.
    const hold = async (p: Promise<Awaited<typeof first>>) => {
      const lock = await p;
      await sleep(3_000);
      await lock.release();
      return Date.now();
    };
    const firstServed = hold(first).then(() => undefined);
    const secondDone = hold(second);
    const servedAt = await first.then(() => Date.now());
    await Promise.all([firstServed, secondDone]);
    // Its wakeup lost, its claim window passed: the second took its turn (3 s); it kept its place and came next.
    expect(order, `the first waiter was served ${servedAt - released} ms after the release`).toEqual([
      "second",
      "first",
    ]);
    expect(servedAt - released).toBeLessThan(Math.max(remaining, 3_000 + 300) + 500);
  }, 30_000);
});
