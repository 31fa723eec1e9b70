// The healthy scenario with each HTTP implementation in a process of its own (bench/healthy-alone-worker.ts), as a
// Worker isolate runs one application, not six lock clients: the client CPU and the cycle time of the floor and of
// the library with nothing else in the process. Children run one after another in the order floor, edge-redlock,
// edge-redlock, floor (so a drift of the machine hits both alike); each measures `cycles / 2` cycles after a warm-up.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { ClusterNode } from "../dev/cluster.ts";
import { percentile } from "./stats.ts";

/** What one implementation measured over its children. */
export interface AloneFigures {
  cpuUsPerCycle: number;
  p50Ms: number;
  p99Ms: number;
}

const WORKER = fileURLToPath(new URL("./healthy-alone-worker.ts", import.meta.url));

function child(nodes: ClusterNode[], impl: string, cycles: number): Promise<{ cpuUs: number; samples: number[] }> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [WORKER, impl, String(cycles)],
      { env: { ...process.env, BENCH_NODES: JSON.stringify(nodes) }, maxBuffer: 16 * 2 ** 20 },
      (error, stdout, stderr) => (error ? reject(new Error(`${impl}: ${stderr || error.message}`)) : resolve(JSON.parse(stdout))),
    );
  });
}

/**
 * `cycles` healthy acquire+release cycles per implementation (floor and edge-redlock), in two children each.
 * @example
 * const figures = await healthyAlone(cluster.nodes, 3_000); // figures.get("edge-redlock")!.cpuUsPerCycle
 */
export async function healthyAlone(nodes: ClusterNode[], cycles: number): Promise<Map<string, AloneFigures>> {
  const runs = new Map<string, { cpuUs: number; samples: number[] }[]>([
    ["floor", []],
    ["edge-redlock", []],
  ]);
  for (const impl of ["floor", "edge-redlock", "edge-redlock", "floor"])
    runs.get(impl)!.push(await child(nodes, impl, Math.ceil(cycles / 2)));
  const figures = new Map<string, AloneFigures>();
  for (const [impl, parts] of runs) {
    const samples = parts.flatMap((p) => p.samples);
    const cpuUs = parts.reduce((sum, p) => sum + p.cpuUs, 0);
    figures.set(impl, { cpuUsPerCycle: cpuUs / samples.length, p50Ms: percentile(samples, 50), p99Ms: percentile(samples, 99) });
  }
  return figures;
}
