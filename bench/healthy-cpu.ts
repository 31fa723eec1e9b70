// `npm run bench:healthy-cpu`: the healthy scenario's client CPU per acquire+release cycle and its p50, for
// the HTTP implementations beside the TCP ones, in more rounds than the full run gives it (24 interleaved
// windows of 50 cycles each, order alternating): the full run's healthy CPU ratio moves between runs (1.06
// to 1.40 on this machine) because each of its windows is ~150 ms of a process shared by six clients.
import { spawnCluster } from "../dev/cluster-process.ts";
import {
  edgeRedlockImpl,
  floorImpl,
  nodeRedlockImpl,
  redisSemaphoreImpl,
  upstashDirectImpl,
  upstashLockImpl,
  type Impl,
  type ImplOptions,
} from "./impls.ts";
import { previousImpl } from "./previous.ts";
import { percentile, table } from "./stats.ts";

const OPTIONS: ImplOptions = { nodeTimeout: 500, retryDelay: 200, retryJitter: 100 };
const ROUNDS = 24;
const PER_WINDOW = 50;

const cluster = await spawnCluster({ nodes: 5, tcpProxy: true });
const nodes = cluster.nodes;
const previous = await previousImpl(nodes, OPTIONS);
const impls: Impl[] = [
  await floorImpl(nodes, OPTIONS),
  await upstashDirectImpl(nodes, OPTIONS),
  edgeRedlockImpl(nodes, OPTIONS),
  ...(typeof previous === "string" ? [] : [previous]),
  nodeRedlockImpl(nodes, OPTIONS),
  upstashLockImpl(nodes, OPTIONS),
  redisSemaphoreImpl(nodes, OPTIONS),
];
const cycle = async (impl: Impl, key: string) => (await impl.acquire(key, 10_000)).release();
for (const impl of impls) for (let i = 0; i < 200; i++) await cycle(impl, `warm:${impl.name}:${i}`);
const cpu = new Map(impls.map((impl) => [impl.name, 0]));
const samples = new Map(impls.map((impl) => [impl.name, [] as number[]]));
for (let r = 0; r < ROUNDS; r++) {
  for (const impl of r % 2 ? [...impls].reverse() : impls) {
    const before = process.cpuUsage();
    for (let i = 0; i < PER_WINDOW; i++) {
      const t = performance.now();
      await cycle(impl, `h:${impl.name}:${r}:${i}`);
      samples.get(impl.name)!.push(performance.now() - t);
    }
    const used = process.cpuUsage(before);
    cpu.set(impl.name, cpu.get(impl.name)! + used.user + used.system);
  }
}
const perCycle = (name: string) => cpu.get(name)! / (ROUNDS * PER_WINDOW);
const p50 = (name: string) => percentile(samples.get(name)!, 50);
console.log(
  `healthy acquire+release, ${ROUNDS} interleaved windows of ${PER_WINDOW} cycles; client CPU of the whole process\n`,
);
console.log(
  table(
    ["impl", "cpu µs/cycle", "× floor", "p50 ms", "× floor"],
    impls.map((impl) => [
      impl.name,
      perCycle(impl.name),
      perCycle(impl.name) / perCycle("floor"),
      p50(impl.name),
      p50(impl.name) / p50("floor"),
    ]),
  ),
);
await cluster.stop();
process.exit(0);
