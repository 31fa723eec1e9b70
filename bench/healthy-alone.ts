// The healthy scenario with each HTTP implementation in a process of its own (bench/healthy-alone-worker.ts), as a
// Worker isolate runs one application, not six lock clients: the client CPU and the cycle time of the floor and of
// the library with nothing else in the process. Both children live at once and take turns, as the shared-process
// scenario's interleaved windows do: 24 windows each, the order alternating, so a slow spell of the machine hits both.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface, type Interface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { ClusterNode } from "../dev/cluster.ts";
import { percentile } from "./stats.ts";

/** What one implementation measured over its windows. */
export interface AloneFigures {
  cpuUsPerCycle: number;
  p50Ms: number;
  p99Ms: number;
}

const WORKER = fileURLToPath(new URL("./healthy-alone-worker.ts", import.meta.url));
const WINDOWS = 24;

/** A child that runs one implementation's cycles on request: `run(n)` resolves with that window's figures. */
async function child(nodes: ClusterNode[], impl: string) {
  const proc: ChildProcessWithoutNullStreams = spawn(process.execPath, [WORKER, impl], {
    env: { ...process.env, BENCH_NODES: JSON.stringify(nodes) },
  });
  let stderr = "";
  proc.stderr.on("data", (chunk) => (stderr += chunk));
  const lines: Interface = createInterface({ input: proc.stdout });
  const iterator = lines[Symbol.asyncIterator]();
  const next = async (): Promise<string> => {
    const { value, done } = await iterator.next();
    if (done) throw new Error(`${impl}: the child ended (${stderr.trim().slice(-300)})`);
    return value as string;
  };
  if ((await next()) !== "ready") throw new Error(`${impl}: the child did not start (${stderr.trim().slice(-300)})`);
  return {
    run: async (cycles: number): Promise<{ cpuUs: number; samples: number[] }> => {
      proc.stdin.write(`${cycles}\n`);
      return JSON.parse(await next());
    },
    end: () => proc.stdin.end(),
  };
}

/**
 * About `cycles` healthy acquire+release cycles per implementation (floor and edge-redlock), each in a child of its
 * own, in {@link WINDOWS} windows per child taken in turns.
 * @example
 * const figures = await healthyAlone(cluster.nodes, 3_000); // figures.get("edge-redlock")!.cpuUsPerCycle
 */
export async function healthyAlone(nodes: ClusterNode[], cycles: number): Promise<Map<string, AloneFigures>> {
  const names = ["floor", "edge-redlock"];
  const children = await Promise.all(names.map((impl) => child(nodes, impl)));
  const runs = names.map(() => ({ cpuUs: 0, samples: [] as number[] }));
  const perWindow = Math.ceil(cycles / WINDOWS);
  try {
    for (let w = 0; w < WINDOWS; w++) {
      for (const i of w % 2 ? [1, 0] : [0, 1]) {
        const { cpuUs, samples } = await children[i].run(perWindow);
        runs[i].cpuUs += cpuUs;
        runs[i].samples.push(...samples);
      }
    }
  } finally {
    for (const c of children) c.end();
  }
  const figures = new Map<string, AloneFigures>();
  names.forEach((impl, i) => {
    const { cpuUs, samples } = runs[i];
    figures.set(impl, {
      cpuUsPerCycle: cpuUs / samples.length,
      p50Ms: percentile(samples, 50),
      p99Ms: percentile(samples, 99),
    });
  });
  return figures;
}
