// `npm run bench:shared-client`: why the full run's shared-process healthy CPU ratio sits above the one measured
// with each implementation in its own process. The healthy cycles of the floor and edge-redlock in one process,
// alone (as healthy-alone's children, but side by side), then with `@upstash/redis` called directly by a third
// client in the same process (upstash-direct: other call shapes through the same client code, as the full run's
// edge-redlock-previous and @upstash/lock bring). 24 interleaved windows of 60 cycles each, order alternating.
import { spawnCluster } from "../dev/cluster-process.ts";
import { edgeRedlockImpl, floorImpl, upstashDirectImpl, type Impl, type ImplOptions } from "./impls.ts";
import { table } from "./stats.ts";

const OPTIONS: ImplOptions = { nodeTimeout: 500, retryDelay: 200, retryJitter: 100 };
const WINDOWS = 24;
const PER_WINDOW = 60;

const cycles = async (impl: Impl, n: number, tag: string) => {
  for (let i = 0; i < n; i++) await (await impl.acquire(`shared:${tag}:${i}`, 10_000)).release();
};

/** CPU µs per healthy cycle of each of `impls`, all in this process, in interleaved windows. */
async function cpuPerCycle(impls: Impl[], tag: string): Promise<Map<string, number>> {
  for (const impl of impls) await cycles(impl, 300, `${tag}:warm:${impl.name}`);
  const cpu = new Map(impls.map((impl) => [impl.name, 0]));
  for (let w = 0; w < WINDOWS; w++) {
    for (const impl of w % 2 ? [...impls].reverse() : impls) {
      const before = process.cpuUsage();
      await cycles(impl, PER_WINDOW, `${tag}:${w}:${impl.name}`);
      const used = process.cpuUsage(before);
      cpu.set(impl.name, (cpu.get(impl.name) ?? 0) + (used.user + used.system) / (PER_WINDOW * WINDOWS));
    }
  }
  return cpu;
}

const cluster = await spawnCluster({ nodes: 5 });
try {
  const floor = await floorImpl(cluster.nodes, OPTIONS);
  const edge = edgeRedlockImpl(cluster.nodes, OPTIONS);
  const rows: string[][] = [];
  const two = await cpuPerCycle([floor, edge], "two");
  const three = await cpuPerCycle([floor, edge, await upstashDirectImpl(cluster.nodes, OPTIONS)], "three");
  for (const [label, cpu] of [
    ["floor + edge-redlock", two],
    ["floor + edge-redlock + upstash-direct", three],
  ] as const) {
    const base = cpu.get("floor") ?? Number.NaN;
    for (const [impl, us] of cpu) rows.push([label, impl, us.toFixed(0), (us / base).toFixed(3)]);
  }
  console.log(
    `healthy acquire+release, ${WINDOWS} interleaved windows of ${PER_WINDOW} cycles; client CPU of this process\n`,
  );
  console.log(table(["process holds", "impl", "cpu µs/cycle", "× floor"], rows));
} finally {
  await cluster.stop();
}
process.exit(0);
