// Fair waiting keeps exclusion when its undos land late and when waiters miss their turn. On the simulator under
// seeded latencies, requests cut at nodeTimeout and still delivered (so an undo — REQUEUE of a semaphore waiter or a
// writer, a reader's read release with an entry life — lands after later tries, attempts, releases and LEAVEs), and slow
// clients whose rounds end around their ttl (so they often miss their turn, sometimes hold with a few ms of validity):
// never more than `limit` valid permits and never two on one slot, a valid writer always alone, a valid reader's entry
// on a quorum until it releases, fences rising with time; once everything landed no ticket outlives its waiter's
// deadline (maxWait + 2 s), and no line key its linger (5 s) after that.
// A holder is valid from its grant's reply to min(its release, acquire time + validityMs).
import { afterEach, describe, expect, it, vi } from "vitest";
import { LockAcquisitionError, Redlock, type Lock, type RedlockNode } from "../../../src/index.ts";
import { Line } from "../../../src/lock/line.ts";
import { LINE_LINGER_MS } from "../../../src/scripts/queue.ts";
import { prng } from "../../../dev/prng.ts";
import { simCluster, type SimNode } from "../../sim/sim-node.ts";
import { VirtualClock } from "../../sim/virtual-clock.ts";

type UndoHold = { from: number; to: number; write: boolean; requeues: number };

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
  // Counts the re-queueing undos the client sends: REQUEUE, and a reader's read release with an entry life.
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

async function holdFor(
  clock: VirtualClock,
  lock: { validityMs: number; release(): Promise<unknown> },
  ms: number,
  write: boolean,
  log: UndoHold[],
) {
  const from = clock.now();
  const validTo = from + lock.validityMs;
  await clock.sleep(ms);
  const to = Math.min(clock.now(), validTo);
  log.push({ from, to, write, requeues: 0 });
  await lock.release();
}

function most(log: UndoHold[], at: (i: UndoHold) => boolean = () => true): number {
  let worst = 0;
  for (const a of log) worst = Math.max(worst, log.filter((b) => at(b) && b.from <= a.from && a.from < b.to).length);
  return worst;
}

describe("exclusion under late REQUEUEs (seeded latencies)", () => {
  // The latencies are seeded, the library's own randomness (jitter, streams' nodes) is not: one seed may send no
  // REQUEUE in some runs. The seeds together always do, and that is what makes them a test of late REQUEUEs.
  let requeuesInAll = 0;
  let undosInAll = 0;
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`semaphore limit 2, 7 clients × 3 (seed ${seed}): never more than 2 valid permits`, async () => {
      const { clock, rand, nodes, redlock } = setup(seed);
      const semaphore = redlock.semaphore("jobs", 2);
      const log: UndoHold[] = [];
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
      requeuesInAll += nodes.reduce((n, node) => n + node.requests.filter((r) => r.script === "requeue").length, 0);
      expect(log.length + refused).toBe(21);
      expect(most(log)).toBeLessThanOrEqual(2);
    });

    it(`read-write, 3 writers and 4 readers × 3 (seed ${seed}): a valid writer is always alone`, async () => {
      const { clock, rand, redlock, undos } = setup(seed);
      const doc = redlock.readWriteLock("doc");
      const log: UndoHold[] = [];
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
      undosInAll += undos.count;
      for (const w of log.filter((i) => i.write)) {
        const overlapping = log.filter((o) => o !== w && o.from < w.to && w.from < o.to);
        expect(overlapping, `writer [${w.from}, ${w.to})`).toEqual([]);
      }
    });
  }

  it("the seeds above exercise late undos: semaphore REQUEUEs, and a writer's REQUEUE or a reader's re-queueing release", () => {
    expect(requeuesInAll, "the semaphore runs sent REQUEUE").toBeGreaterThan(0);
    // A writer's undo is REQUEUE, a reader's a read release with an entry life: either re-queues.
    expect(undosInAll, "the read-write runs sent a re-queueing undo").toBeGreaterThan(0);
  });
});

const READERS = "edge-redlock:rw:readers:doc";
const QUEUE = "edge-redlock:rw:line:doc";

type ReadHold = { from: number; to: number; write: boolean };

describe("exclusion and reader entries under late reader undos (seeded latencies)", () => {
  // Tickets and values are random (Web Crypto), so how many undos a seed sends varies from run to run: the seeds
  // together must send some, checked after them.
  let readerUndosInAll = 0;
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    it(`2 writers and 5 readers × 3 (seed ${seed}): a writer alone, a reader's entry on a quorum while valid, no member past its deadline`, async () => {
      const clock = new VirtualClock();
      const rand = prng(seed);
      const nodes = simCluster(clock);
      for (const node of nodes) {
        node.deliverLate = true;
        // 1-45 ms; a read release (a reader's undo with an entry life among them) or LEAVE 1-150 ms (nodeTimeout 50:
        // often cut, delivered anyway).
        node.latency = (request) =>
          1 + Math.floor(rand() * (request.script === "rw-read-release" || request.script === "leave" ? 150 : 45));
      }
      let undos = 0;
      const own = nodes.map((sim) => ({
        label: sim.label,
        run: (script: Parameters<typeof sim.run>[0], keys: string[], args: string[], signal: AbortSignal) => {
          if (script.name === "rw-read-release" && args.length === 3) undos++;
          return sim.run(script, keys, args, signal);
        },
      }));
      const redlock = new Redlock(own, { clock, nodeTimeout: 50 });
      const doc = redlock.readWriteLock("doc");
      const log: ReadHold[] = [];
      const entryLost: string[] = [];
      const hold = async (lock: Lock, ms: number, write: boolean) => {
        const from = clock.now();
        const validTo = from + lock.validityMs;
        // Check the reader's entry every 10 ms while it is valid.
        for (let t = 0; t < ms; t += 10) {
          await clock.sleep(Math.min(10, ms - t));
          if (!write && clock.now() < validTo) {
            const on = nodes.filter((n) => n.readers(READERS).has(lock.value)).length;
            if (on < 3) entryLost.push(`${lock.value} on ${on} nodes at ${clock.now()} (valid to ${validTo})`);
          }
        }
        log.push({ from, to: Math.min(clock.now(), validTo), write });
        await lock.release();
      };
      const client = async (c: number) => {
        const write = c < 2;
        await clock.sleep(c * 3);
        for (let k = 0; k < 3; k++) {
          try {
            const lock = write
              ? await doc.acquireWrite(400, { maxWait: 6_000 })
              : await doc.acquireRead(400, { maxWait: 6_000 });
            await hold(lock, Math.floor(rand() * 300), write);
          } catch (error) {
            if (!(error instanceof LockAcquisitionError)) throw error;
          }
        }
      };
      await clock.run(Promise.all(Array.from({ length: 7 }, (_, c) => client(c))));
      await clock.drain();
      readerUndosInAll += undos;
      console.log(`seed ${seed}: ${undos} reader undos with an entry life, ${log.length} holds`);
      expect(log.some((i) => !i.write)).toBe(true);
      expect(entryLost).toEqual([]);
      for (const w of log.filter((i) => i.write)) {
        const overlapping = log.filter((o) => o !== w && o.from < w.to && w.from < o.to);
        expect(overlapping, `writer [${w.from}, ${w.to})`).toEqual([]);
      }
      // Everything landed: no member outlives its waiter's deadline (maxWait 6 s + 2 s), no line key its linger.
      await clock.advance(8_001);
      expect(nodes.map((n) => n.liveWaiters(QUEUE).length)).toEqual([0, 0, 0, 0, 0]);
      await clock.advance(LINE_LINGER_MS);
      expect(nodes.map((n) => n.queuePttl(QUEUE))).toEqual([-2, -2, -2, -2, -2]);
    });
  }

  it("the seeds above exercise the reader's undo with an entry life", () => {
    expect(readerUndosInAll).toBeGreaterThan(0);
  });
});

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
type TurnHold = { from: number; to: number; client: number; write: boolean; slot?: number; fence?: bigint };

const QUEUES: Record<Kind, string> = {
  mutex: "edge-redlock:line:report",
  fenced: "edge-redlock:line:report",
  rw: "edge-redlock:rw:line:report",
  semaphore: "edge-redlock:semaphore-line:report",
};

afterEach(() => vi.restoreAllMocks());

describe("missed turns keep exclusion and leave nothing in line (seeded latencies)", () => {
  for (const kind of ["mutex", "fenced", "rw", "semaphore"] as Kind[]) {
    for (const seed of [1, 2, 3]) {
      it(`${kind}: 3 slow and 3 fast clients × 3 (seed ${seed}): no two valid holders, no ticket or key left past its deadline`, async () => {
        const renew = vi.spyOn(Line.prototype, "renew");
        const clock = new VirtualClock();
        const rand = prng(seed * 7919 + kind.length);
        const nodes = simCluster(clock);
        const log: TurnHold[] = [];
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
        // The missed-turn path runs.
        expect(renew.mock.calls.length, "some waiter missed its turn").toBeGreaterThan(0);
        expect(log.length).toBeGreaterThan(0);
        const valid = log.filter((i) => i.to > i.from);
        for (const a of valid) {
          const overlapping = valid.filter((b) => b !== a && b.from < a.to && a.from < b.to);
          if (kind === "semaphore") {
            expect(
              overlapping.filter((b) => b.slot === a.slot),
              `slot ${a.slot} [${a.from}, ${a.to})`,
            ).toEqual([]);
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
        // Everything landed: no ticket outlives its waiter's deadline (maxWait 1.5 s + 2 s), no line key its linger.
        await clock.advance(3_501);
        expect(nodes.map((n) => n.liveWaiters(QUEUES[kind]).length)).toEqual([0, 0, 0, 0, 0]);
        await clock.advance(LINE_LINGER_MS);
        expect(nodes.map((n) => n.queuePttl(QUEUES[kind]))).toEqual([-2, -2, -2, -2, -2]);
        expect(nodes.map((n) => n.liveKeys().filter((k) => !k.includes("fence")).length)).toEqual([0, 0, 0, 0, 0]);
      });
    }
  }
});
