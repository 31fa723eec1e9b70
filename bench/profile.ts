// `npm run bench:profile -- <impl> [seconds]`, then `node bench/profile-summary.ts .tmp/prof`: the throughput workload
// (32 concurrent acquire+release cycles on distinct keys) for one implementation, alone, with the client process's CPU
// next to the wall time, for a CPU profile of where a throughput target goes. impl: edge-redlock |
// floor-batched | floor | node-redlock.
// `npm run bench:profile -- <impl> [seconds] --in-process[=one|many|throughput]`: fetch answered in-process
// (no cluster), so the profile holds the client alone: `one` lock at a time, `many` (20 with Promise.all)
// or the `throughput` workload (the default).
import { spawnCluster } from "../dev/cluster-process.ts";
import { bridgesOf } from "./bridges.ts";
import { answerInProcess, fakeNodes } from "./in-process.ts";
import { edgeRedlockImpl, floorImpl, nodeRedlockImpl, type Impl, type ImplOptions } from "./impls.ts";
import { percentile, round } from "./stats.ts";

const OPTIONS: ImplOptions = { nodeTimeout: 500, retryDelay: 200, retryJitter: 100 };
const which = process.argv[2] ?? "edge-redlock";
const seconds = Number(process.argv[3] ?? 5);
const inProcess = process.argv.find((arg) => arg.startsWith("--in-process"));
if (inProcess) {
  const workload = inProcess.split("=")[1] ?? "throughput";
  answerInProcess({ turn: workload !== "one" });
  const nodes = fakeNodes(5);
  const impl =
    which === "edge-redlock"
      ? edgeRedlockImpl(nodes, OPTIONS)
      : await floorImpl(nodes, OPTIONS, { batching: which === "floor-batched", loadScripts: false });
  const cycle = async (key: string) => {
    if (workload === "many") {
      const held = await Promise.all(Array.from({ length: 20 }, (_, k) => impl.acquire(`${key}:${k}`, 10_000)));
      await Promise.all(held.map((h) => h.release()));
    } else await (await impl.acquire(key, 10_000)).release();
  };
  const workers = workload === "throughput" ? 32 : 1;
  const run = async (ms: number) => {
    const deadline = performance.now() + ms;
    let n = 0;
    await Promise.all(
      Array.from({ length: workers }, async (_, w) => {
        while (performance.now() < deadline) await cycle(`p:${w}:${n++}`);
      }),
    );
    return n;
  };
  await run(1_000);
  const cpu = process.cpuUsage();
  const cycles = await run(seconds * 1000);
  const used = process.cpuUsage(cpu);
  console.log(
    `${which}, in-process, ${workload}: ${cycles} cycles, ${round((used.user + used.system) / cycles, 1)} µs CPU/cycle`,
  );
  process.exit(0);
}

const cluster = await spawnCluster({ nodes: 5, tcpProxy: true });
const makers: Record<string, () => Promise<Impl> | Impl> = {
  "edge-redlock": () => edgeRedlockImpl(cluster.nodes, OPTIONS),
  "floor-batched": () => floorImpl(cluster.nodes, OPTIONS, { batching: true }),
  floor: () => floorImpl(cluster.nodes, OPTIONS),
  "node-redlock": () => nodeRedlockImpl(cluster.nodes, OPTIONS),
};
const impl = await makers[which]();
const run = async (ms: number, samples: number[]) => {
  const deadline = performance.now() + ms;
  let n = 0;
  await Promise.all(
    Array.from({ length: 32 }, async (_, w) => {
      while (performance.now() < deadline) {
        const t = performance.now();
        await (await impl.acquire(`profile:${w}:${n++}`, 10_000)).release();
        samples.push(performance.now() - t);
      }
    }),
  );
};
await run(1_000, []);
const samples: number[] = [];
const bridges = bridgesOf(cluster.nodes);
await bridges.settle();
await bridges.resetCounters();
const cpu = process.cpuUsage();
const t = performance.now();
await run(seconds * 1000, samples);
const wall = performance.now() - t;
const used = process.cpuUsage(cpu);
const received = await bridges.received();
const pipelines = (await Promise.all(bridges.admins.map((a) => a.state()))).reduce(
  (sum, s) => sum + s.counters.pipelines,
  0,
);
console.log(
  `${which}: ${round(samples.length / (wall / 1000), 0)} cycles/s, p50 ${round(percentile(samples, 50))} ms, ` +
    `client CPU ${round((used.user + used.system) / 1000 / wall, 2)} cores ` +
    `(${round((used.user + used.system) / samples.length, 1)} µs/cycle); ` +
    `${round(received / samples.length, 3)} HTTP requests/cycle (${pipelines} of ${received} pipelines)`,
);
await impl.close();
await cluster.stop();
process.exit(0);
