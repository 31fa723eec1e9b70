// Review 26 (29b92fa): a fair waiter whose attempt won a quorum with no validity left "missed its turn": its undo is
// LEAVE (a reader's: its release without a lease) and it renews its ticket (the back of the line). On the simulator,
// seeded: slow clients whose rounds end around their ttl (so they often miss their turn, sometimes hold with a few ms
// of validity) and fast clients, on a mutex (fenced and not), a read-write lock and a semaphore of 2. Checked: no two
// valid holders at once (a writer alone; at most 2 permits, never two on one slot; fences rise with time), the
// missed-turn path really runs (Line.renew is called), and once everything landed no ticket outlives one lease.
import { afterEach, describe, expect, it, vi } from "vitest";
import { LockAcquisitionError, Redlock, type Lock, type RedlockNode } from "../../src/index.ts";
import { Line } from "../../src/lock/queue.ts";
import { prng } from "../../dev/prng.ts";
import { simCluster, type SimNode } from "../sim/sim-node.ts";
import { VirtualClock } from "../sim/virtual-clock.ts";

/** One client's view of the nodes: each request delayed `delay()` each way (cut by the client's nodeTimeout). */
function link(nodes: SimNode[], clock: VirtualClock, delay: () => number): RedlockNode[] {
  return nodes.map((node) => ({
    label: node.label,
    run: async (script, keys, args, signal) => {
      await clock.sleep(delay(), signal);
      const reply = await node.run(script, keys, args, signal);
      await clock.sleep(delay(), signal);
      return reply;
    },
  }));
}

type Kind = "mutex" | "fenced" | "rw" | "semaphore";
type Interval = { from: number; to: number; client: number; write: boolean; slot?: number; fence?: bigint };

const QUEUES: Record<Kind, string> = {
  mutex: "edge-redlock:queue:report",
  fenced: "edge-redlock:queue:report",
  rw: "edge-redlock:rw:queue:report",
  semaphore: "edge-redlock:semaphore-queue:report",
};

afterEach(() => vi.restoreAllMocks());

describe("review26: missed turns keep exclusion and leave nothing in line (simulator, seeded)", () => {
  for (const kind of ["mutex", "fenced", "rw", "semaphore"] as Kind[]) {
    for (const seed of [1, 2, 3]) {
      it(`${kind}: 3 slow and 3 fast clients × 3 (seed ${seed})`, async () => {
        const renew = vi.spyOn(Line.prototype, "renew");
        const clock = new VirtualClock();
        const rand = prng(seed * 7919 + kind.length);
        const nodes = simCluster(clock);
        const log: Interval[] = [];
        const client = async (c: number) => {
          const slow = c < 3;
          // Slow: 47-50 ms each way, one round ~95-101 ms (two when fenced) against a ttl of 101 (or 198; drift ~3-4 ms):
          // often a quorum with no validity left. Fast: 1-6 ms.
          const delay = slow ? () => 47 + rand() * 3 : () => 1 + rand() * 5;
          const redlock = new Redlock(link(nodes, clock, delay), { clock, nodeTimeout: 100 });
          const ttl = slow ? (kind === "fenced" ? 198 : 101) : 400;
          const write = kind === "rw" ? c % 2 === 0 : true;
          await clock.sleep(c * 7);
          for (let k = 0; k < 3; k++) {
            try {
              const options = { maxWait: 1_500, ...(kind === "fenced" ? { fencing: true } : {}) };
              const lock: Lock =
                kind === "rw"
                  ? write
                    ? await redlock.readWriteLock("report").acquireWrite(ttl, options)
                    : await redlock.readWriteLock("report").acquireRead(ttl, options)
                  : kind === "semaphore"
                    ? await redlock.semaphore("report", 2).acquire(ttl, options)
                    : await redlock.acquire("report", ttl, options);
              const from = clock.now();
              const validTo = from + lock.validityMs;
              await clock.sleep(Math.floor(rand() * (slow ? 30 : 150)));
              const slot = "slot" in lock ? (lock.slot as number) : undefined;
              const fence = lock.fence === undefined ? undefined : BigInt(lock.fence);
              log.push({ from, to: Math.min(clock.now(), validTo), client: c, write, slot, fence });
              await lock.release();
            } catch (error) {
              if (!(error instanceof LockAcquisitionError)) throw error;
            }
          }
        };
        await clock.run(Promise.all(Array.from({ length: 6 }, (_, c) => client(c))));
        await clock.drain();
        // The change's path runs.
        expect(renew.mock.calls.length, "some waiter missed its turn").toBeGreaterThan(0);
        expect(log.length).toBeGreaterThan(0);
        const valid = log.filter((i) => i.to > i.from);
        for (const a of valid) {
          const overlapping = valid.filter((b) => b !== a && b.from < a.to && a.from < b.to);
          if (kind === "semaphore") {
            expect(overlapping.filter((b) => b.slot === a.slot), `slot ${a.slot} [${a.from}, ${a.to})`).toEqual([]);
            // At most 2 at any instant: at a's start, count the others valid then.
            expect(valid.filter((b) => b !== a && b.from <= a.from && a.from < b.to).length).toBeLessThan(2);
          } else if (a.write) {
            expect(overlapping, `[${a.from}, ${a.to}) by ${a.client}`).toEqual([]);
          }
        }
        if (kind === "fenced") {
          const byTime = [...log].sort((a, b) => a.from - b.from);
          for (let i = 1; i < byTime.length; i++) expect(byTime[i].fence! > byTime[i - 1].fence!).toBe(true);
        }
        // Everything landed: no ticket outlives one lease (300 ms, or twice the slowest round: ~2 × 200 when fenced).
        await clock.advance(450);
        expect(nodes.map((n) => n.liveWaiters(QUEUES[kind]).length)).toEqual([0, 0, 0, 0, 0]);
        expect(nodes.map((n) => n.liveKeys().filter((k) => !k.includes("fence")).length)).toEqual([0, 0, 0, 0, 0]);
      });
    }
  }
});
