// Review 24 (da73077): with fair semaphore waiters and fair writers undoing failed attempts with REQUEUE, the
// exclusion properties still hold on the simulator under random latencies, requests cut at nodeTimeout and still
// delivered (so REQUEUEs land late, after later tries and attempts): never more than `limit` valid permits at once,
// never a valid writer alongside any other valid holder. Each holder's validity runs from its grant's reply to
// min(its release, acquire time + validityMs).
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type RedlockNode } from "../../src/index.ts";
import { prng } from "../../dev/prng.ts";
import { simCluster } from "../sim/sim-node.ts";
import { VirtualClock } from "../sim/virtual-clock.ts";


type Interval = { from: number; to: number; write: boolean; requeues: number };

function setup(seed: number) {
  const clock = new VirtualClock();
  const rand = prng(seed);
  const nodes = simCluster(clock);
  for (const node of nodes) {
    node.deliverLate = true;
    // 1-80 ms, past nodeTimeout (50) now and then; REQUEUE and LEAVE often slow.
    node.latency = (request) =>
      1 + Math.floor(rand() * (request.script === "requeue" || request.script === "leave" ? 80 : 45));
  }
  // Counts the re-queueing undos the client sends: REQUEUE, and (since 2e5f5fe) a reader's read release with a lease.
  const undos = { count: 0 };
  const counted: RedlockNode[] = nodes.map((node) => ({
    label: node.label,
    run: (script, keys, args, signal) => {
      if (script.name === "requeue" || (script.name === "rw-read-release" && args.length === 3)) undos.count++;
      return node.run(script, keys, args, signal);
    },
  }));
  const redlock = new Redlock(counted, { clock, nodeTimeout: 50 });
  return { clock, rand, nodes, redlock, undos };
}

async function holdFor(clock: VirtualClock, lock: { validityMs: number; release(): Promise<unknown> }, ms: number, write: boolean, log: Interval[]) {
  const from = clock.now();
  const validTo = from + lock.validityMs;
  await clock.sleep(ms);
  const to = Math.min(clock.now(), validTo);
  log.push({ from, to, write, requeues: 0 });
  await lock.release();
}

function most(log: Interval[], at: (i: Interval) => boolean = () => true): number {
  let worst = 0;
  for (const a of log) worst = Math.max(worst, log.filter((b) => at(b) && b.from <= a.from && a.from < b.to).length);
  return worst;
}

describe("review24: exclusion under late REQUEUEs (simulator, seeded latencies)", () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`semaphore limit 2, 7 clients × 3 (seed ${seed}): never more than 2 valid permits`, async () => {
      const { clock, rand, nodes, redlock } = setup(seed);
      const semaphore = redlock.semaphore("jobs", 2);
      const log: Interval[] = [];
      let refused = 0;
      const client = async (c: number) => {
        await clock.sleep(c * 7);
        for (let k = 0; k < 3; k++) {
          try {
            const permit = await semaphore.acquire(400, { maxWait: 6_000 });
            await holdFor(clock, permit, Math.floor(rand() * 350), true, log);
          } catch (error) {
            if (!(error instanceof LockAcquisitionError)) throw error;
            refused++;
          }
        }
      };
      await clock.run(Promise.all(Array.from({ length: 7 }, (_, c) => client(c))));
      await clock.drain();
      const requeues = nodes.reduce((n, node) => n + node.requests.filter((r) => r.script === "requeue").length, 0);
      expect(requeues, "the scenario exercises REQUEUE").toBeGreaterThan(0);
      expect(log.length + refused).toBe(21);
      expect(most(log)).toBeLessThanOrEqual(2);
    });

    it(`read-write, 3 writers and 4 readers × 3 (seed ${seed}): a valid writer is always alone`, async () => {
      const { clock, rand, redlock, undos } = setup(seed);
      const doc = redlock.readWriteLock("doc");
      const log: Interval[] = [];
      const client = async (c: number) => {
        const write = c % 2 === 0 && c < 6;
        await clock.sleep(c * 5);
        for (let k = 0; k < 3; k++) {
          try {
            const lock = write
              ? await doc.acquireWrite(400, { maxWait: 6_000 })
              : await doc.acquireRead(400, { maxWait: 6_000 });
            await holdFor(clock, lock, Math.floor(rand() * 350), write, log);
          } catch (error) {
            if (!(error instanceof LockAcquisitionError)) throw error;
          }
        }
      };
      await clock.run(Promise.all(Array.from({ length: 7 }, (_, c) => client(c))));
      await clock.drain();
      // A writer's undo is REQUEUE, a reader's a read release with a lease (2e5f5fe): either re-queues.
      expect(undos.count, "the scenario exercises the re-queueing undo").toBeGreaterThan(0);
      for (const w of log.filter((i) => i.write)) {
        const overlapping = log.filter((o) => o !== w && o.from < w.to && w.from < o.to);
        expect(overlapping, `writer [${w.from}, ${w.to})`).toEqual([]);
      }
    });
  }
});
