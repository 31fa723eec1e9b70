// A fair waiter whose rounds win a quorum with no validity left (its links are too slow for its ttl) missed its turn:
// it must not keep the head of the line, where it would be served first on every attempt and hold everyone behind it
// back until it gave up. Its undo takes its ticket out, and it takes a new one (the back of the line).
// On the simulator, a slow client whose rounds end within the drift of its ttl (ttl − drift < elapsed ≤ ttl: its keys
// are still set when its undo lands, so no one else slips in between) and a client with fast links that comes when
// the slow one is already in line: a mutex and a writer (fenced: a grant and a write-back round), a reader and a
// semaphore (one round, a ttl just above nodeTimeout); and a slow mutex whose rounds take longer than its ttl.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type RedlockNode } from "../../src/index.ts";
import { simCluster } from "../sim/sim-node.ts";
import { VirtualClock } from "../sim/virtual-clock.ts";

/** `node` seen over a link that adds `ms` before each request reaches it and `ms` before its reply comes back. */
function slowLink(node: RedlockNode, clock: VirtualClock, ms: number): RedlockNode {
  return {
    label: `${node.label} (slow)`,
    run: async (script, keys, args, signal) => {
      await clock.sleep(ms, signal);
      const reply = await node.run(script, keys, args, signal);
      await clock.sleep(ms, signal);
      return reply;
    },
  };
}

type Take = (redlock: Redlock, ttl: number, options: { maxWait: number; fencing?: boolean }) => Promise<unknown>;
const mutex: Take = (r, ttl, o) => r.acquire("report", ttl, o);
const writer: Take = (r, ttl, o) => r.readWriteLock("report").acquireWrite(ttl, o);
const reader: Take = (r, ttl, o) => r.readWriteLock("report").acquireRead(ttl, o);
const permit: Take = (r, ttl, o) => r.semaphore("report", 1).acquire(ttl, o);

const cases: { name: string; slow: Take; fast: Take; link: number; ttl: number; fencing: boolean; queue: string }[] = [
  // Two rounds of ~4 × 26.5 + 2 ms = ~108 ms against a ttl of 110 (drift 3.1 ms).
  { name: "a fenced mutex", slow: mutex, fast: mutex, link: 26.5, ttl: 110, fencing: true, queue: "edge-redlock:queue:report" },
  { name: "a fenced writer", slow: writer, fast: writer, link: 26.5, ttl: 110, fencing: true, queue: "edge-redlock:rw:queue:report" },
  // One round of ~2 × 49 + 1 ms = ~99 ms against a ttl of 101 (drift 3.01 ms), nodeTimeout 100.
  { name: "a reader (a writer behind it)", slow: reader, fast: writer, link: 49, ttl: 101, fencing: false, queue: "edge-redlock:rw:queue:report" },
  { name: "a semaphore waiter", slow: permit, fast: permit, link: 49, ttl: 101, fencing: false, queue: "edge-redlock:semaphore-queue:report" },
  // Rounds longer than the ttl (~122 ms against 110): the keys expire before the undo lands.
  { name: "a fenced mutex, rounds longer than its ttl", slow: mutex, fast: mutex, link: 30, ttl: 110, fencing: true, queue: "edge-redlock:queue:report" },
];

describe("fair waiting: a waiter whose wins come too late goes to the back of the line", () => {
  for (const c of cases) {
    it(`${c.name}: the fast client that came later is served while the slow one still retries`, async () => {
      const clock = new VirtualClock();
      const nodes = simCluster(clock);
      const slow = new Redlock(
        nodes.map((n) => slowLink(n, clock, c.link)),
        { clock, nodeTimeout: 100 },
      );
      const fast = new Redlock(nodes, { clock, nodeTimeout: 100 });
      const slowTry = c.slow(slow, c.ttl, { maxWait: 3_000, ...(c.fencing ? { fencing: true } : {}) }).then(
        () => "held",
        (error: unknown) => (error instanceof LockAcquisitionError ? "gave up" : String(error)),
      );
      await clock.advance(300); // the slow waiter has missed its turn at least once and is in line
      const began = clock.now();
      const held = (await clock.run(c.fast(fast, 1_000, { maxWait: 2_000 }))) as { release(): Promise<unknown> };
      // Served long before the slow waiter's 3 s budget ran out.
      expect(clock.now() - began).toBeLessThan(1_000);
      await clock.run(held.release());
      expect(await clock.run(slowTry)).toBe("gave up");
      await clock.drain();
      // Nothing of either is left in line: the missed turns' old tickets were taken out.
      expect(nodes.map((n) => n.liveWaiters(c.queue).length)).toEqual([0, 0, 0, 0, 0]);
    });
  }
});
