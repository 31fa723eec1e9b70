// One implementation's healthy cycles in a process of its own: `node bench/healthy-alone-worker.ts
// <floor|edge-redlock>`, the cluster's nodes as JSON in BENCH_NODES. It warms up, prints `ready`, then for each line
// `<cycles>` on stdin runs that many cycles and prints `{ cpuUs, samples }` (the process's CPU over them, and each
// cycle's ms) as one line of JSON; it exits when stdin ends. Driven by bench/healthy-alone.ts, which takes turns
// between the two children.
import { createInterface } from "node:readline";
import type { ClusterNode } from "../dev/cluster.ts";
import { edgeRedlockImpl, floorImpl, type ImplOptions } from "./impls.ts";

const OPTIONS: ImplOptions = { nodeTimeout: 500, retryDelay: 200, retryJitter: 100 };
const WARM_CYCLES = 200;

const nodes = JSON.parse(process.env.BENCH_NODES ?? "[]") as ClusterNode[];
const which = process.argv[2];
if (nodes.length === 0 || (which !== "floor" && which !== "edge-redlock"))
  throw new Error("usage: BENCH_NODES=<json> node bench/healthy-alone-worker.ts <floor|edge-redlock>");
const impl = which === "floor" ? await floorImpl(nodes, OPTIONS) : edgeRedlockImpl(nodes, OPTIONS);
const tag = `alone:${which}:${process.pid}`;
let n = 0;
for (let i = 0; i < WARM_CYCLES; i++) await (await impl.acquire(`${tag}:${n++}`, 10_000)).release();
process.stdout.write("ready\n");
for await (const line of createInterface({ input: process.stdin })) {
  const cycles = Number(line);
  const samples: number[] = [];
  const before = process.cpuUsage();
  for (let i = 0; i < cycles; i++) {
    const t = performance.now();
    await (await impl.acquire(`${tag}:${n++}`, 10_000)).release();
    samples.push(performance.now() - t);
  }
  const used = process.cpuUsage(before);
  process.stdout.write(`${JSON.stringify({ cpuUs: used.user + used.system, samples })}\n`);
}
await impl.close();
process.exit(0);
