// Review 25 (2e5f5fe): with readers' failed attempts undone by RW_READ_RELEASE given a lease, and those undos often
// cut at nodeTimeout and still delivered (so they land after later attempts, after the holder's release, after LEAVE),
// on the simulator under seeded latencies: a valid writer is always alone; a valid reader keeps its entry on a quorum
// until it releases (invariant (I) for readers: no late undo removes a holder's entry); once everything landed, no
// member stays in line past one lease.
import { describe, expect, it } from "vitest";
import { LockAcquisitionError, Redlock, type Lock } from "../../src/index.ts";
import { prng } from "../../dev/prng.ts";
import { simCluster } from "../sim/sim-node.ts";
import { VirtualClock } from "../sim/virtual-clock.ts";

const READERS = "edge-redlock:rw:readers:doc";
const QUEUE = "edge-redlock:rw:queue:doc";


type Interval = { from: number; to: number; write: boolean };

describe("review25: exclusion and reader entries under late reader undos (simulator, seeded latencies)", () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    it(`2 writers and 5 readers × 3 (seed ${seed})`, async () => {
      const clock = new VirtualClock();
      const rand = prng(seed);
      const nodes = simCluster(clock);
      for (const node of nodes) {
        node.deliverLate = true;
        // 1-45 ms, an undo with a lease 1-150 ms (nodeTimeout 50: often cut, delivered anyway).
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
      const log: Interval[] = [];
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
            const lock = write ? await doc.acquireWrite(400, { maxWait: 6_000 }) : await doc.acquireRead(400, { maxWait: 6_000 });
            await hold(lock, Math.floor(rand() * 300), write);
          } catch (error) {
            if (!(error instanceof LockAcquisitionError)) throw error;
          }
        }
      };
      await clock.run(Promise.all(Array.from({ length: 7 }, (_, c) => client(c))));
      await clock.drain();
      expect(undos, "the scenario exercises the reader's undo with a lease").toBeGreaterThan(0);
      console.log(`seed ${seed}: ${undos} reader undos with a lease, ${log.length} holds`);
      expect(log.some((i) => !i.write)).toBe(true);
      expect(entryLost).toEqual([]);
      for (const w of log.filter((i) => i.write)) {
        const overlapping = log.filter((o) => o !== w && o.from < w.to && w.from < o.to);
        expect(overlapping, `writer [${w.from}, ${w.to})`).toEqual([]);
      }
      // Everything landed: no member outlives one lease (the lease is 300 ms, or twice the slowest round: < 2 × 50+).
      await clock.advance(301);
      expect(nodes.map((n) => n.liveWaiters(QUEUE).length)).toEqual([0, 0, 0, 0, 0]);
    });
  }
});
