// The client's own CPU per cycle, with fetch answered in-process (no network, no bridge): one lock at a
// time (acquire+release), and 20 locks taken with Promise.all then released with Promise.all, in
// interleaved rounds. Used by `npm run bench` (the `cpu-in-process` scenario) and `npm run bench:cpu`.
import { answerInProcess, fakeNodes } from "./in-process.ts";
import { edgeRedlockImpl, floorImpl, type Impl, type ImplOptions } from "./impls.ts";
import { previousImpl } from "./previous.ts";

/** CPU µs per cycle of each implementation: one lock, and 20 locks at once. */
export interface CpuFigures {
  oneLockUs: number;
  twentyLocksUs: number;
}

const MANY = 20;

/**
 * Measures `cycles` one-lock cycles and `cycles / 10` twenty-lock cycles per implementation (after a
 * warm-up), in 4 interleaved rounds, with the global fetch answered in-process; restores fetch after.
 * @example
 * const figures = await cpuInProcess({ nodeTimeout: 500, retryDelay: 200, retryJitter: 100 }, 8_000);
 */
export async function cpuInProcess(options: ImplOptions, cycles: number): Promise<Map<string, CpuFigures>> {
  const nodes = fakeNodes(5);
  // A macrotask per reply, as a network gives: the 20 locks' requests meet in the batches they would meet in.
  const realFetch = answerInProcess({ turn: true });
  try {
    const previous = await previousImpl(nodes, options);
    const impls: Impl[] = [
      await floorImpl(nodes, options, { loadScripts: false }),
      await floorImpl(nodes, options, { loadScripts: false, batching: true }),
      edgeRedlockImpl(nodes, options),
      ...(typeof previous === "string" ? [] : [previous]),
    ];
    const one = async (impl: Impl, n: number, tag: string) => {
      for (let i = 0; i < n; i++) await (await impl.acquire(`cpu1:${tag}:${i}`, 10_000)).release();
    };
    const many = async (impl: Impl, n: number, tag: string) => {
      for (let i = 0; i < n; i++) {
        const held = await Promise.all(
          Array.from({ length: MANY }, (_, k) => impl.acquire(`cpu20:${tag}:${i}:${k}`, 10_000)),
        );
        await Promise.all(held.map((h) => h.release()));
      }
    };
    for (const impl of impls) {
      await one(impl, cycles / 4, "warm");
      await many(impl, cycles / 40, "warm");
    }
    const figures = new Map(impls.map((impl) => [impl.name, { oneLockUs: 0, twentyLocksUs: 0 }]));
    const ROUNDS = 4;
    const cpu = async (run: () => Promise<void>) => {
      const before = process.cpuUsage();
      await run();
      const used = process.cpuUsage(before);
      return used.user + used.system;
    };
    for (let r = 0; r < ROUNDS; r++) {
      for (const impl of r % 2 ? [...impls].reverse() : impls) {
        const f = figures.get(impl.name)!;
        f.oneLockUs += (await cpu(() => one(impl, cycles / ROUNDS, `${r}`))) / cycles;
        f.twentyLocksUs += (await cpu(() => many(impl, cycles / 10 / ROUNDS, `${r}`))) / (cycles / 10);
      }
    }
    return figures;
  } finally {
    globalThis.fetch = realFetch;
  }
}
