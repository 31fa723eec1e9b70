// Many waiters sharing few Redlocks, with wakeups dropped at random and callers giving up through their signal: one
// holder at a time, every acquisition settles within its maxWait and a round, and no line key outlives its waiters.
// Real redis-server behind the bridge, real @upstash/redis.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock } from "../../../src/index.ts";
import { useCluster } from "../fixture.ts";

const fixture = useCluster();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("waiters sharing Redlocks", () => {
  it("hold one at a time, settle by maxWait, and leave no line behind", async () => {
    await Promise.all(fixture.admins.map((a) => a.faults({ dropMessages: 30 })));
    const redlocks = [0, 1, 2].map(() => new Redlock(fixture.nodes, { warnings: false }));
    const spans: { start: number; end: number }[] = [];
    let lateBy = 0;
    let served = 0;
    let inside = 0;
    let overlaps = 0;
    const deadline = Date.now() + 6_000;
    const loop = async (redlock: Redlock, n: number) => {
      for (let i = 0; Date.now() < deadline; i++) {
        const maxWait = 400 + ((n * 37 + i * 101) % 900);
        const caller = new AbortController();
        // Every fifth caller gives up early through its signal, while it waits its turn or on the nodes.
        if (i % 5 === n % 5) setTimeout(() => caller.abort(new Error("gave up")), (n * 13 + i * 7) % 300);
        const called = Date.now();
        try {
          const lock = await redlock.acquire("res", 2_000, { maxWait, signal: caller.signal });
          const start = Date.now();
          if (++inside > 1) overlaps++;
          await sleep(5 + ((n + i) % 4) * 5);
          inside--;
          const end = Date.now();
          // A holder counts only within its validity.
          spans.push({ start, end: Math.min(end, start + lock.validityMs) });
          served++;
          await lock.release();
        } catch (error) {
          if (!(error instanceof LockAcquisitionError) && (error as Error).message !== "gave up") throw error;
          // Settled by maxWait and one round (a round is cut at nodeTimeout, 500 ms by default).
          lateBy = Math.max(lateBy, Date.now() - called - maxWait);
        }
      }
    };
    await Promise.all(redlocks.flatMap((redlock, r) => [0, 1, 2, 3].map((k) => loop(redlock, r * 4 + k))));
    spans.sort((a, b) => a.start - b.start);
    for (let i = 1; i < spans.length; i++) expect(spans[i].start).toBeGreaterThanOrEqual(spans[i - 1].end);
    expect(overlaps).toBe(0);
    expect(served).toBeGreaterThan(50);
    expect(lateBy).toBeLessThan(600);
    // Every waiter left or was served: no entry is left in the line on any node.
    await sleep(500);
    const entries = await Promise.all(fixture.tcp.map((c) => c.zcard("edge-redlock:line:res")));
    expect(entries).toEqual([0, 0, 0, 0, 0]);
  }, 20_000);
});
