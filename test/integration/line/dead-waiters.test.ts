// Dead waiters hold the line up boundedly: a waiter that joined the line and died keeps an entry until its own deadline (its maxWait
// plus 2 s). Once the resource is free and someone asks, the first in line has its claim window (200 ms), then the
// next is served: a dead waiter should cost about a claim window and a round, also when the resource frees by the
// holder's expiry (nobody publishes then). Real redis-server behind the bridge.
import { describe, expect, it } from "vitest";
import { FAIR_ACQUIRE } from "../../../src/scripts/index.ts";
import { useCluster } from "../fixture.ts";
import { client } from "./helpers.ts";

const fixture = useCluster();

/** Dead waiters, older than anyone else, each with an entry of 30 s and a claim window of `claimMs`. */
async function ghosts(count: number, claimMs = 200): Promise<void> {
  for (let g = 0; g < count; g++) {
    const ticket = `${String(Date.now() - 900 + g).padStart(16, "0")}${String(g).repeat(16).slice(0, 16)}${String(claimMs).padStart(5, "0")}`;
    await Promise.all(
      fixture.nodes.map((node) =>
        node.run(
          FAIR_ACQUIRE,
          ["res", "edge-redlock:line:res"],
          ["ghost", "10000", "1", ticket, "30000", "1", "900"],
          AbortSignal.timeout(500),
        ),
      ),
    );
  }
}

describe("a dead waiter costs a claim window once the resource is free", () => {
  it("the holder crashed (its key expires, nobody publishes)", async () => {
    const holder = await client(fixture.nodes).acquire("res", 1_500);
    const expires = Date.now() + holder.validityMs;
    await ghosts(1);
    const lock = await client(fixture.nodes).acquire("res", 5_000, { maxWait: 8_000 });
    const after = Date.now() - expires;
    // Its claim window and a round or two; a margin for a loaded machine.
    expect(after).toBeLessThan(200 + 500);
    await lock.release();
  });

  it("two dead waiters ahead, the holder released: each costs its window in turn", async () => {
    const holder = await client(fixture.nodes).acquire("res", 10_000);
    await ghosts(2);
    const waiting = client(fixture.nodes).acquire("res", 5_000, { maxWait: 8_000 });
    await new Promise((r) => setTimeout(r, 1_000)); // it listens and sleeps on the holder's time
    const released = Date.now();
    await holder.release();
    const lock = await waiting.catch((e: Error) =>
      expect.fail(`never served, though free since the release: ${e.message}`),
    );
    const after = Date.now() - released;
    // The documented cost is per dead waiter: 2 × (200 ms + a round). The release names the first dead waiter as
    // claimer and the second as next; the live waiter, third, is named by nobody and sleeps on the holder's time.
    expect(after).toBeLessThan(2 * 300 + 300);
    await lock.release();
  });
});
