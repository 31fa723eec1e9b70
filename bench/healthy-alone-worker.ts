// One implementation's healthy cycles in a process of its own: `node bench/healthy-alone-worker.ts <floor|edge-redlock>
// <cycles>`, the cluster's nodes as JSON in BENCH_NODES. Prints `{ cpuUs, samples }` (the process's CPU over the
// measured cycles, and each cycle's ms) as one line of JSON. Run by bench/healthy-alone.ts.
import type { ClusterNode } from "../dev/cluster.ts";
import { edgeRedlockImpl, floorImpl, type ImplOptions } from "./impls.ts";

const OPTIONS: ImplOptions = { nodeTimeout: 500, retryDelay: 200, retryJitter: 100 };
const WARM_CYCLES = 200;

const nodes = JSON.parse(process.env.BENCH_NODES ?? "[]") as ClusterNode[];
const which = process.argv[2];
const cycles = Number(process.argv[3]);
if (nodes.length === 0 || !(cycles > 0) || (which !== "floor" && which !== "edge-redlock"))
  throw new Error("usage: BENCH_NODES=<json> node bench/healthy-alone-worker.ts <floor|edge-redlock> <cycles>");
const impl = which === "floor" ? await floorImpl(nodes, OPTIONS) : edgeRedlockImpl(nodes, OPTIONS);
const tag = `alone:${which}:${process.pid}`;
for (let i = 0; i < WARM_CYCLES; i++) await (await impl.acquire(`${tag}:warm:${i}`, 10_000)).release();
const samples: number[] = [];
const before = process.cpuUsage();
for (let i = 0; i < cycles; i++) {
  const t = performance.now();
  await (await impl.acquire(`${tag}:${i}`, 10_000)).release();
  samples.push(performance.now() - t);
}
const used = process.cpuUsage(before);
await impl.close();
process.stdout.write(`${JSON.stringify({ cpuUs: used.user + used.system, samples })}\n`);
process.exit(0);
