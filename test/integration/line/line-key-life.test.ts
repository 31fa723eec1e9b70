// A line key does not outlive its entries: a line key is to expire 5 s (LINE_LINGER_MS) after the last deadline of its
// entries rounded up to a second (LINE_KEEP_STEP_MS). Whatever
// lowers an entry's deadline (the claim-window shrink of a wakeup) or takes the last-deadline entry out (a grant, a
// LEAVE) must bring the key's expiry down with it, or the key outlives its entries. Real redis-server behind the bridge.
import { describe, expect, it } from "vitest";
import { FAIR_ACQUIRE, LEAVE } from "../../../src/scripts/index.ts";
import { LINE_KEEP_STEP_MS, LINE_LINGER_MS } from "../../../src/scripts/queue.ts";
import { settle, useCluster } from "../fixture.ts";
import { client, lineOn } from "./helpers.ts";

const fixture = useCluster();
const LINE = "edge-redlock:line:res";
/** A ticket in the line's form, taken now, with a claim window of `claimMs`. */
const ticket = (tag: string, claimMs = 200) =>
  `${String(Date.now()).padStart(16, "0")}${tag.repeat(16).slice(0, 16)}${String(claimMs).padStart(5, "0")}`;

/** Joins the line of "res" on every node with `life` ms, as a waiter refused by a holder does. */
async function join(t: string, life: number): Promise<void> {
  await Promise.all(
    fixture.nodes.map((node) =>
      node.run(
        FAIR_ACQUIRE,
        ["res", LINE],
        [`v-${t}`, "10000", "1", t, String(life), "1", "0"],
        AbortSignal.timeout(500),
      ),
    ),
  );
}

/** On every node: how far the line key outlives the last deadline of its entries (ms), or -Infinity without key. */
async function overhang(): Promise<number[]> {
  return Promise.all(
    fixture.tcp.map(async (_, i) => {
      const { entries, pttl, now } = await lineOn(fixture, i, LINE);
      if (pttl < 0) return Number.NEGATIVE_INFINITY;
      const last = Math.max(now, ...entries.map((e) => e.deadline));
      return now + pttl - last;
    }),
  );
}

describe("a line key does not outlive its entries by more than 6 s", () => {
  it("after a release shrinks a dead first in line to its claim window", async () => {
    const holder = await client(fixture.nodes).acquire("res", 10_000);
    // A waiter that joined with a 30 s maxWait, then died.
    await join(ticket("d"), 32_000);
    await holder.release();
    await settle(fixture);
    // Its entry now ends 200 ms from now: the key should end 5.2 s from now, not 37 s.
    for (const o of await overhang()) expect(o).toBeLessThanOrEqual(LINE_LINGER_MS + LINE_KEEP_STEP_MS + 500);
  });

  it("after the entry with the last deadline leaves", async () => {
    await client(fixture.nodes).acquire("res", 10_000);
    const short = ticket("a");
    const long = ticket("b");
    await join(short, 1_000); // a waiter with maxWait ~0 that died
    await join(long, 60_000); // a waiter with a long maxWait, that then gives up (its LEAVE)
    await Promise.all(
      fixture.nodes.map((node) => node.run(LEAVE, ["res", LINE], ["-", long], AbortSignal.timeout(500))),
    );
    // The last entry ends in 1 s: the key should end within 6 s, not 65 s.
    for (const o of await overhang()) expect(o).toBeLessThanOrEqual(LINE_LINGER_MS + LINE_KEEP_STEP_MS + 500);
  });
});
